package openstack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Provisioning and operating statuses of Octavia.
const (
	provActive        = "ACTIVE"
	provPendingCreate = "PENDING_CREATE"
	provPendingUpdate = "PENDING_UPDATE"
	provPendingDelete = "PENDING_DELETE"
	provError         = "ERROR"

	operOnline    = "ONLINE"
	operOffline   = "OFFLINE"
	operNoMonitor = "NO_MONITOR"
	operError     = "ERROR"
)

func isPending(status string) bool { return strings.HasPrefix(status, "PENDING_") }

func octaviaError(w http.ResponseWriter, code int, msg string) {
	fc := "Client"
	if code >= 500 {
		fc = "Server"
	}
	writeJSON(w, code, map[string]any{"faultcode": fc, "faultstring": msg, "debuginfo": nil})
}

func octaviaErr(w http.ResponseWriter, a *apiErr) { octaviaError(w, a.code, a.msg) }

func octaviaBadRequest(w http.ResponseWriter, code int, msg string) { octaviaError(w, code, msg) }

func invalid(format string, args ...any) *apiErr {
	return errf(400, "", "Validation failure: "+format, args...)
}

// octStd holds the attributes every Octavia object has.
type octStd struct {
	ID               string `filter:"id"`
	Name             string `filter:"name"`
	Description      string `filter:"description"`
	AdminStateUp     bool   `filter:"admin_state_up"`
	Tags             []string
	Prov             string `filter:"provisioning_status"`
	Oper             string `filter:"operating_status"`
	Created, Updated time.Time
	// stranded: created in a fully populated load balancer under
	// Options.StrandGraphChildren; it never leaves PENDING_CREATE.
	stranded bool
}

// settle moves a pending object to ACTIVE, unless it is stranded.
func (o *octStd) settle() {
	if isPending(o.Prov) && !o.stranded {
		o.Prov = provActive
	}
}

func (o *octStd) tagList() []string { return o.Tags }

type loadBalancer struct {
	octStd
	VipAddress       string `filter:"vip_address"`
	VipPortID        string `filter:"vip_port_id"`
	VipSubnetID      string `filter:"vip_subnet_id"`
	VipNetworkID     string `filter:"vip_network_id"`
	FlavorID         string `filter:"flavor_id"`
	AZ               string `filter:"availability_zone"`
	Provider         string `filter:"provider"`
	Listeners, Pools []string
	AdditionalVips   []additionalVIP
	readyAt          time.Time
	ownsVIP          bool
	projectID        string `filter:"project_id,tenant_id"`
}

// extraField answers the vip_qos_policy_id filter: none here.
func (lb *loadBalancer) extraField(k string) (string, bool) { return "", k == "vip_qos_policy_id" }

type listener struct {
	octStd
	LBID                                    string `filter:"loadbalancer_id"`
	Protocol                                string `filter:"protocol"`
	DefaultPoolID                           string `filter:"default_pool_id"`
	ProtocolPort                            int    `filter:"protocol_port"`
	ConnLimit                               int    `filter:"connection_limit"`
	TimeoutClientData, TimeoutMemberConnect int
	TimeoutMemberData, TimeoutTCPInspect    int
	AllowedCIDRs                            []string
	InsertHeaders                           map[string]string
	TLSContainerRef                         string
	projectID                               string `filter:"project_id,tenant_id"`
}

type lbPool struct {
	octStd
	LBID        string   `filter:"loadbalancer_id"`
	Protocol    string   `filter:"protocol"`
	LBAlgorithm string   `filter:"lb_algorithm"`
	Listeners   []string `filter:"listener_id"`
	Members     []string
	MonitorID   string `filter:"healthmonitor_id"`
	Persistence json.RawMessage
	projectID   string `filter:"project_id,tenant_id"`
}

type lbMember struct {
	octStd
	PoolID         string
	Address        string `filter:"address"`
	SubnetID       string `filter:"subnet_id"`
	MonitorAddress string `filter:"monitor_address"`
	ProtocolPort   int    `filter:"protocol_port"`
	Weight         int    `filter:"weight"`
	MonitorPort    *int   `filter:"monitor_port"`
	Backup         bool   `filter:"backup"`
	projectID      string `filter:"project_id,tenant_id"`
}

type healthMonitor struct {
	octStd
	PoolID        string `filter:"pool_id"`
	Type          string `filter:"type"`
	Delay         int    `filter:"delay"`
	Timeout       int    `filter:"timeout"`
	MaxRetries    int    `filter:"max_retries"`
	MaxRetDown    int    `filter:"max_retries_down"`
	URLPath       string `filter:"url_path"`
	HTTPMethod    string `filter:"http_method"`
	ExpectedCodes string `filter:"expected_codes"`
	DomainName    string
	HTTPVersion   *float64
	projectID     string `filter:"project_id,tenant_id"`
}

// ---- views ----

func (e *Emulator) octBase(o *octStd) map[string]any {
	return map[string]any{
		"id": o.ID, "name": o.Name, "description": o.Description, "admin_state_up": o.AdminStateUp,
		"tags": nonNil(o.Tags), "provisioning_status": o.Prov, "operating_status": o.Oper,
		"created_at": octaviaTime(o.Created), "updated_at": octaviaTime(o.Updated),
		"project_id": e.fx.ProjectID, "tenant_id": e.fx.ProjectID,
	}
}

func (e *Emulator) lbView(lb *loadBalancer) any {
	v := e.octBase(&lb.octStd)
	v["vip_address"], v["vip_port_id"], v["vip_subnet_id"], v["vip_network_id"] = lb.VipAddress, lb.VipPortID, lb.VipSubnetID, lb.VipNetworkID
	v["vip_qos_policy_id"] = nil
	v["listeners"] = idRefs(lb.Listeners)
	v["pools"] = idRefs(lb.Pools)
	v["provider"] = lb.Provider
	v["flavor_id"] = nullable(lb.FlavorID)
	v["availability_zone"] = nullable(lb.AZ)
	v["additional_vips"] = nonNil(lb.AdditionalVips)
	return v
}

func (e *Emulator) listenerView(l *listener) any {
	v := e.octBase(&l.octStd)
	v["loadbalancers"] = []idRef{{ID: l.LBID}}
	v["protocol"], v["protocol_port"], v["connection_limit"] = l.Protocol, l.ProtocolPort, l.ConnLimit
	v["default_pool_id"] = nullable(l.DefaultPoolID)
	v["timeout_client_data"], v["timeout_member_connect"] = l.TimeoutClientData, l.TimeoutMemberConnect
	v["timeout_member_data"], v["timeout_tcp_inspect"] = l.TimeoutMemberData, l.TimeoutTCPInspect
	v["allowed_cidrs"] = l.AllowedCIDRs
	insert := l.InsertHeaders
	if insert == nil {
		insert = map[string]string{}
	}
	v["insert_headers"] = insert
	v["default_tls_container_ref"], v["sni_container_refs"], v["l7policies"] = nullable(l.TLSContainerRef), []string{}, []any{}
	v["client_ca_tls_container_ref"], v["client_authentication"], v["client_crl_container_ref"] = nil, "NONE", nil
	v["tls_ciphers"], v["tls_versions"], v["alpn_protocols"] = nil, nil, nil
	v["hsts_include_subdomains"], v["hsts_max_age"], v["hsts_preload"] = false, nil, false
	return v
}

func (e *Emulator) poolView(p *lbPool) any {
	v := e.octBase(&p.octStd)
	v["loadbalancers"] = []idRef{{ID: p.LBID}}
	v["listeners"] = idRefs(p.Listeners)
	v["members"] = idRefs(p.Members)
	v["healthmonitor_id"] = nullable(p.MonitorID)
	v["protocol"], v["lb_algorithm"] = p.Protocol, p.LBAlgorithm
	var sp any
	if len(p.Persistence) > 0 {
		sp = p.Persistence
	}
	v["session_persistence"] = sp
	v["tls_enabled"], v["tls_container_ref"], v["ca_tls_container_ref"], v["crl_container_ref"] = false, nil, nil, nil
	v["tls_ciphers"], v["tls_versions"], v["alpn_protocols"] = nil, nil, nil
	return v
}

func (e *Emulator) memberView(m *lbMember) any {
	v := e.octBase(&m.octStd)
	v["address"], v["protocol_port"], v["weight"], v["backup"] = m.Address, m.ProtocolPort, m.Weight, m.Backup
	v["subnet_id"], v["monitor_address"], v["monitor_port"] = nullable(m.SubnetID), nullable(m.MonitorAddress), m.MonitorPort
	v["pool_id"] = m.PoolID
	return v
}

func (e *Emulator) monitorView(h *healthMonitor) any {
	v := e.octBase(&h.octStd)
	v["pools"] = []idRef{{ID: h.PoolID}}
	v["type"], v["delay"], v["timeout"] = h.Type, h.Delay, h.Timeout
	v["max_retries"], v["max_retries_down"] = h.MaxRetries, h.MaxRetDown
	v["url_path"], v["http_method"], v["expected_codes"] = nullable(h.URLPath), nullable(h.HTTPMethod), nullable(h.ExpectedCodes)
	v["domain_name"], v["http_version"] = nullable(h.DomainName), h.HTTPVersion
	return v
}

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

func (e *Emulator) settleLB(lb *loadBalancer, now time.Time) {
	if lb.Prov == provPendingDelete {
		e.purgeLB(lb, now)
		return
	}
	for _, lid := range lb.Listeners {
		l, _ := e.listeners.Get(lid)
		if l.Prov == provPendingDelete {
			e.purgeListener(lb, l)
		} else {
			l.settle()
		}
	}
	for _, pid := range lb.Pools {
		p, _ := e.pools.Get(pid)
		if p.Prov == provPendingDelete {
			e.purgePool(lb, p)
			continue
		}
		for _, mid := range p.Members {
			m, _ := e.members.Get(mid)
			if m.Prov == provPendingDelete {
				p.Members = without(p.Members, mid)
				e.members.Remove(mid)
			} else {
				m.settle()
			}
		}
		if h, ok := e.monitors.Get(p.MonitorID); ok {
			if h.Prov == provPendingDelete {
				e.monitors.Remove(h.ID)
				p.MonitorID = ""
			} else {
				h.settle()
			}
		}
		p.settle()
	}
	if isPending(lb.Prov) {
		lb.Prov = provActive
	}
	e.refreshOperating(lb)
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

func (e *Emulator) purgeListener(lb *loadBalancer, l *listener) {
	if p, ok := e.pools.Get(l.DefaultPoolID); ok {
		p.Listeners = without(p.Listeners, l.ID)
	}
	lb.Listeners = without(lb.Listeners, l.ID)
	e.listeners.Remove(l.ID)
}

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

// ---- requests ----

type memberReq struct {
	Address        string    `json:"address"`
	ProtocolPort   int       `json:"protocol_port"`
	Name           *string   `json:"name"`
	Weight         *int      `json:"weight"`
	SubnetID       *string   `json:"subnet_id"`
	MonitorAddress *string   `json:"monitor_address"`
	MonitorPort    *int      `json:"monitor_port"`
	Backup         *bool     `json:"backup"`
	AdminStateUp   *bool     `json:"admin_state_up"`
	Tags           *[]string `json:"tags"`
}

type monitorReq struct {
	PoolID         string     `json:"pool_id"`
	Type           string     `json:"type"`
	Name           *string    `json:"name"`
	Delay          *int       `json:"delay"`
	Timeout        *int       `json:"timeout"`
	MaxRetries     *int       `json:"max_retries"`
	MaxRetriesDown *int       `json:"max_retries_down"`
	URLPath        *string    `json:"url_path"`
	HTTPMethod     *string    `json:"http_method"`
	ExpectedCodes  *string    `json:"expected_codes"`
	DomainName     *string    `json:"domain_name"`
	HTTPVersion    *flexFloat `json:"http_version"`
	AdminStateUp   *bool      `json:"admin_state_up"`
	Tags           *[]string  `json:"tags"`
}

// flexFloat is a number sent as a JSON number or string (gophercloud sends
// http_version as "1.1").
type flexFloat float64

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

func (f *flexFloat) ptr() *float64 {
	if f == nil {
		return nil
	}
	x := float64(*f)
	return &x
}

type poolReq struct {
	ListenerID     string           `json:"listener_id"`
	LoadbalancerID string           `json:"loadbalancer_id"`
	Protocol       string           `json:"protocol"`
	LBAlgorithm    *string          `json:"lb_algorithm"`
	Name           *string          `json:"name"`
	Description    *string          `json:"description"`
	Persistence    *json.RawMessage `json:"session_persistence"`
	AdminStateUp   *bool            `json:"admin_state_up"`
	Tags           *[]string        `json:"tags"`
	Members        []memberReq      `json:"members"`
	Monitor        *monitorReq      `json:"healthmonitor"`
}

type listenerReq struct {
	LoadbalancerID       string             `json:"loadbalancer_id"`
	Name                 *string            `json:"name"`
	Description          *string            `json:"description"`
	Protocol             string             `json:"protocol"`
	ProtocolPort         int                `json:"protocol_port"`
	ConnLimit            *int               `json:"connection_limit"`
	DefaultPoolID        json.RawMessage    `json:"default_pool_id"`
	DefaultPool          *poolReq           `json:"default_pool"`
	TimeoutClientData    *int               `json:"timeout_client_data"`
	TimeoutMemberConnect *int               `json:"timeout_member_connect"`
	TimeoutMemberData    *int               `json:"timeout_member_data"`
	TimeoutTCPInspect    *int               `json:"timeout_tcp_inspect"`
	AllowedCIDRs         *[]string          `json:"allowed_cidrs"`
	InsertHeaders        *map[string]string `json:"insert_headers"`
	AdminStateUp         *bool              `json:"admin_state_up"`
	Tags                 *[]string          `json:"tags"`
	TLSContainerRef      *string            `json:"default_tls_container_ref"`
}

type lbReq struct {
	Name         *string       `json:"name"`
	Description  *string       `json:"description"`
	VipSubnetID  string        `json:"vip_subnet_id"`
	VipNetworkID string        `json:"vip_network_id"`
	VipPortID    string        `json:"vip_port_id"`
	VipAddress   string        `json:"vip_address"`
	FlavorID     string        `json:"flavor_id"`
	AZ           string        `json:"availability_zone"`
	Provider     string        `json:"provider"`
	AdminStateUp *bool         `json:"admin_state_up"`
	Tags         *[]string     `json:"tags"`
	Listeners    []listenerReq `json:"listeners"`
	Pools        []poolReq     `json:"pools"`
	// API v2.26: more VIPs on the VIP port, each on a subnet of the VIP's
	// network (a dual-stack load balancer).
	AdditionalVips []additionalVIP `json:"additional_vips"`
}

type additionalVIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

var (
	listenerProtocols = map[string]string{ // protocol -> port family
		"TCP": "TCP", "HTTP": "TCP", "HTTPS": "TCP", "TERMINATED_HTTPS": "TCP", "PROMETHEUS": "TCP",
		"UDP": "UDP", "SCTP": "SCTP",
	}
	listenerPoolProtocols = map[string][]string{
		"TCP":              {"HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP"},
		"HTTP":             {"HTTP", "PROXY", "PROXYV2"},
		"HTTPS":            {"HTTPS", "PROXY", "PROXYV2", "TCP"},
		"TERMINATED_HTTPS": {"HTTP", "PROXY", "PROXYV2"},
		"UDP":              {"UDP"},
		"SCTP":             {"SCTP"},
	}
	poolProtocols = []string{"TCP", "UDP", "SCTP", "HTTP", "HTTPS", "PROXY", "PROXYV2"}
	lbAlgorithms  = []string{"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"}
	monitorTypes  = []string{"HTTP", "HTTPS", "PING", "TCP", "TLS-HELLO", "UDP-CONNECT", "SCTP"}
)

func (e *Emulator) newOctStd(name, desc *string, admin *bool, tags *[]string, now time.Time) octStd {
	return octStd{ID: e.newID(), Name: deref(name, ""), Description: deref(desc, ""),
		AdminStateUp: deref(admin, true), Tags: slices.Clone(deref(tags, []string{})),
		Prov: provPendingCreate, Oper: operOffline, Created: now, Updated: now}
}

func checkPort(port int) *apiErr {
	if port < 1 || port > 65535 {
		return invalid("Value should be between 1 and 65535: %d.", port)
	}
	return nil
}

// buildMember validates a member of pool p (against others, the members it
// will have) and returns it without storing it.
func (e *Emulator) buildMember(p *lbPool, req memberReq, others []*lbMember, now time.Time) (*lbMember, *apiErr) {
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
	for _, o := range others {
		if o.Address == req.Address && o.ProtocolPort == req.ProtocolPort {
			return nil, errf(409, "", "Another member on this pool is already using ip address %s on protocol_port %d", req.Address, req.ProtocolPort)
		}
	}
	m := &lbMember{octStd: e.newOctStd(req.Name, nil, req.AdminStateUp, req.Tags, now), PoolID: p.ID,
		Address: req.Address, ProtocolPort: req.ProtocolPort, Weight: weight, SubnetID: subnetID,
		MonitorAddress: deref(req.MonitorAddress, ""), MonitorPort: req.MonitorPort, Backup: deref(req.Backup, false),
		projectID: e.fx.ProjectID}
	return m, nil
}

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
	h := &healthMonitor{octStd: e.newOctStd(req.Name, nil, req.AdminStateUp, req.Tags, now), PoolID: p.ID, Type: req.Type,
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
	p := &lbPool{octStd: e.newOctStd(req.Name, req.Description, req.AdminStateUp, req.Tags, now), LBID: lb.ID,
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
	for _, mr := range req.Members {
		m, aerr := e.buildMember(p, mr, g.members, now)
		if aerr != nil {
			return nil, aerr
		}
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
	l := &listener{octStd: e.newOctStd(req.Name, req.Description, req.AdminStateUp, req.Tags, now), LBID: lb.ID,
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

func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// listenersOf returns the stored listeners of lb.
func (e *Emulator) listenersOf(lb *loadBalancer) []*listener {
	out := make([]*listener, 0, len(lb.Listeners))
	for _, id := range lb.Listeners {
		if l, ok := e.listeners.Get(id); ok {
			out = append(out, l)
		}
	}
	return out
}

// ---- routes ----

func (e *Emulator) routeOctavia() {
	e.handlePublic("GET /load-balancer/{$}", func(w http.ResponseWriter, r *http.Request) {
		href := baseURL(r) + "/load-balancer/v2"
		last := map[string]any{"id": "v2.26", "status": "CURRENT", "updated": "2022-08-29T00:00:00Z", "links": []any{map[string]string{"rel": "self", "href": href}}}
		if e.opts.OctaviaBefore226 {
			last = map[string]any{"id": "v2.25", "status": "CURRENT", "updated": "2021-10-02T00:00:00Z", "links": []any{map[string]string{"rel": "self", "href": href}}}
		}
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{
			map[string]any{"id": "v2.0", "status": "SUPPORTED", "updated": "2016-12-11T00:00:00Z", "links": []any{map[string]string{"rel": "self", "href": href}}},
			last,
		}})
	})
	for _, pre := range []string{"/load-balancer/v2.0/lbaas", "/load-balancer/v2/lbaas"} {
		nf := func(noun string) func(http.ResponseWriter, string) {
			return func(w http.ResponseWriter, id string) { octaviaNotFound(w, noun, id) }
		}
		collection[loadBalancer, *loadBalancer]{path: "loadbalancers", key: "loadbalancer", st: e.lbs, view: e.lbView,
			notFound: nf("Load Balancer"), badRequest: octaviaBadRequest,
			create: e.createLB, update: e.updateLB, remove: e.deleteLB}.route(e, pre)
		e.handle("GET "+pre+"/loadbalancers/{id}/status", e.lbStatusTree)
		collection[listener, *listener]{path: "listeners", key: "listener", st: e.listeners, view: e.listenerView,
			notFound: nf("Listener"), badRequest: octaviaBadRequest,
			create: e.createListener, update: e.updateListener, remove: e.deleteListener}.route(e, pre)
		collection[lbPool, *lbPool]{path: "pools", key: "pool", st: e.pools, view: e.poolView,
			notFound: nf("Pool"), badRequest: octaviaBadRequest,
			create: e.createPool, update: e.updatePool, remove: e.deletePool}.route(e, pre)

		e.handle("GET "+pre+"/pools/{pool_id}/members", e.listMembers)
		e.handle("GET "+pre+"/pools/{pool_id}/members/{id}", e.getMember)
		e.handle("POST "+pre+"/pools/{pool_id}/members", e.createMember)
		e.handle("PUT "+pre+"/pools/{pool_id}/members", e.batchMembers)
		e.handle("PUT "+pre+"/pools/{pool_id}/members/{id}", e.updateMember)
		e.handle("DELETE "+pre+"/pools/{pool_id}/members/{id}", e.deleteMember)

		collection[healthMonitor, *healthMonitor]{path: "healthmonitors", key: "healthmonitor", st: e.monitors, view: e.monitorView,
			notFound: nf("Health Monitor"), badRequest: octaviaBadRequest,
			create: e.createMonitor, update: e.updateMonitor, remove: e.deleteMonitor}.route(e, pre)
	}
}

func octaviaNotFound(w http.ResponseWriter, noun, id string) {
	octaviaError(w, http.StatusNotFound, fmt.Sprintf("%s %s not found.", noun, id))
}

// decodeOctavia decodes {"<key>": ...} into v, answering 400 on failure.
func decodeOctavia(w http.ResponseWriter, r *http.Request, key string, v any) bool {
	var b map[string]json.RawMessage
	if err := decodeJSON(r, &b); err != nil {
		octaviaError(w, 400, "Invalid input: "+err.Error())
		return false
	}
	raw, ok := b[key]
	if !ok {
		octaviaError(w, 400, fmt.Sprintf("Invalid input: the body must be an object with the key %q.", key))
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		octaviaError(w, 400, "Invalid input for "+key+": "+err.Error())
		return false
	}
	return true
}

// ---- load balancers ----

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

func (e *Emulator) createLB(w http.ResponseWriter, r *http.Request) {
	var req lbReq
	if !decodeOctavia(w, r, "loadbalancer", &req) {
		return
	}
	if len(req.Pools) > 0 {
		octaviaError(w, 400, "Validation failure: the emulator accepts pools in a load balancer graph only as a listener's default_pool.")
		return
	}
	if len(req.AdditionalVips) > 0 && e.opts.OctaviaBefore226 {
		// wsme's answer to an attribute the API version does not have.
		octaviaError(w, 400, "Invalid input for field/attribute load_balancer. Value: Unknown attribute for argument load_balancer: additional_vips")
		return
	}
	provider := req.Provider
	if provider == "" {
		provider = "amphora"
	} else if provider != "amphora" && provider != "octavia" && provider != "ovn" {
		octaviaError(w, 400, fmt.Sprintf("Provider '%s' is not enabled.", provider))
		return
	}
	now := e.lock()
	defer e.mu.Unlock()
	who := e.requester(r)
	if e.quotaMet(QuotaLoadBalancer, e.lbs.Len()) {
		// octavia/common/exceptions.py QuotaException: HTTP 403, "Quota has
		// been met for resources: %(resource)s", the resource being
		// data_models.LoadBalancer._name(), the class name in snake case.
		octaviaError(w, http.StatusForbidden, "Quota has been met for resources: load_balancer")
		return
	}
	lb := &loadBalancer{octStd: e.newOctStd(req.Name, req.Description, req.AdminStateUp, req.Tags, now),
		FlavorID: req.FlavorID, AZ: req.AZ, Provider: provider, projectID: e.fx.ProjectID}
	// Validate the whole graph before changing anything.
	var ls []*listener
	var pgs []*poolGraph
	for _, lr := range req.Listeners {
		if len(lr.DefaultPoolID) > 0 && string(lr.DefaultPoolID) != "null" {
			octaviaError(w, 400, "Validation failure: a listener of a new load balancer cannot reference an existing pool.")
			return
		}
		l, aerr := e.buildListener(lb, lr, ls, now, who)
		if aerr != nil {
			octaviaErr(w, aerr)
			return
		}
		ls = append(ls, l)
		if lr.DefaultPool != nil {
			g, aerr := e.buildPool(lb, l, *lr.DefaultPool, now)
			if aerr != nil {
				octaviaErr(w, aerr)
				return
			}
			pgs = append(pgs, g)
		} else {
			pgs = append(pgs, nil)
		}
	}
	if aerr := e.allocateVIP(lb, req, now); aerr != nil {
		octaviaErr(w, aerr)
		return
	}
	e.lbs.Add(lb.ID, lb)
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
	e.markPending(lb, provPendingCreate, now)
	writeJSON(w, http.StatusCreated, map[string]any{"loadbalancer": e.lbView(lb)})
}

func (e *Emulator) updateLB(w http.ResponseWriter, r *http.Request) {
	var req lbReq
	if !decodeOctavia(w, r, "loadbalancer", &req) {
		return
	}
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	lb, ok := e.lbs.Get(id)
	if !ok {
		octaviaNotFound(w, "Load Balancer", id)
		return
	}
	if aerr := mutable(lb, false); aerr != nil {
		octaviaErr(w, aerr)
		return
	}
	if req.VipSubnetID != "" || req.VipNetworkID != "" || req.VipPortID != "" || req.VipAddress != "" || len(req.Listeners) > 0 {
		octaviaError(w, 400, "Validation failure: the VIP and the listeners of a load balancer cannot be updated.")
		return
	}
	lb.Name = deref(req.Name, lb.Name)
	lb.Description = deref(req.Description, lb.Description)
	lb.AdminStateUp = deref(req.AdminStateUp, lb.AdminStateUp)
	if req.Tags != nil {
		lb.Tags = slices.Clone(*req.Tags)
	}
	e.markPending(lb, provPendingUpdate, now)
	writeJSON(w, http.StatusOK, map[string]any{"loadbalancer": e.lbView(lb)})
}

func (e *Emulator) deleteLB(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	cascade, _ := strconv.ParseBool(r.URL.Query().Get("cascade"))
	now := e.lock()
	defer e.mu.Unlock()
	lb, ok := e.lbs.Get(id)
	if !ok {
		octaviaNotFound(w, "Load Balancer", id)
		return
	}
	if aerr := mutable(lb, true); aerr != nil {
		octaviaErr(w, aerr)
		return
	}
	if !cascade && (len(lb.Listeners) > 0 || len(lb.Pools) > 0) {
		octaviaError(w, 400, fmt.Sprintf("Validation failure: Cannot delete Load Balancer %s - it has children", id))
		return
	}
	for _, l := range e.listenersOf(lb) {
		l.Prov = provPendingDelete
	}
	for _, pid := range lb.Pools {
		p, _ := e.pools.Get(pid)
		p.Prov = provPendingDelete
		for _, mid := range p.Members {
			if m, ok := e.members.Get(mid); ok {
				m.Prov = provPendingDelete
			}
		}
		if h, ok := e.monitors.Get(p.MonitorID); ok {
			h.Prov = provPendingDelete
		}
	}
	e.markPending(lb, provPendingDelete, now)
	w.WriteHeader(http.StatusNoContent)
}

// ---- listeners ----

func (e *Emulator) createListener(w http.ResponseWriter, r *http.Request) {
	var req listenerReq
	if !decodeOctavia(w, r, "listener", &req) {
		return
	}
	if req.DefaultPool != nil {
		octaviaError(w, 400, "Validation failure: default_pool is accepted only in a load balancer graph.")
		return
	}
	now := e.lock()
	defer e.mu.Unlock()
	lb, ok := e.lbs.Get(req.LoadbalancerID)
	if !ok {
		octaviaNotFound(w, "Load Balancer", req.LoadbalancerID)
		return
	}
	if aerr := mutable(lb, false); aerr != nil {
		octaviaErr(w, aerr)
		return
	}
	who := e.requester(r)
	l, aerr := e.buildListener(lb, req, e.listenersOf(lb), now, who)
	if aerr != nil {
		octaviaErr(w, aerr)
		return
	}
	var pool *lbPool
	if poolID := rawString(req.DefaultPoolID); poolID != "" {
		p, ok := e.pools.Get(poolID)
		if !ok || p.LBID != lb.ID {
			octaviaNotFound(w, "Pool", poolID)
			return
		}
		if !slices.Contains(listenerPoolProtocols[l.Protocol], p.Protocol) {
			octaviaErr(w, invalid("The pool protocol '%s' is invalid while the listener protocol is '%s'.", p.Protocol, l.Protocol))
			return
		}
		if len(p.Listeners) > 0 {
			octaviaError(w, 409, fmt.Sprintf("Pool %s is already in use by another listener.", poolID))
			return
		}
		pool = p
	}
	e.listeners.Add(l.ID, l)
	lb.Listeners = with(lb.Listeners, l.ID)
	if pool != nil {
		l.DefaultPoolID = pool.ID
		pool.Listeners = with(pool.Listeners, l.ID)
	}
	e.touchChild(lb, &l.octStd, provPendingCreate, now)
	writeJSON(w, http.StatusCreated, map[string]any{"listener": e.listenerView(l)})
}

// rawString decodes a JSON string or null ("").
func rawString(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// childLB returns the load balancer of a child, checking that it is mutable.
func (e *Emulator) childLB(w http.ResponseWriter, lbID string) (*loadBalancer, bool) {
	lb, ok := e.lbs.Get(lbID)
	if !ok {
		octaviaNotFound(w, "Load Balancer", lbID)
		return nil, false
	}
	if aerr := mutable(lb, false); aerr != nil {
		octaviaErr(w, aerr)
		return nil, false
	}
	return lb, true
}

func (e *Emulator) updateListener(w http.ResponseWriter, r *http.Request) {
	var req listenerReq
	if !decodeOctavia(w, r, "listener", &req) {
		return
	}
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	l, ok := e.listeners.Get(id)
	if !ok {
		octaviaNotFound(w, "Listener", id)
		return
	}
	lb, ok := e.childLB(w, l.LBID)
	if !ok {
		return
	}
	if isPending(l.Prov) {
		octaviaError(w, 409, fmt.Sprintf("Listener %s is immutable and cannot be updated.", l.ID))
		return
	}
	if req.Protocol != "" && req.Protocol != l.Protocol || req.ProtocolPort != 0 && req.ProtocolPort != l.ProtocolPort {
		octaviaError(w, 400, "Validation failure: protocol and protocol_port of a listener cannot be updated.")
		return
	}
	next := *l
	who := e.requester(r)
	if aerr := e.validateListenerOptions(&next, req, who); aerr != nil {
		octaviaErr(w, aerr)
		return
	}
	if len(req.DefaultPoolID) > 0 {
		poolID := rawString(req.DefaultPoolID)
		if poolID != "" {
			p, ok := e.pools.Get(poolID)
			if !ok || p.LBID != lb.ID {
				octaviaNotFound(w, "Pool", poolID)
				return
			}
			if !slices.Contains(listenerPoolProtocols[l.Protocol], p.Protocol) {
				octaviaErr(w, invalid("The pool protocol '%s' is invalid while the listener protocol is '%s'.", p.Protocol, l.Protocol))
				return
			}
			if len(p.Listeners) > 0 && !has(p.Listeners, l.ID) {
				octaviaError(w, 409, fmt.Sprintf("Pool %s is already in use by another listener.", poolID))
				return
			}
		}
		if old, ok := e.pools.Get(l.DefaultPoolID); ok {
			old.Listeners = without(old.Listeners, l.ID)
		}
		next.DefaultPoolID = poolID
		if p, ok := e.pools.Get(poolID); ok && !has(p.Listeners, l.ID) {
			p.Listeners = with(p.Listeners, l.ID)
		}
	}
	next.Name = deref(req.Name, l.Name)
	next.Description = deref(req.Description, l.Description)
	next.AdminStateUp = deref(req.AdminStateUp, l.AdminStateUp)
	next.ConnLimit = deref(req.ConnLimit, l.ConnLimit)
	next.TimeoutClientData = deref(req.TimeoutClientData, l.TimeoutClientData)
	next.TimeoutMemberConnect = deref(req.TimeoutMemberConnect, l.TimeoutMemberConnect)
	next.TimeoutMemberData = deref(req.TimeoutMemberData, l.TimeoutMemberData)
	next.TimeoutTCPInspect = deref(req.TimeoutTCPInspect, l.TimeoutTCPInspect)
	if req.Tags != nil {
		next.Tags = slices.Clone(*req.Tags)
	}
	*l = next
	e.touchChild(lb, &l.octStd, provPendingUpdate, now)
	writeJSON(w, http.StatusOK, map[string]any{"listener": e.listenerView(l)})
}

func (e *Emulator) deleteListener(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	l, ok := e.listeners.Get(id)
	if !ok {
		octaviaNotFound(w, "Listener", id)
		return
	}
	lb, ok := e.childLB(w, l.LBID)
	if !ok {
		return
	}
	e.touchChild(lb, &l.octStd, provPendingDelete, now)
	w.WriteHeader(http.StatusNoContent)
}

// ---- pools ----

func (e *Emulator) createPool(w http.ResponseWriter, r *http.Request) {
	var req poolReq
	if !decodeOctavia(w, r, "pool", &req) {
		return
	}
	now := e.lock()
	defer e.mu.Unlock()
	var l *listener
	lbID := req.LoadbalancerID
	if req.ListenerID != "" {
		var ok bool
		if l, ok = e.listeners.Get(req.ListenerID); !ok {
			octaviaNotFound(w, "Listener", req.ListenerID)
			return
		}
		if lbID != "" && lbID != l.LBID {
			octaviaErr(w, invalid("Listener %s is not on Load Balancer %s.", l.ID, lbID))
			return
		}
		lbID = l.LBID
	} else if lbID == "" {
		octaviaErr(w, invalid("A pool needs one of listener_id or loadbalancer_id."))
		return
	}
	lb, ok := e.childLB(w, lbID)
	if !ok {
		return
	}
	g, aerr := e.buildPool(lb, l, req, now)
	if aerr != nil {
		octaviaErr(w, aerr)
		return
	}
	e.storePool(lb, l, g)
	if l != nil && l.Prov == provActive {
		l.Prov, l.Updated = provPendingUpdate, now
	}
	e.touchChild(lb, &g.pool.octStd, provPendingCreate, now)
	writeJSON(w, http.StatusCreated, map[string]any{"pool": e.poolView(g.pool)})
}

// mutablePool finds a pool and its load balancer for a mutation.
func (e *Emulator) mutablePool(w http.ResponseWriter, id string) (*lbPool, *loadBalancer, bool) {
	p, ok := e.pools.Get(id)
	if !ok {
		octaviaNotFound(w, "Pool", id)
		return nil, nil, false
	}
	lb, ok := e.childLB(w, p.LBID)
	if !ok {
		return nil, nil, false
	}
	if isPending(p.Prov) {
		octaviaError(w, 409, fmt.Sprintf("Pool %s is immutable and cannot be updated.", p.ID))
		return nil, nil, false
	}
	return p, lb, true
}

func (e *Emulator) updatePool(w http.ResponseWriter, r *http.Request) {
	var req poolReq
	if !decodeOctavia(w, r, "pool", &req) {
		return
	}
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	p, lb, ok := e.mutablePool(w, id)
	if !ok {
		return
	}
	if req.LBAlgorithm != nil && !slices.Contains(lbAlgorithms, *req.LBAlgorithm) {
		octaviaErr(w, invalid("Invalid input for field/attribute lb_algorithm. Value: '%s'. Value should be one of: %s.", *req.LBAlgorithm, strings.Join(lbAlgorithms, ", ")))
		return
	}
	if req.Protocol != "" && req.Protocol != p.Protocol {
		octaviaError(w, 400, "Validation failure: the protocol of a pool cannot be updated.")
		return
	}
	p.LBAlgorithm = deref(req.LBAlgorithm, p.LBAlgorithm)
	p.Name = deref(req.Name, p.Name)
	p.Description = deref(req.Description, p.Description)
	p.AdminStateUp = deref(req.AdminStateUp, p.AdminStateUp)
	if req.Tags != nil {
		p.Tags = slices.Clone(*req.Tags)
	}
	if req.Persistence != nil {
		p.Persistence = nil
		if string(*req.Persistence) != "null" {
			p.Persistence = slices.Clone(*req.Persistence)
		}
	}
	e.touchPool(p, now)
	e.touchChild(lb, &p.octStd, provPendingUpdate, now)
	writeJSON(w, http.StatusOK, map[string]any{"pool": e.poolView(p)})
}

func (e *Emulator) deletePool(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	p, lb, ok := e.mutablePool(w, id)
	if !ok {
		return
	}
	e.touchPool(p, now)
	for _, mid := range p.Members {
		if m, ok := e.members.Get(mid); ok {
			m.Prov = provPendingDelete
		}
	}
	if h, ok := e.monitors.Get(p.MonitorID); ok {
		h.Prov = provPendingDelete
	}
	e.touchChild(lb, &p.octStd, provPendingDelete, now)
	w.WriteHeader(http.StatusNoContent)
}

// ---- members ----

func (e *Emulator) listMembers(w http.ResponseWriter, r *http.Request) {
	poolID := r.PathValue("pool_id")
	e.lock()
	_, ok := e.pools.Get(poolID)
	e.mu.Unlock()
	if !ok {
		octaviaNotFound(w, "Pool", poolID)
		return
	}
	listResponse(e, w, r, e.members, &lbMember{}, "members", func(m *lbMember) bool { return m.PoolID == poolID },
		octaviaBadRequest, e.memberView)
}

func (e *Emulator) getMember(w http.ResponseWriter, r *http.Request) {
	poolID, id := r.PathValue("pool_id"), r.PathValue("id")
	e.lock()
	m, ok := e.members.Get(id)
	var v any
	if ok && m.PoolID == poolID {
		v = e.memberView(m)
	}
	e.mu.Unlock()
	if v == nil {
		octaviaNotFound(w, "Member", id)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"member": v})
}

func (e *Emulator) membersOf(p *lbPool) []*lbMember {
	out := make([]*lbMember, 0, len(p.Members))
	for _, id := range p.Members {
		if m, ok := e.members.Get(id); ok {
			out = append(out, m)
		}
	}
	return out
}

func (e *Emulator) createMember(w http.ResponseWriter, r *http.Request) {
	var req memberReq
	if !decodeOctavia(w, r, "member", &req) {
		return
	}
	now := e.lock()
	defer e.mu.Unlock()
	p, lb, ok := e.mutablePool(w, r.PathValue("pool_id"))
	if !ok {
		return
	}
	m, aerr := e.buildMember(p, req, e.membersOf(p), now)
	if aerr != nil {
		octaviaErr(w, aerr)
		return
	}
	e.members.Add(m.ID, m)
	p.Members = with(p.Members, m.ID)
	e.touchPool(p, now)
	e.touchChild(lb, &m.octStd, provPendingCreate, now)
	writeJSON(w, http.StatusCreated, map[string]any{"member": e.memberView(m)})
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
	m.Name = deref(req.Name, m.Name)
	m.Weight = deref(req.Weight, m.Weight)
	m.Backup = deref(req.Backup, m.Backup)
	m.AdminStateUp = deref(req.AdminStateUp, m.AdminStateUp)
	m.MonitorAddress = deref(req.MonitorAddress, m.MonitorAddress)
	if req.MonitorPort != nil {
		mp := *req.MonitorPort
		m.MonitorPort = &mp
	}
	if req.Tags != nil {
		m.Tags = slices.Clone(*req.Tags)
	}
	return nil
}

func (e *Emulator) updateMember(w http.ResponseWriter, r *http.Request) {
	var req memberReq
	if !decodeOctavia(w, r, "member", &req) {
		return
	}
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	p, lb, ok := e.mutablePool(w, r.PathValue("pool_id"))
	if !ok {
		return
	}
	m, ok := e.members.Get(id)
	if !ok || m.PoolID != p.ID {
		octaviaNotFound(w, "Member", id)
		return
	}
	next := *m
	if aerr := applyMember(&next, req); aerr != nil {
		octaviaErr(w, aerr)
		return
	}
	*m = next
	e.touchPool(p, now)
	e.touchChild(lb, &m.octStd, provPendingUpdate, now)
	writeJSON(w, http.StatusOK, map[string]any{"member": e.memberView(m)})
}

func (e *Emulator) deleteMember(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	p, lb, ok := e.mutablePool(w, r.PathValue("pool_id"))
	if !ok {
		return
	}
	m, ok := e.members.Get(id)
	if !ok || m.PoolID != p.ID {
		octaviaNotFound(w, "Member", id)
		return
	}
	e.touchPool(p, now)
	e.touchChild(lb, &m.octStd, provPendingDelete, now)
	w.WriteHeader(http.StatusNoContent)
}

// batchMembers replaces the members of a pool: members are keyed by address
// and protocol_port; matching ones are updated, new ones created and the
// others deleted (unless ?additive_only=true).
func (e *Emulator) batchMembers(w http.ResponseWriter, r *http.Request) {
	var reqs []memberReq
	if !decodeOctavia(w, r, "members", &reqs) {
		return
	}
	additive, _ := strconv.ParseBool(r.URL.Query().Get("additive_only"))
	now := e.lock()
	defer e.mu.Unlock()
	p, lb, ok := e.mutablePool(w, r.PathValue("pool_id"))
	if !ok {
		return
	}
	type key struct {
		addr string
		port int
	}
	existing := map[key]*lbMember{}
	for _, m := range e.membersOf(p) {
		existing[key{m.Address, m.ProtocolPort}] = m
	}
	seen := map[key]bool{}
	var created []*lbMember
	updates := map[*lbMember]lbMember{}
	for _, req := range reqs {
		k := key{req.Address, req.ProtocolPort}
		if seen[k] {
			octaviaError(w, 400, fmt.Sprintf("Validation failure: duplicate member %s:%d in the request.", req.Address, req.ProtocolPort))
			return
		}
		seen[k] = true
		if m, ok := existing[k]; ok {
			next := *m
			if aerr := applyMember(&next, req); aerr != nil {
				octaviaErr(w, aerr)
				return
			}
			updates[m] = next
			continue
		}
		m, aerr := e.buildMember(p, req, nil, now)
		if aerr != nil {
			octaviaErr(w, aerr)
			return
		}
		created = append(created, m)
	}
	for m, next := range updates {
		*m = next
		m.Prov, m.Updated = provPendingUpdate, now
	}
	if !additive {
		for k, m := range existing {
			if !seen[k] {
				m.Prov, m.Updated = provPendingDelete, now
			}
		}
	}
	for _, m := range created {
		e.members.Add(m.ID, m)
		p.Members = with(p.Members, m.ID)
	}
	e.touchPool(p, now)
	e.markPending(lb, provPendingUpdate, now)
	w.WriteHeader(http.StatusAccepted)
}

// ---- health monitors ----

func (e *Emulator) createMonitor(w http.ResponseWriter, r *http.Request) {
	var req monitorReq
	if !decodeOctavia(w, r, "healthmonitor", &req) {
		return
	}
	now := e.lock()
	defer e.mu.Unlock()
	p, lb, ok := e.mutablePool(w, req.PoolID)
	if !ok {
		return
	}
	h, aerr := e.buildMonitor(p, req, now)
	if aerr != nil {
		octaviaErr(w, aerr)
		return
	}
	e.monitors.Add(h.ID, h)
	p.MonitorID = h.ID
	e.touchPool(p, now)
	e.touchChild(lb, &h.octStd, provPendingCreate, now)
	writeJSON(w, http.StatusCreated, map[string]any{"healthmonitor": e.monitorView(h)})
}

// mutableMonitor finds a monitor, its pool and its load balancer for a mutation.
func (e *Emulator) mutableMonitor(w http.ResponseWriter, id string) (*healthMonitor, *lbPool, *loadBalancer, bool) {
	h, ok := e.monitors.Get(id)
	if !ok {
		octaviaNotFound(w, "Health Monitor", id)
		return nil, nil, nil, false
	}
	p, lb, ok := e.mutablePool(w, h.PoolID)
	return h, p, lb, ok
}

func (e *Emulator) updateMonitor(w http.ResponseWriter, r *http.Request) {
	var req monitorReq
	if !decodeOctavia(w, r, "healthmonitor", &req) {
		return
	}
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	h, p, lb, ok := e.mutableMonitor(w, id)
	if !ok {
		return
	}
	if req.Type != "" && req.Type != h.Type {
		octaviaError(w, 400, "Validation failure: the type of a health monitor cannot be updated.")
		return
	}
	next := *h
	next.Delay = deref(req.Delay, h.Delay)
	next.Timeout = deref(req.Timeout, h.Timeout)
	next.MaxRetries = deref(req.MaxRetries, h.MaxRetries)
	next.MaxRetDown = deref(req.MaxRetriesDown, h.MaxRetDown)
	if next.MaxRetries < 1 || next.MaxRetries > 10 || next.MaxRetDown < 1 || next.MaxRetDown > 10 || next.Delay < 0 || next.Timeout < 0 {
		octaviaErr(w, invalid("max_retries and max_retries_down must be between 1 and 10, delay and timeout >= 0."))
		return
	}
	if h.Type == "HTTP" || h.Type == "HTTPS" {
		next.URLPath = deref(req.URLPath, h.URLPath)
		next.HTTPMethod = deref(req.HTTPMethod, h.HTTPMethod)
		next.ExpectedCodes = deref(req.ExpectedCodes, h.ExpectedCodes)
	} else if req.URLPath != nil || req.HTTPMethod != nil || req.ExpectedCodes != nil {
		octaviaErr(w, invalid("url_path, http_method and expected_codes are only valid for HTTP and HTTPS health monitors."))
		return
	}
	next.Name = deref(req.Name, h.Name)
	next.AdminStateUp = deref(req.AdminStateUp, h.AdminStateUp)
	next.DomainName = deref(req.DomainName, h.DomainName)
	if req.HTTPVersion != nil {
		next.HTTPVersion = req.HTTPVersion.ptr()
	}
	if req.Tags != nil {
		next.Tags = slices.Clone(*req.Tags)
	}
	*h = next
	e.touchPool(p, now)
	e.touchChild(lb, &h.octStd, provPendingUpdate, now)
	writeJSON(w, http.StatusOK, map[string]any{"healthmonitor": e.monitorView(h)})
}

func (e *Emulator) deleteMonitor(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	h, p, lb, ok := e.mutableMonitor(w, id)
	if !ok {
		return
	}
	e.touchPool(p, now)
	e.touchChild(lb, &h.octStd, provPendingDelete, now)
	w.WriteHeader(http.StatusNoContent)
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
		octaviaNotFound(w, "Load Balancer", id)
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
