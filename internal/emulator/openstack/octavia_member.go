package openstack

import (
	"net/http"
	"strconv"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Members (Octavia API reference, "Members"): a pool's members, keyed by
// address and protocol_port, under /pools/{pool_id}/members; a PUT of the
// collection replaces them all at once (batch update).

// listMembers lists a pool's members.
func (e *Emulator) listMembers(w http.ResponseWriter, r *http.Request) {
	poolID := r.PathValue("pool_id")
	e.lock()
	_, ok := e.pools.Get(poolID)
	e.mu.Unlock()
	if !ok {
		octaviaErr(w, octaviaNotFound("Pool", poolID))
		return
	}
	// The pool's own members, not a walk of every pool's (under the lock).
	within := func() []string {
		if p, ok := e.pools.Get(poolID); ok {
			return p.Members
		}
		return []string{}
	}
	listResponse(e, w, r, e.members, &lbMember{}, "members", within, octaviaBadRequest, e.memberView)
}

// getMember answers a member of the pool in the path (another pool's: 404).
func (e *Emulator) getMember(w http.ResponseWriter, r *http.Request) {
	poolID, id := r.PathValue("pool_id"), r.PathValue("id")
	v, ok := core.View(locker{e}, e.members, id, func(m *lbMember) any {
		if m.PoolID != poolID {
			return nil
		}
		return e.memberView(m)
	})
	if !ok || v == nil {
		octaviaErr(w, octaviaNotFound("Member", id))
		return
	}
	writeJSON(w, http.StatusOK, keyed("member", v))
}

// createMember adds a member to the pool in the path.
func (e *Emulator) createMember(r *http.Request, req *memberReq, now time.Time) (core.Reply, *apiErr) {
	p, lb, aerr := e.mutablePool(r.PathValue("pool_id"))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	taken := map[memberKey]bool{}
	for _, o := range e.members.Lookup(p.Members) {
		taken[memberKey{o.Address, o.ProtocolPort}] = true
	}
	m, aerr := e.buildMember(p, *req, taken, now)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	e.members.Add(m.ID, m)
	p.Members = with(p.Members, m.ID)
	e.touchPool(p, now)
	e.touchChild(lb, &m.octStd, provPendingCreate, now)
	return core.Created(keyed("member", e.memberView(m))), nil
}

// applyMember updates m from req (address and protocol_port are the key
// and stay).
func applyMember(m *lbMember, req memberReq) *apiErr {
	if req.Weight != nil && (*req.Weight < 0 || *req.Weight > 256) {
		return invalid("Invalid input for field/attribute weight. Value: '%d'. Value should be between 0 and 256.", *req.Weight)
	}
	if req.MonitorPort != nil {
		if aerr := checkPort(*req.MonitorPort); aerr != nil {
			return aerr
		}
	}
	m.update(req.undescribed())
	m.Weight = deref(req.Weight, m.Weight)
	m.Backup = deref(req.Backup, m.Backup)
	m.MonitorAddress = deref(req.MonitorAddress, m.MonitorAddress)
	if req.MonitorPort != nil {
		mp := *req.MonitorPort
		m.MonitorPort = &mp
	}
	return nil
}

// poolMember is the member id of the pool in the path, with the pool and
// its load balancer, found and mutable.
func (e *Emulator) poolMember(r *http.Request) (*lbMember, *lbPool, *loadBalancer, *apiErr) {
	p, lb, aerr := e.mutablePool(r.PathValue("pool_id"))
	if aerr != nil {
		return nil, nil, nil, aerr
	}
	id := r.PathValue("id")
	m, ok := e.members.Get(id)
	if !ok || m.PoolID != p.ID {
		return nil, nil, nil, octaviaNotFound("Member", id)
	}
	return m, p, lb, nil
}

// updateMember changes a member, checked on a copy first.
func (e *Emulator) updateMember(r *http.Request, req *memberReq, now time.Time) (core.Reply, *apiErr) {
	m, p, lb, aerr := e.poolMember(r)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	next := *m
	if aerr := applyMember(&next, *req); aerr != nil {
		return core.Reply{}, aerr
	}
	*m = next
	e.touchPool(p, now)
	e.touchChild(lb, &m.octStd, provPendingUpdate, now)
	return core.OK(keyed("member", e.memberView(m))), nil
}

// deleteMember marks a member PENDING_DELETE.
func (e *Emulator) deleteMember(r *http.Request, _ *struct{}, now time.Time) (core.Reply, *apiErr) {
	m, p, lb, aerr := e.poolMember(r)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	e.touchPool(p, now)
	e.touchChild(lb, &m.octStd, provPendingDelete, now)
	return core.NoContent(), nil
}

// memberKey is what identifies a member in a batch: address and port.
type memberKey struct {
	addr string
	port int
}

// memberBatch is a batch update checked whole: the members it updates
// (with their new values), creates, and names.
type memberBatch struct {
	updates map[*lbMember]lbMember
	created []*lbMember
	seen    map[memberKey]bool
}

// batchMembers replaces the members of a pool: members are keyed by address
// and protocol_port; matching ones are updated, new ones created and the
// others deleted (unless ?additive_only=true).
func (e *Emulator) batchMembers(r *http.Request, reqs *[]memberReq, now time.Time) (core.Reply, *apiErr) {
	additive, _ := strconv.ParseBool(r.URL.Query().Get("additive_only"))
	p, lb, aerr := e.mutablePool(r.PathValue("pool_id"))
	if aerr != nil {
		return core.Reply{}, aerr
	}
	existing := map[memberKey]*lbMember{}
	for _, m := range e.members.Lookup(p.Members) {
		existing[memberKey{m.Address, m.ProtocolPort}] = m
	}
	b, aerr := e.checkBatch(p, *reqs, existing, now)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	for m, next := range b.updates {
		*m = next
		m.Prov, m.Updated = provPendingUpdate, now
	}
	if !additive {
		for k, m := range existing {
			if !b.seen[k] {
				m.Prov, m.Updated = provPendingDelete, now
			}
		}
	}
	added := make([]string, len(b.created))
	for i, m := range b.created {
		e.members.Add(m.ID, m)
		added[i] = m.ID
	}
	p.Members = with(p.Members, added...)
	e.touchPool(p, now)
	e.markPending(lb, provPendingUpdate, now)
	return core.Reply{Status: http.StatusAccepted}, nil
}

// checkBatch checks every member of a batch before any changes: a member
// named twice is refused, existing ones are updated on copies, new ones
// built.
func (e *Emulator) checkBatch(p *lbPool, reqs []memberReq, existing map[memberKey]*lbMember, now time.Time) (*memberBatch, *apiErr) {
	b := &memberBatch{updates: map[*lbMember]lbMember{}, seen: map[memberKey]bool{}}
	for _, req := range reqs {
		k := memberKey{req.Address, req.ProtocolPort}
		if b.seen[k] {
			return nil, errf(400, "", "Validation failure: duplicate member %s:%d in the request.", req.Address, req.ProtocolPort)
		}
		b.seen[k] = true
		if m, ok := existing[k]; ok {
			next := *m
			if aerr := applyMember(&next, req); aerr != nil {
				return nil, aerr
			}
			b.updates[m] = next
			continue
		}
		m, aerr := e.buildMember(p, req, nil, now)
		if aerr != nil {
			return nil, aerr
		}
		b.created = append(b.created, m)
	}
	return b, nil
}
