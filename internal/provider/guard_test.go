package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/deletionguard"
)

func guardNode(name string, annotations map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Spec: v1.NodeSpec{ProviderID: "test://" + name}}
}

func TestDeletionGuardDecides(t *testing.T) {
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	g := newDeletionGuard(deletionguard.Options{Share: 0.25, Min: 2, Window: time.Hour})
	g.now = func() time.Time { return now }
	const total = 12 // the limit: max(2, floor(3)) = 3

	held, _, _ := g.decide(guardNode("a", nil), 3, total)
	assert.False(t, held, "3 of 12 is within the share")
	held, msg, first := g.decide(guardNode("a", nil), 4, total)
	require.True(t, held, "4 of 12 at once is held")
	assert.True(t, first, "one Warning per hold")
	assert.Contains(t, msg, "4 of the cluster's 12 Nodes")
	assert.Contains(t, msg, deletionguard.AllowAnnotation)
	held, _, first = g.decide(guardNode("b", nil), 12, total)
	assert.True(t, held)
	assert.False(t, first)
	assert.Contains(t, func() string { _, m, _ := g.decide(guardNode("b", nil), 12, total); return m }(), "at least 12")

	held, _, _ = g.decide(guardNode("c", map[string]string{deletionguard.AllowAnnotation: "true"}), 12, total)
	assert.False(t, held, "a Node a person allows goes")

	// Back within the share: the hold ends, and a new one warns again.
	held, _, _ = g.decide(guardNode("a", nil), 1, total)
	assert.False(t, held)
	assert.True(t, g.since.IsZero())
	_, _, first = g.decide(guardNode("a", nil), 5, total)
	assert.True(t, first)

	// A hold that lasts the whole window lets the deletions go.
	now = now.Add(59 * time.Minute)
	held, _, _ = g.decide(guardNode("a", nil), 5, total)
	assert.True(t, held)
	now = now.Add(time.Minute)
	held, _, _ = g.decide(guardNode("a", nil), 5, total)
	assert.False(t, held, "held for the whole window: the deletions go ahead")

	// Window 0: held until a person allows, however long.
	g0 := newDeletionGuard(deletionguard.Options{Share: 0.25, Min: 2})
	g0.now = func() time.Time { return now }
	g0.decide(guardNode("a", nil), 4, total)
	now = now.Add(48 * time.Hour)
	held, _, _ = g0.decide(guardNode("a", nil), 4, total)
	assert.True(t, held)

	// Share 1: no guard; Min: two machines gone are never held.
	off := newDeletionGuard(deletionguard.Options{Share: 1, Min: 2})
	held, _, _ = off.decide(guardNode("a", nil), 12, total)
	assert.False(t, held)
	small := newDeletionGuard(deletionguard.Options{Share: 0.25, Min: 2})
	held, _, _ = small.decide(guardNode("a", nil), 2, 3)
	assert.False(t, held, "2 of a 3-Node cluster: Min")
}

// machines is an InstancesV2 whose machines are those of the set.
type machines struct {
	cloudprovider.InstancesV2
	have  map[string]bool
	asked int
}

func (m *machines) InstanceExists(_ context.Context, n *v1.Node) (bool, error) {
	m.asked++
	return m.have[n.Name], nil
}

// The first Node the controller asks about already sees the whole picture:
// none of a mass disappearance is deleted, not even the first ones.
func TestGuardedInstancesSurveyEveryNode(t *testing.T) {
	var objs []v1.Node
	have := map[string]bool{}
	for i := range 12 {
		n := guardNode(fmt.Sprintf("n%02d", i), nil)
		objs = append(objs, *n)
		have[n.Name] = true
	}
	client := fake.NewClientset(&v1.NodeList{Items: objs})
	f := informers.NewSharedInformerFactory(client, 0)
	var b Base
	b.SetInformers(f)
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())
	cloud := &machines{have: have}
	inst := b.GuardInstances(cloud)

	// One machine gone: deleted (one survey of the 12).
	have["n00"] = false
	exists, err := inst.InstanceExists(t.Context(), &objs[0])
	require.NoError(t, err)
	assert.False(t, exists)

	// Every machine gone (another project): the first asked is held.
	b.guard.surveyed = time.Time{}
	for k := range have {
		have[k] = false
	}
	cloud.asked = 0
	_, err = inst.InstanceExists(t.Context(), &objs[5])
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Node deletion guard")
	assert.LessOrEqual(t, cloud.asked, 1+4, "the survey stops once past the limit (3)")
	_, err = inst.InstanceExists(t.Context(), &objs[6])
	require.Error(t, err, "held from the survey that stands")
}

// Before the Nodes are known, a vanished machine is doubt: an error, never a
// deletion.
func TestGuardedInstancesWithoutNodesIsDoubt(t *testing.T) {
	var b Base
	inst := b.GuardInstances(&machines{have: map[string]bool{}})
	exists, err := inst.InstanceExists(t.Context(), guardNode("x", nil))
	assert.False(t, exists)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not known yet")
}
