package local

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/provider"
)

func explainService() *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-explain"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"127.0.0.0/8"},
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 28080, NodePort: 30080}}}}
}

// In the process that serves it, a Service's listeners and backends are
// shown, and a Node that joined is the drift; in another process (the
// command line) its address and what the proxy serves for it, from the
// Service and its Nodes.
func TestExplainShowsWhatTheProxyServes(t *testing.T) {
	c := newTestCloud(t, testInstances...)
	ctx := context.Background()
	svc := explainService()
	running := testNode("running", "local://running", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.10"}})
	custom := testNode("custom", "local://custom-id", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.11"}})
	st, err := c.EnsureLoadBalancer(ctx, "kubernetes", svc, []*v1.Node{running})
	require.NoError(t, err)
	ip := st.Ingress[0].IP

	e, err := c.ExplainService(ctx, "kubernetes", svc, []*v1.Node{running})
	require.NoError(t, err)
	require.True(t, e.Found)
	assert.True(t, e.DriftChecked)
	assert.Empty(t, e.Drift)
	assert.Equal(t, ip, e.Addresses[0].IP)
	assert.Equal(t, "default", e.LoadBalancer.Details["pool"])
	require.Len(t, e.Listeners, 1)
	assert.Equal(t, 28080, e.Listeners[0].Port)
	require.Len(t, e.Pools[0].Members, 1)
	assert.Equal(t, "running", e.Pools[0].Members[0].Node)
	require.Len(t, e.SecurityRules, 1)
	assert.Equal(t, "127.0.0.0/8", e.SecurityRules[0].Peer)
	require.NotNil(t, e.Record)
	assert.True(t, e.Record.AsAsked)

	e, err = c.ExplainService(ctx, "kubernetes", svc, []*v1.Node{running, custom})
	require.NoError(t, err)
	require.Len(t, e.Drift, 1)
	assert.Equal(t, provider.ActionCreate, e.Drift[0].Action)
	assert.Contains(t, e.Drift[0].Object, "custom 127.0.0.11:30080")

	other := newTestCloud(t, testInstances...)
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: ip}}
	e, err = other.ExplainService(ctx, "kubernetes", svc, []*v1.Node{running})
	require.NoError(t, err)
	assert.True(t, e.Found, "the address of its status is the pool's")
	assert.False(t, e.DriftChecked, "the proxy is another process's")
	assert.Len(t, e.Pools[0].Members, 1)
	assert.NotEmpty(t, e.Notes)

	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	e, err = other.ExplainService(ctx, "kubernetes", svc, nil)
	require.NoError(t, err)
	assert.False(t, e.Found, "an address of no pool is not the local cloud's")
}

// A Node's instance of the inventory, and the deletion guard for one that
// is terminated.
func TestExplainNodeOfTheInventory(t *testing.T) {
	c := newTestCloud(t, testInstances...)
	ctx := context.Background()
	running := testNode("running", "local://running", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.10"}})
	terminated := testNode("terminated", "local://terminated", nil)
	all := []*v1.Node{running, terminated}

	e, err := c.ExplainNode(ctx, running, all)
	require.NoError(t, err)
	require.True(t, e.Found)
	assert.Equal(t, "type-1", e.Wants.Labels[v1.LabelInstanceTypeStable])
	assert.False(t, e.Guard.MachineGone)

	e, err = c.ExplainNode(ctx, terminated, all)
	require.NoError(t, err)
	assert.False(t, e.Found)
	require.NotNil(t, e.Machine, "its instance, terminated")
	assert.True(t, e.Guard.MachineGone)
	assert.False(t, e.Guard.Holds, "one of two")

	e, err = c.ExplainNode(ctx, testNode("ghost", "", nil), all)
	require.NoError(t, err)
	assert.False(t, e.Found)
	assert.Nil(t, e.Machine)
}
