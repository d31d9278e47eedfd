package oci

import (
	"context"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// newListing is the shared listing of the compartment's load balancers of
// a kind.
func newListing(c *steps, kind string) *snapshot.Snapshot[ociapi.LB] {
	return snapshot.New(ProviderName+"-"+kind, listingMaxAge, listingMinMiss, func(ctx context.Context) ([]ociapi.LB, error) {
		all, err := c.api.LoadBalancers(ctx, kind, ociapi.InCompartment(c.cfg.CompartmentID))
		return slices.DeleteFunc(all, func(lb ociapi.LB) bool { return lb.LifecycleState == "DELETED" }), err
	}, func(lb ociapi.LB) []string { return []string{"id/" + lb.ID, "name/" + lb.DisplayName} })
}

// listed is the Service's load balancer of a kind in the shared listing;
// read by its name as its workload for a Service that names one.
func (st *steps) listed(ctx context.Context, svc *v1.Service, kind string) (ociapi.LB, bool, error) {
	return st.listedWithin(ctx, svc, kind, listingMaxAge)
}

// listedWithin is listed from a shared listing at most age old.
func (st *steps) listedWithin(ctx context.Context, svc *v1.Service, kind string, age time.Duration) (ociapi.LB, bool, error) {
	if _, ok := ociapi.WorkloadOf(ctx); ok {
		return st.byName(ctx, svc, kind)
	}
	return st.listings[kind].GetWithin(ctx, "name/"+nameOf(svc, kind), age)
}

// listedFresh is listed from a shared listing made at most freshWithin ago.
func (st *steps) listedFresh(ctx context.Context, svc *v1.Service, kind string) (ociapi.LB, bool, error) {
	if _, ok := ociapi.WorkloadOf(ctx); ok {
		return st.byName(ctx, svc, kind)
	}
	return st.listings[kind].GetFresh(ctx, "name/"+nameOf(svc, kind), st.freshWithin(kind))
}

// freshWithin is how old a shared listing of a kind may be to tell whether a
// load balancer is there yet: createPoll, or twice what the last listing
// took when that is longer. OCI lists load balancers whole, with every
// backend: at 500 of them on 5,000 Nodes a listing takes seconds, and
// passes that each waited for a listing begun after them would share none
// (every worker waiting a listing a pass: 500 creations took minutes).
func (st *steps) freshWithin(kind string) time.Duration {
	return max(createPoll, 2*st.listings[kind].Took())
}

// GetLoadBalancer is the Service's load balancer's status, from the shared
// listing.
func (c *Cloud) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	return c.lb.getLoadBalancer(ctx, clusterName, svc)
}

func (st *steps) getLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	kind := kindOf(svc)
	ctx, err := st.as(ctx, svc)
	if err != nil {
		return nil, false, err
	}
	lb, found, err := st.listed(ctx, svc, kind)
	if err != nil || !found {
		return nil, false, err
	}
	externalOnly, _ := annotation.OCINLBExternalIPOnly.Bool(svc)
	return status(ingress(lb, lb.IsPrivate, externalOnly), false), true, nil
}
