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
func (s steps) Delete(ctx context.Context, clusterName string, svc *v1.Service) (string, error) {
	if err := s.api.Session(ctx, osapi.Octavia, osapi.Neutron); err != nil {
		return "", err
	}
	lb, err := s.findLB(ctx, svc)
	if err != nil {
		return "", err
	}
	keep, _ := annotation.OpenStackKeepFloatingIP.Bool(svc)
	if lb == nil {
		// Gone (deleted now, or behind our back before): what it left of ours
		// goes too, its security group whether or not groups are managed now.
		if err := s.deleteSG(ctx, svc); err != nil {
			return "", err
		}
		if err := s.sweepCerts(ctx, svc, ""); err != nil {
			return "", err
		}
		if keep {
			return "", nil
		}
		return "", s.deleteOwnFloatingIPs(ctx, svc)
	}
	if strings.HasPrefix(lb.ProvisioningStatus, "PENDING") {
		return fmt.Sprintf("load balancer %s is %s", lb.ID, lb.ProvisioningStatus), nil
	}
	if progress, err := s.deleteOrLeave(ctx, svc, lb, clusterName); err != nil || progress != "" {
		return progress, err
	}
	// A Service that left a shared load balancer.
	if err := s.deleteSG(ctx, svc); err != nil {
		return "", err
	}
	return "", s.sweepCerts(ctx, svc, "")
}

// deleteCascade deletes a load balancer with all it has; already gone is success.
func (c *Cloud) deleteCascade(ctx context.Context, id string) error {
	return c.api.DeleteLoadBalancer(ctx, id)
}
