package oci

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

const (
	assigned4 = "oci-network-load-balancer.oraclecloud.com/assigned-private-ipv4"
	assigned6 = "oci-network-load-balancer.oraclecloud.com/assigned-ipv6"
	internalN = "oci-network-load-balancer.oraclecloud.com/internal"
	createNLB = "POST /20200501/networkLoadBalancers"
	deleteNLB = "DELETE /20200501/networkLoadBalancers/{id}"
)

// annotate sets the Service's annotations of kv ("" removes one).
func (fc *familyCluster) annotate(t *testing.T, svc *v1.Service, kv map[string]string) {
	t.Helper()
	s := providertest.Reread(t, fc.kube, svc)
	for k, v := range kv {
		if v == "" {
			delete(s.Annotations, k)
		} else {
			s.Annotations[k] = v
		}
	}
	_, err := fc.kube.CoreV1().Services(s.Namespace).Update(t.Context(), s, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// nlbService is an nlb Service on subnet with the annotations kv.
func (fc *familyCluster) nlbService(t *testing.T, name, subnet string, kv map[string]string, policy v1.IPFamilyPolicy, families ...v1.IPFamily) *v1.Service {
	t.Helper()
	svc := fc.service(t, name, ociapi.KindNLB, subnet, policy, families...)
	fc.annotate(t, svc, kv)
	return svc
}

// calls is how many calls of route e answered.
func calls(e *emulator.Emulator, route string) (n int) {
	for _, c := range e.Calls() {
		if c.Route == route {
			n += c.Count
		}
	}
	return n
}

// refusedWith: the Service is refused with a Warning of reason saying why,
// and nothing is written.
func (fc *familyCluster) refusedWith(t *testing.T, svc *v1.Service, reason, why string) {
	t.Helper()
	before := writes(fc.e)
	_, steps, err := fc.ensure(t, svc)
	p, ok := outcome.AsProblem(err)
	require.True(t, ok, "%s: a Problem (a Warning Event), not %v", svc.Name, err)
	assert.Equal(t, reason, p.Reason, svc.Name)
	assert.Contains(t, err.Error(), why, svc.Name)
	assert.Empty(t, steps, "%s: no step", svc.Name)
	assert.Equal(t, before, writes(fc.e), "%s: no write for a refused Service", svc.Name)
}

// ingressIPs are the status's addresses.
func ingressIPs(st *v1.LoadBalancerStatus) []string {
	var out []string
	for _, ing := range st.Ingress {
		out = append(out, ing.IP)
	}
	return out
}

func TestAssignedAddressesAreANetworkLoadBalancersAndRefusedOnALoadBalancer(t *testing.T) {
	c := specCloud()
	svc := lbSvc("web", "uid-1", 30080)
	svc.Annotations = map[string]string{assigned4: "10.0.10.77"}
	_, err := c.lb.parseSpec(svc)
	require.ErrorContains(t, err, assigned4+": an address is assigned to a network load balancer alone, as the peer has it; set oci.oraclecloud.com/load-balancer-type: nlb")
	svc.Annotations = map[string]string{assigned6: "10.0.10.77"}
	_, err = c.lb.parseSpec(svc)
	require.ErrorContains(t, err, `annotation `+assigned6+` has invalid value "10.0.10.77": accepted values are one IPv6 address`, "an invalid value is said invalid first")

	svc.Annotations = map[string]string{"oci.oraclecloud.com/load-balancer-type": "nlb", assigned4: " 10.0.10.77 ", assigned6: "2001:DB8:0:20::77"}
	spec, err := c.lb.parseSpec(svc)
	require.NoError(t, err)
	assert.Equal(t, "10.0.10.77", spec.assigned4)
	assert.Equal(t, "2001:db8:0:20::77", spec.assigned6, "canonical")
	for _, bad := range []map[string]string{{assigned4: "2001:db8::1"}, {assigned4: "::ffff:10.0.10.77"}, {assigned6: "10.0.10.77"}, {assigned6: "fe80::1%eth0"}} {
		svc.Annotations = map[string]string{"oci.oraclecloud.com/load-balancer-type": "nlb"}
		for k, v := range bad {
			svc.Annotations[k] = v
			_, err := c.lb.parseSpec(svc)
			require.ErrorContains(t, err, "annotation "+k+" has invalid value", v)
		}
	}
}

// Before anything is built, an assigned address is refused with a Warning
// and no write when it is of a family the network load balancer does not
// serve, outside its subnet, one OCI keeps, or held by anything else (a
// Node's VNIC, another network load balancer, a reserved address): even in
// mode NSG, whose NSG would be the first write.
func TestAnAssignedAddressIsRefusedBeforeAnythingIsBuilt(t *testing.T) {
	fc := newFamilyCluster(t, true)
	f := fc.e.Fixture()
	other := fc.nlbService(t, "other", f.SubnetID, map[string]string{internalN: "true"}, v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	_, _, err := fc.ensure(t, other)
	require.NoError(t, err)
	otherAddr := fc.built(t, other, ociapi.KindNLB).IPAddresses[0].IPAddress
	node, ok := provider.InternalIP(fc.nodes[0].Status.Addresses, v1.IPv4Protocol)
	require.True(t, ok)
	_, err = fc.e.ReserveAddress(f.DualStackSubnetID, "2001:db8:0:20::99")
	require.NoError(t, err)
	single, dual := v1.IPFamilyPolicySingleStack, v1.IPFamilyPolicyRequireDualStack
	v4, v6, both := []v1.IPFamily{v1.IPv4Protocol}, []v1.IPFamily{v1.IPv6Protocol}, []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	unavailable, unsupported := outcome.ReasonAddressUnavailable, outcome.ReasonUnsupportedService
	for i, tc := range []struct {
		name, subnet string
		kv           map[string]string
		policy       v1.IPFamilyPolicy
		families     []v1.IPFamily
		reason, why  string
	}{
		{"outside the CIDR", f.SubnetID, map[string]string{assigned4: "10.0.99.5"}, single, v4, unavailable, "is outside the CIDR 10.0.10.0/24 of subnet " + f.SubnetID},
		{"the other subnet's", f.DualStackSubnetID, map[string]string{assigned4: "10.0.10.77"}, single, v4, unavailable, "outside the CIDR 10.0.20.0/24"},
		{"the CIDR's first", f.SubnetID, map[string]string{assigned4: "10.0.10.0"}, single, v4, unavailable, "one of the three addresses OCI keeps"},
		{"the virtual router's", f.SubnetID, map[string]string{assigned4: "10.0.10.1"}, single, v4, unavailable, "its first two and its last"},
		{"the CIDR's last", f.SubnetID, map[string]string{assigned4: "10.0.10.255"}, single, v4, unavailable, "one of the three addresses OCI keeps"},
		{"a Node's", f.SubnetID, map[string]string{assigned4: node.String()}, single, v4, unavailable, node.String() + " is taken in subnet " + f.SubnetID + " (private IP "},
		{"another network load balancer's", f.SubnetID, map[string]string{assigned4: otherAddr}, single, v4, unavailable, otherAddr + " is taken"},
		{"a Node's, in mode NSG", f.SubnetID, map[string]string{assigned4: node.String(), "oci.oraclecloud.com/security-rule-management-mode": "NSG"}, single, v4, unavailable, "is taken"},
		{"IPv6 of an IPv4 one", f.DualStackSubnetID, map[string]string{assigned6: "2001:db8:0:20::5"}, single, v4, unsupported, "the network load balancer serves IPv4 alone (spec.ipFamilyPolicy SingleStack of IPv4)"},
		{"IPv4 of an IPv6 one", f.DualStackSubnetID, map[string]string{assigned4: "10.0.20.5"}, single, v6, unsupported, "serves IPv6 alone"},
		{"outside the IPv6 prefix", f.DualStackSubnetID, map[string]string{assigned6: "2001:db8:0:21::5"}, dual, both, unavailable, "outside the IPv6 prefixes of subnet"},
		{"a reserved IPv6", f.DualStackSubnetID, map[string]string{assigned6: "2001:db8:0:20::99"}, dual, both, unavailable, "2001:db8:0:20::99 is taken in subnet " + f.DualStackSubnetID + " (IPv6 address "},
		{"a kept IPv4 beside a free IPv6", f.DualStackSubnetID, map[string]string{assigned4: "10.0.20.0", assigned6: "2001:db8:0:20::5"}, dual, both, unavailable, "10.0.20.0 is one of the three"},
	} {
		svc := fc.nlbService(t, "refused-"+string(rune('a'+i)), tc.subnet, tc.kv, tc.policy, tc.families...)
		t.Run(tc.name, func(t *testing.T) { fc.refusedWith(t, svc, tc.reason, tc.why) })
	}
	objects := fc.e.Objects()
	assert.Equal(t, 1, objects["networkLoadBalancer"], "the other one alone")
	assert.Zero(t, objects["networkSecurityGroup"], "no NSG made for a refused Service")
}

// An assigned free address is the network load balancer's: its private
// IPv4 address, its IPv6 one, sent in the create and shown in the status.
func TestAnAssignedAddressIsTheNetworkLoadBalancers(t *testing.T) {
	fc := newFamilyCluster(t, true)
	f := fc.e.Fixture()
	v4 := fc.nlbService(t, "v4", f.SubnetID, map[string]string{assigned4: "10.0.10.200", internalN: "true"}, v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	st, _, err := fc.ensure(t, v4)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.10.200"}, ingressIPs(st))

	v6 := fc.nlbService(t, "v6", f.DualStackSubnetID, map[string]string{assigned6: "2001:db8:0:20::66"}, v1.IPFamilyPolicySingleStack, v1.IPv6Protocol)
	st, _, err = fc.ensure(t, v6)
	require.NoError(t, err)
	assert.Equal(t, []string{"2001:db8:0:20::66"}, ingressIPs(st))

	dual := fc.nlbService(t, "dual", f.DualStackSubnetID, map[string]string{assigned4: "10.0.20.77", assigned6: "2001:db8:0:20::77"},
		v1.IPFamilyPolicyRequireDualStack, v1.IPv4Protocol, v1.IPv6Protocol)
	st, _, err = fc.ensure(t, dual)
	require.NoError(t, err)
	got := ingressIPs(st)
	require.Len(t, got, 3)
	assert.Equal(t, []string{"2001:db8:0:20::77", "10.0.20.77"}, got[1:], "the public IPv4 address OCI chose, the IPv6 one, the private one")
	assert.Equal(t, 3, calls(fc.e, createNLB), "one create each")

	// Taken now: another Service asking for one is refused.
	again := fc.nlbService(t, "again", f.SubnetID, map[string]string{assigned4: "10.0.10.200"}, v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	fc.refusedWith(t, again, outcome.ReasonAddressUnavailable, "10.0.10.200 is taken")
	// An unchanged Service costs no write.
	before := writes(fc.e)
	for _, svc := range []*v1.Service{v4, v6, dual} {
		_, _, err := fc.ensure(t, svc)
		require.NoError(t, err)
	}
	assert.Equal(t, before, writes(fc.e))
}

// A network load balancer OCI left FAILED with no address (its assigned
// address was taken after the check: a create that raced its holder) is
// reported with a Warning each pass, with no write: never deleted and
// created again in a loop. Once the address is free, it is built anew
// once, with it.
func TestANetworkLoadBalancerFailedForATakenAddressIsReportedNotRebuiltInALoop(t *testing.T) {
	fc := newFamilyCluster(t, false)
	f := fc.e.Fixture()
	hold, err := fc.e.ReserveAddress(f.SubnetID, "10.0.10.150")
	require.NoError(t, err)
	svc := fc.nlbService(t, "late", f.SubnetID, map[string]string{assigned4: "10.0.10.150", internalN: "true"}, v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	spec, _, err := fc.c.lb.Spec(t.Context(), "kubernetes", providertest.Reread(t, fc.kube, svc), fc.nodes)
	require.NoError(t, err)
	wr, err := fc.c.api.CreateNetworkLoadBalancer(t.Context(), ociapi.CreateNetworkLoadBalancer{CompartmentID: f.CompartmentID, DisplayName: spec.name,
		SubnetID: f.SubnetID, IsPrivate: true, Listeners: spec.listeners, BackendSets: spec.backendSets, FreeformTags: spec.freeform,
		AssignedPrivateIPv4: spec.assigned4}, newToken())
	require.NoError(t, err)
	failed := fc.built(t, svc, ociapi.KindNLB)
	require.Equal(t, "FAILED", failed.LifecycleState)
	require.Empty(t, failed.IPAddresses, "FAILED with no address, as OCI leaves it")
	done, err := fc.c.api.WorkRequest(t.Context(), ociapi.KindNLB, wr)
	require.NoError(t, err)
	assert.Equal(t, "FAILED", done.LifecycleState)

	creates := calls(fc.e, createNLB)
	for range 5 {
		fc.refusedWith(t, svc, outcome.ReasonAddressUnavailable, "10.0.10.150 is taken in subnet "+f.SubnetID)
	}
	assert.Equal(t, creates, calls(fc.e, createNLB), "no create")
	assert.Zero(t, calls(fc.e, deleteNLB), "no delete")
	assert.Equal(t, 1, fc.e.Objects()["networkLoadBalancer"])

	fc.e.ReleaseAddress(hold)
	st, steps, err := fc.ensure(t, svc)
	require.NoError(t, err)
	assert.Less(t, len(steps), 20, "a bounded number of passes: %q", steps)
	assert.Equal(t, []string{"10.0.10.150"}, ingressIPs(st))
	rebuilt := fc.built(t, svc, ociapi.KindNLB)
	assert.NotEqual(t, failed.ID, rebuilt.ID)
	assert.Equal(t, "ACTIVE", rebuilt.LifecycleState)
	assert.Equal(t, 1, calls(fc.e, deleteNLB), "the FAILED one deleted once")
	assert.Equal(t, creates+1, calls(fc.e, createNLB), "built anew once")
}

// A FAILED network load balancer is built anew with its assigned address,
// as a load balancer with its reserved public IP: its own, not taken.
func TestAFailedNetworkLoadBalancerIsRebuiltWithItsAssignedAddress(t *testing.T) {
	fc := newFamilyCluster(t, false)
	f := fc.e.Fixture()
	svc := fc.nlbService(t, "kept", f.SubnetID, map[string]string{assigned4: "10.0.10.180"}, v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	_, _, err := fc.ensure(t, svc)
	require.NoError(t, err)
	first := fc.built(t, svc, ociapi.KindNLB)
	require.NoError(t, fc.e.SetLoadBalancerState(first.ID, emulator.NLBFailed))
	drifted, err := fc.c.Drifted(t.Context(), []*v1.Service{providertest.Reread(t, fc.kube, svc)})
	require.NoError(t, err)
	require.Contains(t, drifted[svc.UID], "FAILED")

	st, _, err := fc.ensure(t, svc)
	require.NoError(t, err)
	rebuilt := fc.built(t, svc, ociapi.KindNLB)
	assert.NotEqual(t, first.ID, rebuilt.ID, "built anew")
	assert.Contains(t, ingressIPs(st), "10.0.10.180", "with its address")
	assert.True(t, hasAddr(rebuilt, "10.0.10.180"))
	assert.Equal(t, 1, calls(fc.e, deleteNLB))
}

// An address cannot change once the network load balancer is built: a
// Service asking for another, or adding one it does not have, is refused
// with a Warning and no write; asking for the one it has, or no longer
// asking, changes nothing.
func TestAnAssignedAddressCannotChangeOnceBuilt(t *testing.T) {
	fc := newFamilyCluster(t, true)
	f := fc.e.Fixture()
	svc := fc.nlbService(t, "fixed", f.SubnetID, map[string]string{assigned4: "10.0.10.190", internalN: "true"}, v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	_, _, err := fc.ensure(t, svc)
	require.NoError(t, err)
	id := fc.built(t, svc, ociapi.KindNLB).ID

	fc.annotate(t, svc, map[string]string{assigned4: "10.0.10.191"})
	fc.refusedWith(t, svc, outcome.ReasonUnsupportedService,
		"network load balancer "+id+" has the private IPv4 address 10.0.10.190 and the Service asks for 10.0.10.191 ("+assigned4+"): a network load balancer's address cannot change once built")
	fc.annotate(t, svc, map[string]string{assigned4: ""})
	before := writes(fc.e)
	st, _, err := fc.ensure(t, svc)
	require.NoError(t, err, "no longer asked for: kept, nothing to change")
	assert.Equal(t, []string{"10.0.10.190"}, ingressIPs(st))
	fc.annotate(t, svc, map[string]string{assigned4: "10.0.10.190"})
	_, _, err = fc.ensure(t, svc)
	require.NoError(t, err, "the address it has")
	assert.Equal(t, before, writes(fc.e))

	// Added to one built without, or an IPv6 one added with the family.
	plain := fc.nlbService(t, "plain", f.DualStackSubnetID, nil, v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	_, _, err = fc.ensure(t, plain)
	require.NoError(t, err)
	fc.annotate(t, plain, map[string]string{assigned4: "10.0.20.150"})
	fc.refusedWith(t, plain, outcome.ReasonUnsupportedService, "and the Service asks for 10.0.20.150")
	fc.annotate(t, plain, map[string]string{assigned4: ""})
	s := providertest.Reread(t, fc.kube, plain)
	dual := v1.IPFamilyPolicyRequireDualStack
	s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &dual, []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	s.Annotations[assigned6] = "2001:db8:0:20::150"
	_, err = fc.kube.CoreV1().Services(s.Namespace).Update(t.Context(), s, metav1.UpdateOptions{})
	require.NoError(t, err)
	fc.refusedWith(t, plain, outcome.ReasonUnsupportedService, "has no IPv6 address and the Service asks for 2001:db8:0:20::150 ("+assigned6+")")
}

// The peer's network load balancer built with an assigned address (as
// v1.35.0 builds it: assignedPrivateIpv4 in the create, IPv4 listeners and
// backend sets of ipVersion IPV4) is adopted with no write.
func TestThePeersNetworkLoadBalancerWithAnAssignedAddressIsAdoptedWithNoWrite(t *testing.T) {
	fc := newFamilyCluster(t, false)
	f := fc.e.Fixture()
	svc := fc.nlbService(t, "peer", f.SubnetID, map[string]string{assigned4: "10.0.10.210"}, v1.IPFamilyPolicySingleStack, v1.IPv4Protocol)
	hc := ociapi.HealthChecker{Protocol: "HTTP", Port: proxyHealthPort, URLPath: healthPath, ReturnCode: 200, Retries: 3, TimeoutInMillis: 3000, IntervalInMillis: 10000}
	var backends []ociapi.Backend
	for _, n := range fc.nodes {
		id, _ := ParseProviderID(n.Spec.ProviderID)
		backends = append(backends, ociapi.Backend{IPAddress: n.Status.Addresses[0].Address, TargetID: id, Port: 30080, Weight: 1})
	}
	preserve := false
	_, err := fc.c.api.CreateNetworkLoadBalancer(t.Context(), ociapi.CreateNetworkLoadBalancer{CompartmentID: f.CompartmentID, DisplayName: nlbName(svc),
		SubnetID: f.SubnetID, AssignedPrivateIPv4: "10.0.10.210",
		Listeners: map[string]ociapi.Listener{"TCP-80": {Name: "TCP-80", DefaultBackendSetName: "TCP-80", Port: 80, Protocol: "TCP", IPVersion: ipv4Version}},
		BackendSets: map[string]ociapi.BackendSet{"TCP-80": {Name: "TCP-80", Policy: "FIVE_TUPLE", HealthChecker: hc, IsPreserveSource: &preserve,
			IPVersion: ipv4Version, Backends: backends}}}, newToken())
	require.NoError(t, err)
	fc.c.lb.listings[ociapi.KindNLB].Invalidate()
	before := writes(fc.e)
	st, steps, err := fc.ensure(t, svc)
	require.NoError(t, err)
	assert.Equal(t, before, writes(fc.e), "no write (%q)", steps)
	assert.Contains(t, ingressIPs(st), "10.0.10.210")
	assert.Equal(t, 1, calls(fc.e, createNLB), "the peer's alone")
}

// A network load balancer that failed with no address though its subnet
// listed its addresses free (something the listings do not show may hold
// one) is built anew once; failing so again, it is refused, not rebuilt.
func TestANetworkLoadBalancerFailingAgainWithNoAddressIsNotRebuiltTwice(t *testing.T) {
	fc := newFamilyCluster(t, false)
	f := fc.e.Fixture()
	svc := providertest.Reread(t, fc.kube, fc.nlbService(t, "twice", f.SubnetID, map[string]string{assigned4: "10.0.10.160"},
		v1.IPFamilyPolicySingleStack, v1.IPv4Protocol))
	failedWithNoAddress := func(name string) ociLB {
		_, err := fc.c.api.CreateNetworkLoadBalancer(t.Context(), ociapi.CreateNetworkLoadBalancer{CompartmentID: f.CompartmentID, DisplayName: name,
			SubnetID: f.SubnetID, Listeners: map[string]ociapi.Listener{}, BackendSets: map[string]ociapi.BackendSet{}}, newToken())
		require.NoError(t, err)
		list, err := fc.c.api.LoadBalancers(t.Context(), ociapi.KindNLB, ociapi.With(ociapi.InCompartment(f.CompartmentID), "displayName", name))
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.NoError(t, fc.e.SetLoadBalancerState(list[0].ID, emulator.NLBFailed))
		lb := list[0]
		lb.LifecycleState, lb.IPAddresses = "FAILED", nil // as OCI leaves one that failed for its address
		return fc.c.lb.asLB(svc, lb)
	}
	s := fc.c.lb
	_, err := s.Replace(t.Context(), svc, failedWithNoAddress("first"))
	require.NoError(t, err, "built anew once")
	assert.Equal(t, 1, calls(fc.e, deleteNLB))

	second := failedWithNoAddress("second")
	before := writes(fc.e)
	_, err = s.Replace(t.Context(), svc, second)
	p, ok := outcome.AsProblem(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, outcome.ReasonAddressUnavailable, p.Reason)
	assert.Contains(t, err.Error(), "with no address again: OCI could not give it 10.0.10.160, though subnet "+f.SubnetID+" lists nothing there")
	assert.Equal(t, before, writes(fc.e), "not deleted")

	// Serving again, a later failure is rebuilt again.
	fc.c.lb.rebuilt.Forget(svc.UID)
	_, err = s.Replace(t.Context(), svc, failedWithNoAddress("third"))
	require.NoError(t, err)
	assert.Equal(t, 2, calls(fc.e, deleteNLB))
}
