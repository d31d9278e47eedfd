package local

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/l4proxy"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// The local cloud's steps of the load-balancer cycle (internal/lbcycle). The
// cloud lives in the process: a load balancer is built at once (an address
// allocated, listeners opened), is never busy or failed, and its record is kept
// beside it in memory. A restarted process has none and serves each Service
// again at the address in its status.
type steps struct {
	cfg Config
	// cycle is the cycle that runs the steps (its records of each Service).
	cycle *lbcycle.Cycle[lbSpec, servedLB]
	pools []Pool
	// inv is the machines' inventory, where a Node's address is read
	// (backendIP).
	inv   *inventory
	proxy *l4proxy.Manager

	// mu guards served and serialises allocation. The locks below are
	// leaves: code holding one of them never takes mu, so mu may be held while
	// taking them (events, cache reads, the proxy's eligibility checks).
	mu     sync.Mutex
	served map[types.UID]*servedLB

	// infMu guards the caches given by SetInformers; read on every proxied
	// connection (nodeEligible), so it must never wait for mu.
	infMu    sync.RWMutex
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
}

// lbSpec is what a Service asks of the local cloud.
type lbSpec struct {
	opts  lbOptions
	nodes []*v1.Node
}

type localLB = lbcycle.LB[servedLB]

var _ lbcycle.Cloud[lbSpec, servedLB] = (*steps)(nil)

// newSteps are the load balancers of the pools, served from inv's machines,
// the cycle that runs them set.
func newSteps(cfg Config, pools []Pool, inv *inventory) *steps {
	st := &steps{cfg: cfg, pools: pools, inv: inv, served: map[types.UID]*servedLB{}}
	st.cycle = lbcycle.New[lbSpec, servedLB](st, servedRecords{st}, lbcycle.Options{})
	st.proxy = l4proxy.NewManager(l4proxy.Options{
		Logger:   klog.Background().WithName("l4proxy"),
		Eligible: st.nodeEligible,
	})
	return st
}

func (st *steps) Spec(_ context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	opts, err := st.parseOptions(svc)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	return lbSpec{opts: opts, nodes: nodes}, st.fingerprint(svc, opts, nodes), nil
}

// fingerprint covers everything serve acts on: the options and ports (config),
// and each Node with the addresses it is reached at (members).
func (st *steps) fingerprint(svc *v1.Service, o lbOptions, nodes []*v1.Node) lbcycle.Fingerprint {
	h := lbcycle.NewHash()
	w := h.Line
	w("v1", o.pool, o.ip, o.sharingKey, o.hcInterval, o.udpIdle, o.sourceRanges, o.family, o.healthCheckNP, svc.Spec.ExternalTrafficPolicy)
	for _, p := range svc.Spec.Ports {
		w("port", p.Protocol, p.Port, p.NodePort)
	}
	config := h.Config()

	members := make([]string, 0, len(nodes))
	for _, n := range nodes {
		var addrs []netip.Addr
		for _, want4 := range []bool{true, false} {
			if a, ok := st.backendIP(n, want4); ok && !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
		}
		members = append(members, fmt.Sprint(n.Name, addrs))
	}
	sort.Strings(members)
	return lbcycle.Fingerprint{Config: config, Members: lbcycle.MembersOf(members)}
}

func (st *steps) current(svc *v1.Service) (localLB, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	lb, ok := st.served[svc.UID]
	if !ok {
		return localLB{}, false
	}
	return localLB{ID: string(svc.UID), Status: "serving", State: lbcycle.Ready, Obj: *lb}, true
}

func (st *steps) Listed(_ context.Context, svc *v1.Service) (localLB, bool, error) {
	lb, ok := st.current(svc)
	return lb, ok, nil
}

func (st *steps) Find(_ context.Context, svc *v1.Service) (localLB, bool, error) {
	lb, ok := st.current(svc)
	return lb, ok, nil
}

// Create allocates the Service's address (the one in its status when it has
// one) and serves every port on it, at once.
func (st *steps) Create(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	return "", st.serve(ctx, svc, spec.opts, spec.nodes)
}

// Replace is never needed: a load balancer of the process is never Failed.
func (st *steps) Replace(context.Context, *v1.Service, localLB) (string, error) { return "", nil }

// Converge serves the Service as it asks now; the proxy changes only what
// differs.
func (st *steps) Converge(ctx context.Context, svc *v1.Service, spec lbSpec, _ localLB) (string, error) {
	return "", st.serve(ctx, svc, spec.opts, spec.nodes)
}

func (st *steps) Publish(_ context.Context, svc *v1.Service, _ lbSpec, _ localLB) (*v1.LoadBalancerStatus, string, error) {
	lb, ok := st.current(svc)
	if !ok {
		return nil, "", fmt.Errorf("the load balancer of %s/%s stopped being served", svc.Namespace, svc.Name)
	}
	return statusFor(lb.Obj.ip), lb.Obj.ip.String(), nil
}

func (st *steps) Published(_ context.Context, _ *v1.Service, _ lbSpec, rec lbcycle.Record, lb localLB) (*v1.LoadBalancerStatus, bool, error) {
	if rec.Address != lb.Obj.ip.String() {
		return nil, false, nil
	}
	return statusFor(lb.Obj.ip), true, nil
}

// Delete stops serving the Service and frees its address; it is idempotent.
func (st *steps) Delete(ctx context.Context, _ string, svc *v1.Service) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.proxy.Delete(string(svc.UID))
	if lb, ok := st.served[svc.UID]; ok {
		klog.FromContext(ctx).Info("Released load balancer IP", "service", klog.KObj(svc), "ip", lb.ip)
		delete(st.served, svc.UID)
	}
	return "", nil
}

// servedRecords keeps each Service's Record beside what the process serves.
type servedRecords struct{ st *steps }

func (r servedRecords) Get(svc *v1.Service) (lbcycle.Record, bool) {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	lb, ok := r.st.served[svc.UID]
	if !ok || lb.fp == (lbcycle.Fingerprint{}) {
		return lbcycle.Record{}, false
	}
	return lbcycle.Record{ID: string(svc.UID), Fingerprint: lb.fp, Address: lb.ip.String()}, true
}

func (r servedRecords) Put(_ context.Context, svc *v1.Service, rec lbcycle.Record) {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	if lb, ok := r.st.served[svc.UID]; ok && rec.ID == string(svc.UID) {
		lb.fp = rec.Fingerprint
	}
}
