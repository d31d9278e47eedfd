package cloudstack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/annotation"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// explain is ExplainService of svc, which must make no write.
func (f *fixture) explain(svc *v1.Service, nodes []*v1.Node) provider.ServiceExplanation {
	f.t.Helper()
	f.emu.ResetCalls()
	e, err := f.c.ExplainService(context.Background(), "kubernetes", svc, nodes)
	require.NoError(f.t, err)
	require.Zero(f.t, writes(f.emu), "explain writes nothing: %v", f.emu.Calls())
	return e
}

// drift are the explanation's differences as "action object" lines.
func drift(e provider.ServiceExplanation) []string {
	out := []string{}
	for _, d := range e.Drift {
		out = append(out, d.Action+" "+d.Object)
	}
	return out
}

// walked converges svc with a walk (its record dropped, as a drift pass
// makes the next pass walk).
func (f *fixture) walked(kube *fake.Clientset, svc *v1.Service, nodes []*v1.Node) {
	f.t.Helper()
	svc = providertest.Reread(f.t, kube, svc)
	delete(svc.Annotations, string(annotation.CloudStackConverged))
	f.ensured(svc, nodes)
}

// A Service built by the cycle is explained as it is (nothing to repair);
// a rule's algorithm, a machine and an opening changed behind the CCM's
// back are the drift explain shows, with no write, and what the next walk
// repairs: explain then shows none.
func TestExplainShowsWhatTheCloudHoldsAndWhatDrifted(t *testing.T) {
	for _, network := range []struct {
		name, opening string
		opts          emulator.Options
	}{
		{"isolated network", "firewall rule", emulator.Options{}},
		{"VPC tier", "ACL item", emulator.Options{VPC: true}},
	} {
		t.Run(network.name, func(t *testing.T) { explainOn(t, network.opts, network.opening) })
	}
}

func explainOn(t *testing.T, opts emulator.Options, opening string) {
	f := newFixture(t, opts)
	nodes := f.nodes("worker-1", "worker-2")
	svc := service("web", httpPort)
	svc.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
	kube := fake.NewClientset(svc)
	f.c.SetKube(kube)
	fresh := func() *v1.Service { return providertest.Reread(t, kube, svc) }
	addr := f.ensured(fresh(), nodes).Ingress[0].IP

	e := f.explain(fresh(), nodes)
	require.True(t, e.Found)
	assert.True(t, e.DriftChecked)
	assert.Empty(t, drift(e), "converged: nothing to repair")
	require.Len(t, e.Addresses, 1)
	assert.Equal(t, addr, e.Addresses[0].IP)
	require.Len(t, e.Listeners, 1)
	assert.Equal(t, 80, e.Listeners[0].Port)
	require.Len(t, e.Pools, 1)
	assert.Len(t, e.Pools[0].Members, 2)
	assert.ElementsMatch(t, []string{"worker-1", "worker-2"}, []string{e.Pools[0].Members[0].Node, e.Pools[0].Members[1].Node})
	var openings []provider.SecurityRule
	for _, r := range e.SecurityRules {
		if r.Kind == opening {
			openings = append(openings, r)
		}
	}
	require.Len(t, openings, 1, "%+v", e.SecurityRules)
	assert.Equal(t, "198.51.100.0/24", openings[0].Peer)
	assert.Equal(t, provider.MarkThisCluster, openings[0].Mark)
	require.NotNil(t, e.Record)
	assert.True(t, e.Record.AsAsked)

	// Behind its back: the algorithm changed, a machine removed, the
	// opening gone.
	r := f.rules()[0]
	p := f.admin.LoadBalancer.NewUpdateLoadBalancerRuleParams(r.Id)
	p.SetAlgorithm("leastconn")
	_, err := f.admin.LoadBalancer.UpdateLoadBalancerRule(p)
	require.NoError(t, err)
	machine := e.Pools[0].Members[1].ID
	require.NoError(t, unassign(f.admin, "member/"+machine+" of "+r.Id))
	removeOpening(t, f.admin, opening, openings[0].ID)

	e = f.explain(fresh(), nodes)
	got := drift(e)
	assert.Contains(t, got, "change rule "+r.Name)
	assert.Contains(t, got, "create member "+machine+" of rule "+r.Name)
	assert.Contains(t, got, "create "+opening+" for tcp 80")
	assert.Len(t, e.Pools[0].Members, 1, "what the cloud holds now")

	f.walked(kube, svc, nodes)
	e = f.explain(fresh(), nodes)
	assert.Empty(t, drift(e), "the walk repaired what explain showed")
	assert.Equal(t, addr, e.Addresses[0].IP)
	out, err := json.Marshal(e)
	require.NoError(t, err)
	assert.NotContains(t, string(out), f.emu.Fixture().UserSecret, "never a secret")
}

func removeOpening(t *testing.T, admin *cs.CloudStackClient, kind, id string) {
	t.Helper()
	var err error
	if kind == "firewall rule" {
		_, err = admin.Firewall.DeleteFirewallRule(admin.Firewall.NewDeleteFirewallRuleParams(id))
	} else {
		_, err = admin.NetworkACL.DeleteNetworkACL(admin.NetworkACL.NewDeleteNetworkACLParams(id))
	}
	require.NoError(t, err)
}

// A Service the cloud has nothing for is not found; one whose annotation
// is invalid says why, and nothing is compared.
func TestExplainOfNothingAndOfAnInvalidService(t *testing.T) {
	f, nodes, svc := webOnOneNode(t)
	e := f.explain(svc, nodes)
	assert.False(t, e.Found)
	assert.Empty(t, e.SpecProblem)

	svc.Annotations = map[string]string{string(annotation.CloudStackAlgorithm): "fastest"}
	e = f.explain(svc, nodes)
	assert.False(t, e.Found)
	assert.Contains(t, e.SpecProblem, "fastest")

	// Keys the cloud refuses: an error, which names no secret.
	cfg := f.c.cfg
	cfg.Global.SecretKey = "not-the-secret"
	c, err := New(cfg, ProviderName)
	require.NoError(t, err)
	c.Cluster.Set(clusterUID)
	_, err = c.ExplainService(context.Background(), "kubernetes", service("web", httpPort), nodes)
	require.ErrorIs(t, err, outcome.ErrAuth)
	assert.NotContains(t, err.Error(), "not-the-secret")
}

// A Node's machine, what the node controller would set, and the deletion
// guard: a machine gone alone is let go, most of them at once are held.
func TestExplainNodeSaysItsMachineAndTheGuard(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1", "worker-2", "worker-3", "worker-4")
	ctx := context.Background()
	f.emu.ResetCalls()
	e, err := f.c.ExplainNode(ctx, nodes[0], nodes)
	require.NoError(t, err)
	assert.Zero(t, writes(f.emu))
	require.True(t, e.Found)
	assert.Equal(t, "worker-1", e.Machine.Name)
	assert.Equal(t, f.emu.Fixture().ZoneName, e.Machine.Zone)
	assert.Equal(t, f.emu.Fixture().ZoneName, e.Wants.Labels[v1.LabelTopologyZone])
	assert.False(t, e.Guard.MachineGone)
	var objects []string
	for _, d := range e.Differences {
		objects = append(objects, d.Object)
	}
	assert.Contains(t, objects, "addresses", "the Node has none of its machine's")
	assert.Contains(t, objects, "6 label(s)", "the Node has none of the labels")

	id := strings.TrimPrefix(nodes[0].Spec.ProviderID, "external-cloudstack://")
	require.NoError(t, f.emu.SetMachineState(id, emulator.StateDestroyed))
	f.c.machines.Invalidate()
	e, err = f.c.ExplainNode(ctx, nodes[0], nodes)
	require.NoError(t, err)
	assert.False(t, e.Found)
	assert.True(t, e.Guard.MachineGone)
	assert.False(t, e.Guard.Holds, "one of four is let go: %s", e.Guard.Says)

	for _, n := range nodes[1:] {
		require.NoError(t, f.emu.SetMachineState(strings.TrimPrefix(n.Spec.ProviderID, "external-cloudstack://"), emulator.StateDestroyed))
	}
	f.c.machines.Invalidate()
	e, err = f.c.ExplainNode(ctx, nodes[0], nodes)
	require.NoError(t, err)
	assert.True(t, e.Guard.Holds, "four of four are held: %s", e.Guard.Says)
	assert.Equal(t, 4, e.Guard.Gone)
}
