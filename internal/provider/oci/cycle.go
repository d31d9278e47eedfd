package oci

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/events"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
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

// steps are the load-balancer work: the cycle's steps, explain and sweep
// run on them. Every field they read is named here; of the Nodes' side
// they see the machines' snapshot and the lookup of a Node's machine.
type steps struct {
	api ociapi.API
	cfg Config
	// cluster is the cluster's UID, kube the cloud's own client, events
	// the Events it records (provider.Base's).
	cluster *provider.ClusterUID
	kube    func() kubernetes.Interface
	events  *events.Recorder
	// cycle is the cycle that runs the steps (its records of each Service).
	cycle *lbcycle.Cycle[lbSpec, ociapi.LB]
	// machines is the Nodes' machines; machineOf looks one Node's up
	// (instances.go).
	machines  *snapshot.Snapshot[machine]
	machineOf func(ctx context.Context, node *v1.Node, maxAge time.Duration) (machine, bool, error)

	// listings are the shared listings of the load balancers, by kind.
	listings map[string]*snapshot.Snapshot[ociapi.LB]
	wrs      *workRequests
	// memberSet is the members of the Node set every Service is given, by
	// node selector (lbspec.go).
	memberSet provider.NodeSetMemo[[]member]
	// asks holds a place for each creation being asked for (Create), as
	// many as the client-side write limit's burst: a hundred creations
	// wait their turns without taking every turn ahead of the security
	// list writes that make the first ones ready.
	asks chan struct{}
	// workloads are the sessions of the ServiceAccounts Services name
	// (workloads.go).
	workloads *workloads
	// records keeps each Service's converged record in OCIConverged.
	records *lbcycle.AnnotationRecords

	subnetCache subnetCache
	// nsgsLeft are the NSGs each Service's load balancer was last taken out
	// of: its frontend NSG among them is deleted once it is out.
	nsgsLeft uidLists
	// managedNSGs are the backend NSGs known tagged ManagedBy (nsg.go).
	managedNSGs sync.Map
	lists       listWriter
	// rebuilt: by Service, the assigned addresses a network load balancer
	// that failed with no address was last rebuilt for (assigned.go).
	rebuilt lbcycle.Marks
	// listPass: the drift check's reads of security lists (inventory.go);
	// nsgPass its reads of NSG rules (nsginventory.go).
	listPass listPass
	nsgPass  provider.Rotation[[]ociapi.NSGRule]
	// unanswered are the creates whose answer was lost, and salts the
	// Services' retry tokens' (lostanswers.go).
	unanswered provider.Unanswered
	salts      tokenSalts
}

var (
	_ lbcycle.Cloud[lbSpec, ociapi.LB]         = (*steps)(nil)
	_ lbcycle.Relister                         = (*steps)(nil)
	_ lbcycle.Pacer                            = (*steps)(nil)
	_ lbcycle.DriftChecker[ociapi.LB]          = (*steps)(nil)
	_ lbcycle.MemberUpdater[lbSpec, ociapi.LB] = (*steps)(nil)
	_ lbcycle.MembersLister[ociapi.LB]         = (*steps)(nil)
)

// newSteps are the load-balancer work of c, the cycle that runs them set.
func newSteps(c *Cloud, writeBurst int) *steps {
	st := &steps{api: c.api, cfg: c.cfg, cluster: &c.Cluster, kube: c.Kube, events: &c.Events, machines: c.machines, machineOf: c.find,
		subnetCache: subnetCache{byID: map[string]cachedSubnet{}}, nsgPass: provider.Rotation[[]ociapi.NSGRule]{PerPass: nsgReadsPerPass, Within: provider.WatchedWithin},
		unanswered: provider.Unanswered{Window: lostCreateWindow}}
	st.listings = map[string]*snapshot.Snapshot[ociapi.LB]{ociapi.KindLB: newListing(st, ociapi.KindLB), ociapi.KindNLB: newListing(st, ociapi.KindNLB)}
	st.wrs = newWorkRequests()
	st.workloads = newWorkloads(c.cfg, c.Kube)
	st.asks = make(chan struct{}, max(1, writeBurst))
	st.records = &lbcycle.AnnotationRecords{Converged: annotation.OCIConverged, Kube: c.Kube, Ledger: c.Ledger()}
	st.cycle = lbcycle.New[lbSpec, ociapi.LB](st, st.records, lbcycle.Options{Retry: pendingRetry, FullCheck: fullCheckInterval})
	return st
}

func (st *steps) Spec(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	spec, err := st.parseSpec(svc)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	// The workload's session now: a ServiceAccount that gives none is
	// the Service's Warning before any change (workloads.go).
	if _, err := st.as(ctx, svc); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	if st.cluster.Get() == "" {
		return lbSpec{}, lbcycle.Fingerprint{}, errors.New("the cluster UID (the kube-system namespace's) is not known yet")
	}
	spec.freeform[tagCluster] = st.cluster.Get()
	if err := st.readCerts(ctx, &spec); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	if err := st.resolveBackends(ctx, svc, &spec, nodes); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	if err := spec.assignedFamilies(); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	return spec, lbcycle.Fingerprint{Config: spec.configFingerprint(), Members: spec.membersFingerprint()}, nil
}

func (st *steps) Listed(ctx context.Context, svc *v1.Service) (ociLB, bool, error) {
	return st.listedAs(ctx, svc, listingMaxAge)
}

// ListedForMembers is Listed from a shared listing up to membersListingAge
// old (lbcycle.MembersLister).
func (st *steps) ListedForMembers(ctx context.Context, svc *v1.Service) (ociLB, bool, error) {
	return st.listedAs(ctx, svc, membersListingAge)
}

func (st *steps) listedAs(ctx context.Context, svc *v1.Service, age time.Duration) (ociLB, bool, error) {
	ctx, err := st.as(ctx, svc)
	if err != nil {
		return ociLB{}, false, err
	}
	lb, found, err := st.listedWithin(ctx, svc, kindOf(svc), age)
	if err != nil || !found {
		return ociLB{}, false, err
	}
	return st.asLB(svc, lb), true, nil
}

func (st *steps) Relist() {
	for _, l := range st.listings {
		l.Invalidate()
	}
	st.listPass.Forget()
	st.nsgPass.Pass()
}

func (st *steps) RetryAfter(svc *v1.Service) time.Duration { return st.wrs.retryAfter(svc) }

// Find reads the Service's load balancer now: first how the work this
// process started for it went (so that the load balancer read after it
// shows its effect), then the load balancer by its name. A load balancer
// being created, or one of a Service this process has no work in flight
// for, is looked for in the shared listing, made at most createPoll ago:
// the Services looked at meanwhile share one call.
func (st *steps) Find(ctx context.Context, svc *v1.Service) (ociLB, bool, error) {
	ctx, err := st.as(ctx, svc)
	if err != nil {
		return ociLB{}, false, err
	}
	return st.find(ctx, svc, kindOf(svc))
}

// Replace deletes the Service's FAILED load balancer, to build it anew; a
// network load balancer's assigned addresses are checked first (assigned.go).
func (st *steps) Replace(ctx context.Context, svc *v1.Service, lb ociLB) (string, error) {
	ctx, err := st.as(ctx, svc)
	if err != nil {
		return "", err
	}
	rebuild, err := st.replaceAssigned(ctx, svc, lb)
	if err != nil {
		return "", err
	}
	wr, err := st.api.DeleteLoadBalancer(ctx, lb.Obj.Kind, lb.ID)
	if err != nil {
		return "", err
	}
	if rebuild != "" {
		st.rebuilt.Set(svc.UID, rebuild)
	}
	st.wrs.done(svc, 0) // DELETING says it is busy
	st.salts.bump(svc.UID, lb.Obj.Kind)
	st.listings[lb.Obj.Kind].Invalidate()
	return fmt.Sprintf("%s %s is %s: deleting it to build it anew (work request %s)", noun(lb.Obj.Kind), lb.ID, lb.Status, wr), nil
}

// GetLoadBalancerName is the peer's name of the Service's load balancer.
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return nameOf(svc, kindOf(svc))
}
