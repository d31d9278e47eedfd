package openstack

import (
	"context"
	"errors"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Octavia's steps of the load-balancer cycle (internal/lbcycle). The cycle
// decides which runs; each makes at most one change, since Octavia takes one at
// a time per load balancer. This file wires them; each is in the file of its
// concern: Create (create.go), Replace (rebuild.go), Converge and
// UpdateMembers (converge.go), Publish and Published (publish.go), Drift and
// Objects (inventory.go), Delete (delete.go).
type steps struct{ *Cloud }

type octaviaLB = lbcycle.LB[osapi.LoadBalancer]

var (
	_ lbcycle.Cloud[lbSpec, osapi.LoadBalancer]         = steps{}
	_ lbcycle.MemberUpdater[lbSpec, osapi.LoadBalancer] = steps{}
	_ lbcycle.DriftChecker[osapi.LoadBalancer]          = steps{}
	_ lbcycle.Relister                                  = steps{}
)

func newCycle(c *Cloud) *lbcycle.Cycle[lbSpec, osapi.LoadBalancer] {
	// The record is kept in the annotations cloud-provider-openstack users
	// know: load-balancer-address (the address, the one place it shows when a
	// hostname is published instead) and the converged record. A Service on
	// a shared load balancer (load-balancer-id) has none: it is always walked.
	records := &lbcycle.AnnotationRecords{Converged: annotation.OpenStackConverged,
		Address: annotation.OpenStackLoadBalancerAddress, Kube: c.Kube, Ledger: c.Ledger(),
		None: func(svc *v1.Service) bool {
			// Unless the named one is the Service's own (taken over from
			// cloud-provider-openstack, which names it on every Service).
			id := svc.Annotations[string(annotation.OpenStackLoadBalancerID)]
			return id != "" && !strings.HasPrefix(svc.Annotations[string(annotation.OpenStackConverged)], id+"/")
		}}
	return lbcycle.New[lbSpec, osapi.LoadBalancer](steps{c}, records,
		lbcycle.Options{Retry: pendingRetry, FullCheck: fullCheckInterval})
}

func (s steps) Spec(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	spec, err := s.spec(clusterName, svc, nodes)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	if s.Cluster.Get() == "" {
		return lbSpec{}, lbcycle.Fingerprint{}, errors.New("the cluster UID (the kube-system namespace's) is not known yet")
	}
	if err := s.readTLSSecret(ctx, svc, spec.tls); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	if err := s.resolveMembers(ctx, &spec); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	fp := lbcycle.Fingerprint{Config: spec.configFingerprint(), Members: spec.membersFingerprint()}
	s.memberSets.Note(fp.Members, spec.members)
	return spec, fp, nil
}

// asLB is an Octavia load balancer as the cycle sees it.
func (s steps) asLB(lb *osapi.LoadBalancer, svc *v1.Service) octaviaLB {
	state := lbcycle.Ready
	switch {
	case strings.HasPrefix(lb.ProvisioningStatus, "PENDING"):
		state = lbcycle.Busy
	case lb.ProvisioningStatus == "ERROR":
		state = lbcycle.Failed
	}
	return octaviaLB{ID: lb.ID, Status: lb.ProvisioningStatus, State: state, Shared: !s.owned(lb, svc), Obj: *lb}
}

func (s steps) Listed(ctx context.Context, svc *v1.Service) (octaviaLB, bool, error) {
	lb, found, err := s.index.lbs.Get(ctx, "svc/"+string(svc.UID))
	if err != nil || !found {
		return octaviaLB{}, false, err
	}
	return s.asLB(&lb, svc), true, nil
}

func (s steps) Find(ctx context.Context, svc *v1.Service) (octaviaLB, bool, error) {
	if err := s.api.Session(ctx, osapi.Octavia); err != nil {
		return octaviaLB{}, false, err
	}
	lb, dups, err := s.findLBs(ctx, svc)
	if err != nil || lb == nil {
		return octaviaLB{}, false, err
	}
	s.unanswered.Found(string(svc.UID))
	if err := s.deleteDuplicates(ctx, svc, lb, dups); err != nil {
		return octaviaLB{}, false, err
	}
	return s.asLB(lb, svc), true, nil
}

func (s steps) Relist() {
	s.index.lbs.Invalidate()
	s.index.fips.Invalidate()
	s.index.listeners.Invalidate()
	s.index.pools.Invalidate()
	s.index.monitors.Invalidate()
	s.index.sgRules.Invalidate()
}
