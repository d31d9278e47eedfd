package openstack

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Load balancers (Octavia API reference, "Load Balancers"): a create takes
// the whole graph (listeners with their default pools, members and monitor)
// and answers it PENDING_CREATE; every change makes the load balancer
// PENDING_UPDATE (PENDING_DELETE) until the provisioning delay has passed.
// allocateVIP finds or creates the VIP port of a new load balancer.
func (e *Emulator) allocateVIP(lb *loadBalancer, req lbReq, now time.Time) *apiErr {
	if req.VipPortID != "" {
		p, ok := e.ports.Get(req.VipPortID)
		if !ok {
			return errf(400, "", "Port %s not found.", req.VipPortID)
		}
		if len(p.FixedIPs) == 0 {
			return invalid("Port %s has no IP address.", p.ID)
		}
		lb.VipPortID, lb.VipNetworkID = p.ID, p.NetworkID
		lb.VipSubnetID, lb.VipAddress = p.FixedIPs[0].SubnetID, p.FixedIPs[0].IPAddress
		return nil
	}
	subnetID := req.VipSubnetID
	networkID := req.VipNetworkID
	switch {
	case subnetID != "":
		s, ok := e.subnets.Get(subnetID)
		if !ok {
			return errf(400, "", "Subnet %s not found.", subnetID)
		}
		if networkID != "" && networkID != s.NetworkID {
			return invalid("Subnet %s is not on network %s.", subnetID, networkID)
		}
		networkID = s.NetworkID
	case networkID != "":
		if _, ok := e.networks.Get(networkID); !ok {
			return errf(400, "", "Network %s not found.", networkID)
		}
	default:
		return invalid("VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.")
	}
	if req.VipAddress != "" {
		a, err := netip.ParseAddr(req.VipAddress)
		if err != nil {
			return invalid("Invalid input for field/attribute vip_address. Value: '%s'.", req.VipAddress)
		}
		if subnetID != "" {
			if s, _ := e.subnets.Get(subnetID); !s.ipam.prefix.Contains(a) {
				return invalid("IP address %s is not in subnet %s.", req.VipAddress, subnetID)
			}
		}
	}
	fixed := []fixedIP{{SubnetID: subnetID, IPAddress: req.VipAddress}}
	for _, av := range req.AdditionalVips {
		// Octavia's API (v2.26): each additional VIP's subnet must be on the
		// VIP's network; its address is on the same VIP port.
		s, ok := e.subnets.Get(av.SubnetID)
		if !ok {
			return errf(400, "", "Subnet %s not found.", av.SubnetID)
		}
		if s.NetworkID != networkID {
			return invalid("Additional VIP subnet %s is not on network %s of the primary VIP.", av.SubnetID, networkID)
		}
		fixed = append(fixed, fixedIP(av))
	}
	p, aerr := e.createPort(portSpec{NetworkID: networkID, Name: "octavia-lb-" + lb.ID, DeviceID: "lb-" + lb.ID,
		DeviceOwner: ownerOctavia, FixedIPs: fixed, SecurityGroups: &[]string{}, AdminStateUp: false}, now)
	if aerr != nil {
		return errf(aerr.code, "", "%s", aerr.msg)
	}
	lb.ownsVIP = true
	lb.VipPortID, lb.VipNetworkID = p.ID, p.NetworkID
	lb.VipSubnetID, lb.VipAddress = p.FixedIPs[0].SubnetID, p.FixedIPs[0].IPAddress
	for _, f := range p.FixedIPs[1:] {
		lb.AdditionalVips = append(lb.AdditionalVips, additionalVIP(f))
	}
	return nil
}

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
	lb := &loadBalancer{octStd: e.newOctStd(req.Name, req.Description, req.AdminStateUp, req.Tags, now),
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
	lb.update(req.Name, req.Description, req.AdminStateUp, req.Tags)
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

func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}
