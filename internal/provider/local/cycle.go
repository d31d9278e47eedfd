package local

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// The local cloud's steps of the load-balancer cycle (internal/lbcycle). The
// cloud lives in the process: a load balancer is built at once (an address
// allocated, listeners opened), is never busy or failed, and its record is kept
// beside it in memory. A restarted process has none and serves each Service
// again at the address in its status.
type steps struct{ *Cloud }

// lbSpec is what a Service asks of the local cloud.
type lbSpec struct {
	opts  lbOptions
	nodes []*v1.Node
}

type localLB = lbcycle.LB[servedLB]

var _ lbcycle.Cloud[lbSpec, servedLB] = steps{}

func newCycle(c *Cloud) *lbcycle.Cycle[lbSpec, servedLB] {
	return lbcycle.New[lbSpec, servedLB](steps{c}, servedRecords{c}, lbcycle.Options{})
}

func (s steps) Spec(_ context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	opts, err := s.parseOptions(svc)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	return lbSpec{opts: opts, nodes: nodes}, s.fingerprint(svc, opts, nodes), nil
}

// fingerprint covers everything serve acts on: the options and ports (config),
// and each Node with the addresses it is reached at (members).
func (s steps) fingerprint(svc *v1.Service, o lbOptions, nodes []*v1.Node) lbcycle.Fingerprint {
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
			if a, ok := s.backendIP(n, want4); ok && !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
		}
		members = append(members, fmt.Sprint(n.Name, addrs))
	}
	sort.Strings(members)
	return lbcycle.Fingerprint{Config: config, Members: lbcycle.MembersOf(members)}
}

func (s steps) current(svc *v1.Service) (localLB, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb, ok := s.served[svc.UID]
	if !ok {
		return localLB{}, false
	}
	return localLB{ID: string(svc.UID), Status: "serving", State: lbcycle.Ready, Obj: *lb}, true
}

func (s steps) Listed(_ context.Context, svc *v1.Service) (localLB, bool, error) {
	lb, ok := s.current(svc)
	return lb, ok, nil
}

func (s steps) Find(_ context.Context, svc *v1.Service) (localLB, bool, error) {
	lb, ok := s.current(svc)
	return lb, ok, nil
}

// Create allocates the Service's address (the one in its status when it has
// one) and serves every port on it, at once.
func (s steps) Create(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	return "", s.serve(ctx, svc, spec.opts, spec.nodes)
}

// Replace is never needed: a load balancer of the process is never Failed.
func (s steps) Replace(context.Context, *v1.Service, localLB) (string, error) { return "", nil }

// Converge serves the Service as it asks now; the proxy changes only what
// differs.
func (s steps) Converge(ctx context.Context, svc *v1.Service, spec lbSpec, _ localLB) (string, error) {
	return "", s.serve(ctx, svc, spec.opts, spec.nodes)
}

func (s steps) Publish(_ context.Context, svc *v1.Service, _ lbSpec, _ localLB) (*v1.LoadBalancerStatus, string, error) {
	lb, ok := s.current(svc)
	if !ok {
		return nil, "", fmt.Errorf("the load balancer of %s/%s stopped being served", svc.Namespace, svc.Name)
	}
	return statusFor(lb.Obj.ip), lb.Obj.ip.String(), nil
}

func (s steps) Published(_ context.Context, _ *v1.Service, _ lbSpec, rec lbcycle.Record, lb localLB) (*v1.LoadBalancerStatus, bool, error) {
	if rec.Address != lb.Obj.ip.String() {
		return nil, false, nil
	}
	return statusFor(lb.Obj.ip), true, nil
}

// Delete stops serving the Service and frees its address; it is idempotent.
func (s steps) Delete(ctx context.Context, _ string, svc *v1.Service) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proxy.Delete(string(svc.UID))
	if lb, ok := s.served[svc.UID]; ok {
		klog.FromContext(ctx).Info("Released load balancer IP", "service", klog.KObj(svc), "ip", lb.ip)
		delete(s.served, svc.UID)
	}
	return "", nil
}

// servedRecords keeps each Service's Record beside what the process serves.
type servedRecords struct{ *Cloud }

func (r servedRecords) Get(svc *v1.Service) (lbcycle.Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lb, ok := r.served[svc.UID]
	if !ok || lb.fp == (lbcycle.Fingerprint{}) {
		return lbcycle.Record{}, false
	}
	return lbcycle.Record{ID: string(svc.UID), Fingerprint: lb.fp, Address: lb.ip.String()}, true
}

func (r servedRecords) Put(_ context.Context, svc *v1.Service, rec lbcycle.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lb, ok := r.served[svc.UID]; ok && rec.ID == string(svc.UID) {
		lb.fp = rec.Fingerprint
	}
}
