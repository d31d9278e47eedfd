package oci

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/annotation"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/emulator/oci/ocitest"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// explainOf is ExplainService of svc, which must write nothing.
func explainOf(t *testing.T, e *emulator.Emulator, c *Cloud, svc *v1.Service, nodes []*v1.Node) provider.ServiceExplanation {
	t.Helper()
	e.ResetCalls()
	x, err := c.ExplainService(t.Context(), "kubernetes", svc, nodes)
	require.NoError(t, err)
	_, writes := ocitest.ReadsAndWrites(e)
	require.Zero(t, writes, "explain writes nothing: %v", e.Calls())
	return x
}

func driftLines(x provider.ServiceExplanation) []string {
	out := []string{}
	for _, d := range x.Drift {
		out = append(out, d.Action+" "+d.Object+": "+d.Detail)
	}
	return out
}

// A Service built by the cycle is explained as it is (nothing to repair);
// a backend set's policy, a backend and a security rule changed behind the
// CCM's back are the drift explain shows, with no write, and what the next
// walk repairs: explain then shows none. For each kind of load balancer
// and security rule.
func TestExplainShowsWhatTheCloudHoldsAndWhatDrifted(t *testing.T) {
	for _, kind := range []struct {
		name, kind, rule string
		annotations      map[string]string
	}{
		{"security lists", ociapi.KindLB, "security list rule", nil},
		{"NSG mode", ociapi.KindLB, "NSG rule", map[string]string{"oci.oraclecloud.com/security-rule-management-mode": "NSG"}},
		{"network load balancer", ociapi.KindNLB, "", map[string]string{"oci.oraclecloud.com/load-balancer-type": "nlb"}},
	} {
		t.Run(kind.name, func(t *testing.T) { explainKind(t, kind.kind, kind.rule, kind.annotations) })
	}
}

func explainKind(t *testing.T, kind, ruleKind string, annotations map[string]string) {
	e := startEmulator(t)
	c := clusterCloud(t, e, "explain-cluster")
	svc := lbSvc("web", "uid-explain", 30180)
	svc.Annotations = maps.Clone(annotations)
	if ruleKind == "NSG rule" {
		backendNSG(t, e, c, svc)
	}
	kube := fake.NewClientset(svc)
	c.SetKube(kube)
	nodes := []*v1.Node{machineNode(e, "explain-a"), machineNode(e, "explain-b")}
	fresh := func() *v1.Service { return providertest.Reread(t, kube, svc) }
	ensure := func(svc *v1.Service) string {
		var st *v1.LoadBalancerStatus
		require.NoError(t, poll(time.Minute, func() error {
			var err error
			st, err = c.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nodes)
			return err
		}))
		return st.Ingress[0].IP
	}
	addr := ensure(fresh())

	x := explainOf(t, e, c, fresh(), nodes)
	ours := asConverged(t, x, addr, ruleKind)

	// Behind its back: the backend set's policy, one of its backends, and
	// one of the Service's security rules.
	listed := func(ctx context.Context) (ociapi.LB, error) {
		lb, found, err := c.lb.byName(ctx, fresh(), kind)
		if err == nil && !found {
			err = errors.New("no load balancer")
		}
		return lb, err
	}
	h := hand{cloud: func() *Cloud { return c }, kind: kind, listed: listed}
	set := x.Pools[0].Name
	gone := x.Pools[0].Members[1].Address
	policy := map[string]string{ociapi.KindLB: "IP_HASH", ociapi.KindNLB: "TWO_TUPLE"}[kind]
	require.NoError(t, h.backendSet(t.Context(), set, func(bs *ociapi.BackendSet) {
		bs.Policy = policy
		bs.Backends = bs.Backends[:1]
	}))
	removeOurRule(t, c, ruleKind, ours)

	x = explainOf(t, e, c, fresh(), nodes)
	got := strings.Join(driftLines(x), "\n")
	t.Logf("drift:\n%s", got)
	assert.Contains(t, got, "change backend set "+set+": policy "+policy)
	assert.Contains(t, got, "lacks backend "+gone)
	if ruleKind != "" {
		assert.Contains(t, got, "create ingress")
	}

	walked := fresh()
	delete(walked.Annotations, string(annotation.OCIConverged))
	c.lb.Relist() // as a drift pass does before its walks
	c.lb.Drifting(walked)
	ensure(walked)
	x = explainOf(t, e, c, fresh(), nodes)
	assert.Empty(t, driftLines(x), "the walk repaired it")
	out, err := json.Marshal(x)
	require.NoError(t, err)
	for _, line := range strings.Split(e.Fixture().PrivateKeyPEM, "\n") {
		if len(line) > 20 && !strings.HasPrefix(line, "-----") {
			require.NotContains(t, string(out), line, "never a secret")
		}
	}
}

// asConverged checks the explanation of a load balancer just converged,
// on addr: nothing to repair, one listener, two backends, and the
// Service's rules of ruleKind, which it returns.
func asConverged(t *testing.T, x provider.ServiceExplanation, addr, ruleKind string) []provider.SecurityRule {
	t.Helper()
	require.True(t, x.Found)
	assert.True(t, x.DriftChecked)
	assert.Empty(t, driftLines(x), "converged: nothing to repair")
	assert.Equal(t, addr, x.Addresses[0].IP)
	require.Len(t, x.Listeners, 1)
	assert.Equal(t, 80, x.Listeners[0].Port)
	require.Len(t, x.Pools, 1)
	assert.Len(t, x.Pools[0].Members, 2)
	var ours []provider.SecurityRule
	for _, r := range x.SecurityRules {
		if r.Kind == ruleKind && r.Mark == provider.MarkThisCluster {
			ours = append(ours, r)
		}
	}
	if ruleKind != "" {
		require.NotEmpty(t, ours, "%+v", x.SecurityRules)
	}
	require.NotNil(t, x.Record)
	assert.True(t, x.Record.AsAsked)
	return ours
}

// removeOurRule removes the first ingress rule of the Service's of kind.
func removeOurRule(t *testing.T, c *Cloud, kind string, ours []provider.SecurityRule) {
	t.Helper()
	for _, r := range ours {
		if r.Direction != "ingress" {
			continue
		}
		switch kind {
		case "NSG rule":
			group := strings.TrimPrefix(r.In, "network security group ")
			require.NoError(t, c.api.RemoveNSGRules(t.Context(), group, []string{r.ID}))
		case "security list rule":
			list := strings.TrimPrefix(r.In, "security list ")
			require.NoError(t, editRule(t.Context(), c, "security-rule/ingress:6:"+r.Peer+":"+r.Ports+"-"+r.Ports+" stateful of "+list, nil))
		}
		return
	}
}

// A Service the cloud has nothing for is not found; a Node's instance is
// found, with what the node controller would set, and the guard's answer.
func TestExplainOfNothingAndOfANode(t *testing.T) {
	e := startEmulator(t)
	c := clusterCloud(t, e, "explain-cluster")
	x := explainOf(t, e, c, lbSvc("none", "uid-none", 30181), nil)
	assert.False(t, x.Found)

	node := machineNode(e, "explain-node")
	n, err := c.ExplainNode(t.Context(), node, []*v1.Node{node})
	require.NoError(t, err)
	require.True(t, n.Found)
	assert.Equal(t, "explain-node", n.Machine.Name)
	assert.Equal(t, node.Spec.ProviderID, n.Wants.ProviderID)
	assert.NotEmpty(t, n.Wants.Labels[FaultDomainLabel])
	assert.False(t, n.Guard.MachineGone)
}
