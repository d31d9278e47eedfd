package oci

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// IPv6 and dual-stack load balancers, from the Service's spec.ipFamilies
// and spec.ipFamilyPolicy, decided as oci-cloud-controller-manager v1.35.0
// decides them (load_balancer.go: getOciIpVersions) so that its load
// balancers are adopted with no write:
//
//   - The endpoint's version comes from the policy and the families the
//     load balancer's subnets have (an IPv4 cidrBlock, an IPv6 prefix in
//     ipv6CidrBlocks): SingleStack takes the Service's family, which a
//     subnet must have; RequireDualStack needs both; PreferDualStack takes
//     what the subnets have. An lb serves IPv4 and IPv6 with ipMode IPV6,
//     set when it is built (the peer never changes it, nor does this CCM);
//     an lb of IPv6 alone does not exist. An nlb's is its nlbIpVersion
//     (IPV4, IPV6, IPV4_AND_IPV6), changed in place (UpdateNetworkLoadBalancer).
//   - The listeners' and backend sets' versions come from the policy and
//     the Nodes' subnets: an lb's are IPv4 (its backends are the Nodes'
//     IPv4 addresses); an nlb has, for each port, a listener and a backend
//     set of each version (ipVersion IPV4 or IPV6, the IPv6 ones named with
//     "-IPv6": TCP-80-IPv6), the IPv6 backends at each Node's IPv6 address
//     (its InternalIP, else its ExternalIP: instances.go gives them to
//     Nodes labelled oci.oraclecloud.com/ip-family-ipv6), naming no
//     instance, as the peer's.
//   - Served IPv6 (of the Service's families), the default source range (no
//     loadBalancerSourceRanges) admits ::/0 too, or alone when IPv4 is not.
//
// Unlike the peer: a Service whose families a subnet lacks is refused with a
// Warning naming the subnet and the way out, before anything is built or
// changed (the peer's error names the subnet alone, and is retried); an
// lb whose ipMode is not the Service's is refused so too (the peer leaves
// it silently); an nlb's listeners are of the families the endpoint, the
// Nodes' subnets and the Service's spec.ipFamilies all have (the peer may
// ask an IPv6 listener whose backend set it never makes, which OCI
// refuses); an nlb gains a family before its listeners of it are made and
// loses one after they are gone, IPv4 to IPv6 through IPV4_AND_IPV6 (the
// peer orders by policy alone); ::/0 is added when IPv6 is served and of
// spec.ipFamilies (the peer's test is spec.ipFamilies alone); an lb's RequireDualStack is not refused
// for the Nodes' subnets, since its backends are IPv4 anyway. A Service
// asking IPv4 alone (the default) costs no call more.

// IP versions, as both APIs name them (ipMode takes the first two).
const (
	ipv4Version = "IPV4"
	ipv6Version = "IPV6"
	dualVersion = "IPV4_AND_IPV6"
	// ipv6Suffix ends the names of an nlb's IPv6 listeners and backend sets.
	ipv6Suffix = "-IPv6"
	anyIPv4    = "0.0.0.0/0"
	anyIPv6    = "::/0"
)

// ipVersions are the IP families a Service asks for and the versions its
// load balancer serves them with.
type ipVersions struct {
	policy   v1.IPFamilyPolicy
	families []v1.IPFamily // spec.ipFamilies ([IPv4] for none)
	// endpoint is the load balancer's version (an lb's ipMode is IPV6 for
	// IPV4_AND_IPV6); listeners those of its listeners and backend sets.
	endpoint  string
	listeners []string
}

// askedVersions are the families svc asks for: SingleStack IPv4 unless it
// says otherwise (as the peer reads an unset policy), served so until
// serveFamilies decides.
func askedVersions(svc *v1.Service) ipVersions {
	v := ipVersions{policy: v1.IPFamilyPolicySingleStack, families: []v1.IPFamily{v1.IPv4Protocol}, endpoint: ipv4Version,
		listeners: []string{ipv4Version}}
	if p := svc.Spec.IPFamilyPolicy; p != nil && *p != "" {
		v.policy = *p
	}
	if len(svc.Spec.IPFamilies) > 0 {
		v.families = slices.Clone(svc.Spec.IPFamilies)
	}
	return v
}

// single says the Service asks for one family (SingleStack, or no policy).
func (v ipVersions) single() bool {
	return v.policy == v1.IPFamilyPolicySingleStack || v.policy == ""
}

// first is the Service's first family (IPv4 for none).
func (v ipVersions) first() v1.IPFamily {
	if len(v.families) == 0 {
		return v1.IPv4Protocol
	}
	return v.families[0]
}

// ipv4Only says the Service asks for IPv4 alone: served so without a look
// at a subnet.
func (v ipVersions) ipv4Only() bool {
	return v.single() && v.first() != v1.IPv6Protocol
}

// asked says what the Service asks, for messages.
func (v ipVersions) asked() string {
	if v.single() {
		return fmt.Sprintf("spec.ipFamilyPolicy SingleStack of %s", v.first())
	}
	return "spec.ipFamilyPolicy " + string(v.policy)
}

// check refuses, before any call, what no subnet can serve: an lb of IPv6
// alone.
func (v ipVersions) check(kind string) error {
	if kind == ociapi.KindLB && v.single() && v.first() == v1.IPv6Protocol {
		return fmt.Errorf("%s: an OCI load balancer (lb) is not IPv6 alone (its IPv6 address comes with an IPv4 one); ask for PreferDualStack or RequireDualStack, or use %s: nlb",
			v.asked(), "oci.oraclecloud.com/load-balancer-type")
	}
	return nil
}

// fingerprint writes what is not the default.
func (v ipVersions) fingerprint(w func(...any)) {
	if versionOr(v.endpoint) != ipv4Version || !slices.Equal(v.listeners, []string{ipv4Version}) {
		w("ip", v.endpoint, v.listeners)
	}
}

// versionOr is an IP version, IPV4 for none (the APIs' default).
func versionOr(version string) string {
	if version == "" {
		return ipv4Version
	}
	return version
}

// versionFamilies says which families a version serves.
func versionFamilies(version string) (v4, v6 bool) {
	switch versionOr(version) {
	case ipv6Version:
		return false, true
	case dualVersion:
		return true, true
	}
	return true, false
}

// versionOf is the version serving the families of versions (IPV4, IPV6).
func versionOf(versions []string) string {
	switch {
	case len(versions) > 1:
		return dualVersion
	case len(versions) == 1:
		return versions[0]
	}
	return ipv4Version
}

// subnetFamilies says which families one of subnets has: an IPv4 cidrBlock
// (OCI names an IPv6-only subnet's "<null>", as the peer reads it) and an
// IPv6 prefix.
func subnetFamilies(subnets []ociapi.Subnet) (v4, v6 bool) {
	for _, s := range subnets {
		v4 = v4 || (s.CIDRBlock != "" && !strings.Contains(s.CIDRBlock, "null"))
		v6 = v6 || len(s.IPv6CIDRBlocks) > 0 || s.IPv6CIDRBlock != ""
	}
	return v4, v6
}

// decide is the versions the policy asks of subnets with the families has4
// and has6, as the peer decides them; nil and the family missing when they
// cannot serve it.
func (v ipVersions) decide(has4, has6 bool) ([]string, v1.IPFamily) {
	switch v.policy {
	case v1.IPFamilyPolicyRequireDualStack:
		if !has6 {
			return nil, v1.IPv6Protocol
		}
		if !has4 {
			return nil, v1.IPv4Protocol
		}
		return []string{ipv4Version, ipv6Version}, ""
	case v1.IPFamilyPolicyPreferDualStack:
		var out []string
		if has4 {
			out = append(out, ipv4Version)
		}
		if has6 {
			out = append(out, ipv6Version)
		}
		return out, v1.IPv4Protocol
	}
	if v.first() == v1.IPv6Protocol {
		if !has6 {
			return nil, v1.IPv6Protocol
		}
		return []string{ipv6Version}, ""
	}
	if !has4 {
		return nil, v1.IPv4Protocol
	}
	return []string{ipv4Version}, ""
}

// serveFamilies decides the versions the Service's load balancer serves
// (the endpoint's from its subnets, the listeners' from the subnets of
// members), refusing what the subnets cannot serve; an nlb's listeners and
// backend sets of each version are made here, and the default sources
// admit IPv6 when it is served.
func (st *steps) serveFamilies(ctx context.Context, s *lbSpec, members []member) error {
	v := &s.ipv
	if v.ipv4Only() {
		return nil
	}
	subnets, err := st.subnetsByID(ctx, s.subnets)
	if err != nil {
		return err
	}
	endpoint, missing := v.decide(subnetFamilies(subnets))
	if endpoint == nil {
		return v.lacks(missing, "the "+noun(s.kind)+"'s subnet "+strings.Join(s.subnets, " and "),
			"give it one, name a subnet that has one ("+string(annotationsOf[s.kind].subnet)+", or loadBalancer.subnet1 in the config), or ask for PreferDualStack")
	}
	if v.policy == v1.IPFamilyPolicyPreferDualStack && len(endpoint) == 1 {
		klog.FromContext(ctx).V(2).Info("The load balancer's subnet has one IP family: PreferDualStack is served with it alone", "subnets", s.subnets, "family", endpoint[0])
	}
	v.endpoint = versionOf(endpoint)
	if s.ip != "" && v.endpoint == ipv6Version {
		return outcome.Refuse(outcome.ReasonUnsupportedService, "spec.loadBalancerIP %s is a reserved public IPv4 address, and %s makes the %s IPv6 alone",
			s.ip, v.asked(), noun(s.kind))
	}
	if s.kind == ociapi.KindLB {
		if v.endpoint == ipv6Version {
			return outcome.Refuse(outcome.ReasonUnsupportedService, "%s: the load balancer's subnet %s has no IPv4 CIDR, and an OCI load balancer (lb) is not IPv6 alone; use oci.oraclecloud.com/load-balancer-type: nlb",
				v.asked(), strings.Join(s.subnets, " and "))
		}
		s.sources = v.sources(s.sources, slices.DeleteFunc(endpoint, func(version string) bool { return !slices.Contains(v.familyVersions(), version) }))
		return nil
	}
	return st.serveNLBFamilies(ctx, s, members, endpoint)
}

// serveNLBFamilies decides an nlb's listeners' versions from the subnets of
// members, and makes its listeners and backend sets of each.
func (st *steps) serveNLBFamilies(ctx context.Context, s *lbSpec, members []member, endpoint []string) error {
	v := &s.ipv
	nodes, err := st.memberSubnets(ctx, members)
	if err != nil {
		return err
	}
	has4, has6 := true, true // no Node's subnet known: as the peer, no constraint
	if len(nodes) > 0 {
		has4, has6 = subnetFamilies(nodes)
	}
	versions, missing := v.decide(has4, has6)
	if versions == nil {
		ids := make([]string, len(nodes))
		for i, n := range nodes {
			ids[i] = n.ID
		}
		return v.lacks(missing, "the Nodes' subnets "+strings.Join(ids, ", "),
			"the network load balancer's backends of a family are the Nodes' addresses of it: give the subnets one, or ask for PreferDualStack")
	}
	v.listeners = slices.DeleteFunc(versions, func(version string) bool {
		return !slices.Contains(endpoint, version) || !slices.Contains(v.familyVersions(), version)
	})
	if len(v.listeners) == 0 {
		return outcome.Refuse(outcome.ReasonUnsupportedService, "%s with spec.ipFamilies %v: the network load balancer serves %s and the Nodes' subnets %s; no family is served by both and asked for",
			v.asked(), v.families, strings.Join(endpoint, " and "), strings.Join(versions, " and "))
	}
	s.addFamilies()
	s.sources = v.sources(s.sources, v.listeners)
	return nil
}

// familyVersions are the versions of the Service's spec.ipFamilies.
func (v ipVersions) familyVersions() []string {
	out := make([]string, 0, len(v.families))
	for _, f := range v.families {
		out = append(out, map[v1.IPFamily]string{v1.IPv4Protocol: ipv4Version, v1.IPv6Protocol: ipv6Version}[f])
	}
	return out
}

// lacks is the refusal of a Service asking for a family that where lacks.
func (v ipVersions) lacks(missing v1.IPFamily, where, hint string) error {
	cidr := "an IPv4 CIDR (cidrBlock)"
	if missing == v1.IPv6Protocol {
		cidr = "an IPv6 prefix (ipv6CidrBlocks)"
	}
	return outcome.Refuse(outcome.ReasonUnsupportedService, "%s asks for %s, and %s has no %s: %s", v.asked(), missing, where, strings.TrimPrefix(cidr, "an "), hint)
}

// sources are the Service's sources for a load balancer serving versions
// of its spec.ipFamilies: the default (0.0.0.0/0, no loadBalancerSourceRanges)
// admits ::/0 too when IPv6 is served, alone when IPv4 is not (rules the
// peer's make too: it adds ::/0 for spec.ipFamilies with IPv6, and drops
// 0.0.0.0/0 for SingleStack); ranges the Service gives are its.
func (v ipVersions) sources(sources, versions []string) []string {
	if !slices.Equal(sources, []string{anyIPv4}) || !slices.Contains(versions, ipv6Version) {
		return sources
	}
	if !slices.Contains(versions, ipv4Version) {
		return []string{anyIPv6}
	}
	return []string{anyIPv4, anyIPv6}
}

// addFamilies makes an nlb's listeners and backend sets (those nlbParts
// made, IPv4) of its listeners' versions: an IPv6 one of each named with
// ipv6Suffix, the IPv4 ones gone when IPv4 is not served.
func (s *lbSpec) addFamilies() {
	has4, has6 := slices.Contains(s.ipv.listeners, ipv4Version), slices.Contains(s.ipv.listeners, ipv6Version)
	for _, name := range slices.Sorted(maps.Keys(s.listeners)) {
		l, bs := s.listeners[name], s.backendSets[name]
		if has6 {
			l6, bs6 := l, bs
			l6.Name, l6.DefaultBackendSetName, l6.IPVersion = name+ipv6Suffix, name+ipv6Suffix, ipv6Version
			bs6.Name, bs6.IPVersion = name+ipv6Suffix, ipv6Version
			s.listeners[name+ipv6Suffix], s.backendSets[name+ipv6Suffix] = l6, bs6
		}
		if !has4 {
			delete(s.listeners, name)
			delete(s.backendSets, name)
			continue
		}
		l.IPVersion, bs.IPVersion = ipv4Version, ipv4Version
		s.listeners[name], s.backendSets[name] = l, bs
	}
}

// subnetsByID are the subnets of ids (looked up once an hour).
func (st *steps) subnetsByID(ctx context.Context, ids []string) ([]ociapi.Subnet, error) {
	out := make([]ociapi.Subnet, 0, len(ids))
	for _, id := range ids {
		sub, err := st.subnet(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, sub)
	}
	return out, nil
}

// memberSubnets are the subnets of the members' instances (by instance, else
// by IPv4 address), from the shared listing.
func (st *steps) memberSubnets(ctx context.Context, members []member) ([]ociapi.Subnet, error) {
	var ids []string
	for _, m := range members {
		key := "id/" + m.instance
		if m.instance == "" {
			if m.ip == "" {
				continue
			}
			key = "ip/" + m.ip
		}
		got, found, err := st.machines.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if found && got.SubnetID != "" && !slices.Contains(ids, got.SubnetID) {
			ids = append(ids, got.SubnetID)
		}
	}
	slices.Sort(ids)
	return st.subnetsByID(ctx, ids)
}

// member is an eligible Node as a backend: its IPv4 address, its IPv6 one
// ("" for none of a family) and its instance.
type member struct{ ip, ip6, instance string }

// compareMembers orders and tells members apart: by IPv4 address, else by
// IPv6 address after every IPv4 one.
func compareMembers(a, b member) int {
	switch {
	case a.ip != "" && b.ip != "":
		return strings.Compare(a.ip, b.ip)
	case a.ip != "":
		return -1
	case b.ip != "":
		return 1
	}
	return strings.Compare(a.ip6, b.ip6)
}

// nodeIPv6 is the Node's IPv6 address an nlb's IPv6 backend takes: its
// InternalIP, else its ExternalIP (the last of each, as the peer's
// NodeInternalIP and NodeExternalIp keep it); "" for none.
func nodeIPv6(addrs []v1.NodeAddress) string {
	var internal, external string
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a.Address)
		if err != nil || !ip.Is6() || ip.Is4In6() {
			continue
		}
		switch a.Type {
		case v1.NodeInternalIP:
			internal = ip.String()
		case v1.NodeExternalIP:
			external = ip.String()
		}
	}
	if internal != "" {
		return internal
	}
	return external
}

// backendsOf are the backends of a backend set of version: the members'
// addresses of its family at port (an IPv4 nlb backend naming its
// instance, as the peer's), sorted.
func backendsOf(kind, version string, members []member, port int) []ociapi.Backend {
	out := make([]ociapi.Backend, 0, len(members))
	for _, m := range members {
		switch {
		case version == ipv6Version && m.ip6 != "":
			out = append(out, newBackend(kind, m.ip6, port))
		case version != ipv6Version && m.ip != "":
			b := newBackend(kind, m.ip, port)
			if kind == ociapi.KindNLB {
				b.TargetID = m.instance
			}
			out = append(out, b)
		}
	}
	if version == ipv6Version {
		slices.SortFunc(out, func(a, b ociapi.Backend) int { return strings.Compare(a.IPAddress, b.IPAddress) })
		out = slices.CompactFunc(out, func(a, b ociapi.Backend) bool { return a.IPAddress == b.IPAddress })
	}
	return out
}

// sameVersion says whether two ipVersions are one ("" is IPV4).
func sameVersion(a, b string) bool { return versionOr(a) == versionOr(b) }

// convergeIPVersion makes the load balancer's version the Service's: an
// nlb's nlbIpVersion gains a family first (before the listeners of it are
// made), and loses one last (after those are gone); an lb's ipMode, which
// this CCM never changes, is refused when it differs (unless the Service
// only prefers dual-stack).
func (st *steps) convergeIPVersion(ctx context.Context, spec lbSpec, lb ociLB, first bool,
	change func(wr string, err error, what string) (string, error)) (string, error) {
	have := lb.Obj
	if have.Kind != ociapi.KindNLB {
		if msg := ipModeDrift(have, spec); first && msg != "" {
			return "", outcome.Refuse(outcome.ReasonUnsupportedService, "%s", msg)
		}
		return "", nil
	}
	got, want := versionOr(have.NLBIPVersion), versionOr(spec.ipv.endpoint)
	next := want
	if first {
		g4, g6 := versionFamilies(got)
		w4, w6 := versionFamilies(want)
		next = versionOf(slices.DeleteFunc([]string{ipv4Version, ipv6Version}, func(v string) bool {
			return (v == ipv4Version && !g4 && !w4) || (v == ipv6Version && !g6 && !w6)
		}))
	}
	if next == got {
		return "", nil
	}
	wr, err := st.api.SetNLBIPVersion(ctx, lb.ID, next)
	return change(wr, err, fmt.Sprintf("setting its IP version to %s (it was %s)", next, got))
}

// ipModeDrift says why an lb's ipMode is not the Service's ("" when it is,
// or when the Service prefers dual-stack and takes what the lb has).
func ipModeDrift(have ociapi.LB, spec lbSpec) string {
	want := ipv4Version
	if _, v6 := versionFamilies(spec.ipv.endpoint); v6 {
		want = ipv6Version
	}
	got := versionOr(have.IPMode)
	if got == want || spec.ipv.policy == v1.IPFamilyPolicyPreferDualStack {
		return ""
	}
	serves := map[string]string{ipv4Version: "IPv4 alone", ipv6Version: "IPv4 and IPv6"}
	return fmt.Sprintf("load balancer %s serves %s (ipMode %s) and the Service asks for %s (%s): OCI sets a load balancer's ipMode when it is built, and this CCM does not change it; delete and recreate the Service, or ask as before",
		have.ID, serves[got], got, serves[want], spec.ipv.asked())
}

// subnetCIDRs are a subnet's CIDRs of the families the listeners serve,
// for security rules: its IPv4 cidrBlock, its IPv6 prefixes.
func (v ipVersions) subnetCIDRs(sub ociapi.Subnet) []string {
	if len(v.listeners) == 0 || slices.Equal(v.listeners, []string{ipv4Version}) {
		return []string{sub.CIDRBlock}
	}
	var out []string
	if slices.Contains(v.listeners, ipv4Version) && !strings.Contains(sub.CIDRBlock, "null") {
		out = append(out, sub.CIDRBlock)
	}
	if slices.Contains(v.listeners, ipv6Version) {
		out = append(out, sub.IPv6CIDRBlocks...)
		if len(sub.IPv6CIDRBlocks) == 0 && sub.IPv6CIDRBlock != "" {
			out = append(out, sub.IPv6CIDRBlock)
		}
	}
	return out
}

// createVersion is what a create of kind asks: an lb's ipMode (IPV6 when
// dual-stack), an nlb's nlbIpVersion; "" for IPv4, the APIs' default.
func (v ipVersions) createVersion(kind string) string {
	version := versionOr(v.endpoint)
	switch {
	case version == ipv4Version:
		return ""
	case kind == ociapi.KindLB:
		return ipv6Version
	}
	return version
}

// addrFamily is the version of an address (IPV4 for one that is none).
func addrFamily(ip string) string {
	if a, err := netip.ParseAddr(ip); err == nil && a.Is6() && !a.Is4In6() {
		return ipv6Version
	}
	return ipv4Version
}
