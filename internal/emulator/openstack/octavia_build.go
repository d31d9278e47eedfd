package openstack

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// flexFloat is a number sent as a JSON number or string (gophercloud sends
// http_version as "1.1").
type flexFloat float64

// UnmarshalJSON reads a number or a string of one.
func (f *flexFloat) UnmarshalJSON(b []byte) error {
	var x float64
	if err := json.Unmarshal(b, &x); err == nil {
		*f = flexFloat(x)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	*f = flexFloat(x)
	return nil
}

// ptr is the number as a *float64 (nil: not given).
func (f *flexFloat) ptr() *float64 {
	if f == nil {
		return nil
	}
	x := float64(*f)
	return &x
}

// newOctStd is the common part of a new Octavia object: PENDING_CREATE
// and OFFLINE, admin_state_up true unless given.
func (e *Emulator) newOctStd(r stdReq, now time.Time) octStd {
	return octStd{ID: e.newID(), Name: deref(r.Name, ""), Description: deref(r.Description, ""),
		AdminStateUp: deref(r.AdminStateUp, true), Tags: slices.Clone(deref(r.Tags, []string{})),
		Prov: provPendingCreate, Oper: operOffline, Created: now, Updated: now}
}

// checkPort refuses a port number outside 1-65535.
func checkPort(port int) *apiErr {
	if port < 1 || port > 65535 {
		return invalid("Value should be between 1 and 65535: %d.", port)
	}
	return nil
}

// buildMember validates a member of pool p (against taken, the address and
// port of the members it will have) and returns it without storing it.
func (e *Emulator) buildMember(p *lbPool, req memberReq, taken map[memberKey]bool, now time.Time) (*lbMember, *apiErr) {
	if _, err := netip.ParseAddr(req.Address); err != nil {
		return nil, invalid("Invalid input for field/attribute address. Value: '%s'.", req.Address)
	}
	if aerr := checkPort(req.ProtocolPort); aerr != nil {
		return nil, aerr
	}
	weight := deref(req.Weight, 1)
	if weight < 0 || weight > 256 {
		return nil, invalid("Invalid input for field/attribute weight. Value: '%d'. Value should be between 0 and 256.", weight)
	}
	subnetID := deref(req.SubnetID, "")
	if subnetID != "" {
		if _, ok := e.subnets.Get(subnetID); !ok {
			return nil, errf(400, "", "Subnet %s not found.", subnetID)
		}
	}
	if req.MonitorPort != nil {
		if aerr := checkPort(*req.MonitorPort); aerr != nil {
			return nil, aerr
		}
	}
	if taken[memberKey{req.Address, req.ProtocolPort}] {
		return nil, errf(409, "", "Another member on this pool is already using ip address %s on protocol_port %d", req.Address, req.ProtocolPort)
	}
	m := &lbMember{octStd: e.newOctStd(req.undescribed(), now), PoolID: p.ID,
		Address: req.Address, ProtocolPort: req.ProtocolPort, Weight: weight, SubnetID: subnetID,
		MonitorAddress: deref(req.MonitorAddress, ""), MonitorPort: req.MonitorPort, Backup: deref(req.Backup, false),
		projectID: e.fx.ProjectID}
	return m, nil
}

// buildMonitor validates a health monitor of pool p and returns it without
// storing it.
func (e *Emulator) buildMonitor(p *lbPool, req monitorReq, now time.Time) (*healthMonitor, *apiErr) {
	if !slices.Contains(monitorTypes, req.Type) {
		return nil, invalid("Invalid input for field/attribute type. Value: '%s'. Value should be one of: %s.", req.Type, strings.Join(monitorTypes, ", "))
	}
	if req.Delay == nil || req.Timeout == nil || req.MaxRetries == nil {
		return nil, invalid("Mandatory field missing: delay, timeout and max_retries are required.")
	}
	if *req.Delay < 0 || *req.Timeout < 0 {
		return nil, invalid("delay and timeout must be >= 0.")
	}
	if *req.MaxRetries < 1 || *req.MaxRetries > 10 {
		return nil, invalid("Invalid input for field/attribute max_retries. Value: '%d'. Value should be between 1 and 10.", *req.MaxRetries)
	}
	down := deref(req.MaxRetriesDown, 3)
	if down < 1 || down > 10 {
		return nil, invalid("Invalid input for field/attribute max_retries_down. Value: '%d'. Value should be between 1 and 10.", down)
	}
	if p.Protocol == "UDP" && !slices.Contains([]string{"UDP-CONNECT", "HTTP", "TCP", "PING"}, req.Type) ||
		req.Type == "UDP-CONNECT" && p.Protocol != "UDP" {
		return nil, errf(400, "", "The associated pool protocol %q is not compatible with health monitor type %q.", p.Protocol, req.Type)
	}
	if p.MonitorID != "" {
		return nil, errf(409, "", "This pool already has a health monitor")
	}
	h := &healthMonitor{octStd: e.newOctStd(req.undescribed(), now), PoolID: p.ID, Type: req.Type,
		Delay: *req.Delay, Timeout: *req.Timeout, MaxRetries: *req.MaxRetries, MaxRetDown: down,
		DomainName: deref(req.DomainName, ""), HTTPVersion: req.HTTPVersion.ptr(), projectID: e.fx.ProjectID}
	if req.Type == "HTTP" || req.Type == "HTTPS" {
		h.URLPath, h.HTTPMethod, h.ExpectedCodes = deref(req.URLPath, "/"), deref(req.HTTPMethod, "GET"), deref(req.ExpectedCodes, "200")
	} else if req.URLPath != nil || req.HTTPMethod != nil || req.ExpectedCodes != nil {
		return nil, invalid("url_path, http_method and expected_codes are only valid for HTTP and HTTPS health monitors.")
	}
	return h, nil
}

// poolGraph is a pool with its members and monitor, ready to be stored.
type poolGraph struct {
	pool    *lbPool
	members []*lbMember
	monitor *healthMonitor
}

// buildPool validates a pool of lb (for listener l, if any) with its
// member and monitor graph.
func (e *Emulator) buildPool(lb *loadBalancer, l *listener, req poolReq, now time.Time) (*poolGraph, *apiErr) {
	if !slices.Contains(poolProtocols, req.Protocol) {
		return nil, invalid("Invalid input for field/attribute protocol. Value: '%s'. Value should be one of: %s.", req.Protocol, strings.Join(poolProtocols, ", "))
	}
	alg := deref(req.LBAlgorithm, "")
	if !slices.Contains(lbAlgorithms, alg) {
		return nil, invalid("Invalid input for field/attribute lb_algorithm. Value: '%s'. Value should be one of: %s.", alg, strings.Join(lbAlgorithms, ", "))
	}
	p := &lbPool{octStd: e.newOctStd(req.stdReq, now), LBID: lb.ID,
		Protocol: req.Protocol, LBAlgorithm: alg, projectID: e.fx.ProjectID}
	if req.Persistence != nil && string(*req.Persistence) != "null" {
		p.Persistence = slices.Clone(*req.Persistence)
	}
	if l != nil {
		if !slices.Contains(listenerPoolProtocols[l.Protocol], req.Protocol) {
			return nil, invalid("The pool protocol '%s' is invalid while the listener protocol is '%s'.", req.Protocol, l.Protocol)
		}
		if l.DefaultPoolID != "" {
			return nil, errf(409, "", "Listener %s already has a default pool", l.ID)
		}
		p.Listeners = []string{l.ID}
	}
	g := &poolGraph{pool: p}
	taken := map[memberKey]bool{}
	for _, mr := range req.Members {
		m, aerr := e.buildMember(p, mr, taken, now)
		if aerr != nil {
			return nil, aerr
		}
		taken[memberKey{m.Address, m.ProtocolPort}] = true
		g.members = append(g.members, m)
		p.Members = append(p.Members, m.ID)
	}
	if req.Monitor != nil {
		h, aerr := e.buildMonitor(p, *req.Monitor, now)
		if aerr != nil {
			return nil, aerr
		}
		g.monitor, p.MonitorID = h, h.ID
	}
	return g, nil
}

// storePool stores a checked pool graph of lb (the default pool of l, if
// any).
func (e *Emulator) storePool(lb *loadBalancer, l *listener, g *poolGraph) {
	e.pools.Add(g.pool.ID, g.pool)
	lb.Pools = with(lb.Pools, g.pool.ID)
	if l != nil {
		l.DefaultPoolID = g.pool.ID
	}
	for _, m := range g.members {
		e.members.Add(m.ID, m)
	}
	if g.monitor != nil {
		e.monitors.Add(g.monitor.ID, g.monitor)
	}
}

// buildListener validates a listener of lb against siblings (the listeners
// it will have) and returns it without storing it.
func (e *Emulator) buildListener(lb *loadBalancer, req listenerReq, siblings []*listener, now time.Time, who requester) (*listener, *apiErr) {
	family, ok := listenerProtocols[req.Protocol]
	if !ok {
		return nil, invalid("Invalid input for field/attribute protocol. Value: '%s'. Value should be one of: HTTP, HTTPS, PROMETHEUS, SCTP, TCP, TERMINATED_HTTPS, UDP.", req.Protocol)
	}
	if req.Protocol == "TERMINATED_HTTPS" && deref(req.TLSContainerRef, "") == "" {
		return nil, invalid("Validation failure: An SNI or default certificate container reference must be provided for TERMINATED_HTTPS protocol listeners.")
	}
	if aerr := checkPort(req.ProtocolPort); aerr != nil {
		return nil, aerr
	}
	for _, s := range siblings {
		if s.ProtocolPort == req.ProtocolPort && listenerProtocols[s.Protocol] == family && s.Prov != provPendingDelete {
			return nil, errf(409, "", "Another Listener on this Load Balancer is already using protocol %s and protocol_port %d", req.Protocol, req.ProtocolPort)
		}
	}
	l := &listener{octStd: e.newOctStd(req.stdReq, now), LBID: lb.ID,
		Protocol: req.Protocol, ProtocolPort: req.ProtocolPort, ConnLimit: deref(req.ConnLimit, -1),
		TimeoutClientData: deref(req.TimeoutClientData, 50000), TimeoutMemberConnect: deref(req.TimeoutMemberConnect, 5000),
		TimeoutMemberData: deref(req.TimeoutMemberData, 50000), TimeoutTCPInspect: deref(req.TimeoutTCPInspect, 0),
		projectID: e.fx.ProjectID}
	if aerr := e.validateListenerOptions(l, req, who); aerr != nil {
		return nil, aerr
	}
	return l, nil
}

// validateListenerOptions applies and checks allowed_cidrs, insert_headers and
// default_tls_container_ref (checked in Barbican as the caller; see checkTLSRef).
// Call with mu held.
func (e *Emulator) validateListenerOptions(l *listener, req listenerReq, who requester) *apiErr {
	if req.TLSContainerRef != nil {
		ref := *req.TLSContainerRef
		switch {
		case ref != "" && l.Protocol != "TERMINATED_HTTPS":
			return invalid("Validation failure: Certificate container references are not allowed on %s protocol listeners.", l.Protocol)
		case ref == "" && l.Protocol == "TERMINATED_HTTPS":
			return invalid("Validation failure: An SNI or default certificate container reference must be provided for TERMINATED_HTTPS protocol listeners.")
		case ref != "":
			if aerr := e.checkTLSRef(ref, who); aerr != nil {
				return aerr
			}
		}
		l.TLSContainerRef = ref
	}
	if req.AllowedCIDRs != nil {
		for _, c := range *req.AllowedCIDRs {
			if _, err := netip.ParsePrefix(c); err != nil {
				return invalid("Invalid input for field/attribute allowed_cidrs. Value: '%s'.", c)
			}
		}
		l.AllowedCIDRs = slices.Clone(*req.AllowedCIDRs)
	}
	if req.InsertHeaders != nil {
		if len(*req.InsertHeaders) > 0 && l.Protocol != "HTTP" && l.Protocol != "TERMINATED_HTTPS" {
			return invalid("The following headers: %s are not valid for %s listeners.", strings.Join(mapKeys(*req.InsertHeaders), ", "), l.Protocol)
		}
		m := make(map[string]string, len(*req.InsertHeaders))
		for k, v := range *req.InsertHeaders {
			m[k] = v
		}
		l.InsertHeaders = m
	}
	return nil
}

// mapKeys are the keys of m, sorted (for stable messages).
func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
