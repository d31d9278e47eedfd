package openstack

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/events"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Octavia's steps of the load-balancer cycle (internal/lbcycle). The cycle
// decides which runs; each makes at most one change, since Octavia takes one at
// a time per load balancer. This file wires them; each is in the file of its
// concern: Create (create.go), Replace (rebuild.go), Converge and
// UpdateMembers (converge.go), Publish and Published (publish.go), Drift and
// Objects (inventory.go), Delete (delete.go).
type steps struct {
	api osapi.API
	cfg Config
	// cluster is the cluster's UID, kube the cloud's own client, events
	// the Events it records (provider.Base's).
	cluster *provider.ClusterUID
	kube    func() kubernetes.Interface
	events  *events.Recorder
	// cycle is the cycle that runs the steps (its records of each Service).
	cycle *lbcycle.Cycle[lbSpec, osapi.LoadBalancer]
	// Of the Nodes' side (instances.go): a Node's server, its addresses,
	// and the [Global] section in effect.
	machineOf   func(ctx context.Context, node *v1.Node, maxAge time.Duration) (osapi.Server, bool, error)
	addressesOf func(ctx context.Context, s osapi.Server) map[string][]osapi.ServerAddress
	globals     func() Global

	index *lbIndex
	memo  *treeMemo  // members and monitors the last passes read (treereads.go)
	sgs   *sgManager // security groups (manage-security-groups)
	// tlsCerts are the certificates of TLS Secrets stored in Barbican.
	tlsCerts *tlsStore
	// octaviaAPI is what Octavia's API version says it has, once read.
	octaviaAPI octaviaAPI
	// serial: load balancers are created step by step, not fully populated
	// (configured, or found out from a provider that strands the children of
	// a fully populated one).
	serial atomic.Bool
	// fipQuota: the project's floating IP quota is known to be met.
	fipQuota quotaMemory
	// unanswered: the Services whose load balancer's create lost its
	// answer (duplicates.go).
	unanswered provider.Unanswered
	// memberSets are the member sets lately wanted, to know the one before
	// a Node change (converge.go).
	memberSets provider.MemberSets

	mu sync.Mutex
	// created is the fingerprint of the spec each load balancer this process
	// created (fully populated) was created from, until it is converged: one
	// that becomes ACTIVE is as created, and needs no walk.
	created map[string]string
}

type octaviaLB = lbcycle.LB[osapi.LoadBalancer]

var (
	_ lbcycle.Cloud[lbSpec, osapi.LoadBalancer]         = (*steps)(nil)
	_ lbcycle.MemberUpdater[lbSpec, osapi.LoadBalancer] = (*steps)(nil)
	_ lbcycle.DriftChecker[osapi.LoadBalancer]          = (*steps)(nil)
	_ lbcycle.Relister                                  = (*steps)(nil)
)

// newSteps are the load-balancer work of c, the cycle that runs them set.
func newSteps(c *Cloud) *steps {
	st := &steps{api: c.api, cfg: c.cfg, cluster: &c.Cluster, kube: c.Kube, events: &c.Events,
		machineOf: c.find, addressesOf: c.addressesOf, globals: c.globals,
		memo: newTreeMemo(), created: map[string]string{}, unanswered: provider.Unanswered{Window: lostCreateWindow}}
	st.index = newLBIndex(st)
	st.sgs = newSGManager(c.api)
	st.tlsCerts = newTLSStore()
	st.serial.Store(c.cfg.LoadBalancer.ProviderRequiresSerialAPICalls)
	st.cycle = newCycle(c, st)
	return st
}

func newCycle(c *Cloud, st *steps) *lbcycle.Cycle[lbSpec, osapi.LoadBalancer] {
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
	return lbcycle.New[lbSpec, osapi.LoadBalancer](st, records,
		lbcycle.Options{Retry: pendingRetry, FullCheck: fullCheckInterval})
}

func (st *steps) Spec(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	spec, err := st.spec(clusterName, svc, nodes)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	if st.cluster.Get() == "" {
		return lbSpec{}, lbcycle.Fingerprint{}, errors.New("the cluster UID (the kube-system namespace's) is not known yet")
	}
	if err := st.readTLSSecret(ctx, svc, spec.tls); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	if err := st.resolveMembers(ctx, &spec); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	fp := lbcycle.Fingerprint{Config: spec.configFingerprint(), Members: spec.membersFingerprint()}
	st.memberSets.Note(fp.Members, spec.members)
	return spec, fp, nil
}

// asLB is an Octavia load balancer as the cycle sees it.
func (st *steps) asLB(lb *osapi.LoadBalancer, svc *v1.Service) octaviaLB {
	state := lbcycle.Ready
	switch {
	case strings.HasPrefix(lb.ProvisioningStatus, "PENDING"):
		state = lbcycle.Busy
	case lb.ProvisioningStatus == "ERROR":
		state = lbcycle.Failed
	}
	return octaviaLB{ID: lb.ID, Status: lb.ProvisioningStatus, State: state, Shared: !st.owned(lb, svc), Obj: *lb}
}

func (st *steps) Listed(ctx context.Context, svc *v1.Service) (octaviaLB, bool, error) {
	lb, found, err := st.index.lbs.Get(ctx, "svc/"+string(svc.UID))
	if err != nil || !found {
		return octaviaLB{}, false, err
	}
	return st.asLB(&lb, svc), true, nil
}

func (st *steps) Find(ctx context.Context, svc *v1.Service) (octaviaLB, bool, error) {
	if err := st.api.Session(ctx, osapi.Octavia); err != nil {
		return octaviaLB{}, false, err
	}
	lb, dups, err := st.findLBs(ctx, svc)
	if err != nil || lb == nil {
		return octaviaLB{}, false, err
	}
	st.unanswered.Found(string(svc.UID))
	if err := st.deleteDuplicates(ctx, svc, lb, dups); err != nil {
		return octaviaLB{}, false, err
	}
	return st.asLB(lb, svc), true, nil
}

func (st *steps) Relist() {
	st.index.lbs.Invalidate()
	st.index.fips.Invalidate()
	st.index.listeners.Invalidate()
	st.index.pools.Invalidate()
	st.index.monitors.Invalidate()
	st.index.sgRules.Invalidate()
}

// createdAs is the fingerprint lbID was created from by this process ("" if
// none); forgetCreated drops it.
func (st *steps) createdAs(lbID string) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.created[lbID]
}

func (st *steps) setCreated(lbID, fingerprint string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if fingerprint == "" {
		delete(st.created, lbID)
	} else {
		st.created[lbID] = fingerprint
	}
}
