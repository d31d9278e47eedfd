package servicecontroller

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// A Node's heartbeat (its conditions, its version, the rest of its status)
// keeps the Node set; every part a load balancer reads moves it. The status
// fields left out are read from NodeStatus itself, so that a new one is
// decided on.
func TestANodesHeartbeatKeepsTheSetAndWhatALoadBalancerReadsMovesIt(t *testing.T) {
	base := node("a", otherLabel)
	base.Annotations = map[string]string{"note": "x"}
	base.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}}
	same := map[string]func(*v1.Node){
		"version":     func(n *v1.Node) { n.ResourceVersion = "2" },
		"conditions":  notReady,
		"capacity":    func(n *v1.Node) { n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")} },
		"allocatable": func(n *v1.Node) { n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")} },
		"phase":       func(n *v1.Node) { n.Status.Phase = v1.NodeRunning },
		"daemon":      func(n *v1.Node) { n.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250 },
		"info":        func(n *v1.Node) { n.Status.NodeInfo.KubeletVersion = "v1.35.0" },
		"images":      func(n *v1.Node) { n.Status.Images = []v1.ContainerImage{{Names: []string{"pause"}}} },
		"volumes":     func(n *v1.Node) { n.Status.VolumesInUse = []v1.UniqueVolumeName{"v"} },
		"attached":    func(n *v1.Node) { n.Status.VolumesAttached = []v1.AttachedVolume{{Name: "v"}} },
		"config":      func(n *v1.Node) { n.Status.Config = &v1.NodeConfigStatus{} },
		"runtime":     func(n *v1.Node) { n.Status.RuntimeHandlers = []v1.NodeRuntimeHandler{{Name: "runc"}} },
		"features":    func(n *v1.Node) { n.Status.Features = &v1.NodeFeatures{} },
		"declared":    func(n *v1.Node) { n.Status.DeclaredFeatures = []string{"x"} },
	}
	statusFields := reflect.TypeFor[v1.NodeStatus]()
	covered := 0
	for i := range statusFields.NumField() {
		name := statusFields.Field(i).Name
		if name != "Addresses" {
			covered++
		}
	}
	assert.Equal(t, covered, len(same)-1, "every field of NodeStatus but Addresses is a heartbeat here (and the version)")
	for what, change := range same {
		n := base.DeepCopy()
		change(n)
		assert.True(t, sameForLoadBalancers(base, n), "%s changed: the same set", what)
	}
	moves := map[string]func(*v1.Node){
		"label":       func(n *v1.Node) { n.Labels["team"] = "b" },
		"annotation":  func(n *v1.Node) { n.Annotations["note"] = "y" },
		"address":     func(n *v1.Node) { n.Status.Addresses[0].Address = "10.0.0.2" },
		"provider ID": providerID("cloud:///b"),
		"taint":       tainted("t"),
		"cordon":      func(n *v1.Node) { n.Spec.Unschedulable = true },
		"deletion":    deleting,
		"uid":         func(n *v1.Node) { n.UID = "other" },
	}
	for what, change := range moves {
		n := base.DeepCopy()
		change(n)
		assert.False(t, sameForLoadBalancers(base, n), "%s changed: another set", what)
	}
}

// The eligible Nodes are listed once a change: every pass in between is
// given the same slice, which a cloud may key on.
func TestTheEligibleNodesAreListedOnceAChange(t *testing.T) {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, store.Add(node("b")))
	require.NoError(t, store.Add(node("a")))
	lister := corelisters.NewNodeLister(store)
	var s nodeSet
	first, h1, err := s.eligible(lister)
	require.NoError(t, err)
	require.Len(t, first, 2)
	assert.Equal(t, "a", first[0].Name)
	again, h2, err := s.eligible(lister)
	require.NoError(t, err)
	assert.Same(t, &first[0], &again[0], "no change: the same slice")
	assert.Equal(t, h1, h2)

	require.NoError(t, store.Add(node("c")))
	same, _, err := s.eligible(lister)
	require.NoError(t, err)
	assert.Len(t, same, 2, "not listed again before the change is told")
	s.changed()
	now, h3, err := s.eligible(lister)
	require.NoError(t, err)
	assert.Len(t, now, 3)
	assert.NotEqual(t, h1, h3)
}
