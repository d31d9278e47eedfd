package oci

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// Two load balancers of a Service's name, both with this cluster's marks
// for it (a create whose answer was lost made again with another body, or
// after a restart): the Service keeps the one its status points to, and the
// other is deleted, told by a Normal Event. One without this cluster's
// marks is not ours to delete: the Service is told to resolve it by hand.
func TestASecondLoadBalancerOfTheServiceIsDeletedAndTheOneServedKept(t *testing.T) {
	r := newLostRun(t, lostScenario{name: "dup", change: func(*v1.Service) {}})
	rec := record.NewFakeRecorder(100)
	r.c.Events.Set(rec)
	svc := lbSvc("dup", "uid-dup", 30400)
	_, err := r.kube.CoreV1().Services(svc.Namespace).Create(t.Context(), svc, metav1.CreateOptions{})
	require.NoError(t, err)
	first := r.converge(t, svc)
	spec, _, err := r.c.lb.Spec(t.Context(), "kubernetes", providertest.Reread(t, r.kube, svc), r.nodes)
	require.NoError(t, err)
	second := func(tags map[string]string) {
		_, err := r.c.api.CreateLoadBalancer(t.Context(), ociapi.CreateLoadBalancer{CompartmentID: r.c.cfg.CompartmentID, DisplayName: spec.name,
			ShapeName: spec.shape, ShapeDetails: spec.flex, SubnetIDs: spec.subnets, Listeners: spec.listeners,
			BackendSets: spec.backendSets, FreeformTags: tags}, newToken())
		require.NoError(t, err)
	}
	second(spec.freeform)
	lbs := r.named(t, spec.name)
	require.Len(t, lbs, 2)
	newer := address(lbs[1], false)
	require.NotEqual(t, first, newer)
	// The Service's status points to the newer one: it is kept.
	fresh := providertest.Reread(t, r.kube, svc)
	fresh.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: newer}}
	_, err = r.kube.CoreV1().Services(svc.Namespace).UpdateStatus(t.Context(), fresh, metav1.UpdateOptions{})
	require.NoError(t, err)
	r.c.lb.Relist()
	assert.Equal(t, newer, r.converge(t, svc), "the address the Service is served at stays")
	require.Eventually(t, func() bool { return len(r.named(t, spec.name)) == 1 }, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, lbs[1].ID, r.named(t, spec.name)[0].ID)
	events := strings.Join(drainEvents(rec), "\n")
	assert.Contains(t, events, "Normal DeletingDuplicate Deleting load balancer "+lbs[0].ID)

	second(map[string]string{"someone": "else"})
	r.c.lb.Relist()
	_, err = r.c.EnsureLoadBalancer(t.Context(), "kubernetes", providertest.Reread(t, r.kube, svc), r.nodes)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "resolve by hand")
	assert.Len(t, r.named(t, spec.name), 2, "nothing of someone else's is deleted")
}

// named are the load balancers of a name, oldest first.
func (r *lostRun) named(t *testing.T, name string) []ociapi.LB {
	list, err := r.c.api.LoadBalancers(t.Context(), ociapi.KindLB, ociapi.With(ociapi.InCompartment(r.c.cfg.CompartmentID), "displayName", name))
	require.NoError(t, err)
	list = slices.DeleteFunc(list, func(lb ociapi.LB) bool { return lb.LifecycleState == "DELETED" || lb.LifecycleState == "DELETING" })
	slices.SortFunc(list, func(a, b ociapi.LB) int { return a.TimeCreated.Compare(b.TimeCreated) })
	return list
}

// drainEvents are the Events recorded so far.
func drainEvents(rec *record.FakeRecorder) (out []string) {
	for range len(rec.Events) {
		out = append(out, <-rec.Events)
	}
	return out
}
