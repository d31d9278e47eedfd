package cloudstack

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// CloudStack's steps of the load-balancer cycle (internal/lbcycle). A
// Service's load balancer is its public address and its rules, one per port
// and protocol, named as the peer names them; the address is the load
// balancer's identity. A step starts the asynchronous jobs of independent
// changes together (rules, their machines, the openings for their sources)
// and the Service is looked at again; Find asks how they went.

const (
	pendingRetry      = 2 * time.Second
	fullCheckInterval = time.Hour
	listingMaxAge     = 60 * time.Second
	// listingMinMiss: a Service not in the shared listing lists again at most
	// this often (a burst of misses costs one listing).
	listingMinMiss = 10 * time.Second
)

// lbState is a Service's load balancer as read.
type lbState struct {
	addr csapi.Address
	// addrRead: addr was read itself (its state and tags are known), not
	// taken from its rules.
	addrRead bool
	// settling: the address may be the Service's, untagged and not taken up
	// yet (associating.go); the load balancer is busy meanwhile.
	settling string
	rules    []csapi.Rule
}

type csLB = lbcycle.LB[lbState]

type steps struct{ *Cloud }

var (
	_ lbcycle.Cloud[lbSpec, lbState]         = steps{}
	_ lbcycle.MemberUpdater[lbSpec, lbState] = steps{}
	_ lbcycle.DriftChecker[lbState]          = steps{}
	_ lbcycle.Relister                       = steps{}
	_ lbcycle.Pacer                          = steps{}
)

func newCycle(c *Cloud) *lbcycle.Cycle[lbSpec, lbState] {
	return lbcycle.New[lbSpec, lbState](steps{c}, c.records,
		lbcycle.Options{Retry: pendingRetry, FullCheck: fullCheckInterval})
}

func (s steps) Spec(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	spec, err := parseSpec(svc)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	if s.Cluster.Get() == "" {
		return lbSpec{}, lbcycle.Fingerprint{}, errors.New("the cluster UID (the kube-system namespace's) is not known yet")
	}
	if err := s.resolveMembers(ctx, &spec, nodes); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	fp := lbcycle.Fingerprint{Config: spec.configFingerprint(), Members: spec.membersFingerprint()}
	s.memberSets.Note(fp.Members, spec.members)
	return spec, fp, nil
}

// Replace is never called: rules have no failed state.
func (s steps) Replace(context.Context, *v1.Service, csLB) (string, error) {
	return "", errors.New("cloudstack load balancers are never replaced")
}

func (s steps) Relist() {
	s.listing.Invalidate()
	s.firewall.Invalidate()
	s.acls.Forget()
	s.ruleMachines.Pass()
	s.ruleChecks.Pass()
}

// RetryAfter is when the Service's jobs should be done.
func (s steps) RetryAfter(svc *v1.Service) time.Duration { return s.jobs.retryAfter(svc.UID) }

// GetLoadBalancerName is the peer's name, which begins each rule's name.
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return lbName(svc)
}
