package openstack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
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

func lbName(clusterName string, svc *v1.Service) string {
	// cloud-provider-openstack's name, so existing tooling recognises it.
	return fmt.Sprintf("kube_service_%s_%s_%s", clusterName, svc.Namespace, svc.Name)
}

func portKey(p v1.ServicePort) string { return fmt.Sprintf("%s/%05d", p.Protocol, p.Port) }

func (st *steps) tags(svc *v1.Service, name string) []string {
	return []string{name, tagService + string(svc.UID), tagCluster + st.cluster.Get()}
}

// owned says whether lb was created by this cluster for svc.
func (st *steps) owned(lb *osapi.LoadBalancer, svc *v1.Service) bool {
	return slices.Contains(lb.Tags, tagService+string(svc.UID)) && slices.Contains(lb.Tags, tagCluster+st.cluster.Get())
}

// findLB returns the Service's load balancer (found by its UID tag), or nil. An
// explicit load-balancer-id annotation names a load balancer to share instead.
// Two or more with the Service's and the cluster's tags were all made by a
// CCM of this cluster for this Service (a create whose answer was lost, then
// made again): the one kept is found (keeper), the others are the cycle's
// to delete (Find).
func (st *steps) findLB(ctx context.Context, svc *v1.Service) (*osapi.LoadBalancer, error) {
	lb, _, err := st.findLBs(ctx, svc)
	return lb, err
}

// findLBs is findLB, and the Service's other load balancers (duplicates).
func (st *steps) findLBs(ctx context.Context, svc *v1.Service) (*osapi.LoadBalancer, []osapi.LoadBalancer, error) {
	if id, err := annotation.OpenStackLoadBalancerID.NonEmptyString(svc); err == nil {
		lb, err := st.api.GetLoadBalancer(ctx, id)
		if errors.Is(err, outcome.ErrNotFound) {
			return nil, nil, nil
		}
		return lb, nil, err
	}
	lbs, err := st.api.ListLoadBalancers(ctx, tagService+string(svc.UID))
	if err != nil {
		return nil, nil, fmt.Errorf("listing load balancers: %w", err)
	}
	// A Service UID is unique, but only a load balancer with this cluster's tag too
	// is ours: never act on another cluster's.
	lbs = slices.DeleteFunc(lbs, func(lb osapi.LoadBalancer) bool { return !st.owned(&lb, svc) })
	if len(lbs) == 0 {
		return nil, nil, nil
	}
	keep, err := st.keeper(ctx, svc, lbs)
	if err != nil {
		return nil, nil, err
	}
	lb := lbs[keep]
	return &lb, slices.Delete(lbs, keep, keep+1), nil
}

// keeper is, of the Service's load balancers, the one its status points to
// (its VIP, or the floating IP on it), else the oldest.
func (st *steps) keeper(ctx context.Context, svc *v1.Service, lbs []osapi.LoadBalancer) (int, error) {
	if len(lbs) == 1 {
		return 0, nil
	}
	slices.SortFunc(lbs, func(a, b osapi.LoadBalancer) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	published := map[string]bool{}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		published[in.IP] = in.IP != ""
	}
	if len(published) == 0 {
		return 0, nil
	}
	for i := range lbs {
		if published[lbs[i].VipAddress] {
			return i, nil
		}
		fip, err := st.vipFloatingIP(ctx, &lbs[i])
		if err != nil {
			return 0, err
		}
		if fip != nil && published[fip.FloatingIP] {
			return i, nil
		}
	}
	return 0, nil
}

// GetLoadBalancer reports the Service's load balancer.
func (c *Cloud) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	return c.lb.getLoadBalancer(ctx, clusterName, svc)
}

func (st *steps) getLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if err := st.api.Session(ctx, osapi.Octavia, osapi.Neutron); err != nil {
		return nil, false, err
	}
	lb, err := st.findLB(ctx, svc)
	if err != nil || lb == nil {
		return nil, false, err
	}
	if name := lbName(clusterName, svc); !st.isOwner(lb, svc, name) && !slices.Contains(lb.Tags, name) {
		return nil, false, nil // named, but not (or no longer) shared by the Service
	}
	spec, err := st.spec(clusterName, svc, nil)
	if err != nil {
		// The status of what exists, however the Service reads now.
		spec = lbSpec{onlyPublic: true}
	}
	fip, err := st.vipFloatingIP(ctx, lb)
	if err != nil {
		return nil, true, err
	}
	addr := lb.VipAddress
	if fip != nil {
		addr = fip.FloatingIP
	}
	return st.statusFor(spec, addr, lb.VipAddress, spec.otherVIP(lb, addr)), true, nil
}

// GetLoadBalancerName is cloud-provider-openstack's name.
func (c *Cloud) GetLoadBalancerName(_ context.Context, clusterName string, svc *v1.Service) string {
	return lbName(clusterName, svc)
}
