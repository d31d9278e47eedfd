package openstack

import (
	"encoding/json"
	"net/http"
	"slices"
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

// update applies the attributes every Octavia object takes in an update
// (nil: kept).
func (o *octStd) update(r stdReq) {
	o.Name = deref(r.Name, o.Name)
	o.Description = deref(r.Description, o.Description)
	o.AdminStateUp = deref(r.AdminStateUp, o.AdminStateUp)
	if r.Tags != nil {
		o.Tags = slices.Clone(*r.Tags)
	}
}

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

// ---- requests ----

// stdReq is what a request gives of the attributes every Octavia object
// has (nil: not given).
type stdReq struct {
	Name         *string   `json:"name"`
	Description  *string   `json:"description"`
	AdminStateUp *bool     `json:"admin_state_up"`
	Tags         *[]string `json:"tags"`
}

// undescribed is r without its description: members and health monitors
// take none here.
func (r stdReq) undescribed() stdReq {
	r.Description = nil
	return r
}

// memberReq is a member of a create or an update: address and
// protocol_port are its key in a pool.
type memberReq struct {
	Weight         *int    `json:"weight"`
	Backup         *bool   `json:"backup"`
	Address        string  `json:"address"`
	ProtocolPort   int     `json:"protocol_port"`
	SubnetID       *string `json:"subnet_id"`
	MonitorAddress *string `json:"monitor_address"`
	MonitorPort    *int    `json:"monitor_port"`
	stdReq
}

type monitorReq struct {
	stdReq
	PoolID         string     `json:"pool_id"`
	Type           string     `json:"type"`
	Delay          *int       `json:"delay"`
	Timeout        *int       `json:"timeout"`
	MaxRetries     *int       `json:"max_retries"`
	MaxRetriesDown *int       `json:"max_retries_down"`
	URLPath        *string    `json:"url_path"`
	HTTPMethod     *string    `json:"http_method"`
	ExpectedCodes  *string    `json:"expected_codes"`
	DomainName     *string    `json:"domain_name"`
	HTTPVersion    *flexFloat `json:"http_version"`
}

type poolReq struct {
	stdReq
	ListenerID     string           `json:"listener_id"`
	LoadbalancerID string           `json:"loadbalancer_id"`
	Protocol       string           `json:"protocol"`
	LBAlgorithm    *string          `json:"lb_algorithm"`
	Persistence    *json.RawMessage `json:"session_persistence"`
	Members        []memberReq      `json:"members"`
	Monitor        *monitorReq      `json:"healthmonitor"`
}

type listenerReq struct {
	stdReq
	LoadbalancerID       string             `json:"loadbalancer_id"`
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
	TLSContainerRef      *string            `json:"default_tls_container_ref"`
}

type lbReq struct {
	stdReq
	VipSubnetID  string        `json:"vip_subnet_id"`
	VipNetworkID string        `json:"vip_network_id"`
	VipPortID    string        `json:"vip_port_id"`
	VipAddress   string        `json:"vip_address"`
	FlavorID     string        `json:"flavor_id"`
	AZ           string        `json:"availability_zone"`
	Provider     string        `json:"provider"`
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
