package openstack

import (
	"net/http"
	"strconv"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Load balancers (Octavia API reference, "Load Balancers"): a create takes
// the whole graph (listeners with their default pools, members and monitor)
// and answers it PENDING_CREATE; every change makes the load balancer
// PENDING_UPDATE (PENDING_DELETE) until the provisioning delay has passed.
// decodeLB reads a create's {"loadbalancer": …} and refuses, before any
// lookup, what Octavia refuses of the body alone.
func (e *Emulator) decodeLB(r *http.Request, req *lbReq) *apiErr {
	if aerr := octaviaBody[lbReq]("loadbalancer")(r, req); aerr != nil {
		return aerr
	}
	if len(req.Pools) > 0 {
		return errf(400, "", "Validation failure: the emulator accepts pools in a load balancer graph only as a listener's default_pool.")
	}
	if len(req.AdditionalVips) > 0 && e.opts.OctaviaBefore226 {
		// wsme's answer to an attribute the API version does not have.
		return errf(400, "", "Invalid input for field/attribute load_balancer. Value: Unknown attribute for argument load_balancer: additional_vips")
	}
	switch req.Provider {
	case "":
		req.Provider = "amphora"
	case "amphora", "octavia", "ovn":
	default:
		return errf(400, "", "Provider '%s' is not enabled.", req.Provider)
	}
	return nil
}

// createLB creates a load balancer with its graph: the whole graph is
// checked before anything is stored, then the VIP port is made.
func (e *Emulator) createLB(r *http.Request, req *lbReq, now time.Time) (core.Reply, *apiErr) {
	if e.quotaMet(QuotaLoadBalancer, e.lbs.Len()) {
		// octavia/common/exceptions.py QuotaException: HTTP 403, "Quota has
		// been met for resources: %(resource)s", the resource being
		// data_models.LoadBalancer._name(), the class name in snake case.
		return core.Reply{}, errf(http.StatusForbidden, "", "Quota has been met for resources: load_balancer")
	}
	lb := &loadBalancer{octStd: e.newOctStd(req.stdReq, now),
		FlavorID: req.FlavorID, AZ: req.AZ, Provider: req.Provider, projectID: e.fx.ProjectID}
	ls, pgs, aerr := e.buildLBGraph(lb, req.Listeners, now, e.requester(r))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	if aerr := e.allocateVIP(lb, *req, now); aerr != nil {
		return core.Reply{}, aerr
	}
	e.lbs.Add(lb.ID, lb)
	e.storeLBGraph(lb, ls, pgs)
	e.markPending(lb, provPendingCreate, now)
	return core.Created(keyed("loadbalancer", e.lbView(lb))), nil
}

// buildLBGraph checks the listeners of a new load balancer and their
// default pools, storing nothing; pgs[i] is listener i's pool graph (nil:
// none).
func (e *Emulator) buildLBGraph(lb *loadBalancer, reqs []listenerReq, now time.Time, who requester) (ls []*listener, pgs []*poolGraph, aerr *apiErr) {
	for _, lr := range reqs {
		if len(lr.DefaultPoolID) > 0 && string(lr.DefaultPoolID) != "null" {
			return nil, nil, errf(400, "", "Validation failure: a listener of a new load balancer cannot reference an existing pool.")
		}
		l, aerr := e.buildListener(lb, lr, ls, now, who)
		if aerr != nil {
			return nil, nil, aerr
		}
		ls = append(ls, l)
		var g *poolGraph
		if lr.DefaultPool != nil {
			if g, aerr = e.buildPool(lb, l, *lr.DefaultPool, now); aerr != nil {
				return nil, nil, aerr
			}
		}
		pgs = append(pgs, g)
	}
	return ls, pgs, nil
}

// storeLBGraph stores a new load balancer's checked listeners and pools;
// under Options.StrandGraphChildren they never leave PENDING_CREATE.
func (e *Emulator) storeLBGraph(lb *loadBalancer, ls []*listener, pgs []*poolGraph) {
	strand := e.opts.StrandGraphChildren
	for i, l := range ls {
		l.stranded = strand
		e.listeners.Add(l.ID, l)
		lb.Listeners = with(lb.Listeners, l.ID)
		if g := pgs[i]; g != nil {
			g.pool.stranded = strand
			for _, m := range g.members {
				m.stranded = strand
			}
			if g.monitor != nil {
				g.monitor.stranded = strand
			}
			e.storePool(lb, l, g)
		}
	}
}

// updateLB changes a load balancer's own attributes; its VIP and listeners
// are not updatable.
func (e *Emulator) updateLB(r *http.Request, req *lbReq, now time.Time) (core.Reply, *apiErr) {
	lb, aerr := e.mutableLB(r.PathValue("id"), false)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	if req.VipSubnetID != "" || req.VipNetworkID != "" || req.VipPortID != "" || req.VipAddress != "" || len(req.Listeners) > 0 {
		return core.Reply{}, errf(400, "", "Validation failure: the VIP and the listeners of a load balancer cannot be updated.")
	}
	lb.update(req.stdReq)
	e.markPending(lb, provPendingUpdate, now)
	return core.OK(keyed("loadbalancer", e.lbView(lb))), nil
}

// mutableLB is the load balancer id, found and accepting a change (a
// deletion when forDelete).
func (e *Emulator) mutableLB(id string, forDelete bool) (*loadBalancer, *apiErr) {
	lb, ok := e.lbs.Get(id)
	if !ok {
		return nil, octaviaNotFound("Load Balancer", id)
	}
	if aerr := mutable(lb, forDelete); aerr != nil {
		return nil, aerr
	}
	return lb, nil
}

// deleteLB deletes a load balancer; with children only with ?cascade=true,
// which marks the whole tree PENDING_DELETE.
func (e *Emulator) deleteLB(r *http.Request, _ *struct{}, now time.Time) (core.Reply, *apiErr) {
	id := r.PathValue("id")
	cascade, _ := strconv.ParseBool(r.URL.Query().Get("cascade"))
	lb, aerr := e.mutableLB(id, true)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	if !cascade && (len(lb.Listeners) > 0 || len(lb.Pools) > 0) {
		return core.Reply{}, errf(400, "", "Validation failure: Cannot delete Load Balancer %s - it has children", id)
	}
	for _, l := range e.listeners.Lookup(lb.Listeners) {
		l.Prov = provPendingDelete
	}
	for _, pid := range lb.Pools {
		p, _ := e.pools.Get(pid)
		e.markPoolTreeDeleted(p)
	}
	e.markPending(lb, provPendingDelete, now)
	return core.NoContent(), nil
}

// markPoolTreeDeleted marks a pool, its members and its monitor
// PENDING_DELETE.
func (e *Emulator) markPoolTreeDeleted(p *lbPool) {
	p.Prov = provPendingDelete
	e.markPoolChildrenDeleted(p)
}

// markPoolChildrenDeleted marks a pool's members and monitor PENDING_DELETE.
func (e *Emulator) markPoolChildrenDeleted(p *lbPool) {
	for _, mid := range p.Members {
		if m, ok := e.members.Get(mid); ok {
			m.Prov = provPendingDelete
		}
	}
	if h, ok := e.monitors.Get(p.MonitorID); ok {
		h.Prov = provPendingDelete
	}
}
