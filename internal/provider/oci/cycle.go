package oci

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// OCI's steps of the load-balancer cycle (internal/lbcycle). A Service's load
// balancer is found by its displayName, the peer's (so the peer's load
// balancers are adopted as they are). It is created whole in one call; each
// later step makes one change (a backend set, a listener), which OCI answers
// with a work request: the Service is looked at again when the work requests
// of its kind usually finish, and no worker waits for one.

const (
	pendingRetry = time.Second
	// createPoll is how old the shared listing may be that tells a load
	// balancer being created is done.
	createPoll        = 500 * time.Millisecond
	fullCheckInterval = time.Hour
	listingMaxAge     = 60 * time.Second
	// membersListingAge is how old a listing a members update may start
	// from (ListedForMembers): the drift period's listings keep it younger.
	membersListingAge = 10 * time.Minute
	listingMinMiss    = 10 * time.Second
)

type ociLB = lbcycle.LB[ociapi.LB]

type steps struct{ *Cloud }

var (
	_ lbcycle.Cloud[lbSpec, ociapi.LB]         = steps{}
	_ lbcycle.Relister                         = steps{}
	_ lbcycle.Pacer                            = steps{}
	_ lbcycle.DriftChecker[ociapi.LB]          = steps{}
	_ lbcycle.MemberUpdater[lbSpec, ociapi.LB] = steps{}
	_ lbcycle.MembersLister[ociapi.LB]         = steps{}
)

func newCycle(c *Cloud) *lbcycle.Cycle[lbSpec, ociapi.LB] {
	return lbcycle.New[lbSpec, ociapi.LB](steps{c}, c.records, lbcycle.Options{Retry: pendingRetry, FullCheck: fullCheckInterval})
}

func (s steps) Spec(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	spec, err := s.parseSpec(svc)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	// The workload's session now: a ServiceAccount that gives none is
	// the Service's Warning before any change (workloads.go).
	if _, err := s.as(ctx, svc); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	if s.Cluster.Get() == "" {
		return lbSpec{}, lbcycle.Fingerprint{}, errors.New("the cluster UID (the kube-system namespace's) is not known yet")
	}
	spec.freeform[tagCluster] = s.Cluster.Get()
	if err := s.readCerts(ctx, &spec); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	if err := s.resolveBackends(ctx, svc, &spec, nodes); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	if err := spec.assignedFamilies(); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	return spec, lbcycle.Fingerprint{Config: spec.configFingerprint(), Members: spec.membersFingerprint()}, nil
}

func (s steps) Listed(ctx context.Context, svc *v1.Service) (ociLB, bool, error) {
	return s.listedAs(ctx, svc, listingMaxAge)
}

// ListedForMembers is Listed from a shared listing up to membersListingAge
// old (lbcycle.MembersLister).
func (s steps) ListedForMembers(ctx context.Context, svc *v1.Service) (ociLB, bool, error) {
	return s.listedAs(ctx, svc, membersListingAge)
}

func (s steps) listedAs(ctx context.Context, svc *v1.Service, age time.Duration) (ociLB, bool, error) {
	ctx, err := s.as(ctx, svc)
	if err != nil {
		return ociLB{}, false, err
	}
	lb, found, err := s.listedWithin(ctx, svc, kindOf(svc), age)
	if err != nil || !found {
		return ociLB{}, false, err
	}
	return s.asLB(svc, lb), true, nil
}

func (s steps) Relist() {
	for _, l := range s.listings {
		l.Invalidate()
	}
	s.listPass.Forget()
	s.nsgPass.Pass()
}

func (s steps) RetryAfter(svc *v1.Service) time.Duration { return s.wrs.retryAfter(svc) }

// Find reads the Service's load balancer now: first how the work this
// process started for it went (so that the load balancer read after it
// shows its effect), then the load balancer by its name. A load balancer
// being created, or one of a Service this process has no work in flight
// for, is looked for in the shared listing, made at most createPoll ago:
// the Services looked at meanwhile share one call.
func (s steps) Find(ctx context.Context, svc *v1.Service) (ociLB, bool, error) {
	ctx, err := s.as(ctx, svc)
	if err != nil {
		return ociLB{}, false, err
	}
	return s.find(ctx, svc, kindOf(svc))
}

// Replace deletes the Service's FAILED load balancer, to build it anew; a
// network load balancer's assigned addresses are checked first (assigned.go).
func (s steps) Replace(ctx context.Context, svc *v1.Service, lb ociLB) (string, error) {
	ctx, err := s.as(ctx, svc)
	if err != nil {
		return "", err
	}
	rebuild, err := s.replaceAssigned(ctx, svc, lb)
	if err != nil {
		return "", err
	}
	wr, err := s.api.DeleteLoadBalancer(ctx, lb.Obj.Kind, lb.ID)
	if err != nil {
		return "", err
	}
	if rebuild != "" {
		s.rebuilt.put(svc.UID, rebuild)
	}
	s.wrs.done(svc, 0) // DELETING says it is busy
	s.salts.bump(svc.UID, lb.Obj.Kind)
	s.listings[lb.Obj.Kind].Invalidate()
	return fmt.Sprintf("%s %s is %s: deleting it to build it anew (work request %s)", noun(lb.Obj.Kind), lb.ID, lb.Status, wr), nil
}

// GetLoadBalancerName is the peer's name of the Service's load balancer.
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return nameOf(svc, kindOf(svc))
}
