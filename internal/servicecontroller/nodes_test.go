package servicecontroller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type nodeOpt func(*v1.Node)

func node(name string, opts ...nodeOpt) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, Spec: v1.NodeSpec{ProviderID: "cloud:///" + name},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func excluded(v string) nodeOpt {
	return func(n *v1.Node) { n.Labels[v1.LabelNodeExcludeBalancers] = v }
}

func tainted(key string) nodeOpt {
	return func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule})
	}
}

func notReady(n *v1.Node)   { n.Status.Conditions[0].Status = v1.ConditionFalse }
func noReady(n *v1.Node)    { n.Status.Conditions = nil }
func deleting(n *v1.Node)   { now := metav1.Now(); n.DeletionTimestamp = &now }
func otherLabel(n *v1.Node) { n.Labels["team"] = "a" }

func providerID(id string) nodeOpt { return func(n *v1.Node) { n.Spec.ProviderID = id } }

func TestEligibleIsTheFrameworksStableNodeSet(t *testing.T) {
	for _, tt := range []struct {
		name string
		node *v1.Node
		want bool
	}{
		{"a plain Ready Node backs load balancers", node("a"), true},
		{"a NotReady Node stays: the health check takes it out", node("a", notReady), true},
		{"a Node without a Ready condition stays", node("a", noReady), true},
		{"a Node without a provider ID stays (its members are resolved by the cloud)", node("a", providerID("")), true},
		{"an excluded Node does not", node("a", excluded("true")), false},
		{"an exclusion label of false does not exclude", node("a", excluded("false")), true},
		{"an exclusion label that is not a boolean excludes", node("a", excluded("yes please")), false},
		{"an empty exclusion label excludes", node("a", excluded("")), false},
		{"a Node tainted by the Cluster Autoscaler does not", node("a", tainted(ToBeDeletedTaint)), false},
		{"another taint does not matter", node("a", tainted("dedicated")), true},
		{"a Node being deleted does not", node("a", deleting), false},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, Eligible(tt.node)) })
	}
}

// The cases of the framework's Test_shouldSyncUpdatedNode_individualPredicates
// and _compoundedPredicates (k8s.io/cloud-provider v0.37.1).
func TestNodeChangeMattersAsTheFrameworkDecides(t *testing.T) {
	for _, tt := range []struct {
		name     string
		old, cur *v1.Node
		want     bool
	}{
		{"nothing changed", node("a"), node("a"), false},
		{"excluded F->T", node("a"), node("a", excluded("true")), true},
		{"excluded T->F", node("a", excluded("true")), node("a"), true},
		{"excluded T->T", node("a", excluded("true")), node("a", excluded("true")), false},
		{"other taint F->T", node("a"), node("a", tainted("x")), false},
		{"other label F->T", node("a"), node("a", otherLabel), false},
		{"readiness T->F", node("a"), node("a", notReady), false},
		{"readiness F->unset", node("a", notReady), node("a", noReady), false},
		{"deletionTimestamp F->T", node("a"), node("a", deleting), false},
		{"providerID set", node("a", providerID("")), node("a"), true},
		{"providerID unset", node("a"), node("a", providerID("")), true},
		{"providerID change", node("a"), node("a", providerID("cloud:///b")), true},
		{"tainted T, excluded F->T", node("a", tainted(ToBeDeletedTaint)), node("a", tainted(ToBeDeletedTaint), excluded("true")), true},
		{"tainted T, ready F->T", node("a", tainted(ToBeDeletedTaint), notReady), node("a", tainted(ToBeDeletedTaint)), false},
		{"excluded T, tainted F->T", node("a", excluded("true")), node("a", excluded("true"), tainted(ToBeDeletedTaint)), false},
		{"excluded T, providerID change", node("a", excluded("true")), node("a", excluded("true"), providerID("x")), true},
		{"ready F, excluded F->T", node("a", notReady), node("a", notReady, excluded("true")), true},
		{"ready F, tainted F->T", node("a", notReady), node("a", notReady, tainted(ToBeDeletedTaint)), false},
		{"providerID unset, ready F->T", node("a", providerID(""), notReady), node("a", providerID("")), false},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, nodeChangeMatters(tt.old, tt.cur)) })
	}
}

func TestNodeSetHashSeesNamesAndProviderIDsOnly(t *testing.T) {
	base := nodeSetHash([]*v1.Node{node("a"), node("b")})
	assert.Equal(t, base, nodeSetHash([]*v1.Node{node("a", notReady, otherLabel), node("b")}), "readiness and labels do not change the set")
	assert.NotEqual(t, base, nodeSetHash([]*v1.Node{node("a")}), "a Node fewer")
	assert.NotEqual(t, base, nodeSetHash([]*v1.Node{node("a"), node("b", providerID("x"))}), "a provider ID changed")
	assert.NotEqual(t, nodeSetHash([]*v1.Node{node("ab")}), nodeSetHash([]*v1.Node{node("a", providerID("")), node("b", providerID(""))}), "names are delimited")
}

// Beyond the framework, a Node's addresses and labels move the members (an
// address is the member where members are addresses; labels decide a node
// selector's choice): a change of either is a sync and another view of the set.
func TestAddressesAndLabelsMoveTheMembersAndNothingElseOfTheStatusDoes(t *testing.T) {
	addressed := func(ip string) nodeOpt {
		return func(n *v1.Node) { n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}} }
	}
	for _, tt := range []struct {
		name     string
		old, cur *v1.Node
		want     bool
	}{
		{"nothing changed", node("a", addressed("10.0.0.1")), node("a", addressed("10.0.0.1")), false},
		{"an address changed", node("a", addressed("10.0.0.1")), node("a", addressed("10.0.0.2")), true},
		{"an address added", node("a"), node("a", addressed("10.0.0.1")), true},
		{"a label added", node("a"), node("a", otherLabel), true},
		{"readiness", node("a"), node("a", notReady), false},
		{"a taint", node("a"), node("a", tainted(ToBeDeletedTaint)), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, membersMayMove(tt.old, tt.cur))
			same := nodeViewHash([]*v1.Node{tt.old}) == nodeViewHash([]*v1.Node{tt.cur})
			assert.Equal(t, tt.want, !same, "the set's view")
		})
	}
	assert.NotEqual(t, nodeViewHash([]*v1.Node{node("a", func(n *v1.Node) { n.Labels["x"] = "y=z" })}),
		nodeViewHash([]*v1.Node{node("a", func(n *v1.Node) { n.Labels["x=y"] = "z" })}), "labels are delimited")
}
