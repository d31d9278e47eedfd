package oci

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// peerLBOn builds on e, as the peer of another cluster does, the load
// balancer of its Service uid: its port 80 on nodePort, its health check on
// the proxy's port, no tag, the Service's UID as its name.
func peerLBOn(t *testing.T, c *Cloud, e *emulator.Emulator, uid, ip string, nodePort int) string {
	t.Helper()
	f := e.Fixture()
	hc := ociapi.HealthChecker{Protocol: "HTTP", Port: proxyHealthPort, URLPath: healthPath, ReturnCode: 200, Retries: 3, TimeoutInMillis: 3000, IntervalInMillis: 10000}
	set := ociapi.BackendSet{Name: "TCP-80", Policy: defaultPolicy, HealthChecker: hc, Backends: []ociapi.Backend{{IPAddress: ip, Port: nodePort, Weight: 1}}}
	_, err := c.api.CreateLoadBalancer(t.Context(), ociapi.CreateLoadBalancer{CompartmentID: f.CompartmentID, DisplayName: uid,
		ShapeName: flexible, ShapeDetails: &ociapi.ShapeDetails{MinimumBandwidthInMbps: 10, MaximumBandwidthInMbps: 100}, SubnetIDs: []string{f.SubnetID},
		Listeners:   map[string]ociapi.Listener{"TCP-80": {Name: "TCP-80", DefaultBackendSetName: "TCP-80", Port: 80, Protocol: "TCP"}},
		BackendSets: map[string]ociapi.BackendSet{"TCP-80": set}}, newToken())
	require.NoError(t, err)
	return lbNamed(t, e, c, uid)
}

// handedOverRules are the rules of e's list kept for a peer's load balancer.
func handedOverRules(e *emulator.Emulator) (n int) {
	in, out := e.SecurityListRules(e.Fixture().SecurityListID)
	for _, r := range append(in, out...) {
		if strings.Contains(r, `"description":"kept for load balancer `) {
			n++
		}
	}
	return n
}

// The peer of another cluster adds no rule where ours opens its port
// already (issue 43, item 5). When our Service goes, each of its rules the
// peer's load balancer relies on (same list or from its subnet, one of its
// ports) is handed over, unmarked, for the peer to remove with its own
// Service; the others go. A load balancer that is not the peer's (named as
// no peer names one, or of a Service of this cluster, which Overcast
// adopted), or an unmarked rule doing the same already, keeps nothing.
func TestARuleThePeersLoadBalancerReliesOnIsHandedOverNotRemoved(t *testing.T) {
	const peerUID = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	for _, tc := range []struct {
		name     string
		lbName   string
		nodePort int
		ownsIt   bool // the load balancer is of a Service of this cluster
		unmarked bool // the peer's rules are there too
		wantKept int
		wantLeft int
	}{
		{name: "the peer's, same ports", lbName: peerUID, nodePort: 30080, wantKept: 5, wantLeft: 5},
		{name: "the peer's, with a prefix", lbName: "team-a-" + peerUID, nodePort: 30080, wantKept: 5, wantLeft: 5},
		{name: "the peer's, other node port", lbName: peerUID, nodePort: 30999, wantKept: 3, wantLeft: 3},
		{name: "not named as the peer names", lbName: "hand-made", nodePort: 30080},
		{name: "adopted by this cluster", lbName: peerUID, nodePort: 30080, ownsIt: true},
		{name: "the peer's own rules there", lbName: peerUID, nodePort: 30080, unmarked: true, wantLeft: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, c, nodes := oneNodeCluster(t, "cluster-b")
			kube := fake.NewClientset()
			c.SetKube(kube)
			if tc.ownsIt {
				_, err := kube.CoreV1().Services("default").Create(t.Context(), lbSvc("adopted", peerUID, int32(tc.nodePort)), metav1.CreateOptions{})
				require.NoError(t, err)
			}
			list := e.Fixture().SecurityListID
			before, beforeOut := e.SecurityListRules(list)
			if tc.unmarked {
				peer := lbSvc("web", "uid-peer", 30080)
				require.NoError(t, rulesFor(t, c, peer, nodes))
				unmarkAll(t, c, list, c.lb.describe(peer))
			}
			svc := lbSvc("web", "uid-b", 30080)
			require.NoError(t, rulesFor(t, c, svc, nodes))
			require.Equal(t, 5, marked(e, c.lb.mark(svc)+" "))
			peerLBOn(t, c, e, tc.lbName, nodes[0].Status.Addresses[0].Address, tc.nodePort)

			require.NoError(t, c.lb.removeRules(t.Context(), svc, []string{e.Fixture().SubnetID}))
			assert.Equal(t, 0, marked(e, "overcast:"), "no rule keeps our mark")
			assert.Equal(t, tc.wantKept, handedOverRules(e), "rules handed over")
			in, out := e.SecurityListRules(list)
			assert.Equal(t, tc.wantLeft, len(in)+len(out)-len(before)-len(beforeOut), "rules left beside the list's own: %q", append(in, out...))

			// Handed over, a rule is no longer ours: asked again, nothing changes.
			writes := putsOf(e)
			c.lb.lists.forgetAll()
			require.NoError(t, c.lb.removeRules(t.Context(), svc, []string{e.Fixture().SubnetID}))
			assert.Equal(t, writes, putsOf(e))
		})
	}
}

// unmarkAll takes description d off every rule of list, as if the peer had
// made them.
func unmarkAll(t *testing.T, c *Cloud, list, d string) {
	t.Helper()
	sl, err := c.api.SecurityList(t.Context(), list)
	require.NoError(t, err)
	for _, raws := range [][]json.RawMessage{sl.Ingress, sl.Egress} {
		for i, raw := range raws {
			raws[i] = json.RawMessage(strings.ReplaceAll(string(raw), `,"description":"`+d+`"`, ""))
		}
	}
	_, err = c.api.UpdateSecurityList(t.Context(), sl)
	require.NoError(t, err)
	c.lb.lists.forgetAll()
}

// The peer's load balancer shares our load balancer's subnet, but its
// nodes are elsewhere: it relies on our rule to its listener's port alone
// (its own rules to its nodes are its own), and that one its Delete removes
// (here as it does: the rules of its listener's port in its load balancer's
// list, whatever their source): nothing is left behind.
func TestARuleIsHandedOverOnlyWhereThePeerReliesOnIt(t *testing.T) {
	const peerUID = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	e, c, nodes := oneNodeCluster(t, "cluster-b")
	c.SetKube(fake.NewClientset())
	svc := lbSvc("web", "uid-b", 30080)
	require.NoError(t, rulesFor(t, c, svc, nodes))
	peerLBOn(t, c, e, peerUID, "10.200.0.5", 31999)
	require.NoError(t, c.lb.removeRules(t.Context(), svc, []string{e.Fixture().SubnetID}))
	require.Equal(t, 1, handedOverRules(e), "the rule to port 80 alone")

	list := e.Fixture().SecurityListID
	sl, err := c.api.SecurityList(t.Context(), list)
	require.NoError(t, err)
	sl.Ingress = slices.DeleteFunc(sl.Ingress, func(raw json.RawMessage) bool {
		var r ociapi.SecurityRule
		require.NoError(t, json.Unmarshal(raw, &r))
		return r.TCPOptions != nil && r.TCPOptions.DestinationPortRange != nil && *r.TCPOptions.DestinationPortRange == ociapi.PortRange{Min: 80, Max: 80}
	})
	_, err = c.api.UpdateSecurityList(t.Context(), sl)
	require.NoError(t, err)
	assert.Zero(t, handedOverRules(e), "the peer's Delete took it")
}

// A peer's load balancer being deleted relies on nothing (its rules went
// before it); one made since the shared listing was read counts (the
// compartment is listed anew).
func TestThePeersLoadBalancersAreReadAnewAndOneBeingDeletedCountsForNothing(t *testing.T) {
	const peerUID = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	for _, deleting := range []bool{false, true} {
		t.Run(map[bool]string{false: "made after the listing", true: "being deleted"}[deleting], func(t *testing.T) {
			e, c, nodes := oneNodeCluster(t, "cluster-b")
			c.SetKube(fake.NewClientset())
			svc := lbSvc("web", "uid-b", 30080)
			require.NoError(t, rulesFor(t, c, svc, nodes))
			_, err := c.lb.listings[ociapi.KindLB].All(t.Context())
			require.NoError(t, err)
			id := peerLBOn(t, c, e, peerUID, nodes[0].Status.Addresses[0].Address, 30080)
			want := 5
			if deleting {
				require.NoError(t, e.SetLoadBalancerState(id, "DELETING"))
				want = 0
			}
			require.NoError(t, c.lb.removeRules(t.Context(), svc, []string{e.Fixture().SubnetID}))
			assert.Equal(t, want, handedOverRules(e))
		})
	}
}

// When the check of what the peer relies on fails (here the Services cannot
// be listed), the Service's rules stay (its delete fails, to be tried
// again), and the other Services' changes in the same write of the list are
// made.
func TestAFailedHandOverCheckHoldsBackOnlyItsOwnService(t *testing.T) {
	e, c, nodes := oneNodeCluster(t, "cluster-b")
	kube := fake.NewClientset()
	kube.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the apiserver is away")
	})
	c.SetKube(kube)
	list := e.Fixture().SecurityListID
	gone, other := lbSvc("gone", "uid-gone", 30080), lbSvc("other", "uid-other", 30111)
	require.NoError(t, rulesFor(t, c, gone, nodes))
	peerLBOn(t, c, e, "1b4e28ba-2fa1-11d2-883f-0016d3cca427", nodes[0].Status.Addresses[0].Address, 30999)
	spec, err := c.lb.parseSpec(other)
	require.NoError(t, err)
	require.NoError(t, c.lb.resolveBackends(t.Context(), other, &spec, nodes))
	want, _, err := c.lb.wantedRules(t.Context(), other, spec)
	require.NoError(t, err)
	change := func(svc *v1.Service, want listRules) listChange {
		relied := c.lb.reliedByPeer(t.Context(), svc)
		return listChange{mark: c.lb.mark(svc) + " ", want: want, handOver: func(r ociapi.SecurityRule) (string, bool, error) { return relied(list, r) }}
	}
	c.lb.lists.forgetAll()
	failed := make([]error, 2)
	require.NoError(t, c.lb.writeBatch(t.Context(), list, []listChange{change(gone, listRules{}), change(other, want[list])}, failed))
	assert.ErrorContains(t, failed[0], "the apiserver is away")
	assert.NoError(t, failed[1])
	assert.Equal(t, 5, marked(e, c.lb.mark(gone)+" "), "the Service's rules stay")
	assert.Equal(t, 5, marked(e, c.lb.mark(other)+" "), "the other Service's are written")
}

// A description of a rule handed over is never longer than OCI takes, and
// stays whole UTF-8 and says whose it was: the load balancer's name is what
// is shortened.
func TestAHandedOverDescriptionFits(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("s", 63)}}
	d := handedOver(svc, "x"+strings.Repeat("é", 200)+"-1b4e28ba-2fa1-11d2-883f-0016d3cca427")
	assert.LessOrEqual(t, len(d), maxDescription)
	assert.True(t, utf8.ValidString(d))
	assert.True(t, strings.HasSuffix(d, "of "+svc.Namespace+"/"+svc.Name+")"), d)
}
