package openstack

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Pools (Octavia API reference, "Pools"): a pool belongs to a load balancer
// and at most one listener; a change of a pool or of its members or monitor
// makes the pool, its listeners and its load balancer pending.

// createPool adds a pool, with its members and monitor, to a load balancer
// or to a listener (the listener's default pool).
func (e *Emulator) createPool(_ *http.Request, req *poolReq, now time.Time) (core.Reply, *apiErr) {
	l, lbID, aerr := e.poolParent(req)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	lb, aerr := e.mutableLB(lbID, false)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	g, aerr := e.buildPool(lb, l, *req, now)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	e.storePool(lb, l, g)
	if l != nil && l.Prov == provActive {
		l.Prov, l.Updated = provPendingUpdate, now
	}
	e.touchChild(lb, &g.pool.octStd, provPendingCreate, now)
	return core.Created(keyed("pool", e.poolView(g.pool))), nil
}

// poolParent is the listener (nil: none) and load balancer a new pool is
// for: listener_id, loadbalancer_id or both, which must agree.
func (e *Emulator) poolParent(req *poolReq) (*listener, string, *apiErr) {
	if req.ListenerID == "" {
		if req.LoadbalancerID == "" {
			return nil, "", invalid("A pool needs one of listener_id or loadbalancer_id.")
		}
		return nil, req.LoadbalancerID, nil
	}
	l, ok := e.listeners.Get(req.ListenerID)
	if !ok {
		return nil, "", octaviaNotFound("Listener", req.ListenerID)
	}
	if req.LoadbalancerID != "" && req.LoadbalancerID != l.LBID {
		return nil, "", invalid("Listener %s is not on Load Balancer %s.", l.ID, req.LoadbalancerID)
	}
	return l, l.LBID, nil
}

// mutablePool finds a pool and its load balancer for a mutation.
func (e *Emulator) mutablePool(id string) (*lbPool, *loadBalancer, *apiErr) {
	p, ok := e.pools.Get(id)
	if !ok {
		return nil, nil, octaviaNotFound("Pool", id)
	}
	lb, aerr := e.mutableLB(p.LBID, false)
	if aerr != nil {
		return nil, nil, aerr
	}
	if isPending(p.Prov) {
		return nil, nil, errf(409, "", "Pool %s is immutable and cannot be updated.", p.ID)
	}
	return p, lb, nil
}

// updatePool changes a pool's algorithm, persistence and own attributes;
// its protocol is the pool's for life.
func (e *Emulator) updatePool(r *http.Request, req *poolReq, now time.Time) (core.Reply, *apiErr) {
	p, lb, aerr := e.mutablePool(r.PathValue("id"))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	if req.LBAlgorithm != nil && !slices.Contains(lbAlgorithms, *req.LBAlgorithm) {
		return core.Reply{}, invalid("Invalid input for field/attribute lb_algorithm. Value: '%s'. Value should be one of: %s.", *req.LBAlgorithm, strings.Join(lbAlgorithms, ", "))
	}
	if req.Protocol != "" && req.Protocol != p.Protocol {
		return core.Reply{}, errf(400, "", "Validation failure: the protocol of a pool cannot be updated.")
	}
	p.LBAlgorithm = deref(req.LBAlgorithm, p.LBAlgorithm)
	p.update(req.stdReq)
	if req.Persistence != nil {
		p.Persistence = nil
		if string(*req.Persistence) != "null" {
			p.Persistence = slices.Clone(*req.Persistence)
		}
	}
	e.touchPool(p, now)
	e.touchChild(lb, &p.octStd, provPendingUpdate, now)
	return core.OK(keyed("pool", e.poolView(p))), nil
}

// deletePool marks a pool with its members and monitor PENDING_DELETE.
func (e *Emulator) deletePool(r *http.Request, _ *struct{}, now time.Time) (core.Reply, *apiErr) {
	p, lb, aerr := e.mutablePool(r.PathValue("id"))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	e.touchPool(p, now)
	e.markPoolChildrenDeleted(p)
	e.touchChild(lb, &p.octStd, provPendingDelete, now)
	return core.NoContent(), nil
}

// ---- health monitors ----

// createMonitor gives a pool its health monitor.
func (e *Emulator) createMonitor(_ *http.Request, req *monitorReq, now time.Time) (core.Reply, *apiErr) {
	p, lb, aerr := e.mutablePool(req.PoolID)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	h, aerr := e.buildMonitor(p, *req, now)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	e.monitors.Add(h.ID, h)
	p.MonitorID = h.ID
	e.touchPool(p, now)
	e.touchChild(lb, &h.octStd, provPendingCreate, now)
	return core.Created(keyed("healthmonitor", e.monitorView(h))), nil
}

// mutableMonitor finds a monitor, its pool and its load balancer for a mutation.
func (e *Emulator) mutableMonitor(id string) (*healthMonitor, *lbPool, *loadBalancer, *apiErr) {
	h, ok := e.monitors.Get(id)
	if !ok {
		return nil, nil, nil, octaviaNotFound("Health Monitor", id)
	}
	p, lb, aerr := e.mutablePool(h.PoolID)
	return h, p, lb, aerr
}

// updateMonitor changes a monitor's timing and checks; its type is the
// monitor's for life, and the HTTP options are only an HTTP(S) monitor's.
func (e *Emulator) updateMonitor(r *http.Request, req *monitorReq, now time.Time) (core.Reply, *apiErr) {
	h, p, lb, aerr := e.mutableMonitor(r.PathValue("id"))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	if req.Type != "" && req.Type != h.Type {
		return core.Reply{}, errf(400, "", "Validation failure: the type of a health monitor cannot be updated.")
	}
	next := *h
	if aerr := applyMonitor(&next, req); aerr != nil {
		return core.Reply{}, aerr
	}
	*h = next
	e.touchPool(p, now)
	e.touchChild(lb, &h.octStd, provPendingUpdate, now)
	return core.OK(keyed("healthmonitor", e.monitorView(h))), nil
}

// applyMonitor applies an update to next, a copy of the monitor, checking
// the result.
func applyMonitor(next *healthMonitor, req *monitorReq) *apiErr {
	next.Delay = deref(req.Delay, next.Delay)
	next.Timeout = deref(req.Timeout, next.Timeout)
	next.MaxRetries = deref(req.MaxRetries, next.MaxRetries)
	next.MaxRetDown = deref(req.MaxRetriesDown, next.MaxRetDown)
	if next.MaxRetries < 1 || next.MaxRetries > 10 || next.MaxRetDown < 1 || next.MaxRetDown > 10 || next.Delay < 0 || next.Timeout < 0 {
		return invalid("max_retries and max_retries_down must be between 1 and 10, delay and timeout >= 0.")
	}
	if next.Type == "HTTP" || next.Type == "HTTPS" {
		next.URLPath = deref(req.URLPath, next.URLPath)
		next.HTTPMethod = deref(req.HTTPMethod, next.HTTPMethod)
		next.ExpectedCodes = deref(req.ExpectedCodes, next.ExpectedCodes)
	} else if req.URLPath != nil || req.HTTPMethod != nil || req.ExpectedCodes != nil {
		return invalid("url_path, http_method and expected_codes are only valid for HTTP and HTTPS health monitors.")
	}
	next.update(req.undescribed())
	next.DomainName = deref(req.DomainName, next.DomainName)
	if req.HTTPVersion != nil {
		next.HTTPVersion = req.HTTPVersion.ptr()
	}
	return nil
}

// deleteMonitor marks a monitor PENDING_DELETE.
func (e *Emulator) deleteMonitor(r *http.Request, _ *struct{}, now time.Time) (core.Reply, *apiErr) {
	h, p, lb, aerr := e.mutableMonitor(r.PathValue("id"))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	e.touchPool(p, now)
	e.touchChild(lb, &h.octStd, provPendingDelete, now)
	return core.NoContent(), nil
}
