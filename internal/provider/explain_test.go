package provider

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/deletionguard"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

func explainNode(name, providerID string, addrs ...v1.NodeAddress) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, Spec: v1.NodeSpec{ProviderID: providerID},
		Status: v1.NodeStatus{Addresses: addrs}}
}

// What the node controller would set, as k8s.io/cloud-provider's does:
// the providerID only when there is none, the addresses always (the
// kubelet's hostname kept, its --node-ip first), the labels at the Node's
// initialisation.
func TestNodeWantsAreTheNodeControllers(t *testing.T) {
	md := &cloudprovider.InstanceMetadata{ProviderID: "x://1", InstanceType: "big", Zone: "z1", Region: "r1",
		NodeAddresses:    []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeExternalIP, Address: "203.0.113.1"}},
		AdditionalLabels: map[string]string{"x.example.com/fault-domain": "FD-1", "node.kubernetes.io/evil": "no"}}
	n := explainNode("n", "", v1.NodeAddress{Type: v1.NodeHostName, Address: "n"})
	n.Spec.Taints = []v1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider}}
	w, diffs := nodeWants(n, md)
	assert.Equal(t, "big", w.Labels[v1.LabelInstanceTypeStable])
	assert.Equal(t, "z1", w.Labels[v1.LabelFailureDomainBetaZone])
	assert.Equal(t, "FD-1", w.Labels["x.example.com/fault-domain"])
	assert.NotContains(t, w.Labels, "node.kubernetes.io/evil", "a cloud never sets Kubernetes' labels")
	assert.Contains(t, w.Addresses, NodeAddress{Type: "Hostname", Address: "n"}, "the kubelet's hostname kept")
	byObject := map[string]Difference{}
	for _, d := range diffs {
		byObject[d.Object] = d
	}
	assert.Equal(t, ActionCreate, byObject["providerID"].Action)
	assert.Equal(t, ActionChange, byObject["addresses"].Action)
	assert.Equal(t, ActionCreate, byObject["label "+v1.LabelTopologyZone].Action, "set at initialisation")

	// Initialised as the machine is: nothing; a label changed since is kept.
	n = explainNode("n", "x://1", md.NodeAddresses[0], md.NodeAddresses[1], v1.NodeAddress{Type: v1.NodeHostName, Address: "n"})
	for k, v := range w.Labels {
		n.Labels[k] = v
	}
	_, diffs = nodeWants(n, md)
	assert.Empty(t, diffs)
	n.Labels[v1.LabelTopologyZone] = "z2"
	_, diffs = nodeWants(n, md)
	require.Len(t, diffs, 1)
	assert.Equal(t, ActionKeep, diffs[0].Action)

	// The kubelet's --node-ip picks the address.
	n.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: "10.0.0.1"}
	w, _ = nodeWants(n, md)
	assert.Equal(t, NodeAddress{Type: "InternalIP", Address: "10.0.0.1"}, w.Addresses[0])
}

// The guard's answer: nothing while the machine exists; a few machines
// gone are let go; more than its share held, unless the Node is allowed.
func TestGuardOfSaysWhatTheGuardWouldDo(t *testing.T) {
	var nodes []*v1.Node
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		nodes = append(nodes, explainNode(name, "x://"+name))
	}
	nodes = append(nodes, explainNode("other", "y://other"))
	gone := map[string]bool{}
	exists := func(_ context.Context, n *v1.Node) (bool, error) { return !gone[n.Name], nil }
	ctx := context.Background()

	g, err := guardOf(ctx, deletionguard.Default, nodes[0], nodes, exists)
	require.NoError(t, err)
	assert.False(t, g.MachineGone)

	gone["a"], gone["b"] = true, true
	g, err = guardOf(ctx, deletionguard.Default, nodes[0], nodes, exists)
	require.NoError(t, err)
	assert.True(t, g.MachineGone)
	assert.Equal(t, [3]int{2, 8, 2}, [3]int{g.Gone, g.Total, g.Limit}, "another cloud's Node is not counted")
	assert.False(t, g.Holds)

	gone["c"] = true
	g, err = guardOf(ctx, deletionguard.Default, nodes[0], nodes, exists)
	require.NoError(t, err)
	assert.True(t, g.Holds, g.Says)
	assert.Contains(t, g.Says, deletionguard.AllowAnnotation)

	nodes[0].Annotations = map[string]string{deletionguard.AllowAnnotation: "true"}
	g, err = guardOf(ctx, deletionguard.Default, nodes[0], nodes, exists)
	require.NoError(t, err)
	assert.False(t, g.Holds)
	assert.True(t, g.Allowed)

	_, err = guardOf(ctx, deletionguard.Default, nodes[0], nodes, func(context.Context, *v1.Node) (bool, error) {
		return false, errors.New("the cloud is down")
	})
	assert.ErrorContains(t, err, "the cloud is down", "doubt is an error, never gone")
}

// A Service the cloud refuses (a Problem) is explained with why; any other
// error of Spec is the explanation's.
func TestAskedTellsARefusalFromAnError(t *testing.T) {
	e := NewServiceExplanation("x", &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}})
	require.NoError(t, e.Asked(outcome.Invalid(errors.New("annotation a: bad"))))
	assert.Contains(t, e.SpecProblem, "annotation a: bad")
	assert.Error(t, e.Asked(errors.New("the cloud is down")))
}

// A lookup that names several machines, or a providerID of another cloud,
// is told, not an error; one that fails is.
func TestExplainedNodeTellsALookupErrorFromAFailure(t *testing.T) {
	n := explainNode("n", "")
	exists := func(context.Context, *v1.Node) (bool, error) { return true, nil }
	e, err := ExplainedNode(context.Background(), "x", n, nil, Metadata{Err: &AmbiguousError{"2 machines are named n"}}, exists)
	require.NoError(t, err)
	assert.Contains(t, e.LookupError, "2 machines")
	_, err = ExplainedNode(context.Background(), "x", n, nil, Metadata{Err: errors.New("503")}, exists)
	assert.Error(t, err)
}
