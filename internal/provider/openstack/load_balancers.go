package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// Tags that say a load balancer is ours: the Service's UID and the cluster's
// (the kube-system namespace's UID), so that two clusters with the same
// --cluster-name in one project never touch each other's load balancers.
// Listeners carry the Service's tag too, which is what scopes a Service to its
// own listeners on a load balancer it shares (load-balancer-id).
const (
	tagService = "overcast-service-uid="
	tagCluster = "overcast-cluster-uid="
	// fullCheckInterval: an ACTIVE load balancer whose converged annotation
	// matches what the Service asks now is not walked (listeners, pools, members,
	// monitors) except once in this interval, which repairs drift.
	fullCheckInterval = time.Hour
	// fipDescription marks a floating IP this CCM created for a Service.
	fipDescription = "overcast-ccm floating IP of Service UID "
	// pendingRetry is how soon a Service is looked at again while Octavia works:
	// a look costs one read, and each step of a new load balancer is one pass.
	pendingRetry = 2 * time.Second
)

// Event reasons of the OpenStack load balancers.
const (
	reasonFloatingIPFailed    = "FloatingIPFailed"
	reasonImmutableIgnored    = "LoadBalancerSettingIgnored"
	reasonReplacingInError    = "ReplacingLoadBalancer"
	reasonRecreatingPool      = "RecreatingPool"
	reasonAdoptedLoadBalancer = "SharedLoadBalancer"
)

func (c *Cloud) lbName(clusterName string, svc *v1.Service) string {
	// cloud-provider-openstack's name, so existing tooling recognises it.
	return fmt.Sprintf("kube_service_%s_%s_%s", clusterName, svc.Namespace, svc.Name)
}

func portKey(p v1.ServicePort) string { return fmt.Sprintf("%s/%05d", p.Protocol, p.Port) }

func (c *Cloud) tags(svc *v1.Service, name string) []string {
	return []string{name, tagService + string(svc.UID), tagCluster + c.Cluster.Get()}
}

// owned says whether lb was created by this cluster for svc.
func (c *Cloud) owned(lb *loadBalancer, svc *v1.Service) bool {
	return slices.Contains(lb.Tags, tagService+string(svc.UID)) && slices.Contains(lb.Tags, tagCluster+c.Cluster.Get())
}

// findLB returns the Service's load balancer (found by its UID tag), or nil. An
// explicit load-balancer-id annotation names a load balancer to share instead.
func (c *Cloud) findLB(ctx context.Context, svc *v1.Service) (*loadBalancer, error) {
	if id, err := annotation.OpenStackLoadBalancerID.NonEmptyString(svc); err == nil {
		lb, err := c.api.getLoadBalancer(ctx, id)
		if errors.Is(err, outcome.ErrNotFound) {
			return nil, nil
		}
		return lb, err
	}
	lbs, err := c.api.listLoadBalancers(ctx, tagService+string(svc.UID))
	if err != nil {
		return nil, fmt.Errorf("listing load balancers: %w", err)
	}
	// A Service UID is unique, but only a load balancer with this cluster's tag too
	// is ours: never act on another cluster's.
	lbs = slices.DeleteFunc(lbs, func(lb loadBalancer) bool { return !c.owned(&lb, svc) })
	switch len(lbs) {
	case 0:
		return nil, nil
	case 1:
		return &lbs[0], nil
	}
	return nil, fmt.Errorf("%d load balancers carry the tags of Service %s/%s: resolve by hand", len(lbs), svc.Namespace, svc.Name)
}

// GetLoadBalancer reports the Service's load balancer.
func (c *Cloud) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if err := c.api.session(ctx, svcOctavia, svcNetwork); err != nil {
		return nil, false, err
	}
	lb, err := c.findLB(ctx, svc)
	if err != nil || lb == nil {
		return nil, false, err
	}
	if name := c.lbName(clusterName, svc); !c.isOwner(lb, svc, name) && !slices.Contains(lb.Tags, name) {
		return nil, false, nil // named, but not (or no longer) shared by the Service
	}
	spec, err := c.spec(clusterName, svc, nil)
	if err != nil {
		// The status of what exists, however the Service reads now.
		spec = lbSpec{onlyPublic: true}
	}
	fip, err := c.vipFloatingIP(ctx, lb)
	if err != nil {
		return nil, true, err
	}
	addr := lb.VipAddress
	if fip != nil {
		addr = fip.FloatingIP
	}
	return c.statusFor(spec, addr, lb.VipAddress, spec.otherVIP(lb, addr)), true, nil
}

// GetLoadBalancerName is cloud-provider-openstack's name.
func (c *Cloud) GetLoadBalancerName(_ context.Context, clusterName string, svc *v1.Service) string {
	return c.lbName(clusterName, svc)
}
