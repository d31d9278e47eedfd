package oci

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// The peer's defaults (oci-cloud-controller-manager load_balancer.go,
// load_balancer_spec.go).
const (
	defaultPolicy       = "ROUND_ROBIN"
	flexible            = "flexible"
	defaultFlexMin      = 10
	defaultFlexMax      = 100
	proxyHealthPort     = 10256 // kube-proxy's health check, for externalTrafficPolicy Cluster
	healthPath          = "/healthz"
	defaultRetries      = 3
	defaultIntervalMS   = 10000
	defaultTimeoutMS    = 3000
	defaultIdleTCP      = 300
	defaultIdleHTTP     = 60
	lbNamePrefixEnvVar  = "LOAD_BALANCER_PREFIX"
	excludeFromLBsLabel = "node.kubernetes.io/exclude-from-external-load-balancers"
)

// Ownership marks in the freeform tags of the load balancers this CCM
// creates: the cluster's UID and the Service's.
const (
	tagCluster = "overcast-cluster"
	tagService = "overcast-service"
)

// lbSpec is everything a Service asks of its load balancer.
type lbSpec struct {
	// name is the peer's displayName: [$LOAD_BALANCER_PREFIX-]<Service UID>.
	name        string
	internal    bool
	subnets     []string
	shape       string
	flex        *ShapeDetails // for the flexible shape
	listeners   map[string]Listener
	backendSets map[string]BackendSet // backends sorted
	freeform    map[string]string
	defined     map[string]map[string]any
	proxyMode   bool // ingress-ip-mode Proxy
	// ip is spec.loadBalancerIP: a reserved public IP ("" for OCI's choice).
	ip string
	// mode is the security rule management mode (All, Frontend, None);
	// sources the addresses admitted; listenerPorts and backendPorts (the
	// node ports and the health check's) the ports the rules open.
	mode                        string
	sources                     []string
	listenerPorts, backendPorts []int
}

// unsupported are the annotations this CCM does not serve yet: a Service
// using one is refused with a Warning and nothing is built for it.
var unsupported = []annotation.Name{
	annotation.OCISSLPorts, annotation.OCITLSSecret, annotation.OCITLSBackendSetSecret,
	annotation.OCIListenerSSLConfig, annotation.OCIBackendSetSSLConfig, annotation.OCIRuleSets,
	annotation.OCINetworkSecurityGroups, annotation.OCIBackendNetworkSecurityGroups,
	annotation.OCIWorkloadServiceAccount,
}

// parseSpec reads what the Service asks, checked whole: every problem at
// once, as one Problem, before any call.
func (c *Cloud) parseSpec(svc *v1.Service) (lbSpec, error) {
	var errs []error
	bad := func(err error) {
		if err != nil && !errors.Is(err, annotation.ErrNotSet) {
			errs = append(errs, err)
		}
	}
	s := lbSpec{name: lbName(svc), shape: flexible, listeners: map[string]Listener{}, backendSets: map[string]BackendSet{}}
	kind, err := annotation.OCILoadBalancerType.OneOf(svc, []string{"lb", "nlb"})
	bad(err)
	if strings.EqualFold(kind, "nlb") {
		errs = append(errs, fmt.Errorf("%s: network load balancers (nlb) are not served by this overcast-ccm yet; use lb", annotation.OCILoadBalancerType))
	}
	for _, n := range unsupported {
		if n.IsSet(svc) {
			errs = append(errs, fmt.Errorf("%s: not served by this overcast-ccm yet", n))
		}
	}
	if ip := strings.TrimSpace(svc.Spec.LoadBalancerIP); ip != "" {
		if a, err := netip.ParseAddr(ip); err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("spec.loadBalancerIP: %q is not an IPv4 address", ip))
		} else {
			s.ip = a.String()
		}
	}
	if s.mode = c.securityMode(svc, bad); s.mode == "NSG" {
		errs = append(errs, fmt.Errorf("%s: NSG: network security groups are not served by this overcast-ccm yet; use SL-All, SL-Frontend or None", annotation.OCISecurityRuleManagementMode))
	}
	s.sources, err = sources(svc)
	bad(err)
	if s.internal, err = annotation.OCIInternal.Bool(svc); err != nil {
		bad(err)
	}
	if s.internal && s.ip != "" {
		errs = append(errs, fmt.Errorf("spec.loadBalancerIP: an internal load balancer takes an address of its subnet that OCI chooses; loadBalancerIP asks for a reserved public IP"))
	}
	s.subnets = c.subnets(svc, bad)
	if shape, err := annotation.OCIShape.NonEmptyString(svc); err == nil {
		s.shape = shape
	} else {
		bad(err)
	}
	if strings.EqualFold(s.shape, flexible) {
		s.shape = flexible
		s.flex = &ShapeDetails{MinimumBandwidthInMbps: defaultFlexMin, MaximumBandwidthInMbps: defaultFlexMax}
		if v, err := annotation.OCIShapeFlexMin.Bandwidth(svc); err == nil {
			s.flex.MinimumBandwidthInMbps = v
		} else {
			bad(err)
		}
		if v, err := annotation.OCIShapeFlexMax.Bandwidth(svc); err == nil {
			s.flex.MaximumBandwidthInMbps = v
		} else {
			bad(err)
		}
		if s.flex.MinimumBandwidthInMbps > s.flex.MaximumBandwidthInMbps {
			errs = append(errs, fmt.Errorf("%s (%d) is more than %s (%d)", annotation.OCIShapeFlexMin, s.flex.MinimumBandwidthInMbps,
				annotation.OCIShapeFlexMax, s.flex.MaximumBandwidthInMbps))
		}
	}
	policy := defaultPolicy
	if p, err := annotation.OCIPolicy.OneOf(svc, []string{"ROUND_ROBIN", "LEAST_CONNECTIONS", "IP_HASH"}); err == nil {
		policy = strings.ToUpper(p)
	} else {
		bad(err)
	}
	check := healthCheck(svc, bad)
	protocol := "TCP"
	if p, err := annotation.OCIBackendProtocol.OneOf(svc, []string{"TCP", "HTTP"}); err == nil {
		protocol = strings.ToUpper(p)
	} else {
		bad(err)
	}
	conn := connection(svc, protocol, bad)
	for _, p := range svc.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP {
			errs = append(errs, fmt.Errorf("port %d is %s: an OCI load balancer (lb) serves TCP only; use %s: nlb", p.Port, p.Protocol, annotation.OCILoadBalancerType))
			continue
		}
		name := fmt.Sprintf("%s-%d", p.Protocol, p.Port)
		s.backendSets[name] = BackendSet{Name: name, Policy: policy, HealthChecker: check, Backends: []Backend{}}
		s.listeners[name] = Listener{Name: name, DefaultBackendSetName: name, Port: int(p.Port), Protocol: protocol, ConnectionConfiguration: conn}
		s.listenerPorts = append(s.listenerPorts, int(p.Port))
		s.backendPorts = append(s.backendPorts, int(p.NodePort))
	}
	s.backendPorts = append(s.backendPorts, check.Port)
	slices.Sort(s.listenerPorts)
	slices.Sort(s.backendPorts)
	s.listenerPorts, s.backendPorts = slices.Compact(s.listenerPorts), slices.Compact(s.backendPorts)
	if len(svc.Spec.Ports) == 0 {
		errs = append(errs, errors.New("the Service has no ports"))
	}
	s.freeform, s.defined = c.tags(svc, bad)
	if mode, err := annotation.OCIIngressIPMode.OneOf(svc, []string{"VIP", "Proxy"}); err == nil {
		s.proxyMode = strings.EqualFold(mode, "Proxy")
	} else {
		bad(err)
	}
	return s, errors.Join(errs...)
}

// lbName is the peer's name of the Service's load balancer.
func lbName(svc *v1.Service) string {
	prefix := os.Getenv(lbNamePrefixEnvVar)
	if prefix != "" && !strings.HasSuffix(prefix, "-") {
		prefix += "-"
	}
	name := prefix + string(svc.UID)
	if len(name) > 1024 {
		name = name[:1024]
	}
	return name
}

// securityMode is the Service's security rule management mode: the
// annotations', else the config's (which the peer ignores: issue #498).
func (c *Cloud) securityMode(svc *v1.Service, bad func(error)) string {
	if m, err := annotation.OCISecurityRuleManagementMode.OneOf(svc, []string{"SL-All", "SL-Frontend", "NSG", "None"}); err == nil {
		return map[string]string{"sl-all": ModeAll, "sl-frontend": ModeFrontend, "nsg": "NSG", "none": ModeNone}[strings.ToLower(m)]
	} else if !errors.Is(err, annotation.ErrNotSet) {
		bad(err)
		return ModeNone
	}
	if m, err := annotation.OCISecurityListManagementMode.OneOf(svc, []string{ModeAll, ModeFrontend, ModeNone}); err == nil {
		return map[string]string{"all": ModeAll, "frontend": ModeFrontend, "none": ModeNone}[strings.ToLower(m)]
	} else if !errors.Is(err, annotation.ErrNotSet) {
		bad(err)
		return ModeNone
	}
	if lb := c.cfg.LoadBalancer; lb != nil {
		return lb.SecurityListManagementMode
	}
	return ModeAll
}

// subnets are the load balancer's subnets: the annotations', else the
// config's.
func (c *Cloud) subnets(svc *v1.Service, bad func(error)) []string {
	var s1, s2 string
	if lb := c.cfg.LoadBalancer; lb != nil {
		s1, s2 = lb.Subnet1, lb.Subnet2
	}
	if v, err := annotation.OCISubnet1.OCID(svc, "subnet"); err == nil {
		s1 = v
	} else {
		bad(err)
	}
	if v, err := annotation.OCISubnet2.OCID(svc, "subnet"); err == nil {
		s2 = v
	} else {
		bad(err)
	}
	if s1 == "" {
		bad(fmt.Errorf("no subnet for the load balancer: set loadBalancer.subnet1 in the config or %s", annotation.OCISubnet1))
		return nil
	}
	if s2 == "" || s2 == s1 {
		return []string{s1}
	}
	return []string{s1, s2}
}

// healthCheck is the backend sets' health checker: kube-proxy's health check
// of every node, or the Service's own node port with externalTrafficPolicy
// Local (the nodes without its endpoints fail it).
func healthCheck(svc *v1.Service, bad func(error)) HealthChecker {
	hc := HealthChecker{Protocol: "HTTP", Port: proxyHealthPort, URLPath: healthPath, ReturnCode: 200,
		Retries: defaultRetries, IntervalInMillis: defaultIntervalMS, TimeoutInMillis: defaultTimeoutMS}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		hc.Port = int(svc.Spec.HealthCheckNodePort)
	}
	for _, f := range []struct {
		n        annotation.Name
		to       *int
		min, max int
	}{
		{annotation.OCIHealthCheckRetries, &hc.Retries, 1, 10},
		{annotation.OCIHealthCheckInterval, &hc.IntervalInMillis, 1000, 1800000},
		{annotation.OCIHealthCheckTimeout, &hc.TimeoutInMillis, 1, 600000},
	} {
		if v, err := f.n.Int(svc, f.min, f.max); err == nil {
			*f.to = v
		} else {
			bad(err)
		}
	}
	return hc
}

// connection is the listeners' idle timeout and PROXY protocol version.
func connection(svc *v1.Service, protocol string, bad func(error)) *ConnectionConfiguration {
	cc := &ConnectionConfiguration{IdleTimeout: defaultIdleTCP}
	if protocol == "HTTP" {
		cc.IdleTimeout = defaultIdleHTTP
	}
	if v, err := annotation.OCIConnectionIdleTimeout.Int(svc, 1, 7200); err == nil {
		cc.IdleTimeout = int64(v)
	} else {
		bad(err)
	}
	if v, err := annotation.OCIProxyProtocolVersion.Int(svc, 1, 2); err == nil {
		if protocol != "TCP" {
			bad(fmt.Errorf("%s: the PROXY protocol is for TCP listeners; the listeners are %s", annotation.OCIProxyProtocolVersion, protocol))
		}
		cc.BackendTCPProxyProtocolVersion = v
	} else {
		bad(err)
	}
	return cc
}

// tags are the load balancer's tags at creation: the initial overrides, else
// the config's (tags.loadBalancer, else tags.common), and the ownership marks.
func (c *Cloud) tags(svc *v1.Service, bad func(error)) (map[string]string, map[string]map[string]any) {
	var freeform map[string]string
	var defined map[string]map[string]any
	if t := c.cfg.Tags; t != nil {
		for _, tc := range []*TagConfig{t.Common, t.LoadBalancer} {
			if tc != nil {
				freeform, defined = tc.FreeformTags, tc.DefinedTags
			}
		}
	}
	if v, err := annotation.OCIInitialFreeformTagsOverride.FreeformTags(svc); err == nil {
		freeform = v
	} else {
		bad(err)
	}
	if v, err := annotation.OCIInitialDefinedTagsOverride.DefinedTags(svc); err == nil {
		defined = v
	} else {
		bad(err)
	}
	out := maps.Clone(freeform)
	if out == nil {
		out = map[string]string{}
	}
	out[tagCluster], out[tagService] = c.Cluster.Get(), string(svc.UID)
	return out, defined
}

// resolveBackends fills the backend sets with the eligible Nodes' internal
// addresses and the ports' node ports.
func (c *Cloud) resolveBackends(ctx context.Context, svc *v1.Service, s *lbSpec, nodes []*v1.Node) error {
	selector := labels.Everything()
	if v, err := annotation.OCINodeLabelSelector.NonEmptyString(svc); err == nil {
		if selector, err = labels.Parse(v); err != nil {
			return outcome.Invalid(fmt.Errorf("%s: %q is not a label selector: %w", annotation.OCINodeLabelSelector, v, err))
		}
	}
	var ips []string
	for _, n := range nodes {
		if _, excluded := n.Labels[excludeFromLBsLabel]; excluded || !selector.Matches(labels.Set(n.Labels)) {
			continue
		}
		ip, ok := provider.InternalIP(n.Status.Addresses, v1.IPv4Protocol)
		if !ok || !ip.Is4() {
			if !provider.AwaitingAddresses(n) {
				klog.FromContext(ctx).V(2).Info("Leaving out a Node without an IPv4 InternalIP", "node", n.Name)
				continue
			}
			m, found, err := c.find(ctx, n, snapshot.MaxAge)
			if err != nil || !found || m.PrivateIP == "" {
				klog.FromContext(ctx).V(2).Info("Leaving out a Node whose instance is not known yet", "node", n.Name)
				continue
			}
			ips = append(ips, m.PrivateIP)
			continue
		}
		ips = append(ips, ip.String())
	}
	slices.Sort(ips)
	ips = slices.Compact(ips)
	for _, p := range svc.Spec.Ports {
		name := fmt.Sprintf("%s-%d", p.Protocol, p.Port)
		bs, ok := s.backendSets[name]
		if !ok {
			continue
		}
		bs.Backends = make([]Backend, len(ips))
		for i, ip := range ips {
			bs.Backends[i] = Backend{IPAddress: ip, Port: int(p.NodePort), Weight: 1}
		}
		s.backendSets[name] = bs
	}
	return nil
}

// configFingerprint covers everything but the backends.
func (s *lbSpec) configFingerprint() string {
	h := lbcycle.NewHash()
	w := h.Line
	w("v1", s.name, s.internal, s.subnets, s.shape, s.flex, s.proxyMode, s.mode, s.sources, s.listenerPorts, s.backendPorts, s.ip)
	for _, name := range slices.Sorted(maps.Keys(s.listeners)) {
		l := s.listeners[name]
		w("listener", name, l.Port, l.Protocol, l.DefaultBackendSetName, *l.ConnectionConfiguration)
		bs := s.backendSets[name]
		w("set", name, bs.Policy, bs.HealthChecker)
	}
	w("tags", s.freeform, s.defined)
	return h.Config()
}

// membersFingerprint covers the backends.
func (s *lbSpec) membersFingerprint() string {
	var all []string
	for _, name := range slices.Sorted(maps.Keys(s.backendSets)) {
		for _, b := range s.backendSets[name].Backends {
			all = append(all, fmt.Sprintf("%s=%s:%d", name, b.IPAddress, b.Port))
		}
	}
	return lbcycle.MembersOf(all)
}
