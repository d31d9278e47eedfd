package openstack

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// lbSpec is everything a Service asks of Octavia and Neutron, resolved from its
// annotations, its [LoadBalancerClass] and the cloud.conf, in that order of
// strength where a class is named (the class wins over annotations).
type lbSpec struct {
	name    string // cloud-provider-openstack's: kube_service_<cluster>_<namespace>_<name>
	cluster string // the --cluster-name in it

	// The IP family of the VIP (spec.ipFamilies[0]). An IPv6 one has no
	// floating IP (Neutron's are IPv4): its VIP is its address. Its subnet,
	// when nothing names it, is found in the network when it is created.
	family      v1.IPFamily
	vipSubnetOf string // IPv6, no subnet named: a subnet of the VIPs' network (the cloud.conf's subnet-id)
	// Dual-stack (PreferDualStack or RequireDualStack with two families): a
	// second VIP of the other family, Octavia's additional VIP (API v2.26),
	// on secondSubnetID or, when none is named, the network's subnet of
	// that family.
	secondFamily   v1.IPFamily
	requireDual    bool
	secondSubnetID string

	// Where the VIP lives (one of them at least) and how members are reached.
	subnetID, networkID, portID, memberSubnetID string
	vipAddress                                  string // spec.loadBalancerIP of an internal LB

	// Floating IP of a public load balancer.
	internal           bool
	floatingNetworkID  string
	floatingSubnetID   string
	floatingSubnet     *annotation.SubnetPattern
	floatingSubnetTags *annotation.SubnetTags
	floatingIP         string // spec.loadBalancerIP of a public LB: an existing floating IP
	keepFIP            bool
	onlyPublic         bool

	// Create-time choices (Octavia cannot change them later).
	flavorID, availabilityZone string

	// Listeners.
	ports        []v1.ServicePort // sorted by protocol/port
	allowedCIDRs []string         // sorted; nil: everyone
	connLimit    int              // -1: no limit
	timeouts     listenerTimeouts
	xff          bool     // HTTP listeners adding X-Forwarded-For
	tls          *tlsSpec // TLS termination (tls.go); nil: none

	// Pools.
	method  string
	proxy   annotation.ProxyProtocol
	members []string // the eligible Nodes' InternalIPs, sorted
	monitor *monitorSpec
	// Eligible Nodes that have a providerID but no addresses yet: the node
	// controller sets the providerID first and the addresses a moment later, and
	// only the first change makes the service controller sync, so their members
	// come from the cloud (see resolveMembers).
	unaddressed []*v1.Node

	// The Service status.
	hostname string

	// The security group; nil when groups are not managed.
	sg *sgSpec
}

// listenerTimeouts are in milliseconds; nil leaves Octavia's value alone.
type listenerTimeouts struct {
	clientData, memberConnect, memberData, tcpInspect *int
}

// monitorSpec is a pool's health monitor. With externalTrafficPolicy Local it
// probes kube-proxy's healthCheckNodePort over HTTP, so that only the Nodes that
// run an endpoint get traffic; otherwise it probes the NodePort itself.
type monitorSpec struct {
	delay, timeout, maxRetries, maxRetriesDown int
	httpPort                                   int // healthCheckNodePort; 0: probe the member port
}

func (m *monitorSpec) monitorType(proto v1.Protocol) string {
	switch {
	case m.httpPort != 0:
		return "HTTP"
	case proto == v1.ProtocolUDP:
		return "UDP-CONNECT"
	case proto == v1.ProtocolSCTP:
		return "SCTP"
	}
	return "TCP"
}

// listenerProtocol is what the listener of p speaks.
func (s *lbSpec) listenerProtocol(p v1.ServicePort) string {
	if s.isTLS(p) {
		return "TERMINATED_HTTPS"
	}
	if s.xff && p.Protocol == v1.ProtocolTCP {
		return "HTTP"
	}
	return string(p.Protocol)
}

// poolProtocol is what the pool of p speaks to the Nodes.
func (s *lbSpec) poolProtocol(p v1.ServicePort) string {
	switch {
	case p.Protocol != v1.ProtocolTCP:
		return string(p.Protocol)
	case s.proxy == annotation.ProxyProtocolV1:
		return "PROXY"
	case s.proxy == annotation.ProxyProtocolV2:
		return "PROXYV2"
	case s.xff || s.isTLS(p):
		return "HTTP"
	}
	return "TCP"
}

func (s *lbSpec) listenerKey(p v1.ServicePort) string {
	return fmt.Sprintf("%s/%05d", s.listenerProtocol(p), p.Port)
}

// fixed records an error of the Service a user can fix.
type specErrors struct{ errs []error }

func (e *specErrors) keep(err error) bool {
	if err != nil && !errors.Is(err, annotation.ErrNotSet) {
		e.errs = append(e.errs, err)
		return false
	}
	return err == nil
}

func (e *specErrors) add(format string, a ...any) { e.errs = append(e.errs, fmt.Errorf(format, a...)) }

// spec resolves what the Service asks for. Every problem is in the error, and an
// error means nothing may be changed in the cloud.
func (c *Cloud) spec(clusterName string, svc *v1.Service, nodes []*v1.Node) (lbSpec, error) {
	cfg := c.cfg.LoadBalancer
	s := lbSpec{
		name:              c.lbName(clusterName, svc),
		cluster:           clusterName,
		subnetID:          cfg.SubnetID,
		networkID:         cfg.NetworkID,
		memberSubnetID:    cfg.MemberSubnetID,
		floatingNetworkID: cfg.FloatingNetworkID,
		floatingSubnetID:  cfg.FloatingSubnetID,
		internal:          cfg.InternalLB,
		onlyPublic:        cfg.PublishOnlyPublicAddress == nil || *cfg.PublishOnlyPublicAddress,
		flavorID:          cfg.FlavorID,
		availabilityZone:  cfg.AvailabilityZone,
		method:            strings.ToUpper(cfg.LBMethod),
		connLimit:         -1,
	}
	if s.method == "" {
		s.method = "ROUND_ROBIN"
	}
	var e specErrors
	floatingSubnet, floatingSubnetTags := cfg.FloatingSubnet, cfg.FloatingSubnetTags
	str := func(n annotation.Name, into *string) {
		if v, err := n.NonEmptyString(svc); e.keep(err) {
			*into = v
		}
	}
	uuid := func(n annotation.Name, into *string) {
		if v, err := n.NonEmptyString(svc); e.keep(err) {
			if id, err := annotation.ParseUUID(n, v); e.keep(err) {
				*into = id
			}
		}
	}
	boolean := func(n annotation.Name, into *bool) {
		if v, err := n.Bool(svc); e.keep(err) {
			*into = v
		}
	}
	s.family = v1.IPv4Protocol
	if len(svc.Spec.IPFamilies) > 0 {
		s.family = svc.Spec.IPFamilies[0]
	}
	if s.family == v1.IPv6Protocol {
		// The cloud.conf's subnet-id is the IPv4 VIPs'; its network is
		// where an IPv6 subnet is looked for when none is named.
		s.vipSubnetOf, s.subnetID = s.subnetID, cfg.IPv6SubnetID
	}
	uuid(annotation.OpenStackSubnetID, &s.subnetID)
	uuid(annotation.OpenStackNetworkID, &s.networkID)
	uuid(annotation.OpenStackPortID, &s.portID)
	uuid(annotation.OpenStackMemberSubnetID, &s.memberSubnetID)
	uuid(annotation.OpenStackFloatingNetworkID, &s.floatingNetworkID)
	uuid(annotation.OpenStackFloatingSubnetID, &s.floatingSubnetID)
	str(annotation.OpenStackFloatingSubnet, &floatingSubnet)
	str(annotation.OpenStackFloatingSubnetTags, &floatingSubnetTags)
	uuid(annotation.OpenStackFlavorID, &s.flavorID)
	str(annotation.OpenStackAvailabilityZone, &s.availabilityZone)
	boolean(annotation.OpenStackInternalLoadBalancer, &s.internal)
	boolean(annotation.OpenStackKeepFloatingIP, &s.keepFIP)
	boolean(annotation.OpenStackPublishOnlyPublicAddress, &s.onlyPublic)
	boolean(annotation.OpenStackXForwardedFor, &s.xff)

	// A class names network choices that win over the annotations.
	if name, err := annotation.OpenStackClass.NonEmptyString(svc); e.keep(err) {
		class, ok := c.cfg.LoadBalancerClasses[name]
		if !ok {
			e.errs = append(e.errs, &annotation.InvalidError{Name: annotation.OpenStackClass, Value: name,
				Accepted: "the names of the cloud.conf's [LoadBalancerClass] sections: " + strings.Join(c.classNames(), ", ")})
		} else {
			for _, f := range []struct {
				from string
				into *string
			}{
				{class.SubnetID, &s.subnetID}, {class.NetworkID, &s.networkID}, {class.MemberSubnetID, &s.memberSubnetID},
				{class.FloatingNetworkID, &s.floatingNetworkID}, {class.FloatingSubnetID, &s.floatingSubnetID},
				{class.FloatingSubnet, &floatingSubnet}, {class.FloatingSubnetTags, &floatingSubnetTags},
			} {
				if f.from != "" {
					*f.into = f.from
				}
			}
		}
	}
	if floatingSubnet != "" {
		if p, err := annotation.ParseSubnetPattern(floatingSubnet); e.keep(err) {
			s.floatingSubnet = &p
		}
	}
	if floatingSubnetTags != "" {
		if t, err := annotation.ParseSubnetTags(floatingSubnetTags); e.keep(err) {
			s.floatingSubnetTags = &t
		}
	}
	if s.subnetID == "" && s.networkID == "" && s.portID == "" && s.vipSubnetOf == "" {
		e.add("no network for the VIP: set [LoadBalancer] subnet-id (or network-id) in the cloud.conf, or the annotation %s", annotation.OpenStackSubnetID)
	}
	if s.family == v1.IPv6Protocol && s.memberSubnetID == cfg.MemberSubnetID {
		// The cloud.conf's member subnet is the IPv4 members'.
		s.memberSubnetID = ""
	}
	if s.memberSubnetID == "" {
		s.memberSubnetID = s.subnetID
	}

	// spec.loadBalancerIP: the floating IP of a public load balancer, the VIP of
	// an internal one.
	if ip := svc.Spec.LoadBalancerIP; ip != "" {
		if _, err := netip.ParseAddr(ip); err != nil {
			e.add("spec.loadBalancerIP %q is not an IP address", ip)
		} else if s.internal || s.family == v1.IPv6Protocol {
			s.vipAddress = ip // an IPv6 load balancer's address is its VIP
		} else {
			s.floatingIP = ip
		}
	}

	if v, err := annotation.OpenStackLBMethod.String(svc); e.keep(err) {
		if m, err := annotation.ParseLBMethod(v); e.keep(err) {
			s.method = string(m)
		}
	}
	if v, err := annotation.OpenStackProxyProtocol.String(svc); e.keep(err) {
		if p, err := annotation.ParseProxyProtocol(v); e.keep(err) {
			s.proxy = p
		}
	}
	if s.proxy != annotation.ProxyProtocolNone && s.xff {
		e.add("%s and %s cannot be combined: choose one way to pass the client address", annotation.OpenStackProxyProtocol, annotation.OpenStackXForwardedFor)
	}
	if v, err := annotation.OpenStackConnectionLimit.String(svc); e.keep(err) {
		if n, err := annotation.ParseConnectionLimit(v); e.keep(err) {
			s.connLimit = n
		}
	}
	for _, t := range []struct {
		n    annotation.Name
		into **int
	}{
		{annotation.OpenStackTimeoutClientData, &s.timeouts.clientData},
		{annotation.OpenStackTimeoutMemberConnect, &s.timeouts.memberConnect},
		{annotation.OpenStackTimeoutMemberData, &s.timeouts.memberData},
		{annotation.OpenStackTimeoutTCPInspect, &s.timeouts.tcpInspect},
	} {
		if v, err := t.n.String(svc); e.keep(err) {
			if d, err := annotation.ParseMilliseconds(t.n, v, 0, annotation.OctaviaTimeoutMaxMillis); e.keep(err) {
				ms := int(d / time.Millisecond)
				*t.into = &ms
			}
		}
	}
	s.tls = c.tlsOf(svc, svc.Spec.Ports, &e)

	s.monitor = c.monitorFor(svc, &e)

	if v, err := annotation.OpenStackHostname.NonEmptyString(svc); e.keep(err) {
		if h, err := annotation.ParseHostname(v); e.keep(err) {
			s.hostname = h
		}
	}

	for _, p := range svc.Spec.Ports {
		switch p.Protocol {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			e.add("port %q: protocol %s is not supported", p.Name, p.Protocol)
		}
		if p.NodePort == 0 {
			e.add("port %q has no NodePort: Octavia members are NodePorts", p.Name)
		}
	}
	if p := svc.Spec.IPFamilyPolicy; p != nil && *p != v1.IPFamilyPolicySingleStack && len(svc.Spec.IPFamilies) == 2 {
		s.secondFamily, s.requireDual = svc.Spec.IPFamilies[1], *p == v1.IPFamilyPolicyRequireDualStack
		if s.secondFamily == v1.IPv6Protocol {
			s.secondSubnetID = cfg.IPv6SubnetID
		} else {
			s.secondSubnetID = s.vipSubnetOf
		}
	}
	s.ports = slices.Clone(svc.Spec.Ports)
	sort.Slice(s.ports, func(i, j int) bool { return portKey(s.ports[i]) < portKey(s.ports[j]) })
	ranges, err := servicehelpers.GetLoadBalancerSourceRanges(svc)
	if err != nil {
		e.errs = append(e.errs, err)
	} else if !servicehelpers.IsAllowAll(ranges) {
		// Octavia takes only ranges of the VIP's family; the others could
		// never reach it. None of its family left would open it to everyone.
		for _, r := range ranges.StringSlice() {
			if p, err := netip.ParsePrefix(r); err == nil && (isFamily(p.Addr(), s.family) || isFamily(p.Addr(), s.secondFamily)) {
				s.allowedCIDRs = append(s.allowedCIDRs, r)
			}
		}
		if len(s.allowedCIDRs) == 0 {
			e.add("the source ranges %v hold no %s range for the %s load balancer", ranges.StringSlice(), s.family, s.family)
		}
		sort.Strings(s.allowedCIDRs)
	}

	selector := c.cfg.LoadBalancer.NodeSelector
	if v, err := annotation.OpenStackNodeSelector.String(svc); e.keep(err) {
		selector = v
	}
	sel := labels.Everything()
	if selector != "" {
		if m, err := annotation.ParseNodeSelector(selector); e.keep(err) {
			sel = nodeSelector(m)
		}
	}
	if cfg.ManageSecurityGroups {
		s.sg = &sgSpec{selector: sel, serverLabels: map[string]labels.Set{}}
		if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
			s.sg.hcPort = int(svc.Spec.HealthCheckNodePort)
		}
		for _, p := range s.ports {
			if p.NodePort != 0 {
				s.sg.nodePorts = append(s.sg.nodePorts, sgPort{proto: strings.ToLower(string(p.Protocol)), port: int(p.NodePort)})
			}
		}
	}
	for _, n := range nodes {
		if !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		if provider.AwaitingAddresses(n) {
			s.unaddressed = append(s.unaddressed, n)
			continue
		}
		if ip, ok := provider.InternalIP(n.Status.Addresses, s.family); ok && ip.Is6() == (s.family == v1.IPv6Protocol) {
			s.members = append(s.members, ip.String())
			if id, err := serverID(n.Spec.ProviderID); err == nil && s.sg != nil {
				s.sg.servers = append(s.sg.servers, id)
				s.sg.serverLabels[id] = n.Labels
			}
		}
	}
	sort.Strings(s.members)
	if s.sg != nil {
		sort.Strings(s.sg.servers)
	}
	return s, errors.Join(e.errs...)
}

// nodeSelector: "key=value" requires the value, "key" only the label.
func nodeSelector(m map[string]string) labels.Selector {
	sel := labels.NewSelector()
	for k, v := range m {
		var r *labels.Requirement
		var err error
		if v == "" {
			r, err = labels.NewRequirement(k, selection.Exists, nil)
		} else {
			r, err = labels.NewRequirement(k, selection.Equals, []string{v})
		}
		if err == nil {
			sel = sel.Add(*r)
		}
	}
	return sel
}

func (c *Cloud) classNames() []string {
	names := make([]string, 0, len(c.cfg.LoadBalancerClasses))
	for n := range c.cfg.LoadBalancerClasses {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

// monitorFor: a health monitor when the annotation says so, else when the
// cloud.conf's create-monitor does, else whenever externalTrafficPolicy is Local
// (without one, Nodes with no endpoint would blackhole their share of traffic).
func (c *Cloud) monitorFor(svc *v1.Service, e *specErrors) *monitorSpec {
	cfg := c.cfg.LoadBalancer
	local := servicehelpers.RequestsOnlyLocalTraffic(svc)
	enabled := cfg.CreateMonitor || local
	if v, err := annotation.OpenStackEnableHealthMonitor.Bool(svc); e.keep(err) {
		enabled = v
	}
	m := &monitorSpec{delay: 5, timeout: 3, maxRetries: 1, maxRetriesDown: 3}
	if d := cfg.MonitorDelay.Duration; d > 0 {
		m.delay = int(d.Round(time.Second) / time.Second)
	}
	if d := cfg.MonitorTimeout.Duration; d > 0 {
		m.timeout = int(d.Round(time.Second) / time.Second)
	}
	if cfg.MonitorMaxRetries > 0 {
		m.maxRetries = int(cfg.MonitorMaxRetries)
	}
	if cfg.MonitorMaxRetriesDown > 0 {
		m.maxRetriesDown = int(cfg.MonitorMaxRetriesDown)
	}
	seconds := func(n annotation.Name, into *int) {
		if v, err := n.String(svc); e.keep(err) {
			if d, err := annotation.ParseSecondsOrDuration(n, v, annotation.OctaviaMonitorIntervalMin, annotation.OctaviaMonitorIntervalMax); e.keep(err) {
				*into = int(d / time.Second)
			}
		}
	}
	retries := func(n annotation.Name, into *int) {
		if v, err := n.Int(svc, annotation.OctaviaMaxRetriesMin, annotation.OctaviaMaxRetriesMax); e.keep(err) {
			*into = v
		}
	}
	seconds(annotation.OpenStackHealthMonitorDelay, &m.delay)
	seconds(annotation.OpenStackHealthMonitorTimeout, &m.timeout)
	retries(annotation.OpenStackHealthMonitorMaxRetries, &m.maxRetries)
	retries(annotation.OpenStackHealthMonitorMaxRetriesDown, &m.maxRetriesDown)
	if m.timeout > m.delay {
		e.add("%s (%ds) must not exceed %s (%ds)", annotation.OpenStackHealthMonitorTimeout, m.timeout, annotation.OpenStackHealthMonitorDelay, m.delay)
	}
	if !enabled {
		return nil
	}
	if local && svc.Spec.HealthCheckNodePort != 0 {
		m.httpPort = int(svc.Spec.HealthCheckNodePort)
	}
	return m
}

// fingerprint is a short hash of everything converge acts on; a change of any of
// it changes the fingerprint. It has two parts, "<config>.<members>": a change of
// Nodes alone changes only the second, and is made by updating the members alone
// (see updateMembers).
func (s *lbSpec) fingerprint() string {
	return s.configFingerprint() + "." + s.membersFingerprint()
}

// configFingerprint covers everything but the members.
func (s *lbSpec) configFingerprint() string {
	h := lbcycle.NewHash()
	w := h.Line
	w("v2", s.name, s.memberSubnetID, s.method, s.proxy, s.xff, s.connLimit, s.allowedCIDRs)
	if s.family == v1.IPv6Protocol || s.secondFamily != "" {
		w("family", s.family, s.secondFamily)
	}
	for _, p := range s.ports {
		w("port", p.Protocol, p.Port, p.NodePort)
	}
	for _, t := range []*int{s.timeouts.clientData, s.timeouts.memberConnect, s.timeouts.memberData, s.timeouts.tcpInspect} {
		if t == nil {
			w("timeout", "-")
		} else {
			w("timeout", *t)
		}
	}
	if m := s.monitor; m != nil {
		w("monitor", m.delay, m.timeout, m.maxRetries, m.maxRetriesDown, m.httpPort)
	}
	if g := s.sg; g != nil {
		w("sg", g.hcPort, g.nodePorts)
	}
	if t := s.tlsFingerprint(); t != "" {
		w("tls", t)
	}
	return h.Config()
}

// sgFingerprint covers what the security group is made from: its ports, the
// members and their servers, the sources.
func (s *lbSpec) sgFingerprint() string {
	if s.sg == nil {
		return "-"
	}
	h := lbcycle.NewHash()
	h.Line("sg", s.sg.hcPort, s.sg.nodePorts, s.sg.servers, s.members, s.allowedCIDRs)
	return h.Config()
}

// membersFingerprint covers the members' addresses (sorted).
func (s *lbSpec) membersFingerprint() string { return lbcycle.MembersOf(s.members) }

// noFloatingIP: the load balancer's address is its VIP (internal, or IPv6
// with no IPv4 VIP: Neutron's floating IPs are IPv4).
func (s *lbSpec) noFloatingIP() bool {
	return s.internal || s.family == v1.IPv6Protocol && s.secondFamily != v1.IPv4Protocol
}

// isFamily says whether a is of family f ("" is none).
func isFamily(a netip.Addr, f v1.IPFamily) bool {
	return f != "" && a.Is6() == (f == v1.IPv6Protocol)
}

// otherVIP is, on a dual-stack load balancer, its VIP of the family addr is
// not of: the second address of its status.
func (s *lbSpec) otherVIP(lb *loadbalancers.LoadBalancer, addr string) string {
	if s.secondFamily == "" {
		return ""
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return ""
	}
	vips := []string{lb.VipAddress}
	for _, av := range lb.AdditionalVips {
		vips = append(vips, av.IPAddress)
	}
	for _, v := range vips {
		if b, err := netip.ParseAddr(v); err == nil && b.Is6() != a.Is6() {
			return v
		}
	}
	return ""
}
