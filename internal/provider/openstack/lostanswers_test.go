package openstack

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Every write the CCM makes to build a Service's load balancer, its answer
// lost (carried out, the connection then cut) or late (carried out only
// after the CCM gave up waiting, so that the next pass does not see it yet),
// ends as the same run without the fault ends: one load balancer, one of
// each of its objects, one floating IP, the Service served. The writes are
// those a run without faults makes (the emulator's count of them), in each
// way of building: fully populated, and step by step.
func TestEveryWriteSurvivesALostAnswer(t *testing.T) {
	for _, mode := range []struct{ name, conf string }{
		{"fully populated", "\n[LoadBalancer]\ncreate-monitor = true\n"},
		{"step by step", "\n[LoadBalancer]\ncreate-monitor = true\nprovider-requires-serial-api-calls = true\n"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel() // each on an emulator of its own
			tg := newContractTarget(t)
			if tg.emu == nil {
				t.Skip("faults need the emulator")
			}
			clean, routes := buildWith(t, tg, mode.conf, nil, false)
			require.NotEmpty(t, routes)
			for _, route := range routes {
				for _, w := range []struct {
					how    string
					fault  core.Fault
					forget bool
				}{
					{"lost", core.Fault{Lost: true}, false},
					{"late", core.Fault{Late: time.Second}, false},
					// A restart forgets the create it waits for: a second
					// load balancer is made, and one is deleted.
					{"late, then a restart", core.Fault{Late: time.Second}, true},
				} {
					t.Run(w.how+" "+route, func(t *testing.T) {
						f := w.fault
						f.Route, f.Count = route, 1
						got, _ := buildWith(t, tg, mode.conf, &f, w.forget)
						assert.Equal(t, clean, got, "what the Service has in the cloud")
					})
				}
			}
		})
	}
}

// buildWith builds a new Service's load balancer with fault injected (nil:
// none) and says what of it is in the cloud then, and the routes it wrote.
func buildWith(t *testing.T, tg *contractTarget, conf string, fault *core.Fault, forget bool) (map[string]int, []string) {
	t.Helper()
	c := tg.cloud(t, conf)
	clientOf(c).CreateTimeout = 300 * time.Millisecond
	if forget {
		c.lb.unanswered.Window = 0
	}
	svc := contractService(contractName("lost"), nil)
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201"), contractNode("n2", "", "10.0.0.202")}
	tg.emu.ResetCalls()
	if fault != nil {
		tg.emu.InjectFault(*fault)
		t.Cleanup(tg.emu.ClearFaults)
	}
	var st *v1.LoadBalancerStatus
	var last error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st, last = c.EnsureLoadBalancer(t.Context(), "contract", svc, nodes); last == nil {
			break
		}
	}
	require.NoError(t, last, "the Service is served")
	require.Len(t, st.Ingress, 1)
	svc.Status.LoadBalancer = *st
	var routes []string
	for _, call := range tg.emu.Calls() {
		if call.Method != http.MethodGet && !strings.Contains(call.Route, "/auth/tokens") && !slices.Contains(routes, call.Route) {
			routes = append(routes, call.Route)
		}
	}
	time.Sleep(1500 * time.Millisecond) // a late write lands
	held := heldBy(t, c, svc, nodes)
	deleteLB(t, c, svc)
	return held, routes
}

// heldBy counts, by kind, what the Service has in the cloud.
func heldBy(t *testing.T, c *Cloud, svc *v1.Service, nodes []*v1.Node) map[string]int {
	t.Helper()
	ctx := t.Context()
	// The passes after a late write resolve what it left (a second load
	// balancer is deleted once it is not PENDING).
	var lbs []osapi.LoadBalancer
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st, err := c.EnsureLoadBalancer(ctx, "contract", svc, nodes)
		require.NoError(t, err)
		require.Equal(t, svc.Status.LoadBalancer.Ingress, st.Ingress, "the address stays")
		lbs, err = c.api.ListLoadBalancers(ctx, tagService+string(svc.UID))
		require.NoError(t, err)
		if len(lbs) <= 1 || time.Now().After(deadline) {
			break
		}
	}
	out := map[string]int{"load balancer": len(lbs)}
	for _, lb := range lbs {
		out["listener"] += len(lb.Listeners)
		pools, err := c.api.ListPools(ctx, lb.ID)
		require.NoError(t, err)
		for _, p := range pools {
			out["pool"]++
			out["member"] += len(p.Members)
			if p.MonitorID != "" {
				out["monitor"]++
			}
		}
	}
	fips, err := c.api.ListFloatingIPs(ctx, osapi.FloatingIPQuery{Description: fipDescription + string(svc.UID)})
	require.NoError(t, err)
	out["floating IP"] = len(fips)
	return out
}

// A Node joining adds one member a pool; that write's answer lost or late
// ends as without the fault: each pool has every Node once, and the update
// is done.
func TestANodeJoiningSurvivesALostAnswer(t *testing.T) {
	for _, w := range []struct {
		how   string
		fault core.Fault
	}{
		{"lost", core.Fault{Lost: true}},
		{"late", core.Fault{Late: time.Second}},
	} {
		t.Run(w.how, func(t *testing.T) {
			tg := newContractTarget(t)
			if tg.emu == nil {
				t.Skip("faults need the emulator")
			}
			c := tg.cloud(t, "")
			clientOf(c).CreateTimeout = 300 * time.Millisecond
			svc := contractService(contractName("join"), nil)
			nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201"), contractNode("n2", "", "10.0.0.202")}
			record(t, c, svc, nodes, ensure(t, c, svc, nodes))
			nodes = append(nodes, contractNode("n3", "", "10.0.0.203"))
			f := w.fault
			f.Route, f.Count = routeAddMember, 1
			tg.emu.ResetCalls()
			tg.emu.InjectFault(f)
			t.Cleanup(tg.emu.ClearFaults)
			updated(t, c, svc, nodes)
			time.Sleep(1500 * time.Millisecond) // a late write lands
			_, writes := tg.callsSince()
			assert.Positive(t, writes[routeAddMember], "the fault was met")
			// The passes after it find every pool as asked.
			updated(t, c, svc, nodes)
			octavia, err := clientOf(c).OctaviaClient(t.Context())
			require.NoError(t, err)
			lb, err := c.lb.findLB(t.Context(), svc)
			require.NoError(t, err)
			for _, p := range lb.Pools {
				assert.ElementsMatch(t, []string{"10.0.0.201", "10.0.0.202", "10.0.0.203"}, memberAddresses(t, octavia, p.ID))
			}
			require.Len(t, lb.Pools, len(svc.Spec.Ports))
			deleteLB(t, c, svc)
		})
	}
}
