package cloudstack

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
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

// steps is the load-balancer work: the fields each step reads, by name (no
// Cloud in reach). The Cloud holds one; the cycle, explain and sweep run on
// it.
type steps struct {
	api      csapi.API
	cluster  *provider.ClusterUID
	kube     func() kubernetes.Interface
	machines *snapshot.Snapshot[csapi.Machine]
	// cycle is the cycle that runs the steps (its records of each Service).
	cycle *lbcycle.Cycle[lbSpec, lbState]

	listing  *snapshot.Snapshot[ruleGroup]
	firewall *snapshot.Snapshot[addrOpenings] // the drift check's
	acls     aclPass                          // the drift check's, in a VPC
	// ruleMachines are the drift check's reads of each rule's machines
	// (inventory.go).
	ruleMachines provider.Rotation[[]string] // their member keys (machineKeys)
	// ruleChecks are its reads of each rule's health-check policies.
	ruleChecks provider.Rotation[[]csapi.HealthCheck]
	jobs       *jobs
	// records keeps each Service's converged record in CloudStackConverged.
	records *lbcycle.AnnotationRecords

	mu       sync.Mutex
	networks map[string]csapi.Network // the guest networks, which do not change
	// fresh is the address this process associated for each Service, until
	// its openings are made: a new address has none to list.
	fresh memo
	// created is the fingerprint each Service's rules were all created from
	// by this process, until seen converged: they need no walk.
	created memo
	// assigned is the members' fingerprint each Service's rules were last
	// given their machines for (UpdateMembers), until the jobs are seen done.
	assigned memo
	// memberSets are the member sets lately wanted, to know the one before
	// a Node change (members.go).
	memberSets provider.MemberSets
	// memberSet is the members of the Node set every Service is given
	// (lbspec.go).
	memberSet provider.NodeSetMemo[machinesOf]
	// tagSettle is how old an untagged address must be to be taken up
	// (tagSettle; tests shorten it).
	tagSettle time.Duration
	// tagged is when this process asked for each address's tags, lately
	// (associating.go).
	tagged map[string]time.Time
	// takingUp is held while an address left untagged is taken up
	// (associating.go).
	takingUp cloudapi.Turn
	// unanswered are the creates whose answer was lost (an address, an
	// opening): looked for, not made again, while they may yet appear.
	unanswered *provider.Unanswered
}

var (
	_ lbcycle.Cloud[lbSpec, lbState]         = (*steps)(nil)
	_ lbcycle.MemberUpdater[lbSpec, lbState] = (*steps)(nil)
	_ lbcycle.DriftChecker[lbState]          = (*steps)(nil)
	_ lbcycle.Relister                       = (*steps)(nil)
	_ lbcycle.Pacer                          = (*steps)(nil)
)

func newCycle(c *Cloud) *lbcycle.Cycle[lbSpec, lbState] {
	c.lb.cycle = lbcycle.New[lbSpec, lbState](c.lb, c.lb.records,
		lbcycle.Options{Retry: pendingRetry, FullCheck: fullCheckInterval})
	return c.lb.cycle
}

func (s *steps) Spec(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	spec, err := parseSpec(svc)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	if s.cluster.Get() == "" {
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
func (s *steps) Replace(context.Context, *v1.Service, csLB) (string, error) {
	return "", errors.New("cloudstack load balancers are never replaced")
}

func (s *steps) Relist() {
	s.listing.Invalidate()
	s.firewall.Invalidate()
	s.acls.Forget()
	s.ruleMachines.Pass()
	s.ruleChecks.Pass()
}

// RetryAfter is when the Service's jobs should be done.
func (s *steps) RetryAfter(svc *v1.Service) time.Duration { return s.jobs.retryAfter(svc.UID) }

// GetLoadBalancerName is the peer's name, which begins each rule's name.
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return lbName(svc)
}
