package oci

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/emulator/oci/ocitest"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// nodeIPv6CIDR is the node subnet's IPv6 prefix in the dual-stack clusters
// of these tests (unique local: the Nodes' InternalIP).
const nodeIPv6CIDR = "fd00:10:0:1::/64"

// familyCluster is an emulator whose node subnet is dual-stack or not, a
// cloud on it, its Services' clientset and two Nodes labelled for IPv6,
// with the addresses the cloud gives them.
type familyCluster struct {
	e     *emulator.Emulator
	c     *Cloud
	kube  kubernetes.Interface
	nodes []*v1.Node
}

func newFamilyCluster(t *testing.T, dualNodes bool) *familyCluster {
	t.Helper()
	opts := emulator.Options{}
	if dualNodes {
		opts.IPv6CIDR = nodeIPv6CIDR
	}
	e, err := emulator.New(opts)
	e = coretest.Serve(t, e, err)
	fc := &familyCluster{e: e, c: clusterCloud(t, e, "family-cluster"), kube: fake.NewClientset()}
	fc.c.SetKube(fc.kube)
	for _, name := range []string{"node-a", "node-b"} {
		id, _ := e.AddMachine(name)
		n := nodeNamed(name, "oci://"+id)
		n.Labels = map[string]string{IPv6FamilyLabel: "true"}
		md, err := fc.c.InstanceMetadata(t.Context(), n)
		require.NoError(t, err)
		n.Status.Addresses = md.NodeAddresses
		fc.nodes = append(fc.nodes, n)
	}
	return fc
}

// service adds a Service of a kind asking for families with policy, its
// load balancer on subnet.
func (fc *familyCluster) service(t *testing.T, name, kind, subnet string, policy v1.IPFamilyPolicy, families ...v1.IPFamily) *v1.Service {
	t.Helper()
	svc := lbSvc(name, "uid-"+name, 30080)
	svc.Spec.IPFamilyPolicy, svc.Spec.IPFamilies = &policy, families
	svc.Annotations = map[string]string{string(annotationsOf[kind].subnet): subnet}
	if kind == ociapi.KindNLB {
		svc.Annotations["oci.oraclecloud.com/load-balancer-type"] = ociapi.KindNLB
	}
	_, err := fc.kube.CoreV1().Services(svc.Namespace).Create(t.Context(), svc, metav1.CreateOptions{})
	require.NoError(t, err)
	return svc
}

// ensure drives EnsureLoadBalancer until it is done or refused: the status,
// the steps on the way, and the error.
func (fc *familyCluster) ensure(t *testing.T, svc *v1.Service) (*v1.LoadBalancerStatus, []string, error) {
	t.Helper()
	var steps []string
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := fc.c.EnsureLoadBalancer(t.Context(), "kubernetes", providertest.Reread(t, fc.kube, svc), fc.nodes)
		var re *api.RetryError
		if !errors.As(err, &re) || time.Now().After(deadline) {
			return st, steps, err
		}
		steps = append(steps, err.Error())
		time.Sleep(20 * time.Millisecond)
	}
}

// writes counts the calls that change something.
func writes(e *emulator.Emulator) int {
	_, n := ocitest.ReadsAndWrites(e)
	return n
}

// built is the Service's load balancer as OCI lists it.
func (fc *familyCluster) built(t *testing.T, svc *v1.Service, kind string) ociapi.LB {
	t.Helper()
	list, err := fc.c.api.LoadBalancers(t.Context(), kind, ociapi.With(ociapi.InCompartment(fc.e.Fixture().CompartmentID), "displayName", nameOf(svc, kind)))
	require.NoError(t, err)
	require.Len(t, list, 1)
	return list[0]
}

// familyWant is what a Service's load balancer serves, or why it is refused.
type familyWant struct {
	refused   string
	endpoint  []string
	listeners []string
}

// wantFamilies restates the peer's decisions (load_balancer.go
// getLbEndpointIpVersion, getLbListenerBackendSetIpVersion,
// getOciIpVersions) for the fixture's subnets, which all have IPv4: the
// load balancer's subnet with IPv6 or not, the Nodes' likewise.
func wantFamilies(kind string, policy v1.IPFamilyPolicy, families []v1.IPFamily, dualLB, dualNodes bool) familyWant {
	both := []string{ipv4Version, ipv6Version}
	var w familyWant
	switch {
	case policy == v1.IPFamilyPolicySingleStack && families[0] == v1.IPv4Protocol:
		w.endpoint = []string{ipv4Version}
	case policy == v1.IPFamilyPolicySingleStack && kind == ociapi.KindLB:
		return familyWant{refused: "is not IPv6 alone"}
	case !dualLB && policy != v1.IPFamilyPolicyPreferDualStack:
		return familyWant{refused: "subnet " + "%s has no IPv6 prefix"}
	case !dualLB:
		w.endpoint = []string{ipv4Version}
	case policy == v1.IPFamilyPolicySingleStack:
		w.endpoint = []string{ipv6Version}
	default:
		w.endpoint = both
	}
	if kind == ociapi.KindLB {
		w.listeners = []string{ipv4Version}
		return w
	}
	nodes := []string{ipv4Version}
	if dualNodes {
		nodes = both
	}
	switch {
	case policy == v1.IPFamilyPolicySingleStack:
		nodes = []string{map[v1.IPFamily]string{v1.IPv4Protocol: ipv4Version, v1.IPv6Protocol: ipv6Version}[families[0]]}
		if !dualNodes && nodes[0] == ipv6Version {
			return familyWant{refused: "the Nodes' subnets"}
		}
	case policy == v1.IPFamilyPolicyRequireDualStack && !dualNodes:
		return familyWant{refused: "the Nodes' subnets"}
	}
	for _, v := range nodes {
		asked := slices.Contains(families, map[string]v1.IPFamily{ipv4Version: v1.IPv4Protocol, ipv6Version: v1.IPv6Protocol}[v])
		if slices.Contains(w.endpoint, v) && asked {
			w.listeners = append(w.listeners, v)
		}
	}
	if len(w.listeners) == 0 {
		return familyWant{refused: "no family is served by both"}
	}
	return w
}

// validFamilies says whether Kubernetes takes the pair (SingleStack has one
// family, RequireDualStack two).
func validFamilies(policy v1.IPFamilyPolicy, families []v1.IPFamily) bool {
	switch policy {
	case v1.IPFamilyPolicySingleStack:
		return len(families) == 1
	case v1.IPFamilyPolicyRequireDualStack:
		return len(families) == 2
	}
	return true
}

// Every policy and every family list Kubernetes takes, for each kind of load
// balancer (the provider's own list), on a load balancer subnet with IPv6
// or without, with Nodes with IPv6 or without: served as the peer decides,
// or refused before any write with a Warning saying why. One Service of
// each outcome is built whole and its load balancer, backends and status
// checked.
func TestEveryIPFamilyPolicyIsServedAsThePeerDecidesOrRefusedBeforeAnyWrite(t *testing.T) {
	policies := []v1.IPFamilyPolicy{v1.IPFamilyPolicySingleStack, v1.IPFamilyPolicyPreferDualStack, v1.IPFamilyPolicyRequireDualStack}
	familyLists := [][]v1.IPFamily{{v1.IPv4Protocol}, {v1.IPv6Protocol}, {v1.IPv4Protocol, v1.IPv6Protocol}, {v1.IPv6Protocol, v1.IPv4Protocol}}
	kinds := slices.Sorted(maps.Keys(annotationsOf))
	built := map[string]bool{}
	for _, dualNodes := range []bool{false, true} {
		fc := newFamilyCluster(t, dualNodes)
		f := fc.e.Fixture()
		for _, kind := range kinds {
			for _, policy := range policies {
				for _, families := range familyLists {
					if !validFamilies(policy, families) {
						continue
					}
					for _, dualLB := range []bool{false, true} {
						subnet := map[bool]string{false: f.SubnetID, true: f.DualStackSubnetID}[dualLB]
						name := strings.ToLower(fmt.Sprintf("%s-%s-%s-lb%t-nodes%t", kind, policy, strings.Join(familyNames(families), "-"), dualLB, dualNodes))
						// With dual-stack Nodes the node subnet, the fixture's, has IPv6 too.
						want := wantFamilies(kind, policy, families, dualLB || dualNodes, dualNodes)
						t.Run(name, func(t *testing.T) {
							svc := fc.service(t, name, kind, subnet, policy, families...)
							if want.refused != "" {
								fc.checkRefused(t, svc, strings.ReplaceAll(want.refused, "%s", subnet))
								return
							}
							spec := fc.checkSpec(t, svc, want)
							outcome := fmt.Sprint(kind, want.endpoint, want.listeners, spec.internal)
							if !built[outcome] {
								built[outcome] = true
								fc.checkBuilt(t, svc, kind, map[bool]string{false: nodeIPv6CIDR, true: emulator.DualStackIPv6CIDR}[dualLB], want)
							}
						})
					}
				}
			}
		}
	}
	assert.Len(t, built, 7, "lb IPv4 and dual-stack; nlb IPv4, IPv6, and dual-stack with listeners of IPv4, IPv6 or both: %v", slices.Sorted(maps.Keys(built)))
}

func familyNames(families []v1.IPFamily) []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = string(f)
	}
	return out
}

// checkRefused: the Service is refused with a Warning's reason and why,
// and nothing is written.
func (fc *familyCluster) checkRefused(t *testing.T, svc *v1.Service, why string) {
	t.Helper()
	before := writes(fc.e)
	_, _, err := fc.ensure(t, svc)
	require.Error(t, err)
	p, ok := outcome.AsProblem(err)
	require.True(t, ok, "a Problem (a Warning Event), not %v", err)
	assert.Equal(t, outcome.ReasonUnsupportedService, p.Reason)
	assert.Contains(t, err.Error(), why)
	assert.Equal(t, before, writes(fc.e), "no write for a refused Service")
}

// checkSpec: the spec serves want's versions, each backend set its
// family's addresses of the Nodes, the default sources those families'.
func (fc *familyCluster) checkSpec(t *testing.T, svc *v1.Service, want familyWant) lbSpec {
	t.Helper()
	spec, _, err := fc.c.lb.Spec(t.Context(), "kubernetes", providertest.Reread(t, fc.kube, svc), fc.nodes)
	require.NoError(t, err)
	assert.Equal(t, versionOf(want.endpoint), spec.ipv.endpoint)
	assert.Equal(t, want.listeners, spec.ipv.listeners)
	var wantNames []string
	for _, v := range want.listeners {
		wantNames = append(wantNames, map[string]string{ipv4Version: "TCP-80", ipv6Version: "TCP-80-IPv6"}[v])
	}
	assert.Equal(t, wantNames, slices.Sorted(maps.Keys(spec.listeners)))
	assert.Equal(t, wantNames, slices.Sorted(maps.Keys(spec.backendSets)))
	for name, bs := range spec.backendSets {
		require.Len(t, bs.Backends, 2, name)
		for _, b := range bs.Backends {
			assert.Equal(t, versionOr(bs.IPVersion), addrFamily(b.IPAddress), "%s: %s", name, b.IPAddress)
			if spec.kind == ociapi.KindNLB {
				assert.Equal(t, versionOr(bs.IPVersion) == ipv6Version, b.TargetID == "", "%s: an IPv6 backend names no instance, as the peer's", name)
			}
		}
	}
	wantSources := map[string][]string{ipv4Version: {anyIPv4}, ipv6Version: {anyIPv6}, dualVersion: {anyIPv4, anyIPv6}}
	served := spec.ipv.listeners
	if spec.kind == ociapi.KindLB {
		served = slices.DeleteFunc(slices.Clone(want.endpoint), func(v string) bool {
			return !slices.Contains(familyNames(spec.ipv.families), map[string]string{ipv4Version: "IPv4", ipv6Version: "IPv6"}[v])
		})
	}
	assert.Equal(t, wantSources[versionOf(served)], spec.sources)
	return spec
}

// checkBuilt builds the Service's load balancer and checks it: its version,
// its listeners' and backend sets', its IPv6 backends at the Nodes' IPv6
// addresses, and the status's addresses, one of each family served (the
// IPv6 one of the subnet's prefix).
func (fc *familyCluster) checkBuilt(t *testing.T, svc *v1.Service, kind, prefix string, want familyWant) {
	t.Helper()
	st, _, err := fc.ensure(t, svc)
	require.NoError(t, err)
	lb := fc.built(t, svc, kind)
	endpoint := versionOf(want.endpoint)
	if kind == ociapi.KindLB {
		assert.Equal(t, map[string]string{ipv4Version: ipv4Version, dualVersion: ipv6Version}[endpoint], versionOr(lb.IPMode))
	} else {
		assert.Equal(t, endpoint, versionOr(lb.NLBIPVersion))
	}
	for name, l := range lb.Listeners {
		bs := lb.BackendSets[l.DefaultBackendSetName]
		assert.Equal(t, versionOr(l.IPVersion), versionOr(bs.IPVersion), name)
		assert.Equal(t, strings.HasSuffix(name, "-IPv6"), versionOr(l.IPVersion) == ipv6Version, name)
		if versionOr(bs.IPVersion) == ipv6Version {
			var got, nodes []string
			for _, b := range bs.Backends {
				got = append(got, b.IPAddress)
			}
			for _, n := range fc.nodes {
				nodes = append(nodes, nodeIPv6(n.Status.Addresses))
			}
			assert.ElementsMatch(t, nodes, got, "%s: the Nodes' IPv6 addresses", name)
		}
	}
	var families []string
	for _, ing := range st.Ingress {
		if addrFamily(ing.IP) == ipv6Version {
			assert.True(t, netip.MustParsePrefix(prefix).Contains(netip.MustParseAddr(ing.IP)), "%s is of the subnet's prefix %s", ing.IP, prefix)
		}
		if !slices.Contains(families, addrFamily(ing.IP)) {
			families = append(families, addrFamily(ing.IP))
		}
	}
	assert.Equal(t, want.endpoint, families, "the status shows an address of each family served, IPv4 first: %v", st.Ingress)
}

// A network load balancer whose Service becomes dual-stack gains IPv6 (one
// UpdateNetworkLoadBalancer, a work request) before its IPv6 listeners are
// made; back to IPv4 alone, it loses IPv6 after they are gone.
func TestANetworkLoadBalancerChangesItsIPVersionAroundItsListeners(t *testing.T) {
	fc := newFamilyCluster(t, true)
	svc := fc.service(t, "flip", ociapi.KindNLB, fc.e.Fixture().DualStackSubnetID, v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	_, _, err := fc.ensure(t, svc)
	require.NoError(t, err)
	assert.Equal(t, ipv4Version, versionOr(fc.built(t, svc, ociapi.KindNLB).NLBIPVersion))

	setFamilies := func(policy v1.IPFamilyPolicy, families ...v1.IPFamily) {
		s := providertest.Reread(t, fc.kube, svc)
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &policy, families
		_, err := fc.kube.CoreV1().Services(s.Namespace).Update(t.Context(), s, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	updates := func() (n int) {
		for _, c := range fc.e.Calls() {
			if c.Method == http.MethodPut && c.Route == "PUT /20200501/networkLoadBalancers/{id}" {
				n += c.Count
			}
		}
		return n
	}
	index := func(steps []string, what string) int {
		return slices.IndexFunc(steps, func(s string) bool { return strings.Contains(s, what) })
	}

	setFamilies(v1.IPFamilyPolicyRequireDualStack, v1.IPv4Protocol, v1.IPv6Protocol)
	st, steps, err := fc.ensure(t, svc)
	require.NoError(t, err)
	assert.Equal(t, 1, updates())
	version, listener := index(steps, "setting its IP version to IPV4_AND_IPV6"), index(steps, "creating listener TCP-80-IPv6")
	require.NotEqual(t, -1, version, "%q", steps)
	assert.Less(t, version, listener, "the version first: %q", steps)
	lb := fc.built(t, svc, ociapi.KindNLB)
	assert.Equal(t, dualVersion, lb.NLBIPVersion)
	assert.Equal(t, ipv6Version, lb.Listeners["TCP-80-IPv6"].IPVersion)
	assert.Len(t, st.Ingress, 3, "public IPv4, IPv6, private IPv4")

	setFamilies(v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	st, steps, err = fc.ensure(t, svc)
	require.NoError(t, err)
	assert.Equal(t, 2, updates())
	version, listener = index(steps, "setting its IP version to IPV4 "), index(steps, "deleting listener TCP-80-IPv6")
	require.NotEqual(t, -1, listener, "%q", steps)
	assert.Less(t, listener, version, "the listeners first: %q", steps)
	lb = fc.built(t, svc, ociapi.KindNLB)
	assert.Equal(t, ipv4Version, lb.NLBIPVersion)
	assert.Equal(t, []string{"TCP-80"}, slices.Sorted(maps.Keys(lb.Listeners)))
	assert.Len(t, st.Ingress, 2)
}

// An lb's ipMode is set when it is built: a Service asking for another is
// refused with a Warning and nothing is written, unless it only prefers
// dual-stack (then it takes what the lb has).
func TestALoadBalancersIPModeIsNotChangedAndAServiceAskingIsTold(t *testing.T) {
	fc := newFamilyCluster(t, false)
	svc := fc.service(t, "mode", ociapi.KindLB, fc.e.Fixture().DualStackSubnetID, v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	_, _, err := fc.ensure(t, svc)
	require.NoError(t, err)

	s := providertest.Reread(t, fc.kube, svc)
	dual := v1.IPFamilyPolicyRequireDualStack
	s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &dual, []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	_, err = fc.kube.CoreV1().Services(s.Namespace).Update(t.Context(), s, metav1.UpdateOptions{})
	assert.NoError(t, err)
	fc.checkRefused(t, svc, "this CCM does not change it; delete and recreate the Service")

	prefer := v1.IPFamilyPolicyPreferDualStack
	s = providertest.Reread(t, fc.kube, svc)
	s.Spec.IPFamilyPolicy = &prefer
	_, err = fc.kube.CoreV1().Services(s.Namespace).Update(t.Context(), s, metav1.UpdateOptions{})
	assert.NoError(t, err)
	st, _, err := fc.ensure(t, svc)
	assert.NoError(t, err)
	assert.Len(t, st.Ingress, 1, "IPv4 alone, as built")
	assert.Equal(t, ipv4Version, versionOr(fc.built(t, svc, ociapi.KindLB).IPMode))
}

// The peer's load balancers of dual-stack Services, as it builds them (an
// nlb of nlbIpVersion IPV4_AND_IPV6 with TCP-80 and TCP-80-IPv6, ipVersion
// on each, IPv6 backends naming no instance; an lb of ipMode IPV6), are
// adopted with no write (security rules: mode None, which other tests
// cover for the peer's rules).
func TestThePeersDualStackLoadBalancersAreAdoptedWithNoWrite(t *testing.T) {
	fc := newFamilyCluster(t, true)
	f := fc.e.Fixture()
	hc := ociapi.HealthChecker{Protocol: "HTTP", Port: proxyHealthPort, URLPath: healthPath, ReturnCode: 200, Retries: 3, TimeoutInMillis: 3000, IntervalInMillis: 10000}
	backends := func(version string) []ociapi.Backend {
		var out []ociapi.Backend
		for _, n := range fc.nodes {
			id, _ := ParseProviderID(n.Spec.ProviderID)
			b := ociapi.Backend{IPAddress: n.Status.Addresses[0].Address, TargetID: id, Port: 30080, Weight: 1}
			if version == ipv6Version {
				b = ociapi.Backend{IPAddress: nodeIPv6(n.Status.Addresses), Port: 30080, Weight: 1}
			}
			out = append(out, b)
		}
		return out
	}

	nlbSvc := fc.service(t, "peer-nlb", ociapi.KindNLB, f.DualStackSubnetID, v1.IPFamilyPolicyRequireDualStack, v1.IPv4Protocol, v1.IPv6Protocol)
	preserve := false
	sets, listeners := map[string]ociapi.BackendSet{}, map[string]ociapi.Listener{}
	for _, version := range []string{ipv4Version, ipv6Version} {
		name := map[string]string{ipv4Version: "TCP-80", ipv6Version: "TCP-80-IPv6"}[version]
		sets[name] = ociapi.BackendSet{Name: name, Policy: "FIVE_TUPLE", HealthChecker: hc, IsPreserveSource: &preserve, IPVersion: version, Backends: backends(version)}
		listeners[name] = ociapi.Listener{Name: name, DefaultBackendSetName: name, Port: 80, Protocol: "TCP", IPVersion: version}
	}
	_, err := fc.c.api.CreateNetworkLoadBalancer(t.Context(), ociapi.CreateNetworkLoadBalancer{CompartmentID: f.CompartmentID, DisplayName: nlbName(nlbSvc),
		SubnetID: f.DualStackSubnetID, Listeners: listeners, BackendSets: sets, NLBIPVersion: dualVersion}, newToken())
	require.NoError(t, err)

	lbSvc := fc.service(t, "peer-lb", ociapi.KindLB, f.DualStackSubnetID, v1.IPFamilyPolicyRequireDualStack, v1.IPv4Protocol, v1.IPv6Protocol)
	s := providertest.Reread(t, fc.kube, lbSvc)
	s.Annotations["service.beta.kubernetes.io/oci-load-balancer-security-list-management-mode"] = "None"
	_, err = fc.kube.CoreV1().Services(s.Namespace).Update(t.Context(), s, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = fc.c.api.CreateLoadBalancer(t.Context(), ociapi.CreateLoadBalancer{CompartmentID: f.CompartmentID, DisplayName: lbName(lbSvc),
		ShapeName: flexible, ShapeDetails: &ociapi.ShapeDetails{MinimumBandwidthInMbps: 10, MaximumBandwidthInMbps: 100}, SubnetIDs: []string{f.DualStackSubnetID},
		IPMode: ipv6Version, Listeners: map[string]ociapi.Listener{"TCP-80": {Name: "TCP-80", DefaultBackendSetName: "TCP-80", Port: 80, Protocol: "TCP",
			ConnectionConfiguration: &ociapi.ConnectionConfiguration{IdleTimeout: defaultIdleTCP}}},
		BackendSets: map[string]ociapi.BackendSet{"TCP-80": {Name: "TCP-80", Policy: defaultPolicy, HealthChecker: hc, Backends: backends(ipv4Version)}}}, newToken())
	require.NoError(t, err)

	for svc, want := range map[*v1.Service]int{nlbSvc: 3, lbSvc: 2} {
		fc.c.lb.listings[ociapi.KindLB].Invalidate()
		fc.c.lb.listings[ociapi.KindNLB].Invalidate()
		before := writes(fc.e)
		st, steps, err := fc.ensure(t, svc)
		require.NoError(t, err, svc.Name)
		assert.Equal(t, before, writes(fc.e), "%s: no write (%q)", svc.Name, steps)
		assert.Len(t, st.Ingress, want, svc.Name)
	}
}

func TestTheStatusShowsAnAddressOfEachFamilyAsThePublishRulesSay(t *testing.T) {
	addrs := func(list ...string) (out []ociapi.LBAddress) {
		for _, a := range list {
			ip, public := strings.CutPrefix(a, "+")
			out = append(out, ociapi.LBAddress{IPAddress: ip, IsPublic: public})
		}
		return out
	}
	for _, tc := range []struct {
		name                   string
		kind                   string
		internal, externalOnly bool
		addresses              []string // "+" for a public one
		want                   []string
	}{
		{"an lb, public", ociapi.KindLB, false, false, []string{"+2001:db8::5", "+203.0.113.5"}, []string{"203.0.113.5", "2001:db8::5"}},
		{"an lb, internal", ociapi.KindLB, true, false, []string{"10.0.20.5", "2001:db8::5"}, []string{"10.0.20.5", "2001:db8::5"}},
		{"an nlb, public", ociapi.KindNLB, false, false, []string{"+203.0.113.5", "10.0.20.5", "+2001:db8::5"}, []string{"203.0.113.5", "2001:db8::5", "10.0.20.5"}},
		{"an nlb, external-ip-only", ociapi.KindNLB, false, true, []string{"+203.0.113.5", "10.0.20.5", "+2001:db8::5"}, []string{"203.0.113.5", "2001:db8::5"}},
		{"an nlb, internal", ociapi.KindNLB, true, false, []string{"10.0.20.5", "2001:db8::5"}, []string{"10.0.20.5", "2001:db8::5"}},
		{"an nlb, IPv6 alone", ociapi.KindNLB, false, false, []string{"+2001:db8::5"}, []string{"2001:db8::5"}},
		{"an IPv4 nlb, as before", ociapi.KindNLB, false, false, []string{"+203.0.113.5", "10.0.10.5"}, []string{"203.0.113.5", "10.0.10.5"}},
	} {
		lb := ociapi.LB{Kind: tc.kind, IPAddresses: addrs(tc.addresses...)}
		assert.Equal(t, tc.want, ingress(lb, tc.internal, tc.externalOnly), tc.name)
	}
}

func TestTheDefaultSourcesAdmitIPv6WhenItIsServed(t *testing.T) {
	v := ipVersions{}
	assert.Equal(t, []string{anyIPv4}, v.sources([]string{anyIPv4}, []string{ipv4Version}))
	assert.Equal(t, []string{anyIPv4, anyIPv6}, v.sources([]string{anyIPv4}, []string{ipv4Version, ipv6Version}))
	assert.Equal(t, []string{anyIPv6}, v.sources([]string{anyIPv4}, []string{ipv6Version}))
	assert.Equal(t, []string{"192.0.2.0/24"}, v.sources([]string{"192.0.2.0/24"}, []string{ipv4Version, ipv6Version}), "the Service's ranges are its own")
}

func TestANodesIPv6BackendIsItsInternalIPElseItsExternalIP(t *testing.T) {
	assert.Equal(t, "fd00::2", nodeIPv6([]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.10.2"}, {Type: v1.NodeExternalIP, Address: "2001:db8::2"},
		{Type: v1.NodeInternalIP, Address: "fd00::1"}, {Type: v1.NodeInternalIP, Address: "fd00::2"}}), "the last InternalIP, as the peer")
	assert.Equal(t, "2001:db8::2", nodeIPv6([]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.10.2"}, {Type: v1.NodeExternalIP, Address: "2001:db8::2"}}))
	assert.Empty(t, nodeIPv6([]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.10.2"}, {Type: v1.NodeExternalIP, Address: "::ffff:203.0.113.2"}}))

	// A Node of IPv6 alone is a backend of the IPv6 sets, of no IPv4 one.
	members := []member{{ip: "10.0.10.2", ip6: "fd00::2", instance: "i2"}, {ip6: "fd00::1", instance: "i1"}}
	withTarget := newBackend(ociapi.KindNLB, "10.0.10.2", 30080)
	withTarget.TargetID = "i2"
	assert.Equal(t, []ociapi.Backend{newBackend(ociapi.KindNLB, "fd00::1", 30080), newBackend(ociapi.KindNLB, "fd00::2", 30080)}, backendsOf(ociapi.KindNLB, ipv6Version, members, 30080))
	assert.Equal(t, []ociapi.Backend{withTarget}, backendsOf(ociapi.KindNLB, ipv4Version, members, 30080))
}

// Security lists in mode All for a dual-stack nlb: the default sources
// admit ::/0 too, and the load balancer's subnet reaches the Nodes' IPv6
// prefix on the node port, as the peer opens them.
func TestADualStackNetworkLoadBalancersRulesOpenIPv6(t *testing.T) {
	fc := newFamilyCluster(t, true)
	f := fc.e.Fixture()
	svc := fc.service(t, "rules", ociapi.KindNLB, f.DualStackSubnetID, v1.IPFamilyPolicyRequireDualStack, v1.IPv4Protocol, v1.IPv6Protocol)
	s := providertest.Reread(t, fc.kube, svc)
	s.Annotations["oci-network-load-balancer.oraclecloud.com/security-list-management-mode"] = "All"
	_, err := fc.kube.CoreV1().Services(s.Namespace).Update(t.Context(), s, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, _, err = fc.ensure(t, svc)
	require.NoError(t, err)
	in, out := fc.e.SecurityListRules(f.SecurityListID)
	has := func(rules []string, field, cidr string, port int) bool {
		return slices.ContainsFunc(rules, func(r string) bool {
			return strings.Contains(r, fmt.Sprintf(`"%s":"%s"`, field, cidr)) && strings.Contains(r, fmt.Sprintf(`"min":%d`, port))
		})
	}
	assert.True(t, has(in, "source", anyIPv4, 80), "%v", in)
	assert.True(t, has(in, "source", anyIPv6, 80), "%v", in)
	assert.True(t, has(out, "destination", nodeIPv6CIDR, 30080), "%v", out)
	assert.True(t, has(in, "source", emulator.DualStackIPv6CIDR, 30080), "the Nodes admit the load balancer's IPv6 prefix: %v", in)
}
