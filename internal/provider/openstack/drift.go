package openstack

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/annotation"
)

// Drifted finds the Services whose Octavia load balancer is no longer as it was
// converged, from two listings shared by all of them: this cluster's load
// balancers and the project's floating IPs. A load balancer is drifted when it
// is gone (deleted behind our back), in ERROR, not the one the Service's
// converged record names, short of a listener or a pool, or when the floating
// IP recorded as the Service's address is no longer on it. One still PENDING is
// being worked on and is not drift. Services on a shared load balancer
// (load-balancer-id) have no converged record and are not checked.
func (c *Cloud) Drifted(ctx context.Context, svcs []*v1.Service) (map[types.UID]string, error) {
	c.index.lbs.Invalidate()
	c.index.fips.Invalidate()
	out := map[types.UID]string{}
	for _, svc := range svcs {
		id, _, _, ok := convergedRecord(svc)
		if !ok {
			continue
		}
		why, err := c.drift(ctx, svc, id)
		if err != nil {
			return nil, err
		}
		if why != "" {
			out[svc.UID] = why
		}
	}
	return out, nil
}

func (c *Cloud) drift(ctx context.Context, svc *v1.Service, id string) (string, error) {
	lb, found, err := c.index.lbs.Get(ctx, "svc/"+string(svc.UID))
	if err != nil {
		return "", err
	}
	switch {
	case !found:
		return fmt.Sprintf("load balancer %s is gone", id), nil
	case !c.owned(&lb, svc):
		return "", nil
	case lb.ProvisioningStatus == "ERROR":
		return fmt.Sprintf("load balancer %s is in ERROR", lb.ID), nil
	case lb.ProvisioningStatus != "ACTIVE":
		return "", nil // Octavia is working on it
	case lb.ID != id:
		return fmt.Sprintf("load balancer %s is not %s, which it was converged to", lb.ID, id), nil
	case len(lb.Listeners) < len(svc.Spec.Ports):
		return fmt.Sprintf("load balancer %s has %d listener(s) for %d port(s)", lb.ID, len(lb.Listeners), len(svc.Spec.Ports)), nil
	case len(lb.Pools) < len(lb.Listeners):
		return fmt.Sprintf("load balancer %s has %d pool(s) for %d listener(s)", lb.ID, len(lb.Pools), len(lb.Listeners)), nil
	}
	addr := svc.Annotations[string(annotation.OpenStackLoadBalancerAddress)]
	if addr == "" || addr == lb.VipAddress {
		return "", nil // internal: its address is the VIP
	}
	fip, has, err := c.index.fips.Get(ctx, "port/"+lb.VipPortID)
	if err != nil {
		return "", err
	}
	if !has || fip.FloatingIP != addr {
		return fmt.Sprintf("floating IP %s is no longer on load balancer %s", addr, lb.ID), nil
	}
	return "", nil
}
