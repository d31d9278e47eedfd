package openstack

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
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
// error means nothing may be changed in the cloud. Each part reads its own
// annotations; the problems are told in this order.
func (st *steps) spec(clusterName string, svc *v1.Service, nodes []*v1.Node) (lbSpec, error) {
	s := st.specDefaults(clusterName, svc)
	e := &specErrors{}
	a := specAnnotations{svc: svc, e: e}
	st.specAddresses(&s, a)
	s.specListeners(a)
	s.tls = st.tlsOf(svc, svc.Spec.Ports, e)
	s.monitor = st.monitorFor(svc, e)
	if v, err := annotation.OpenStackHostname.NonEmptyString(svc); e.keep(err) {
		if h, err := annotation.ParseHostname(v); e.keep(err) {
			s.hostname = h
		}
	}
	s.specPorts(svc, st.cfg.LoadBalancer.IPv6SubnetID, e)
	st.specMembers(&s, a, nodes)
	return s, errors.Join(e.errs...)
}

// specAnnotations reads a Service's annotations into a spec, keeping their
// problems.
type specAnnotations struct {
	svc *v1.Service
	e   *specErrors
}

func (a specAnnotations) str(n annotation.Name, into *string) {
	v, err := n.NonEmptyString(a.svc)
	setValid(a.e, into, v, err)
}

func (a specAnnotations) uuid(n annotation.Name, into *string) {
	if v, err := n.NonEmptyString(a.svc); a.e.keep(err) {
		id, err := annotation.ParseUUID(n, v)
		setValid(a.e, into, id, err)
	}
}

func (a specAnnotations) boolean(n annotation.Name, into *bool) {
	v, err := n.Bool(a.svc)
	setValid(a.e, into, v, err)
}

// setValid gives *into an annotation's value when it is set and valid; a
// problem is kept.
func setValid[T any](e *specErrors, into *T, v T, err error) {
	if e.keep(err) {
		*into = v
	}
}

// specDefaults is what the cloud.conf's [LoadBalancer] gives every Service of
// the family of svc's VIP.
func (st *steps) specDefaults(clusterName string, svc *v1.Service) lbSpec {
	cfg := st.cfg.LoadBalancer
	s := lbSpec{
		name:              lbName(clusterName, svc),
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
		family:            v1.IPv4Protocol,
	}
	if s.method == "" {
		s.method = "ROUND_ROBIN"
	}
	if len(svc.Spec.IPFamilies) > 0 {
		s.family = svc.Spec.IPFamilies[0]
	}
	if s.family == v1.IPv6Protocol {
		// The cloud.conf's subnet-id is the IPv4 VIPs'; its network is
		// where an IPv6 subnet is looked for when none is named.
		s.vipSubnetOf, s.subnetID = s.subnetID, cfg.IPv6SubnetID
	}
	return s
}

// specAddresses: where the VIP and the members live, the floating IP's
// network and subnet, and the create-time choices, from the annotations and
// a [LoadBalancerClass].
func (st *steps) specAddresses(s *lbSpec, a specAnnotations) {
	cfg := st.cfg.LoadBalancer
	floatingSubnet, floatingSubnetTags := cfg.FloatingSubnet, cfg.FloatingSubnetTags
	for _, f := range []struct {
		n    annotation.Name
		into *string
		uuid bool // an OpenStack id
	}{
		{annotation.OpenStackSubnetID, &s.subnetID, true},
		{annotation.OpenStackNetworkID, &s.networkID, true},
		{annotation.OpenStackPortID, &s.portID, true},
		{annotation.OpenStackMemberSubnetID, &s.memberSubnetID, true},
		{annotation.OpenStackFloatingNetworkID, &s.floatingNetworkID, true},
		{annotation.OpenStackFloatingSubnetID, &s.floatingSubnetID, true},
		{annotation.OpenStackFloatingSubnet, &floatingSubnet, false},
		{annotation.OpenStackFloatingSubnetTags, &floatingSubnetTags, false},
		{annotation.OpenStackFlavorID, &s.flavorID, true},
		{annotation.OpenStackAvailabilityZone, &s.availabilityZone, false},
	} {
		if f.uuid {
			a.uuid(f.n, f.into)
		} else {
			a.str(f.n, f.into)
		}
	}
	for _, f := range []struct {
		n    annotation.Name
		into *bool
	}{
		{annotation.OpenStackInternalLoadBalancer, &s.internal},
		{annotation.OpenStackKeepFloatingIP, &s.keepFIP},
		{annotation.OpenStackPublishOnlyPublicAddress, &s.onlyPublic},
		{annotation.OpenStackXForwardedFor, &s.xff},
	} {
		a.boolean(f.n, f.into)
	}
	st.specClass(s, a, &floatingSubnet, &floatingSubnetTags)
	s.specFloatingSubnet(a.e, floatingSubnet, floatingSubnetTags)
	if s.subnetID == "" && s.networkID == "" && s.portID == "" && s.vipSubnetOf == "" {
		a.e.add("no network for the VIP: set [LoadBalancer] subnet-id (or network-id) in the cloud.conf, or the annotation %s", annotation.OpenStackSubnetID)
	}
	if s.family == v1.IPv6Protocol && s.memberSubnetID == cfg.MemberSubnetID {
		// The cloud.conf's member subnet is the IPv4 members'.
		s.memberSubnetID = ""
	}
	if s.memberSubnetID == "" {
		s.memberSubnetID = s.subnetID
	}
	s.specLoadBalancerIP(a)
}

// specClass: a class names network choices that win over the annotations.
func (st *steps) specClass(s *lbSpec, a specAnnotations, floatingSubnet, floatingSubnetTags *string) {
	name, err := annotation.OpenStackClass.NonEmptyString(a.svc)
	if !a.e.keep(err) {
		return
	}
	class, ok := st.cfg.LoadBalancerClasses[name]
	if !ok {
		a.e.errs = append(a.e.errs, &annotation.InvalidError{Name: annotation.OpenStackClass, Value: name,
			Accepted: "the names of the cloud.conf's [LoadBalancerClass] sections: " + strings.Join(st.classNames(), ", ")})
		return
	}
	for _, f := range []struct {
		from string
		into *string
	}{
		{class.SubnetID, &s.subnetID}, {class.NetworkID, &s.networkID}, {class.MemberSubnetID, &s.memberSubnetID},
		{class.FloatingNetworkID, &s.floatingNetworkID}, {class.FloatingSubnetID, &s.floatingSubnetID},
		{class.FloatingSubnet, floatingSubnet}, {class.FloatingSubnetTags, floatingSubnetTags},
	} {
		if f.from != "" {
			*f.into = f.from
		}
	}
}

// specFloatingSubnet parses the floating subnet's name pattern and tags.
func (s *lbSpec) specFloatingSubnet(e *specErrors, pattern, tags string) {
	if pattern != "" {
		if p, err := annotation.ParseSubnetPattern(pattern); e.keep(err) {
			s.floatingSubnet = &p
		}
	}
	if tags != "" {
		if t, err := annotation.ParseSubnetTags(tags); e.keep(err) {
			s.floatingSubnetTags = &t
		}
	}
}

// specLoadBalancerIP: spec.loadBalancerIP is the floating IP of a public load
// balancer, the VIP of an internal one.
func (s *lbSpec) specLoadBalancerIP(a specAnnotations) {
	ip := a.svc.Spec.LoadBalancerIP
	if ip == "" {
		return
	}
	if _, err := netip.ParseAddr(ip); err != nil {
		a.e.add("spec.loadBalancerIP %q is not an IP address", ip)
	} else if s.internal || s.family == v1.IPv6Protocol {
		s.vipAddress = ip // an IPv6 load balancer's address is its VIP
	} else {
		s.floatingIP = ip
	}
}

// specListeners: the pools' method and protocol, the listeners' connection
// limit and timeouts.
func (s *lbSpec) specListeners(a specAnnotations) {
	svc, e := a.svc, a.e
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
}

// specPorts: the ports (their protocols, a NodePort each), the second family
// of a dual-stack Service, and the source ranges.
func (s *lbSpec) specPorts(svc *v1.Service, ipv6SubnetID string, e *specErrors) {
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
			s.secondSubnetID = ipv6SubnetID
		} else {
			s.secondSubnetID = s.vipSubnetOf
		}
	}
	s.ports = slices.Clone(svc.Spec.Ports)
	sort.Slice(s.ports, func(i, j int) bool { return portKey(s.ports[i]) < portKey(s.ports[j]) })
	s.specSourceRanges(svc, e)
}

// specSourceRanges: the listeners' allowed CIDRs. Octavia takes only ranges
// of the VIP's family; the others could never reach it. None of its family
// left would open it to everyone.
func (s *lbSpec) specSourceRanges(svc *v1.Service, e *specErrors) {
	ranges, err := servicehelpers.GetLoadBalancerSourceRanges(svc)
	if err != nil {
		e.errs = append(e.errs, err)
		return
	}
	if servicehelpers.IsAllowAll(ranges) {
		return
	}
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

func (st *steps) classNames() []string {
	names := make([]string, 0, len(st.cfg.LoadBalancerClasses))
	for n := range st.cfg.LoadBalancerClasses {
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
func (st *steps) monitorFor(svc *v1.Service, e *specErrors) *monitorSpec {
	cfg := st.cfg.LoadBalancer
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

// isFamily says whether a is of family f ("" is none).
func isFamily(a netip.Addr, f v1.IPFamily) bool {
	return f != "" && a.Is6() == (f == v1.IPv6Protocol)
}
