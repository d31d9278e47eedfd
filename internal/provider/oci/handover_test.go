package oci

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
)

// peerLBOn builds on e, as the peer of another cluster does, the load
// balancer of its Service uid: its port 80 on nodePort, its health check on
// the proxy's port, no tag, the Service's UID as its name.
func peerLBOn(t *testing.T, c *Cloud, e *emulator.Emulator, uid, ip string, nodePort int) {
	t.Helper()
	f := e.Fixture()
	hc := HealthChecker{Protocol: "HTTP", Port: proxyHealthPort, URLPath: healthPath, ReturnCode: 200, Retries: 3, TimeoutInMillis: 3000, IntervalInMillis: 10000}
	set := BackendSet{Name: "TCP-80", Policy: defaultPolicy, HealthChecker: hc, Backends: []Backend{{IPAddress: ip, Port: nodePort, Weight: 1}}}
	_, err := c.gw.createLoadBalancer(t.Context(), CreateLoadBalancer{CompartmentID: f.CompartmentID, DisplayName: uid,
		ShapeName: flexible, ShapeDetails: &ShapeDetails{MinimumBandwidthInMbps: 10, MaximumBandwidthInMbps: 100}, SubnetIDs: []string{f.SubnetID},
		Listeners:   map[string]Listener{"TCP-80": {Name: "TCP-80", DefaultBackendSetName: "TCP-80", Port: 80, Protocol: "TCP"}},
		BackendSets: map[string]BackendSet{"TCP-80": set}}, newToken())
	require.NoError(t, err)
	c.listings[kindLB].Invalidate()
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
				unmarkAll(t, c, list, c.describe(peer))
			}
			svc := lbSvc("web", "uid-b", 30080)
			require.NoError(t, rulesFor(t, c, svc, nodes))
			require.Equal(t, 5, marked(e, c.mark(svc)+" "))
			peerLBOn(t, c, e, tc.lbName, nodes[0].Status.Addresses[0].Address, tc.nodePort)

			require.NoError(t, c.removeRules(t.Context(), svc, []string{e.Fixture().SubnetID}))
			assert.Equal(t, 0, marked(e, "overcast:"), "no rule keeps our mark")
			assert.Equal(t, tc.wantKept, handedOverRules(e), "rules handed over")
			in, out := e.SecurityListRules(list)
			assert.Equal(t, tc.wantLeft, len(in)+len(out)-len(before)-len(beforeOut), "rules left beside the list's own: %q", append(in, out...))

			// Handed over, a rule is no longer ours: asked again, nothing changes.
			writes := putsOf(e)
			c.lists.forgetAll()
			require.NoError(t, c.removeRules(t.Context(), svc, []string{e.Fixture().SubnetID}))
			assert.Equal(t, writes, putsOf(e))
		})
	}
}

// unmarkAll takes description d off every rule of list, as if the peer had
// made them.
func unmarkAll(t *testing.T, c *Cloud, list, d string) {
	t.Helper()
	sl, err := c.gw.securityList(t.Context(), list)
	require.NoError(t, err)
	for _, raws := range [][]json.RawMessage{sl.Ingress, sl.Egress} {
		for i, raw := range raws {
			raws[i] = json.RawMessage(strings.ReplaceAll(string(raw), `,"description":"`+d+`"`, ""))
		}
	}
	_, err = c.gw.updateSecurityList(t.Context(), sl)
	require.NoError(t, err)
	c.lists.forgetAll()
}
