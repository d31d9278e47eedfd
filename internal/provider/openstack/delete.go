package openstack

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Deleting a Service's load balancer, or leaving one it shares, and what it
// left behind (its security group, certificates, floating IPs).

// Delete deletes the Service's load balancer (cascade) and the floating IP a
// CCM created for it (detached instead with keep-floatingip, and always when
// no CCM created it). Already gone is success. A load balancer another Service
// still shares is not deleted: the Service's listeners and its tag leave it
// (deleteOrLeave); the last Service on one this cluster made deletes it. Done
// once the load balancer is gone: the Service keeps its finalizer until then,
// and its free floating IPs go last.
func (st *steps) Delete(ctx context.Context, clusterName string, svc *v1.Service) (string, error) {
	if err := st.api.Session(ctx, osapi.Octavia, osapi.Neutron); err != nil {
		return "", err
	}
	lb, err := st.findLB(ctx, svc)
	if err != nil {
		return "", err
	}
	keep, _ := annotation.OpenStackKeepFloatingIP.Bool(svc)
	if lb == nil {
		// Gone (deleted now, or behind our back before): what it left of ours
		// goes too, its security group whether or not groups are managed now.
		if err := st.deleteSG(ctx, svc); err != nil {
			return "", err
		}
		if err := st.sweepCerts(ctx, svc, ""); err != nil {
			return "", err
		}
		if keep {
			return "", nil
		}
		return "", st.deleteOwnFloatingIPs(ctx, svc)
	}
	if strings.HasPrefix(lb.ProvisioningStatus, "PENDING") {
		return fmt.Sprintf("load balancer %s is %s", lb.ID, lb.ProvisioningStatus), nil
	}
	if progress, err := st.deleteOrLeave(ctx, svc, lb, clusterName); err != nil || progress != "" {
		return progress, err
	}
	// A Service that left a shared load balancer.
	if err := st.deleteSG(ctx, svc); err != nil {
		return "", err
	}
	return "", st.sweepCerts(ctx, svc, "")
}

// deleteCascade deletes a load balancer with all it has; already gone is success.
func (st *steps) deleteCascade(ctx context.Context, id string) error {
	return st.api.DeleteLoadBalancer(ctx, id)
}
