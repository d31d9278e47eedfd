package openstack

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Listeners (Octavia API reference, "Listeners"): a change makes the
// listener and its load balancer pending; protocol and protocol_port are a
// listener's for life.

// createListener adds a listener to a load balancer, with an existing pool
// of it as its default pool if default_pool_id names one.
func (e *Emulator) createListener(r *http.Request, req *listenerReq, now time.Time) (core.Reply, *apiErr) {
	if req.DefaultPool != nil {
		return core.Reply{}, errf(400, "", "Validation failure: default_pool is accepted only in a load balancer graph.")
	}
	lb, aerr := e.mutableLB(req.LoadbalancerID, false)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	l, aerr := e.buildListener(lb, *req, e.listeners.Lookup(lb.Listeners), now, e.requester(r))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	pool, aerr := e.defaultPoolFor(lb, l, rawString(req.DefaultPoolID))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	e.listeners.Add(l.ID, l)
	lb.Listeners = with(lb.Listeners, l.ID)
	if pool != nil {
		l.DefaultPoolID = pool.ID
		pool.Listeners = with(pool.Listeners, l.ID)
	}
	e.touchChild(lb, &l.octStd, provPendingCreate, now)
	return core.Created(keyed("listener", e.listenerView(l))), nil
}

// defaultPoolFor is the pool poolID ("": none) checked as the default pool
// of listener l of lb: a pool of lb, of a protocol the listener's takes,
// and not another listener's.
func (e *Emulator) defaultPoolFor(lb *loadBalancer, l *listener, poolID string) (*lbPool, *apiErr) {
	if poolID == "" {
		return nil, nil
	}
	p, ok := e.pools.Get(poolID)
	if !ok || p.LBID != lb.ID {
		return nil, octaviaNotFound("Pool", poolID)
	}
	if !slices.Contains(listenerPoolProtocols[l.Protocol], p.Protocol) {
		return nil, invalid("The pool protocol '%s' is invalid while the listener protocol is '%s'.", p.Protocol, l.Protocol)
	}
	if len(p.Listeners) > 0 && !has(p.Listeners, l.ID) {
		return nil, errf(409, "", "Pool %s is already in use by another listener.", poolID)
	}
	return p, nil
}

// rawString decodes a JSON string or null ("").
func rawString(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// listenerOf is the listener id and its load balancer, found and mutable.
func (e *Emulator) listenerOf(id string) (*listener, *loadBalancer, *apiErr) {
	l, ok := e.listeners.Get(id)
	if !ok {
		return nil, nil, octaviaNotFound("Listener", id)
	}
	lb, aerr := e.mutableLB(l.LBID, false)
	return l, lb, aerr
}

// updateListener changes a listener's options and default pool; the
// change is checked whole on a copy before the listener takes it.
func (e *Emulator) updateListener(r *http.Request, req *listenerReq, now time.Time) (core.Reply, *apiErr) {
	l, lb, aerr := e.listenerOf(r.PathValue("id"))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	if isPending(l.Prov) {
		return core.Reply{}, errf(409, "", "Listener %s is immutable and cannot be updated.", l.ID)
	}
	if req.Protocol != "" && req.Protocol != l.Protocol || req.ProtocolPort != 0 && req.ProtocolPort != l.ProtocolPort {
		return core.Reply{}, errf(400, "", "Validation failure: protocol and protocol_port of a listener cannot be updated.")
	}
	next := *l
	if aerr := e.validateListenerOptions(&next, *req, e.requester(r)); aerr != nil {
		return core.Reply{}, aerr
	}
	if len(req.DefaultPoolID) > 0 {
		if aerr := e.repointDefaultPool(lb, l, &next, rawString(req.DefaultPoolID)); aerr != nil {
			return core.Reply{}, aerr
		}
	}
	applyListener(&next, req)
	*l = next
	e.touchChild(lb, &l.octStd, provPendingUpdate, now)
	return core.OK(keyed("listener", e.listenerView(l))), nil
}

// repointDefaultPool makes poolID ("": none) the default pool of listener l
// (next being its updated copy), the pools' listener lists following.
func (e *Emulator) repointDefaultPool(lb *loadBalancer, l, next *listener, poolID string) *apiErr {
	if _, aerr := e.defaultPoolFor(lb, l, poolID); aerr != nil {
		return aerr
	}
	if old, ok := e.pools.Get(l.DefaultPoolID); ok {
		old.Listeners = without(old.Listeners, l.ID)
	}
	next.DefaultPoolID = poolID
	if p, ok := e.pools.Get(poolID); ok && !has(p.Listeners, l.ID) {
		p.Listeners = with(p.Listeners, l.ID)
	}
	return nil
}

// applyListener applies the attributes an update gives (nil: kept).
func applyListener(next *listener, req *listenerReq) {
	next.update(req.stdReq)
	next.ConnLimit = deref(req.ConnLimit, next.ConnLimit)
	next.TimeoutClientData = deref(req.TimeoutClientData, next.TimeoutClientData)
	next.TimeoutMemberConnect = deref(req.TimeoutMemberConnect, next.TimeoutMemberConnect)
	next.TimeoutMemberData = deref(req.TimeoutMemberData, next.TimeoutMemberData)
	next.TimeoutTCPInspect = deref(req.TimeoutTCPInspect, next.TimeoutTCPInspect)
}

// deleteListener marks a listener PENDING_DELETE.
func (e *Emulator) deleteListener(r *http.Request, _ *struct{}, now time.Time) (core.Reply, *apiErr) {
	l, lb, aerr := e.listenerOf(r.PathValue("id"))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	e.touchChild(lb, &l.octStd, provPendingDelete, now)
	return core.NoContent(), nil
}
