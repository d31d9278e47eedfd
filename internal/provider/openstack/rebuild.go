package openstack

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Rebuilding a load balancer Octavia will not finish: one in ERROR, or one
// whose children stay PENDING for good. Its floating IP is kept for the new
// one; a load balancer other Services share is never rebuilt.

// Replace deletes a load balancer in ERROR; its floating IP is kept, detached,
// for the new one.
func (st *steps) Replace(ctx context.Context, svc *v1.Service, lb octaviaLB) (string, error) {
	if others := sharers(&lb.Obj, lb.Obj.Name); len(others) > 0 {
		// Never deleted while another Service is on it.
		return "", outcome.Refuse(outcome.ReasonCloudRefused, "Load balancer %s is in ERROR and is shared with %d other Service(s); it is left as it is: repair or delete it in Octavia", lb.ID, len(others))
	}
	if _, named := svc.Annotations[string(annotation.OpenStackLoadBalancerID)]; named {
		return "", outcome.Refuse(outcome.ReasonCloudRefused, "Load balancer %s named by %s is in ERROR; it is left as it is: remove the annotation to have a new one built", lb.ID, annotation.OpenStackLoadBalancerID)
	}
	klog.FromContext(ctx).Info("Replacing load balancer in ERROR", "service", klog.KObj(svc), "id", lb.ID)
	st.events.Eventf(svc, v1.EventTypeNormal, reasonReplacingInError, "Load balancer %s is in ERROR; deleting it to create it anew", lb.ID)
	if err := st.deleteKeepingAddress(ctx, svc, &lb.Obj); err != nil {
		return "", fmt.Errorf("deleting load balancer %s in ERROR: %w", lb.ID, err)
	}
	return fmt.Sprintf("load balancer %s was in ERROR and is being replaced", lb.ID), nil
}

// rebuildIfStranded looks at the status tree of an ACTIVE load balancer of the
// Service: when Octavia left any of its listeners, pools, monitors or members
// pending, they never finish (a provider that does not complete the children of
// a fully populated load balancer: the test harness's Octavia 11.0.0 is one),
// and nothing of them can be changed. The load balancer is then deleted to be
// built again step by step, as every later one is. Its floating IP is kept for
// the new one. It returns a RetryError when it rebuilds, nil when all is well.
func (st *steps) rebuildIfStranded(ctx context.Context, svc *v1.Service, lb *osapi.LoadBalancer) (string, error) {
	if err := st.api.Session(ctx, osapi.Octavia); err != nil {
		return "", err
	}
	var tree statusTree
	if err := st.api.LoadBalancerStatuses(ctx, lb.ID, &tree); err != nil {
		return "", fmt.Errorf("reading the status tree of load balancer %s: %w", lb.ID, err)
	}
	pending := tree.pending()
	if tree.Statuses.LoadBalancer.ProvisioningStatus != "ACTIVE" || pending == "" {
		return "", nil
	}
	if others := sharers(lb, lb.Name); len(others) > 0 {
		return "", outcome.Refuse(outcome.ReasonCloudRefused, "Octavia left %s of load balancer %s pending for good; it is shared with %d other Service(s), so it is left as it is", pending, lb.ID, len(others))
	}
	logger := klog.FromContext(ctx)
	if st.serial.CompareAndSwap(false, true) {
		logger.Error(nil, "Octavia left the children of a fully populated load balancer pending; creating load balancers step by step from now on (set [LoadBalancer] provider-requires-serial-api-calls=true to skip the first attempt)",
			"loadBalancer", lb.ID, "pending", pending)
	}
	st.events.Eventf(svc, v1.EventTypeNormal, reasonReplacingInError, "Octavia left %s of load balancer %s pending for good; rebuilding it step by step", pending, lb.ID)
	st.setCreated(lb.ID, "")
	if err := st.deleteKeepingAddress(ctx, svc, lb); err != nil {
		return "", fmt.Errorf("deleting load balancer %s to rebuild it: %w", lb.ID, err)
	}
	return fmt.Sprintf("load balancer %s is being rebuilt step by step", lb.ID), nil
}

// deleteKeepingAddress deletes the Service's load balancer (cascade) to build
// it anew; its floating IP is detached and kept for the new one.
func (st *steps) deleteKeepingAddress(ctx context.Context, svc *v1.Service, lb *osapi.LoadBalancer) error {
	if err := st.api.Session(ctx, osapi.Octavia, osapi.Neutron); err != nil {
		return err
	}
	if err := st.releaseFloatingIP(ctx, svc, lb, true, false); err != nil {
		return err
	}
	return st.deleteCascade(ctx, lb.ID)
}

// statusTree is Octavia's status tree of a load balancer (GET
// /v2/lbaas/loadbalancers/{id}/status), with only the provisioning statuses:
// gophercloud's StatusTree reads pools' monitors under "healthmonitor", but the
// tree names them "health_monitor".
type statusTree struct {
	Statuses struct {
		LoadBalancer struct {
			ProvisioningStatus string `json:"provisioning_status"`
			Listeners          []struct {
				ProvisioningStatus string `json:"provisioning_status"`
				Pools              []struct {
					ProvisioningStatus string `json:"provisioning_status"`
					HealthMonitor      *struct {
						ProvisioningStatus string `json:"provisioning_status"`
					} `json:"health_monitor"`
					Members []struct {
						ProvisioningStatus string `json:"provisioning_status"`
					} `json:"members"`
				} `json:"pools"`
			} `json:"listeners"`
		} `json:"loadbalancer"`
	} `json:"statuses"`
}

// pending says how many listeners, pools, monitors and members of the tree
// are pending ("" if none).
func (t *statusTree) pending() string {
	n := 0
	count := func(status string) {
		if strings.HasPrefix(status, "PENDING") {
			n++
		}
	}
	for _, l := range t.Statuses.LoadBalancer.Listeners {
		count(l.ProvisioningStatus)
		for _, p := range l.Pools {
			count(p.ProvisioningStatus)
			if p.HealthMonitor != nil {
				count(p.HealthMonitor.ProvisioningStatus)
			}
			for _, m := range p.Members {
				count(m.ProvisioningStatus)
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d listener(s), pool(s), monitor(s) or member(s)", n)
}
