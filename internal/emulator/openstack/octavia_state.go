package openstack

import (
	"fmt"
	"net/http"
	"slices"
	"time"
)

// ---- state machine (call with mu held) ----

// settleLBs completes the pending transitions that are due.
func (e *Emulator) settleLBs(now time.Time) {
	for id := range e.pendingLBs {
		lb, ok := e.lbs.Get(id)
		if !ok {
			delete(e.pendingLBs, id)
			continue
		}
		if now.Before(lb.readyAt) {
			continue
		}
		delete(e.pendingLBs, id)
		e.settleLB(lb, now)
	}
}

// settleLB completes a load balancer's pending transition and its
// children's: what was PENDING_DELETE goes, the rest becomes ACTIVE.
func (e *Emulator) settleLB(lb *loadBalancer, now time.Time) {
	if lb.Prov == provPendingDelete {
		e.purgeLB(lb, now)
		return
	}
	for _, lid := range lb.Listeners {
		l, _ := e.listeners.Get(lid)
		settleOrPurge(&l.octStd, func() { e.purgeListener(lb, l) })
	}
	for _, pid := range lb.Pools {
		p, _ := e.pools.Get(pid)
		if p.Prov == provPendingDelete {
			e.purgePool(lb, p)
			continue
		}
		e.settlePool(p)
	}
	if isPending(lb.Prov) {
		lb.Prov = provActive
	}
	e.refreshOperating(lb)
}

// settlePool settles a pool that stays, its members and monitor first.
func (e *Emulator) settlePool(p *lbPool) {
	purged := map[string]bool{}
	for _, mid := range p.Members {
		m, _ := e.members.Get(mid)
		settleOrPurge(&m.octStd, func() {
			purged[mid] = true
			e.members.Remove(mid)
		})
	}
	if len(purged) > 0 { // one copy, not one a member
		p.Members = slices.DeleteFunc(slices.Clone(p.Members), func(id string) bool { return purged[id] })
	}
	if h, ok := e.monitors.Get(p.MonitorID); ok {
		settleOrPurge(&h.octStd, func() {
			e.monitors.Remove(h.ID)
			p.MonitorID = ""
		})
	}
	p.settle()
}

// settleOrPurge purges a child that was PENDING_DELETE, else settles it.
func settleOrPurge(o *octStd, purge func()) {
	if o.Prov == provPendingDelete {
		purge()
		return
	}
	o.settle()
}

// refreshOperating derives the operating statuses of an ACTIVE tree: the
// emulator's members are always healthy.
func (e *Emulator) refreshOperating(lb *loadBalancer) {
	up := func(o *octStd) string {
		if o.AdminStateUp {
			return operOnline
		}
		return operOffline
	}
	lb.Oper = up(&lb.octStd)
	for _, lid := range lb.Listeners {
		l, _ := e.listeners.Get(lid)
		l.Oper = up(&l.octStd)
	}
	for _, pid := range lb.Pools {
		p, _ := e.pools.Get(pid)
		p.Oper = up(&p.octStd)
		h, monitored := e.monitors.Get(p.MonitorID)
		if monitored {
			h.Oper = up(&h.octStd)
		}
		for _, mid := range p.Members {
			m, _ := e.members.Get(mid)
			switch {
			case !m.AdminStateUp:
				m.Oper = operOffline
			case monitored:
				m.Oper = operOnline
			default:
				m.Oper = operNoMonitor
			}
		}
	}
}

// purgeListener removes a deleted listener from its pool and load balancer.
func (e *Emulator) purgeListener(lb *loadBalancer, l *listener) {
	if p, ok := e.pools.Get(l.DefaultPoolID); ok {
		p.Listeners = without(p.Listeners, l.ID)
	}
	lb.Listeners = without(lb.Listeners, l.ID)
	e.listeners.Remove(l.ID)
}

// purgePool removes a deleted pool with its members and monitor, its
// listeners left without a default pool.
func (e *Emulator) purgePool(lb *loadBalancer, p *lbPool) {
	for _, mid := range p.Members {
		e.members.Remove(mid)
	}
	if p.MonitorID != "" {
		e.monitors.Remove(p.MonitorID)
	}
	for _, lid := range p.Listeners {
		if l, ok := e.listeners.Get(lid); ok && l.DefaultPoolID == p.ID {
			l.DefaultPoolID = ""
		}
	}
	lb.Pools = without(lb.Pools, p.ID)
	e.pools.Remove(p.ID)
}

// purgeLB removes a deleted load balancer with its tree and its own VIP
// port.
func (e *Emulator) purgeLB(lb *loadBalancer, now time.Time) {
	for _, pid := range lb.Pools {
		if p, ok := e.pools.Get(pid); ok {
			e.purgePool(lb, p)
		}
	}
	for _, lid := range lb.Listeners {
		if l, ok := e.listeners.Get(lid); ok {
			e.purgeListener(lb, l)
		}
	}
	if lb.ownsVIP {
		e.deletePort(lb.VipPortID, now)
	}
	e.lbs.Remove(lb.ID)
	delete(e.pendingLBs, lb.ID)
}

// mutable checks that the load balancer accepts a mutation (a deletion when
// forDelete).
func mutable(lb *loadBalancer, forDelete bool) *apiErr {
	if isPending(lb.Prov) || lb.Prov == provError && !forDelete {
		return errf(409, "", "Load Balancer %s is immutable and cannot be updated.", lb.ID)
	}
	return nil
}

// markPending puts the load balancer in status until the provisioning delay
// has passed.
func (e *Emulator) markPending(lb *loadBalancer, status string, now time.Time) {
	lb.Prov = status
	lb.Updated = now
	lb.readyAt = now.Add(e.provDelay)
	e.pendingLBs[lb.ID] = true
}

// touchChild marks a child object pending (status) and its load balancer
// PENDING_UPDATE.
func (e *Emulator) touchChild(lb *loadBalancer, o *octStd, status string, now time.Time) {
	o.Prov = status
	o.Updated = now
	if status == provPendingCreate {
		o.Oper = operOffline
	}
	e.markPending(lb, provPendingUpdate, now)
}

// touchPool marks a pool and its listeners PENDING_UPDATE (for changes to
// its members and monitor).
func (e *Emulator) touchPool(p *lbPool, now time.Time) {
	if p.Prov == provActive {
		p.Prov, p.Updated = provPendingUpdate, now
	}
	for _, lid := range p.Listeners {
		if l, ok := e.listeners.Get(lid); ok && l.Prov == provActive {
			l.Prov, l.Updated = provPendingUpdate, now
		}
	}
}

// SetLoadBalancerError puts a load balancer in provisioning_status ERROR
// (operating_status ERROR). It is then mutable only by deletion.
func (e *Emulator) SetLoadBalancerError(id string) error {
	e.lock()
	defer e.mu.Unlock()
	lb, ok := e.lbs.Get(id)
	if !ok {
		return fmt.Errorf("load balancer %s: %w", id, ErrNotFound)
	}
	if isPending(lb.Prov) && lb.Prov != provPendingDelete {
		e.settleLB(lb, e.clock()) // finish the children's transitions first
	}
	lb.Prov, lb.Oper = provError, operError
	delete(e.pendingLBs, id)
	return nil
}

// lbStatusTree answers GET /v2/lbaas/loadbalancers/{id}/status: the load
// balancer with its listeners, their pools, the pools' members and health
// monitor, each with its id, name and statuses (Octavia API reference, "Get
// the Load Balancer status tree"; the shape recorded from the harness's Octavia
// 11.0.0: statuses.loadbalancer.listeners[].pools[].{members[],health_monitor}).
func (e *Emulator) lbStatusTree(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e.lock()
	defer e.mu.Unlock()
	lb, ok := e.lbs.Get(id)
	if !ok {
		octaviaErr(w, octaviaNotFound("Load Balancer", id))
		return
	}
	std := func(o octStd) map[string]any {
		return map[string]any{"id": o.ID, "name": o.Name, "provisioning_status": o.Prov, "operating_status": o.Oper}
	}
	var ls []any
	for _, lid := range lb.Listeners {
		l, ok := e.listeners.Get(lid)
		if !ok {
			continue
		}
		lv := std(l.octStd)
		lv["type"] = l.Protocol
		var ps []any
		for _, pid := range lb.Pools {
			p, ok := e.pools.Get(pid)
			if !ok || !slices.Contains(p.Listeners, l.ID) {
				continue
			}
			pv := std(p.octStd)
			var ms []any
			for _, mid := range p.Members {
				if m, ok := e.members.Get(mid); ok {
					mv := std(m.octStd)
					mv["address"], mv["protocol_port"] = m.Address, m.ProtocolPort
					ms = append(ms, mv)
				}
			}
			pv["members"] = orEmpty(ms)
			if h, ok := e.monitors.Get(p.MonitorID); ok {
				hv := std(h.octStd)
				hv["type"] = h.Type
				pv["health_monitor"] = hv
			}
			ps = append(ps, pv)
		}
		lv["pools"] = orEmpty(ps)
		ls = append(ls, lv)
	}
	lbv := std(lb.octStd)
	lbv["listeners"] = orEmpty(ls)
	writeJSON(w, http.StatusOK, map[string]any{"statuses": map[string]any{"loadbalancer": lbv}})
}

// orEmpty is v, or an empty list for nil (a JSON [] rather than null).
func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}
