package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// lbSvc is a LoadBalancer Service of port 80 on node port nodePort.
func lbSvc(name, uid string, nodePort int32) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Protocol: v1.ProtocolTCP, Port: 80,
			TargetPort: intstr.FromInt32(8080), NodePort: nodePort}}}}
}

// rulesFor opens the security lists for svc as cloud c would (spec and
// rules), for a load balancer it built.
func rulesFor(t *testing.T, c *Cloud, svc *v1.Service, nodes []*v1.Node) error {
	t.Helper()
	return rulesOf(t, c, svc, nodes, false)
}

// rulesOf is rulesFor, adopting (the Service's load balancer is the peer's)
// or not.
func rulesOf(t *testing.T, c *Cloud, svc *v1.Service, nodes []*v1.Node, adopt bool) error {
	t.Helper()
	spec, err := c.lb.parseSpec(svc)
	require.NoError(t, err)
	require.NoError(t, c.lb.resolveBackends(t.Context(), svc, &spec, nodes))
	want, lists, err := c.lb.wantedRules(t.Context(), svc, spec)
	if err != nil {
		return err
	}
	return c.lb.applyRules(t.Context(), svc, want, lists, adopt)
}

// oneNodeCluster is the emulator, a cloud of cluster uid on it and a Node on
// one of its instances.
func oneNodeCluster(t *testing.T, uid string) (*emulator.Emulator, *Cloud, []*v1.Node) {
	t.Helper()
	e := startEmulator(t)
	c := cloudOn(t, e.CloudConfig())
	c.SetClusterUID(uid)
	_, ip := e.AddMachine("node-a")
	return e, c, []*v1.Node{nodeAt("node-a", "", ip)}
}

func marked(e *emulator.Emulator, mark string) (n int) {
	in, out := e.SecurityListRules(e.Fixture().SecurityListID)
	for _, r := range append(in, out...) {
		if strings.Contains(r, `"description":"`+mark) {
			n++
		}
	}
	return n
}

func TestThirtyServicesOnOneSecurityListAtOnceLoseNoRule(t *testing.T) {
	// Every call takes 20 ms and none waits for the client-side limit: the
	// reads and writes of the list by three clusters' CCMs overlap (one
	// CCM's own changes of a list go in batches, which do not race).
	e, err := emulator.New(emulator.Options{Latency: 20 * time.Millisecond})
	e = coretest.Serve(t, e, err)
	var clusters []*Cloud
	for _, uid := range []string{"cluster-a", "cluster-b", "cluster-c"} {
		clusters = append(clusters, clusterCloud(t, e, uid))
	}
	c := clusters[0]
	_, ip := e.AddMachine("node-a")
	nodes := []*v1.Node{nodeAt("node-a", "", ip)}
	before, _ := e.SecurityListRules(e.Fixture().SecurityListID)
	var wg sync.WaitGroup
	errs := make([]error, 30)
	for i := range 30 {
		wg.Go(func() {
			// A step that still finds the list changed after its tries is
			// looked at again, as the cycle does (outcome.ErrBusy).
			for range 3 {
				if errs[i] = rulesFor(t, clusters[i%3], lbSvc(fmt.Sprintf("svc-%d", i), fmt.Sprintf("uid-%02d", i), int32(30000+i)), nodes); !errors.Is(errs[i], outcome.ErrBusy) {
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "service %d", i)
	}
	for i := range 30 {
		// Mode All, one subnet for both: 80 from anywhere in, the node port
		// and 10256 from the subnet in and to it out.
		assert.Equal(t, 5, marked(e, fmt.Sprintf("overcast:cluster-%c/uid-%02d ", 'a'+i%3, i)), "service %d", i)
	}
	var busy, writes int
	for _, call := range e.Calls() {
		if call.Code == 412 {
			busy += call.Count
		}
		if call.Method == http.MethodPut && call.Code == 200 {
			writes += call.Count
		}
	}
	assert.Positive(t, busy, "the writes raced (412 NoEtagMatch answers on the way)")
	assert.Less(t, writes, 30, "a CCM's changes of one list go in batches")
	t.Logf("%d writes of the list for 30 Services; %d 412 NoEtagMatch answers on the way", writes, busy)

	// Half of cluster a's go: only their rules.
	for i := 0; i < 30; i += 3 {
		require.NoError(t, c.lb.removeRules(t.Context(), lbSvc(fmt.Sprintf("svc-%d", i), fmt.Sprintf("uid-%02d", i), int32(30000+i)), []string{e.Fixture().SubnetID}))
	}
	for i := range 30 {
		want := 5
		if i%3 == 0 {
			want = 0
		}
		assert.Equal(t, want, marked(e, fmt.Sprintf("overcast:cluster-%c/uid-%02d ", 'a'+i%3, i)), "service %d", i)
	}
	after, _ := e.SecurityListRules(e.Fixture().SecurityListID)
	assert.Subset(t, after, before, "the list's own rules are kept")
}

func TestTwoClustersOnOneSecurityListNeverRemoveEachOthersRules(t *testing.T) {
	e := startEmulator(t)
	a, b := cloudOn(t, e.CloudConfig()), cloudOn(t, e.CloudConfig())
	a.SetClusterUID("cluster-a")
	b.SetClusterUID("cluster-b")
	_, ip := e.AddMachine("node-a")
	nodes := []*v1.Node{nodeAt("node-a", "", ip)}
	// Each cluster's "web", with its own UID, on the same port.
	svcA, svcB := lbSvc("web", "uid-a", 30080), lbSvc("web", "uid-b", 30080)
	require.NoError(t, rulesFor(t, a, svcA, nodes))
	require.NoError(t, rulesFor(t, b, svcB, nodes))
	assert.Equal(t, 5, marked(e, "overcast:cluster-a/uid-a "))
	assert.Equal(t, 5, marked(e, "overcast:cluster-b/uid-b "), "each cluster's rules of its own, though they do the same")
	// Cluster a's Service goes, and a removes only its own.
	require.NoError(t, a.lb.removeRules(t.Context(), svcA, []string{e.Fixture().SubnetID}))
	assert.Equal(t, 0, marked(e, "overcast:cluster-a/uid-a "))
	assert.Equal(t, 5, marked(e, "overcast:cluster-b/uid-b "))
	// Even asked to remove b's Service's rules, a touches none of b's.
	require.NoError(t, a.lb.removeRules(t.Context(), svcB, []string{e.Fixture().SubnetID}))
	assert.Equal(t, 5, marked(e, "overcast:cluster-b/uid-b "))
}

// The peer's rules (no description) for a Service of another cluster on the
// same port and node port do what a Service of ours wants: they stand for
// ours only when the load balancer is the peer's own (a migration, no
// write); beside one Overcast built, marked ones go beside them, so the
// other cluster's peer removing its rules closes nothing of ours (finding 5
// of issue 34).
func TestAnUnmarkedRuleStandsForOursOnlyOnThePeersOwnLoadBalancer(t *testing.T) {
	e, c, nodes := oneNodeCluster(t, "cluster-b")
	list := e.Fixture().SecurityListID
	before, beforeOut := e.SecurityListRules(list)
	// The other cluster's peer's rules: what ours would be, unmarked.
	peerSvc := lbSvc("web", "uid-a", 30080)
	require.NoError(t, rulesFor(t, c, peerSvc, nodes))
	sl, err := c.api.SecurityList(t.Context(), list)
	require.NoError(t, err)
	unmark := func(raws []json.RawMessage) {
		for i, raw := range raws {
			raws[i] = json.RawMessage(strings.ReplaceAll(string(raw), `,"description":"overcast:cluster-b/uid-a default/web"`, ""))
		}
	}
	unmark(sl.Ingress)
	unmark(sl.Egress)
	_, err = c.api.UpdateSecurityList(t.Context(), sl)
	require.NoError(t, err)
	c.lb.lists.forgetAll()
	require.Equal(t, 0, marked(e, "overcast:"))
	peers, _ := e.SecurityListRules(list)
	require.Len(t, peers, len(before)+3, "the peer's rules: 80, the node port and 10256 in")

	for _, tc := range []struct {
		name  string
		adopt bool
		want  int
	}{{"the peer's own load balancer, adopted", true, 0}, {"a load balancer Overcast built", false, 5}} {
		t.Run(tc.name, func(t *testing.T) {
			svc := lbSvc("web", "uid-b-"+strconv.FormatBool(tc.adopt), 30080)
			writes := putsOf(e)
			require.NoError(t, rulesOf(t, c, svc, nodes, tc.adopt))
			assert.Equal(t, tc.want, marked(e, c.lb.mark(svc)+" "))
			if tc.adopt {
				assert.Equal(t, writes, putsOf(e), "adopting writes nothing")
			}
		})
	}
	// The other cluster's Service goes: its peer removes its rules.
	sl, err = c.api.SecurityList(t.Context(), list)
	require.NoError(t, err)
	in, out := e.SecurityListRules(list)
	keep := func(rules, own []string) (kept []json.RawMessage) {
		for _, r := range rules {
			if strings.Contains(r, `"description":"overcast:`) || slices.Contains(own, r) {
				kept = append(kept, json.RawMessage(r))
			}
		}
		return kept
	}
	sl.Ingress, sl.Egress = keep(in, before), keep(out, beforeOut)
	_, err = c.api.UpdateSecurityList(t.Context(), sl)
	require.NoError(t, err)
	c.lb.lists.forgetAll()
	built := lbSvc("web", "uid-b-false", 30080)
	assert.Equal(t, 5, marked(e, c.lb.mark(built)+" "), "the rules of the load balancer Overcast built are all there")
	writes := putsOf(e)
	require.NoError(t, rulesOf(t, c, built, nodes, false))
	assert.Equal(t, writes, putsOf(e), "and nothing to put back")
}

// putsOf is how many writes of a security list the emulator answered.
func putsOf(e *emulator.Emulator) (n int) {
	for _, call := range e.Calls() {
		if call.Method == http.MethodPut && call.Code == 200 {
			n += call.Count
		}
	}
	return n
}

func TestAListThisCCMJustWroteIsWrittenOnWithoutReadingItAgain(t *testing.T) {
	e, c, nodes := oneNodeCluster(t, "cluster-a")
	calls := func(method string) (n int) {
		for _, call := range e.Calls() {
			if call.Method == method && strings.Contains(call.Route, "/securityLists/") {
				n += call.Count
			}
		}
		return n
	}
	require.NoError(t, rulesFor(t, c, lbSvc("one", "uid-1", 30001), nodes))
	require.NoError(t, rulesFor(t, c, lbSvc("two", "uid-2", 30002), nodes))
	assert.Equal(t, 1, calls(http.MethodGet), "read once, then written on with the etag the write gave")
	assert.Equal(t, 2, calls(http.MethodPut))

	// Another writer (another cluster) comes between: the 412 has the list
	// read again, and nothing is lost.
	other := cloudOn(t, e.CloudConfig())
	other.SetClusterUID("cluster-b")
	require.NoError(t, rulesFor(t, other, lbSvc("web", "uid-b", 30003), nodes))
	require.NoError(t, rulesFor(t, c, lbSvc("three", "uid-3", 30004), nodes))
	for _, mark := range []string{"overcast:cluster-a/uid-1 ", "overcast:cluster-a/uid-2 ", "overcast:cluster-a/uid-3 ", "overcast:cluster-b/uid-b "} {
		assert.Equal(t, 5, marked(e, mark), mark)
	}
}

// A network load balancer that preserves the client's address: the nodes
// see the clients, and their subnet's list admits the Service's sources on
// the node port (not the health check's), as the peer's does.
func TestANetworkLoadBalancerThatPreservesTheClientOpensTheNodesToTheClients(t *testing.T) {
	e, c, nodes := oneNodeCluster(t, "cluster-a")
	svc := lbSvc("dns", "uid-nlb", 30053)
	svc.Annotations = map[string]string{"oci.oraclecloud.com/load-balancer-type": "nlb",
		"oci.oraclecloud.com/security-rule-management-mode": "SL-All", "oci-network-load-balancer.oraclecloud.com/is-preserve-source": "true"}
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 31000
	svc.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	require.NoError(t, rulesFor(t, c, svc, nodes))
	in, _ := e.SecurityListRules(e.Fixture().SecurityListID)
	var fromClients []string
	for _, raw := range in {
		var r ociapi.SecurityRule
		require.NoError(t, json.Unmarshal([]byte(raw), &r))
		if r.Source == "192.0.2.0/24" && strings.HasPrefix(r.Description, c.lb.mark(svc)) {
			fromClients = append(fromClients, rulePorts(r))
		}
	}
	slices.Sort(fromClients)
	assert.Equal(t, []string{"30053-30053", "80-80"}, fromClients, "the listener's port, and the node port to the nodes")
}
