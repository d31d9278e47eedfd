package openstack

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// A create whose answer was lost may have made its load balancer all the
// same: Octavia lists it only once its API has answered, which under load
// was after the CCM had given up. For lostCreateWindow the Service's
// passes look for it by its tags (findLB) instead of creating another; a
// second one made anyway (the window over, or a restart between) carries the
// same tags, and is deleted here: the Service keeps the one its status
// points to, else the oldest.

// lostCreateWindow is how long after a create lost its answer the load
// balancer may yet be listed: the create's own attempt bound
// (osapi.OctaviaCreateTimeout) and as long again for Octavia's API to finish.
const lostCreateWindow = 2 * osapi.OctaviaCreateTimeout

// awaitingLostCreate is the progress of a Service whose create lost its
// answer while its load balancer may yet appear; "" when none.
func (st *steps) awaitingLostCreate(svc *v1.Service, name string) string {
	return st.unanswered.Awaiting(string(svc.UID), "load balancer "+name)
}

// deleteDuplicates deletes the Service's load balancers other than lb (its
// tags on each: this cluster made them for it), each once it is not
// PENDING (Octavia refuses to delete one that is).
func (st *steps) deleteDuplicates(ctx context.Context, svc *v1.Service, lb *osapi.LoadBalancer, dups []osapi.LoadBalancer) error {
	for _, d := range dups {
		if strings.HasPrefix(d.ProvisioningStatus, "PENDING") {
			continue // the next pass's
		}
		if err := st.deleteCascade(ctx, d.ID); err != nil {
			return fmt.Errorf("deleting load balancer %s, a second one of Service %s/%s: %w", d.ID, svc.Namespace, svc.Name, err)
		}
		st.events.Eventf(svc, v1.EventTypeNormal, provider.ReasonDeletingDuplicate,
			"Deleting load balancer %s: made a second time for this Service (a create whose answer was lost); keeping %s", d.ID, lb.ID)
		klog.FromContext(ctx).Info("Deleting a second load balancer of the Service", "service", klog.KObj(svc), "id", d.ID, "keep", lb.ID)
	}
	return nil
}
