package oci

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// TestANodeJoiningIsOneBackendSetUpdate: on a converged load balancer and
// network load balancer, a Node joining is each backend set sent once (one
// PUT), its work request looked at, and nothing else: no read by name, no
// other change. Meanwhile the Service serves: the progress is background
// work (no condition, no Event). Once the work request ended the update is
// done although the shared listing still shows the old backends, and the
// backend set holds the new Node.
func TestANodeJoiningIsOneBackendSetUpdate(t *testing.T) {
	for _, kind := range []string{ociapi.KindLB, ociapi.KindNLB} {
		t.Run(kind, func(t *testing.T) {
			e := startEmulator(t)
			e.SetProvisioning(300 * time.Millisecond)
			c := clusterCloud(t, e, "members-cluster")
			svc := lbSvc("members", "uid-members", 30280)
			svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "b", Protocol: v1.ProtocolTCP, Port: 81, NodePort: 30281})
			svc.Spec.Ports[0].Name = "a"
			if kind == ociapi.KindNLB {
				svc.Annotations = map[string]string{"oci.oraclecloud.com/load-balancer-type": "nlb"}
			}
			kube := fake.NewClientset(svc)
			c.SetKube(kube)
			nodes := []*v1.Node{machineNode(e, "m-a"), machineNode(e, "m-b")}
			ctx := t.Context()
			require.NoError(t, poll(time.Minute, func() error {
				_, err := c.EnsureLoadBalancer(ctx, "kubernetes", providertest.Reread(t, kube, svc), nodes)
				return err
			}))

			joined := append(slices.Clone(nodes), machineNode(e, "m-c"))
			route := joinOnce(t, e, c, kube, svc, joined)

			// The answer of the update lost (carried out, the connection
			// cut) or late (carried out after the CCM gave up): the next
			// Node still joins every backend set, nothing else changes.
			c.api.(*ociapi.Client).SetAttemptTimeout(lostAttempt)
			for i, f := range []core.Fault{{Lost: true}, {Late: lostLate}} {
				f.Route, f.Count = route, 1
				e.InjectFault(f)
				joined = append(joined, machineNode(e, fmt.Sprintf("m-lost-%d", i)))
				objects := e.Objects()
				require.NoError(t, poll(time.Minute, func() error {
					return c.UpdateLoadBalancer(ctx, "kubernetes", providertest.Reread(t, kube, svc), joined)
				}))
				time.Sleep(lostLate + 300*time.Millisecond) // a late write lands
				e.ClearFaults()
				require.NoError(t, poll(time.Minute, func() error {
					return c.UpdateLoadBalancer(ctx, "kubernetes", providertest.Reread(t, kube, svc), joined)
				}))
				assert.Equal(t, objects, e.Objects(), "nothing made or removed but backends")
				requireBackends(t, c, kube, svc, len(joined))
			}
		})
	}
}

// joinOnce runs the Service's members update to joined (one Node more) to
// its end, and checks what it sent: each backend set once, and its work
// request looked at; it says the route of the backend set's update.
func joinOnce(t *testing.T, e *emulator.Emulator, c *Cloud, kube *fake.Clientset, svc *v1.Service, joined []*v1.Node) string {
	t.Helper()
	ctx := t.Context()
	e.ResetCalls()
	passes := 0
	require.NoError(t, poll(time.Minute, func() error {
		passes++
		err := c.UpdateLoadBalancer(ctx, "kubernetes", providertest.Reread(t, kube, svc), joined)
		if err != nil {
			require.True(t, outcome.IsBackground(err), "a members update is background work: %v", err)
		}
		return err
	}))
	require.Greater(t, passes, 1)
	puts, route, other := 0, "", []string{}
	for _, call := range e.Calls() {
		switch {
		case call.Method == http.MethodPut && strings.HasSuffix(call.Route, "/backendSets/{name}"):
			puts += call.Count
			route = call.Route
		case call.Method == http.MethodGet && strings.Contains(call.Route, "orkRequests/{id}"):
		default:
			other = append(other, call.Method+" "+call.Route)
		}
	}
	assert.Equal(t, 2, puts, "each backend set sent once")
	assert.Empty(t, other, "no read by name, no other change")
	requireBackends(t, c, kube, svc, len(joined))
	require.NoError(t, c.UpdateLoadBalancer(ctx, "kubernetes", providertest.Reread(t, kube, svc), joined), "done: nothing more to send")
	return route
}

// requireBackends checks that each backend set of the Service's load
// balancer has n backends.
func requireBackends(t *testing.T, c *Cloud, kube *fake.Clientset, svc *v1.Service, n int) {
	t.Helper()
	c.lb.Relist()
	lb, found, err := c.lb.Listed(t.Context(), providertest.Reread(t, kube, svc))
	require.NoError(t, err)
	require.True(t, found)
	for name, bs := range lb.Obj.BackendSets {
		assert.Len(t, bs.Backends, n, "backend set %s holds every Node", name)
	}
}
