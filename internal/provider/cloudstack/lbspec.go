package cloudstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
	"github.com/overcast-ccm/overcast/internal/providerid"
)

// lbSpec is everything a Service asks of its load balancer rules.
type lbSpec struct {
	// name is the peer's load balancer name: "a" and the Service UID without
	// dashes, 32 characters, which begins each rule's name.
	name      string
	ports     []portSpec // sorted
	algorithm string
	// ruleCIDRs are the rules' cidrlist; sources what the firewall rules or
	// ACL items let in. peerRuleCIDRs are the cidrlist the peer gives a rule
	// (the source-cidrs annotation, else everyone): where a firewall rule
	// alone decides what reaches a port, a rule is made so, as the peer
	// makes it, and lets in the same (the sources, by its firewall rule):
	// going back to the peer then rebuilds none.
	ruleCIDRs, sources, peerRuleCIDRs []string
	// peerSources are what the peer's firewall rule lets in (the source
	// ranges, else everyone): with peerRuleCIDRs, the same as ours.
	peerSources []string
	ip          string // spec.loadBalancerIP ("" for any)
	hostname    string // published instead of the address
	check       *csapi.HealthCheck
	members     []string // the eligible Nodes' machine ids, sorted
	network     string   // the members' guest network
}

// portSpec is one rule: a protocol (tcp, udp or tcp-proxy), the public port
// and the node port it forwards to.
type portSpec struct {
	proto          string
	port, nodePort int
}

// ruleName is the peer's name of a port's rule: <lbname>-<proto>-<port>.
func (p portSpec) ruleName(lb string) string { return fmt.Sprintf("%s-%s-%d", lb, p.proto, p.port) }

// ruleOf is the rule the spec asks for port p on the address and network.
// peerShaped: the peer's shape, the address the Service's own, so that its
// firewall rules are all the Service's and they let in the sources (on an
// address shared with others, another firewall rule may let everyone in:
// the cidrlist holds the sources).
func ruleOf(spec lbSpec, p portSpec, addressID, network string, peerShaped bool) csapi.Rule {
	cidrs := spec.ruleCIDRs
	if peerShaped {
		cidrs = spec.peerRuleCIDRs
	}
	return csapi.Rule{Name: p.ruleName(spec.name), Algorithm: spec.algorithm, Protocol: p.proto, AddressID: addressID,
		Network: network, PublicPort: p.port, PrivatePort: p.nodePort, CIDRs: cidrs}
}

// l4 is the transport protocol of a rule protocol (tcp-proxy is TCP).
func l4(proto string) string {
	if proto == "tcp-proxy" {
		return "tcp"
	}
	return proto
}

var ruleNameRE = regexp.MustCompile(`^(a[0-9a-f]{31})-(tcp|udp|tcp-proxy)-([0-9]{1,5})$`)

// lbNameOf is the load balancer name a rule's name begins with, when it is
// named as the peer and we name rules ("" otherwise).
func lbNameOf(ruleName string) string {
	m := ruleNameRE.FindStringSubmatch(ruleName)
	if m == nil {
		return ""
	}
	return m[1]
}

// lbName is the Service's load balancer name, as the peer names it.
func lbName(svc *v1.Service) string { return cloudprovider.DefaultLoadBalancerName(svc) }

var everyone = []string{"0.0.0.0/0"}

// parseSpec reads what the Service asks, refusing what CloudStack cannot do;
// every problem is told at once, in the order of the fields.
// members and network are resolved from the Nodes afterwards.
func parseSpec(svc *v1.Service) (lbSpec, error) {
	s := lbSpec{name: lbName(svc)}
	ports, errs := parsePorts(svc)
	s.ports = ports
	algorithm, err := parseAlgorithm(svc)
	s.algorithm = algorithm
	errs = appendErr(errs, err)
	errs = append(errs, parseSources(svc, &s)...)
	s.ip, err = parseIP(svc)
	errs = appendErr(errs, err)
	if h, err := annotation.CloudStackHostname.String(svc); err == nil {
		s.hostname = strings.TrimSpace(h)
	}
	check, checkErrs := parseHealthCheck(svc)
	s.check = check
	errs = append(errs, checkErrs...)
	return s, errors.Join(errs...)
}

// appendErr is errs with err, if any.
func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

// parsePorts are the Service's ports as rules, sorted by port and protocol:
// one rule for a port of both TCP protocols' transport, none for a port
// without its node port yet.
func parsePorts(svc *v1.Service) ([]portSpec, []error) {
	var errs []error
	proxy, err := annotation.CloudStackProxyProtocol.Bool(svc)
	if err != nil && !errors.Is(err, annotation.ErrNotSet) {
		errs = append(errs, err)
	}
	if len(svc.Spec.Ports) == 0 {
		errs = append(errs, errors.New("the Service has no ports"))
	}
	var ports []portSpec
	seen := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		proto, err := ruleProtocol(p, proxy)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		key := l4(proto) + "/" + strconv.Itoa(int(p.Port))
		if seen[key] {
			continue
		}
		seen[key] = true
		ports = append(ports, portSpec{proto: proto, port: int(p.Port), nodePort: int(p.NodePort)})
	}
	slices.SortFunc(ports, func(a, b portSpec) int {
		if a.port != b.port {
			return a.port - b.port
		}
		return strings.Compare(a.proto, b.proto)
	})
	return ports, errs
}

// ruleProtocol is a port's rule protocol: tcp (tcp-proxy with the proxy
// protocol annotation) or udp, which are all CloudStack's rules carry; an
// error for a port with no node port yet.
func ruleProtocol(p v1.ServicePort, proxy bool) (string, error) {
	var proto string
	switch p.Protocol {
	case v1.ProtocolTCP, "":
		proto = "tcp"
		if proxy {
			proto = "tcp-proxy"
		}
	case v1.ProtocolUDP:
		proto = "udp"
	default:
		return "", fmt.Errorf("port %d: CloudStack load balancer rules carry TCP and UDP, not %s", p.Port, p.Protocol)
	}
	if p.NodePort == 0 {
		return "", fmt.Errorf("port %d/%s has no node port yet", p.Port, p.Protocol)
	}
	return proto, nil
}

// parseAlgorithm is the rules' algorithm: the annotation's, else source for
// ClientIP affinity, else roundrobin (the peer's defaults).
func parseAlgorithm(svc *v1.Service) (string, error) {
	algorithm := "roundrobin"
	if svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		algorithm = "source"
	}
	a, err := annotation.CloudStackAlgorithm.OneOf(svc, annotation.CloudStackAlgorithms)
	switch {
	case err == nil:
		return a, nil
	case errors.Is(err, annotation.ErrNotSet):
		return algorithm, nil
	}
	return algorithm, err
}

// parseSources sets what the rules' cidrlists and the openings let in, ours
// and the peer's, from the source-cidrs annotation and
// spec.loadBalancerSourceRanges.
func parseSources(svc *v1.Service, s *lbSpec) []error {
	var errs []error
	annotated, err := annotation.CloudStackSourceCIDRs.CIDRs(svc)
	if err != nil && !errors.Is(err, annotation.ErrNotSet) {
		errs = append(errs, err)
	}
	ranges, err := sourceRanges(svc)
	errs = appendErr(errs, err)
	s.ruleCIDRs = firstSet(annotated, ranges)
	s.sources = firstSet(ranges, annotated)
	s.peerRuleCIDRs = firstSet(annotated, everyone)
	s.peerSources = firstSet(ranges, everyone)
	return errs
}

// parseIP is spec.loadBalancerIP ("" for any): CloudStack's public
// addresses are IPv4.
func parseIP(svc *v1.Service) (string, error) {
	ip := strings.TrimSpace(svc.Spec.LoadBalancerIP)
	if ip == "" {
		return "", nil
	}
	a, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return "", fmt.Errorf("spec.loadBalancerIP %q is not an IP address", ip)
	case !a.Is4():
		return "", fmt.Errorf("spec.loadBalancerIP %s: CloudStack public addresses are IPv4", ip)
	}
	return a.String(), nil
}

// parseHealthCheck is the rules' health check, when the health check path
// annotation asks for one, with the peer's timings but the interval
// annotation's.
func parseHealthCheck(svc *v1.Service) (*csapi.HealthCheck, []error) {
	path, err := annotation.CloudStackHealthCheckPath.NonEmptyString(svc)
	if err != nil {
		if errors.Is(err, annotation.ErrNotSet) {
			return nil, nil
		}
		return nil, []error{err}
	}
	var errs []error
	if !strings.HasPrefix(path, "/") {
		errs = append(errs, &annotation.InvalidError{Name: annotation.CloudStackHealthCheckPath, Value: path, Accepted: "an absolute path such as /healthz"})
	}
	check := &csapi.HealthCheck{Path: path, Interval: 5, Timeout: 2, Healthy: 2, Unhealthy: 1}
	if n, err := annotation.CloudStackHealthCheckInterval.Int(svc, 3, 20940); err == nil {
		check.Interval = n
	} else if !errors.Is(err, annotation.ErrNotSet) {
		errs = append(errs, err)
	}
	return check, errs
}

// sourceRanges is spec.loadBalancerSourceRanges, nil when unset.
func sourceRanges(svc *v1.Service) ([]string, error) {
	var out []string
	for _, r := range svc.Spec.LoadBalancerSourceRanges {
		p, err := netip.ParsePrefix(strings.TrimSpace(r))
		if err != nil {
			return nil, fmt.Errorf("spec.loadBalancerSourceRanges: %q is not a CIDR", r)
		}
		out = append(out, p.Masked().String())
	}
	return out, nil
}

// firstSet is the first of the lists that is set, sorted; everyone if none is.
func firstSet(lists ...[]string) []string {
	for _, l := range lists {
		if l != nil {
			out := slices.Clone(l)
			slices.Sort(out)
			return slices.Compact(out)
		}
	}
	return everyone
}

// resolveMembers finds the eligible Nodes' machines (from the shared listing)
// and their guest network, once for a Node set (every Service on it shares
// them). A Node whose machine is not known yet is left out.
func (s *steps) resolveMembers(ctx context.Context, spec *lbSpec, nodes []*v1.Node) error {
	m := s.memberSet.Get(nodes, "", func() (machinesOf, bool) {
		m := s.machinesOf(ctx, nodes)
		return m, m.err == nil && m.certain
	})
	spec.members, spec.network = m.members, m.network
	return m.err
}

// machinesOf is what a Node set is as members: its machines, sorted, and
// their one guest network, or the error that refuses them.
type machinesOf struct {
	members []string
	network string
	err     error
	// certain: every Node's machine was found by its id (not by its
	// name, nor missing), so that the Node set alone decides it.
	certain bool
}

func (s *steps) machinesOf(ctx context.Context, nodes []*v1.Node) machinesOf {
	out := machinesOf{certain: true}
	networks := map[string][]string{}
	for _, n := range nodes {
		id, err := providerid.ParseCloudStack(n.Spec.ProviderID)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Leaving out a Node that is not CloudStack's", "node", n.Name, "err", err)
			continue
		}
		key := "id/" + id
		if id == "" {
			key, out.certain = "name/"+shortName(n.Name), false
		}
		m, found, err := s.machines.Get(ctx, key)
		if err != nil {
			return machinesOf{err: err}
		}
		if !found {
			klog.FromContext(ctx).V(2).Info("Leaving out a Node whose virtual machine is not known", "node", n.Name)
			out.certain = false
			continue
		}
		out.members = append(out.members, m.ID)
		if net := m.DefaultNIC().Network; net != "" {
			networks[net] = append(networks[net], n.Name)
		}
	}
	slices.Sort(out.members)
	out.members = slices.Clip(slices.Compact(out.members))
	out.network, out.err = oneNetwork(networks)
	return out
}

// oneNetwork is the one guest network of the members, or the refusal of
// members on several.
func oneNetwork(networks map[string][]string) (string, error) {
	switch len(networks) {
	case 0:
	case 1:
		for n := range networks {
			return n, nil
		}
	default:
		var parts []string
		for n, nodes := range networks {
			parts = append(parts, fmt.Sprintf("%s (%s)", n, strings.Join(nodes, ", ")))
		}
		slices.Sort(parts)
		return "", outcome.Refuse(outcome.ReasonUnsupportedService,
			"The Nodes are on %d guest networks: %s; a load balancer rule reaches one network: exclude the others' Nodes with the node.kubernetes.io/exclude-from-external-load-balancers label",
			len(networks), strings.Join(parts, "; "))
	}
	return "", nil
}

// configFingerprint covers everything but the members.
func (s *lbSpec) configFingerprint() string {
	h := lbcycle.NewHash()
	w := h.Line
	w("v1", s.name, s.algorithm, s.ruleCIDRs, s.sources, s.ip, s.hostname, s.network)
	for _, p := range s.ports {
		w("port", p.proto, p.port, p.nodePort)
	}
	if c := s.check; c != nil {
		w("check", c.Path, c.Interval, c.Timeout, c.Healthy, c.Unhealthy)
	}
	return h.Config()
}

// membersFingerprint covers the members (sorted).
func (s *lbSpec) membersFingerprint() string { return lbcycle.MembersOf(s.members) }
