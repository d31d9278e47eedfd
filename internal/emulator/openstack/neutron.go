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

	"github.com/overcast-ccm/overcast/internal/netaddr"
)

const neutronPrefix = "/network/v2.0"

// Device owners of the ports the emulator creates.
const (
	ownerCompute         = "compute:nova"
	ownerRouterInterface = "network:router_interface"
	ownerRouterGateway   = "network:router_gateway"
	ownerFloatingIP      = "network:floatingip"
	ownerOctavia         = "Octavia"
)

// apiErr is a service-neutral error of an internal operation; each service
// renders it in its own format.
type apiErr struct {
	code int
	typ  string // Neutron's error type, e.g. "PortNotFound"
	msg  string
}

func (a *apiErr) Error() string { return a.msg }

func errf(code int, typ, format string, args ...any) *apiErr {
	return &apiErr{code: code, typ: typ, msg: fmt.Sprintf(format, args...)}
}

func neutronError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"NeutronError": map[string]any{"type": typ, "message": msg, "detail": ""}})
}

func neutronErr(w http.ResponseWriter, a *apiErr) { neutronError(w, a.code, a.typ, a.msg) }

func neutronBadRequest(w http.ResponseWriter, code int, msg string) {
	neutronError(w, code, "HTTPBadRequest", msg)
}

// standard attributes of every Neutron resource.
type neutronStd struct {
	ProjectID string      `json:"project_id" filter:"project_id"`
	TenantID  string      `json:"tenant_id" filter:"tenant_id"`
	Tags      []string    `json:"tags"`
	Created   neutronTime `json:"created_at"`
	Updated   neutronTime `json:"updated_at"`
	Revision  int         `json:"revision_number" filter:"revision_number"`
}

func (e *Emulator) std(now time.Time) neutronStd {
	return neutronStd{ProjectID: e.fx.ProjectID, TenantID: e.fx.ProjectID, Tags: []string{},
		Created: neutronTime(now), Updated: neutronTime(now), Revision: 1}
}

func (s *neutronStd) touch(now time.Time) {
	s.Updated = neutronTime(now)
	s.Revision++
}

func (s *neutronStd) tagList() []string { return s.Tags }

type network struct {
	ID           string   `json:"id" filter:"id"`
	Name         string   `json:"name" filter:"name"`
	Description  string   `json:"description" filter:"description"`
	AdminStateUp bool     `json:"admin_state_up" filter:"admin_state_up"`
	Status       string   `json:"status" filter:"status"`
	Subnets      []string `json:"subnets"`
	Shared       bool     `json:"shared" filter:"shared"`
	External     bool     `json:"router:external" filter:"router:external"`
	MTU          int      `json:"mtu" filter:"mtu"`
	PortSecurity bool     `json:"port_security_enabled" filter:"port_security_enabled"`
	AZs          []string `json:"availability_zones"`
	neutronStd
}

type allocPool struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

type subnet struct {
	ID              string      `json:"id" filter:"id"`
	Name            string      `json:"name" filter:"name"`
	Description     string      `json:"description" filter:"description"`
	NetworkID       string      `json:"network_id" filter:"network_id"`
	CIDR            string      `json:"cidr" filter:"cidr"`
	IPVersion       int         `json:"ip_version" filter:"ip_version"`
	GatewayIP       string      `json:"gateway_ip" filter:"gateway_ip"`
	AllocationPools []allocPool `json:"allocation_pools"`
	EnableDHCP      bool        `json:"enable_dhcp" filter:"enable_dhcp"`
	DNSNameservers  []string    `json:"dns_nameservers"`
	HostRoutes      []any       `json:"host_routes"`
	ServiceTypes    []string    `json:"service_types"`
	SubnetPoolID    *string     `json:"subnetpool_id" filter:"subnetpool_id"`
	IPv6AddressMode *string     `json:"ipv6_address_mode"`
	IPv6RAMode      *string     `json:"ipv6_ra_mode"`
	neutronStd

	ipam *ipam
}

type fixedIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

type addressPair struct {
	IPAddress  string `json:"ip_address"`
	MACAddress string `json:"mac_address,omitempty"`
}

type port struct {
	ID                  string        `json:"id" filter:"id"`
	Name                string        `json:"name" filter:"name"`
	Description         string        `json:"description" filter:"description"`
	NetworkID           string        `json:"network_id" filter:"network_id"`
	AdminStateUp        bool          `json:"admin_state_up" filter:"admin_state_up"`
	MACAddress          string        `json:"mac_address" filter:"mac_address"`
	FixedIPs            []fixedIP     `json:"fixed_ips"`
	DeviceID            string        `json:"device_id" filter:"device_id"`
	DeviceOwner         string        `json:"device_owner" filter:"device_owner"`
	Status              string        `json:"status" filter:"status"`
	SecurityGroups      []string      `json:"security_groups" filter:"security_groups"`
	AllowedAddressPairs []addressPair `json:"allowed_address_pairs"`
	PortSecurity        bool          `json:"port_security_enabled" filter:"port_security_enabled"`
	VNICType            string        `json:"binding:vnic_type"`
	neutronStd
}

// extraField answers the fixed_ips filter ("ip_address=…" or "subnet_id=…").
func (p *port) extraField(k string) (string, bool) {
	if k != "fixed_ips" {
		return "", false
	}
	var vs []string
	for _, f := range p.FixedIPs {
		vs = append(vs, "ip_address="+f.IPAddress, "subnet_id="+f.SubnetID)
	}
	return multi(vs...), true
}

type floatingIP struct {
	ID                string `filter:"id"`
	Description       string `filter:"description"`
	FloatingIPAddress string `filter:"floating_ip_address"`
	FloatingNetworkID string `filter:"floating_network_id"`
	SubnetID          string
	RouterID          string `filter:"router_id"`
	PortID            string `filter:"port_id"`
	FixedIPAddress    string `filter:"fixed_ip_address"`
	ownPortID         string // the network:floatingip port holding the address
	neutronStd
}

// extraField answers the status filter (ACTIVE when associated).
func (f *floatingIP) extraField(k string) (string, bool) {
	if k != "status" {
		return "", false
	}
	return f.status(), true
}

func (f *floatingIP) status() string {
	if f.PortID != "" {
		return "ACTIVE"
	}
	return "DOWN"
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type floatingIPView struct {
	ID                string  `json:"id"`
	Description       string  `json:"description"`
	FloatingIPAddress string  `json:"floating_ip_address"`
	FloatingNetworkID string  `json:"floating_network_id"`
	RouterID          *string `json:"router_id"`
	PortID            *string `json:"port_id"`
	FixedIPAddress    *string `json:"fixed_ip_address"`
	Status            string  `json:"status"`
	QoSPolicyID       *string `json:"qos_policy_id"`
	neutronStd
}

func (f *floatingIP) view() any {
	return floatingIPView{ID: f.ID, Description: f.Description, FloatingIPAddress: f.FloatingIPAddress,
		FloatingNetworkID: f.FloatingNetworkID, RouterID: nullable(f.RouterID), PortID: nullable(f.PortID),
		FixedIPAddress: nullable(f.FixedIPAddress), Status: f.status(), neutronStd: f.neutronStd}
}

type route struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
}

type router struct {
	ID               string `filter:"id"`
	Name             string `filter:"name"`
	Description      string `filter:"description"`
	AdminStateUp     bool   `filter:"admin_state_up"`
	GatewayNetworkID string
	GatewayIPs       []fixedIP
	Routes           []route
	Interfaces       []string // subnet ids
	neutronStd
}

// extraField answers the status filter: a router is always ACTIVE here.
func (rt *router) extraField(k string) (string, bool) { return "ACTIVE", k == "status" }

type routerView struct {
	ID                  string         `json:"id"`
	Name                string         `json:"name"`
	Description         string         `json:"description"`
	AdminStateUp        bool           `json:"admin_state_up"`
	Status              string         `json:"status"`
	ExternalGatewayInfo map[string]any `json:"external_gateway_info"`
	Routes              []route        `json:"routes"`
	AZHints             []string       `json:"availability_zone_hints"`
	AZs                 []string       `json:"availability_zones"`
	neutronStd
}

func (rt *router) view() any {
	v := routerView{ID: rt.ID, Name: rt.Name, Description: rt.Description, AdminStateUp: rt.AdminStateUp,
		Status: "ACTIVE", Routes: nonNil(rt.Routes), AZHints: []string{}, AZs: []string{"nova"}, neutronStd: rt.neutronStd}
	if rt.GatewayNetworkID != "" {
		v.ExternalGatewayInfo = map[string]any{"network_id": rt.GatewayNetworkID, "enable_snat": true,
			"external_fixed_ips": rt.GatewayIPs}
	}
	return v
}

type secGroup struct {
	ID          string `json:"id" filter:"id"`
	Name        string `json:"name" filter:"name"`
	Description string `json:"description" filter:"description"`
	Stateful    bool   `json:"stateful" filter:"stateful"`
	Rules       []any  `json:"security_group_rules"`
	neutronStd
}

type sgRule struct {
	ID              string  `json:"id" filter:"id"`
	SecurityGroupID string  `json:"security_group_id" filter:"security_group_id"`
	Direction       string  `json:"direction" filter:"direction"`
	EtherType       string  `json:"ethertype" filter:"ethertype"`
	Protocol        *string `json:"protocol" filter:"protocol"`
	PortRangeMin    *int    `json:"port_range_min" filter:"port_range_min"`
	PortRangeMax    *int    `json:"port_range_max" filter:"port_range_max"`
	RemoteIPPrefix  *string `json:"remote_ip_prefix" filter:"remote_ip_prefix"`
	RemoteGroupID   *string `json:"remote_group_id" filter:"remote_group_id"`
	Description     string  `json:"description" filter:"description"`
	neutronStd
}

// viewCopy returns a shallow copy for marshalling outside the lock (slices
// in the state are never modified in place).
func viewCopy[T any](p *T) any { c := *p; return &c }

func (e *Emulator) routeNeutron() {
	np := neutronPrefix
	e.handlePublic("GET /network/{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{map[string]any{
			"id": "v2.0", "status": "CURRENT",
			"links": []any{map[string]string{"rel": "self", "href": baseURL(r) + np + "/"}},
		}}})
	})
	e.handle("GET "+np+"/extensions", e.listExtensions)
	e.handle("GET "+np+"/extensions/{alias}", e.getExtension)

	nf := func(typ, noun string) func(http.ResponseWriter, string) {
		return func(w http.ResponseWriter, id string) {
			neutronError(w, http.StatusNotFound, typ, fmt.Sprintf("%s %s could not be found.", noun, id))
		}
	}
	collection[network, *network]{path: "networks", key: "network", st: e.networks, view: viewCopy[network],
		notFound: nf("NetworkNotFound", "Network"), badRequest: neutronBadRequest}.route(e, np)
	collection[subnet, *subnet]{path: "subnets", key: "subnet", st: e.subnets, view: viewCopy[subnet],
		notFound: nf("SubnetNotFound", "Subnet"), badRequest: neutronBadRequest,
		create: e.createSubnetHTTP, remove: e.deleteSubnetHTTP}.route(e, np)
	collection[port, *port]{path: "ports", key: "port", st: e.ports, view: viewCopy[port],
		notFound: nf("PortNotFound", "Port"), badRequest: neutronBadRequest,
		create: e.createPortHTTP, update: e.updatePortHTTP, remove: e.deletePortHTTP}.route(e, np)
	collection[floatingIP, *floatingIP]{path: "floatingips", key: "floatingip", st: e.fips, view: (*floatingIP).view,
		notFound: nf("FloatingIPNotFound", "Floating IP"), badRequest: neutronBadRequest,
		create: e.createFloatingIP, update: e.updateFloatingIP, remove: e.deleteFloatingIP}.route(e, np)
	collection[router, *router]{path: "routers", key: "router", st: e.routers, view: (*router).view,
		notFound: nf("RouterNotFound", "Router"), badRequest: neutronBadRequest, update: e.updateRouter}.route(e, np)
	e.handle("PUT "+np+"/routers/{id}/add_extraroutes", func(w http.ResponseWriter, r *http.Request) { e.extraRoutes(w, r, true) })
	e.handle("PUT "+np+"/routers/{id}/remove_extraroutes", func(w http.ResponseWriter, r *http.Request) { e.extraRoutes(w, r, false) })
	collection[secGroup, *secGroup]{path: "security-groups", key: "security_group", st: e.secGroups, view: e.secGroupView,
		notFound: nf("SecurityGroupNotFound", "Security group"), badRequest: neutronBadRequest,
		create: e.createSecGroup, remove: e.deleteSecGroup}.route(e, np)
	e.handle("PUT "+np+"/security-groups/{id}/tags", e.replaceSecGroupTags)
	collection[sgRule, *sgRule]{path: "security-group-rules", key: "security_group_rule", st: e.sgRules, view: viewCopy[sgRule],
		notFound: nf("SecurityGroupRuleNotFound", "Security group rule"), badRequest: neutronBadRequest,
		create: e.createSGRule, remove: e.deleteSGRule}.route(e, np)

	// The trunk extension is not enabled: answer as neutron-server does for an
	// unknown resource.
	trunks := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("404 Not Found\n\nThe resource could not be found.\n\n   "))
	}
	e.handle("GET "+np+"/trunks", trunks)
	e.handle("GET "+np+"/trunks/{id}", trunks)
	e.handle("POST "+np+"/trunks", trunks)
}

var neutronExtensions = [][2]string{
	{"agent", "agent"}, {"allowed-address-pairs", "Allowed Address Pairs"},
	{"availability_zone", "Availability Zone"}, {"binding", "Port Binding"},
	{"external-net", "Neutron external network"}, {"extra_dhcp_opt", "Neutron Extra DHCP options"},
	{"extraroute", "Neutron Extra Route"}, {"extraroute-atomic", "Atomically add/remove extra routes"},
	{"fip-port-details", "Floating IP Port Details Extension"}, {"filter-validation", "Filter parameters validation"},
	{"network-ip-availability", "Network IP Availability"}, {"port-security", "Port Security"},
	{"project-id", "project_id field enabled"}, {"quotas", "Quota management support"},
	{"router", "Neutron L3 Router"}, {"security-group", "security-group"},
	{"standard-attr-description", "standard-attr-description"}, {"standard-attr-revisions", "Resource revision numbers"},
	{"standard-attr-tag", "Tag support for resources with standard attribute: port, subnet, network, router, floatingip, security_group"},
	{"standard-attr-timestamp", "Resource timestamps"}, {"stateful-security-group", "Stateful security group"},
	{"subnet_allocation", "Subnet Allocation"},
}

func extensionView(alias, name string) map[string]any {
	return map[string]any{"alias": alias, "name": name, "description": name, "links": []any{}, "updated": "2021-01-01T10:00:00-00:00"}
}

func (e *Emulator) listExtensions(w http.ResponseWriter, r *http.Request) {
	out := make([]any, 0, len(neutronExtensions))
	for _, x := range neutronExtensions {
		out = append(out, extensionView(x[0], x[1]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"extensions": out})
}

func (e *Emulator) getExtension(w http.ResponseWriter, r *http.Request) {
	alias := r.PathValue("alias")
	for _, x := range neutronExtensions {
		if x[0] == alias {
			writeJSON(w, http.StatusOK, map[string]any{"extension": extensionView(x[0], x[1])})
			return
		}
	}
	neutronError(w, http.StatusNotFound, "ExtensionNotFound", fmt.Sprintf("Extension with alias %s does not exist", alias))
}

// ---- internal network operations (call with mu held) ----

// portSpec describes a port to create.
type portSpec struct {
	NetworkID, Name, Description, DeviceID, DeviceOwner string
	FixedIPs                                            []fixedIP // subnet and/or address; empty: one address from any subnet
	SecurityGroups                                      *[]string // nil: the default group (for non-network ports)
	AllowedAddressPairs                                 []addressPair
	AdminStateUp                                        bool
}

// allocateIP allocates an address on network n, from subnet (if given) and
// at address (if given), of the IP version given (0: any).
func (e *Emulator) allocateIP(n *network, subnetID, address string, version int) (fixedIP, *apiErr) {
	if address != "" {
		a, err := netip.ParseAddr(address)
		if err != nil || a.Zone() != "" {
			return fixedIP{}, errf(400, "InvalidInput", "Invalid input for operation: '%s' is not a valid IP address.", address)
		}
		for _, sid := range n.Subnets {
			s, _ := e.subnets.Get(sid)
			if subnetID != "" && sid != subnetID || !s.ipam.prefix.Contains(a) {
				continue
			}
			if !s.ipam.claim(a) {
				return fixedIP{}, errf(409, "IpAddressAlreadyAllocated", "IP address %s already allocated in subnet %s", address, sid)
			}
			return fixedIP{SubnetID: sid, IPAddress: a.String()}, nil
		}
		return fixedIP{}, errf(400, "InvalidIpForNetwork", "IP address %s is not a valid IP for any of the subnets on the specified network.", address)
	}
	for _, sid := range n.Subnets {
		if subnetID != "" && sid != subnetID {
			continue
		}
		s, _ := e.subnets.Get(sid)
		if version != 0 && s.IPVersion != version {
			continue
		}
		if a, ok := s.ipam.allocate(); ok {
			return fixedIP{SubnetID: sid, IPAddress: a.String()}, nil
		}
	}
	return fixedIP{}, errf(409, "IpAddressGenerationFailure", "No more IP addresses available on network %s.", n.ID)
}

func (e *Emulator) releaseIPs(ips []fixedIP) {
	for _, f := range ips {
		if s, ok := e.subnets.Get(f.SubnetID); ok {
			if a, err := netip.ParseAddr(f.IPAddress); err == nil {
				s.ipam.release(a)
			}
		}
	}
}

func (e *Emulator) createPort(spec portSpec, now time.Time) (*port, *apiErr) {
	n, ok := e.networks.Get(spec.NetworkID)
	if !ok {
		return nil, errf(404, "NetworkNotFound", "Network %s could not be found.", spec.NetworkID)
	}
	var ips []fixedIP
	fail := func(a *apiErr) (*port, *apiErr) { e.releaseIPs(ips); return nil, a }
	reqs := spec.FixedIPs
	versions := make([]int, len(reqs))
	if len(reqs) == 0 {
		// As Neutron's IPAM does with no fixed_ips asked for: an address of
		// each IP version the network has subnets of (one IPv4 subnet's,
		// one IPv6 subnet's).
		for _, v := range e.networkVersions(n) {
			reqs, versions = append(reqs, fixedIP{}), append(versions, v)
		}
		if len(reqs) == 0 {
			reqs, versions = []fixedIP{{}}, []int{0}
		}
	}
	for i, req := range reqs {
		if req.SubnetID != "" {
			if s, ok := e.subnets.Get(req.SubnetID); !ok || s.NetworkID != n.ID {
				return fail(errf(400, "InvalidInput", "Invalid input for operation: Failed to create port on network %s, because fixed_ips included invalid subnet %s.", n.ID, req.SubnetID))
			}
		}
		ip, err := e.allocateIP(n, req.SubnetID, req.IPAddress, versions[i])
		if err != nil {
			return fail(err)
		}
		ips = append(ips, ip)
	}
	sgs := []string{}
	if spec.SecurityGroups != nil {
		for _, id := range *spec.SecurityGroups {
			if _, ok := e.secGroups.Get(id); !ok {
				return fail(errf(404, "SecurityGroupNotFound", "Security group %s does not exist", id))
			}
		}
		sgs = slices.Clone(*spec.SecurityGroups)
	} else if spec.DeviceOwner == "" || spec.DeviceOwner == ownerCompute {
		sgs = []string{e.defaultSG}
	}
	p := &port{ID: e.newID(), Name: spec.Name, Description: spec.Description, NetworkID: n.ID,
		AdminStateUp: spec.AdminStateUp, MACAddress: e.newMAC(), FixedIPs: ips, DeviceID: spec.DeviceID,
		DeviceOwner: spec.DeviceOwner, SecurityGroups: sgs, AllowedAddressPairs: nonNil(spec.AllowedAddressPairs),
		PortSecurity: true, VNICType: "normal", neutronStd: e.std(now)}
	p.Status = portStatus(p)
	e.ports.Add(p.ID, p)
	e.indexPortDevice(p.ID, "", p.DeviceID)
	return p, nil
}

// networkVersions are the IP versions of a network's subnets, 4 first.
func (e *Emulator) networkVersions(n *network) []int {
	var has4, has6 bool
	for _, sid := range n.Subnets {
		if s, ok := e.subnets.Get(sid); ok {
			has4, has6 = has4 || s.IPVersion == 4, has6 || s.IPVersion == 6
		}
	}
	var out []int
	if has4 {
		out = append(out, 4)
	}
	if has6 {
		out = append(out, 6)
	}
	return out
}

func portStatus(p *port) string {
	switch p.DeviceOwner {
	case ownerCompute, ownerRouterInterface, ownerRouterGateway:
		return "ACTIVE"
	}
	return "DOWN"
}

func (e *Emulator) indexPortDevice(portID, oldDev, newDev string) {
	if oldDev == newDev {
		return
	}
	if oldDev != "" {
		if rest := without(e.portsByDev[oldDev], portID); len(rest) > 0 {
			e.portsByDev[oldDev] = rest
		} else {
			delete(e.portsByDev, oldDev)
		}
	}
	if newDev != "" {
		e.portsByDev[newDev] = with(e.portsByDev[newDev], portID)
	}
}

// deletePort removes a port, releasing its addresses and disassociating
// its floating IP.
func (e *Emulator) deletePort(id string, now time.Time) {
	p, ok := e.ports.Get(id)
	if !ok {
		return
	}
	if fid, ok := e.fipByPort[id]; ok {
		if f, ok := e.fips.Get(fid); ok {
			f.PortID, f.FixedIPAddress, f.RouterID = "", "", ""
			f.touch(now)
		}
		delete(e.fipByPort, id)
	}
	e.releaseIPs(p.FixedIPs)
	e.indexPortDevice(id, p.DeviceID, "")
	e.ports.Remove(id)
}

// ---- ports over HTTP ----

type portBody struct {
	Port struct {
		NetworkID           string         `json:"network_id"`
		Name                *string        `json:"name"`
		Description         *string        `json:"description"`
		AdminStateUp        *bool          `json:"admin_state_up"`
		FixedIPs            *[]fixedIP     `json:"fixed_ips"`
		DeviceID            *string        `json:"device_id"`
		DeviceOwner         *string        `json:"device_owner"`
		SecurityGroups      *[]string      `json:"security_groups"`
		AllowedAddressPairs *[]addressPair `json:"allowed_address_pairs"`
		PortSecurity        *bool          `json:"port_security_enabled"`
		MACAddress          *string        `json:"mac_address"`
	} `json:"port"`
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func (e *Emulator) createPortHTTP(w http.ResponseWriter, r *http.Request) {
	var b portBody
	if err := decodeJSON(r, &b); err != nil {
		neutronBadRequest(w, 400, "Invalid input: "+err.Error())
		return
	}
	if b.Port.NetworkID == "" {
		neutronBadRequest(w, 400, "Invalid input for operation: network_id is required.")
		return
	}
	now := e.lock()
	p, aerr := e.createPort(portSpec{NetworkID: b.Port.NetworkID, Name: deref(b.Port.Name, ""),
		Description: deref(b.Port.Description, ""), DeviceID: deref(b.Port.DeviceID, ""),
		DeviceOwner: deref(b.Port.DeviceOwner, ""), FixedIPs: deref(b.Port.FixedIPs, nil),
		SecurityGroups: b.Port.SecurityGroups, AllowedAddressPairs: deref(b.Port.AllowedAddressPairs, nil),
		AdminStateUp: deref(b.Port.AdminStateUp, true)}, now)
	var v any
	if aerr == nil {
		if b.Port.PortSecurity != nil {
			p.PortSecurity = *b.Port.PortSecurity
		}
		if b.Port.MACAddress != nil {
			p.MACAddress = *b.Port.MACAddress
		}
		v = viewCopy(p)
	}
	e.mu.Unlock()
	if aerr != nil {
		neutronErr(w, aerr)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"port": v})
}

func (e *Emulator) updatePortHTTP(w http.ResponseWriter, r *http.Request) {
	var b portBody
	if err := decodeJSON(r, &b); err != nil {
		neutronBadRequest(w, 400, "Invalid input: "+err.Error())
		return
	}
	if b.Port.FixedIPs != nil || b.Port.NetworkID != "" {
		neutronBadRequest(w, 400, "The emulator does not support changing network_id or fixed_ips of a port.")
		return
	}
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	p, ok := e.ports.Get(id)
	if !ok {
		neutronError(w, 404, "PortNotFound", fmt.Sprintf("Port %s could not be found.", id))
		return
	}
	if !revisionMatches(w, r, p.Revision) {
		return
	}
	if b.Port.SecurityGroups != nil {
		for _, sg := range *b.Port.SecurityGroups {
			if _, ok := e.secGroups.Get(sg); !ok {
				neutronError(w, 404, "SecurityGroupNotFound", fmt.Sprintf("Security group %s does not exist", sg))
				return
			}
		}
		p.SecurityGroups = slices.Clone(*b.Port.SecurityGroups)
	}
	p.Name = deref(b.Port.Name, p.Name)
	p.Description = deref(b.Port.Description, p.Description)
	p.AdminStateUp = deref(b.Port.AdminStateUp, p.AdminStateUp)
	p.PortSecurity = deref(b.Port.PortSecurity, p.PortSecurity)
	if b.Port.AllowedAddressPairs != nil {
		p.AllowedAddressPairs = nonNil(slices.Clone(*b.Port.AllowedAddressPairs))
	}
	if b.Port.DeviceID != nil {
		e.indexPortDevice(p.ID, p.DeviceID, *b.Port.DeviceID)
		p.DeviceID = *b.Port.DeviceID
	}
	p.DeviceOwner = deref(b.Port.DeviceOwner, p.DeviceOwner)
	p.Status = portStatus(p)
	p.touch(now)
	writeJSON(w, http.StatusOK, map[string]any{"port": viewCopy(p)})
}

func (e *Emulator) deletePortHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	p, ok := e.ports.Get(id)
	if !ok {
		neutronError(w, 404, "PortNotFound", fmt.Sprintf("Port %s could not be found.", id))
		return
	}
	switch p.DeviceOwner {
	case ownerRouterInterface, ownerRouterGateway, ownerFloatingIP:
		neutronError(w, 409, "ServicePortInUse", fmt.Sprintf("Port %s cannot be deleted directly via the port API: has device owner %s.", id, p.DeviceOwner))
		return
	}
	e.deletePort(id, now)
	w.WriteHeader(http.StatusNoContent)
}

// ---- floating IPs ----

// associate checks that floating IP f can be associated with port portID
// (at fixedAddr, default its first address) and does it.
func (e *Emulator) associate(f *floatingIP, portID, fixedAddr string) *apiErr {
	p, ok := e.ports.Get(portID)
	if !ok {
		return errf(404, "PortNotFound", "Port %s could not be found.", portID)
	}
	var fip *fixedIP
	for i := range p.FixedIPs {
		a, _ := netip.ParseAddr(p.FixedIPs[i].IPAddress)
		if fixedAddr == "" && a.Is4() || fixedAddr != "" && p.FixedIPs[i].IPAddress == fixedAddr {
			fip = &p.FixedIPs[i] // with none asked for, the port's IPv4 address
			break
		}
	}
	if a, err := netip.ParseAddr(fixedAddr); err == nil && !a.Is4() {
		return errf(400, "BadRequest", "Bad floatingip request: Cannot process floating IP association with %s, since that is not an IPv4 address.", fixedAddr)
	}
	if fip == nil {
		if fixedAddr != "" {
			return errf(400, "BadRequest", "Bad floatingip request: Port %s does not have fixed ip %s.", portID, fixedAddr)
		}
		return errf(400, "BadRequest", "Bad floatingip request: Port %s does not have any IPv4 address.", portID)
	}
	if n, _ := e.networks.Get(p.NetworkID); n != nil && n.External {
		return errf(400, "BadRequest", "Bad floatingip request: Port %s is on an external network.", portID)
	}
	var rt *router
	for _, cand := range e.routers.All() {
		if cand.GatewayNetworkID == f.FloatingNetworkID && has(cand.Interfaces, fip.SubnetID) {
			rt = cand
			break
		}
	}
	if rt == nil {
		return errf(404, "ExternalGatewayForFloatingIPNotFound",
			"External network %s is not reachable from subnet %s.  Therefore, cannot associate Port %s with a Floating IP.",
			f.FloatingNetworkID, fip.SubnetID, portID)
	}
	if other, ok := e.fipByPort[portID]; ok && other != f.ID {
		o, _ := e.fips.Get(other)
		return errf(409, "FloatingIPPortAlreadyAssociated",
			"Cannot associate floating IP %s (%s) with port %s using fixed IP %s, as that fixed IP already has a floating IP on external network %s.",
			f.FloatingIPAddress, f.ID, portID, fip.IPAddress, o.FloatingNetworkID)
	}
	if f.PortID != "" && f.PortID != portID {
		delete(e.fipByPort, f.PortID)
	}
	f.PortID, f.FixedIPAddress, f.RouterID = portID, fip.IPAddress, rt.ID
	e.fipByPort[portID] = f.ID
	return nil
}

func (e *Emulator) createFloatingIP(w http.ResponseWriter, r *http.Request) {
	var b struct {
		FloatingIP struct {
			FloatingNetworkID string `json:"floating_network_id"`
			SubnetID          string `json:"subnet_id"`
			PortID            string `json:"port_id"`
			FixedIPAddress    string `json:"fixed_ip_address"`
			FloatingIPAddress string `json:"floating_ip_address"`
			Description       string `json:"description"`
		} `json:"floatingip"`
	}
	if err := decodeJSON(r, &b); err != nil {
		neutronBadRequest(w, 400, "Invalid input: "+err.Error())
		return
	}
	req := b.FloatingIP
	now := e.lock()
	defer e.mu.Unlock()
	n, ok := e.networks.Get(req.FloatingNetworkID)
	if !ok {
		neutronError(w, 404, "NetworkNotFound", fmt.Sprintf("Network %s could not be found.", req.FloatingNetworkID))
		return
	}
	if !n.External {
		neutronError(w, 400, "BadRequest", fmt.Sprintf("Bad floatingip request: Network %s is not a valid external network.", n.ID))
		return
	}
	if req.SubnetID != "" {
		if s, ok := e.subnets.Get(req.SubnetID); !ok || s.NetworkID != n.ID {
			neutronError(w, 400, "BadRequest", fmt.Sprintf("Bad floatingip request: Subnet %s is not on network %s.", req.SubnetID, n.ID))
			return
		}
	}
	if e.quotaMet(QuotaFloatingIP, e.fips.Len()) {
		// neutron_lib/exceptions/__init__.py OverQuota (a Conflict: HTTP 409),
		// "Quota exceeded for resources: %(overs)s." with the sorted list of
		// resources as Python prints it.
		neutronError(w, http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['floatingip'].")
		return
	}
	f := &floatingIP{ID: e.newID(), Description: req.Description, FloatingNetworkID: n.ID, neutronStd: e.std(now)}
	if req.PortID != "" {
		// check the association first, so that a failure allocates nothing
		probe := *f
		probe.FloatingIPAddress = req.FloatingIPAddress
		if aerr := e.associate(&probe, req.PortID, req.FixedIPAddress); aerr != nil {
			neutronErr(w, aerr)
			return
		}
		delete(e.fipByPort, req.PortID)
	}
	fp, aerr := e.createPort(portSpec{NetworkID: n.ID, DeviceID: f.ID, DeviceOwner: ownerFloatingIP,
		FixedIPs: []fixedIP{{SubnetID: req.SubnetID, IPAddress: req.FloatingIPAddress}}, AdminStateUp: true}, now)
	if aerr != nil {
		neutronErr(w, aerr)
		return
	}
	f.ownPortID = fp.ID
	f.FloatingIPAddress = fp.FixedIPs[0].IPAddress
	f.SubnetID = fp.FixedIPs[0].SubnetID
	if req.PortID != "" {
		_ = e.associate(f, req.PortID, req.FixedIPAddress)
	}
	e.fips.Add(f.ID, f)
	writeJSON(w, http.StatusCreated, map[string]any{"floatingip": f.view()})
}

func (e *Emulator) updateFloatingIP(w http.ResponseWriter, r *http.Request) {
	var b struct {
		FloatingIP map[string]json.RawMessage `json:"floatingip"`
	}
	if err := decodeJSON(r, &b); err != nil || b.FloatingIP == nil {
		neutronBadRequest(w, 400, "Invalid input: a floatingip object is required.")
		return
	}
	str := func(k string) (val string, present bool, err error) {
		raw, ok := b.FloatingIP[k]
		if !ok || string(raw) == "null" {
			return "", ok, nil
		}
		return val, true, json.Unmarshal(raw, &val)
	}
	portID, portGiven, err1 := str("port_id")
	fixed, _, err2 := str("fixed_ip_address")
	desc, descGiven, err3 := str("description")
	if err1 != nil || err2 != nil || err3 != nil {
		neutronBadRequest(w, 400, "Invalid input: port_id, fixed_ip_address and description must be strings.")
		return
	}
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	f, ok := e.fips.Get(id)
	if !ok {
		neutronError(w, 404, "FloatingIPNotFound", fmt.Sprintf("Floating IP %s could not be found.", id))
		return
	}
	if portGiven {
		if portID == "" {
			if f.PortID != "" {
				delete(e.fipByPort, f.PortID)
			}
			f.PortID, f.FixedIPAddress, f.RouterID = "", "", ""
		} else if aerr := e.associate(f, portID, fixed); aerr != nil {
			neutronErr(w, aerr)
			return
		}
	}
	if descGiven {
		f.Description = desc
	}
	f.touch(now)
	writeJSON(w, http.StatusOK, map[string]any{"floatingip": f.view()})
}

func (e *Emulator) deleteFloatingIP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	f, ok := e.fips.Get(id)
	if !ok {
		neutronError(w, 404, "FloatingIPNotFound", fmt.Sprintf("Floating IP %s could not be found.", id))
		return
	}
	if f.PortID != "" {
		delete(e.fipByPort, f.PortID)
	}
	e.deletePort(f.ownPortID, now)
	e.fips.Remove(id)
	w.WriteHeader(http.StatusNoContent)
}

// ---- routers ----

// validateRoutes checks destinations and that every nexthop is on a subnet
// attached to the router.
func (e *Emulator) validateRoutes(rt *router, routes []route) *apiErr {
	for _, ro := range routes {
		if _, err := netip.ParsePrefix(ro.Destination); err != nil {
			return errf(400, "InvalidInput", "Invalid input for routes. Reason: '%s' is not a valid IP subnet.", ro.Destination)
		}
		hop, err := netip.ParseAddr(ro.NextHop)
		if err != nil {
			return errf(400, "InvalidInput", "Invalid input for routes. Reason: '%s' is not a valid IP address.", ro.NextHop)
		}
		connected := false
		for _, sid := range rt.Interfaces {
			if s, ok := e.subnets.Get(sid); ok && s.ipam.prefix.Contains(hop) {
				connected = true
			}
		}
		if !connected {
			return errf(400, "InvalidRoutes", "Invalid format for routes: [{'destination': '%s', 'nexthop': '%s'}], the nexthop is not connected with router", ro.Destination, ro.NextHop)
		}
	}
	return nil
}

type routesBody struct {
	Router struct {
		Name         *string          `json:"name"`
		Description  *string          `json:"description"`
		AdminStateUp *bool            `json:"admin_state_up"`
		Routes       *[]route         `json:"routes"`
		Gateway      *json.RawMessage `json:"external_gateway_info"`
	} `json:"router"`
}

func (e *Emulator) updateRouter(w http.ResponseWriter, r *http.Request) {
	var b routesBody
	if err := decodeJSON(r, &b); err != nil {
		neutronBadRequest(w, 400, "Invalid input: "+err.Error())
		return
	}
	if b.Router.Gateway != nil {
		neutronBadRequest(w, 400, "The emulator does not support changing external_gateway_info.")
		return
	}
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	rt, ok := e.routers.Get(id)
	if !ok {
		neutronError(w, 404, "RouterNotFound", fmt.Sprintf("Router %s could not be found", id))
		return
	}
	if b.Router.Routes != nil {
		if aerr := e.validateRoutes(rt, *b.Router.Routes); aerr != nil {
			neutronErr(w, aerr)
			return
		}
		rt.Routes = slices.Clone(*b.Router.Routes)
	}
	rt.Name = deref(b.Router.Name, rt.Name)
	rt.Description = deref(b.Router.Description, rt.Description)
	rt.AdminStateUp = deref(b.Router.AdminStateUp, rt.AdminStateUp)
	rt.touch(now)
	writeJSON(w, http.StatusOK, map[string]any{"router": rt.view()})
}

// extraRoutes serves add_extraroutes and remove_extraroutes: atomic and
// idempotent.
func (e *Emulator) extraRoutes(w http.ResponseWriter, r *http.Request, add bool) {
	var b routesBody
	if err := decodeJSON(r, &b); err != nil || b.Router.Routes == nil {
		neutronBadRequest(w, 400, "Invalid input: {\"router\": {\"routes\": [...]}} is required.")
		return
	}
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	rt, ok := e.routers.Get(id)
	if !ok {
		neutronError(w, 404, "RouterNotFound", fmt.Sprintf("Router %s could not be found", id))
		return
	}
	routes := slices.Clone(rt.Routes)
	if add {
		if aerr := e.validateRoutes(rt, *b.Router.Routes); aerr != nil {
			neutronErr(w, aerr)
			return
		}
		for _, ro := range *b.Router.Routes {
			if !slices.Contains(routes, ro) {
				routes = append(routes, ro)
			}
		}
	} else {
		routes = slices.DeleteFunc(routes, func(ro route) bool { return slices.Contains(*b.Router.Routes, ro) })
	}
	rt.Routes = routes
	rt.touch(now)
	writeJSON(w, http.StatusOK, map[string]any{"router": rt.view()})
}

// ---- security groups ----

func (e *Emulator) secGroupView(g *secGroup) any {
	c := *g
	c.Rules = []any{}
	for _, ru := range e.sgRules.All() {
		if ru.SecurityGroupID == g.ID {
			c.Rules = append(c.Rules, viewCopy(ru))
		}
	}
	return &c
}

func (e *Emulator) addSGRule(sgID, direction, ether string, now time.Time) {
	ru := &sgRule{ID: e.newID(), SecurityGroupID: sgID, Direction: direction, EtherType: ether, neutronStd: e.std(now)}
	e.sgRules.Add(ru.ID, ru)
}

func (e *Emulator) createSecGroup(w http.ResponseWriter, r *http.Request) {
	var b struct {
		SG struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Stateful    *bool  `json:"stateful"`
		} `json:"security_group"`
	}
	if err := decodeJSON(r, &b); err != nil {
		neutronBadRequest(w, 400, "Invalid input: "+err.Error())
		return
	}
	now := e.lock()
	defer e.mu.Unlock()
	g := &secGroup{ID: e.newID(), Name: b.SG.Name, Description: b.SG.Description,
		Stateful: deref(b.SG.Stateful, true), neutronStd: e.std(now)}
	e.secGroups.Add(g.ID, g)
	e.addSGRule(g.ID, "egress", "IPv4", now)
	e.addSGRule(g.ID, "egress", "IPv6", now)
	writeJSON(w, http.StatusCreated, map[string]any{"security_group": e.secGroupView(g)})
}

func (e *Emulator) deleteSecGroup(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e.lock()
	defer e.mu.Unlock()
	if _, ok := e.secGroups.Get(id); !ok {
		neutronError(w, 404, "SecurityGroupNotFound", fmt.Sprintf("Security group %s does not exist", id))
		return
	}
	for _, p := range e.ports.All() {
		if has(p.SecurityGroups, id) {
			neutronError(w, 409, "SecurityGroupInUse", fmt.Sprintf("Security Group %s in use.", id))
			return
		}
	}
	for _, ru := range e.sgRules.All() {
		if ru.SecurityGroupID == id {
			e.sgRules.Remove(ru.ID)
		}
	}
	e.secGroups.Remove(id)
	w.WriteHeader(http.StatusNoContent)
}

// replaceSecGroupTags is the tag extension's "replace all tags" (PUT
// /v2.0/{resource_type}/{resource_id}/tags, Networking API reference, "Tag
// extension"): 200 with the new list, each tag at most 255 characters; the
// resource's revision goes up.
func (e *Emulator) replaceSecGroupTags(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Tags *[]string `json:"tags"`
	}
	if err := decodeJSON(r, &b); err != nil || b.Tags == nil {
		neutronBadRequest(w, 400, "Invalid input for tags. Reason: a list of tags is required.")
		return
	}
	for _, t := range *b.Tags {
		if t == "" || len(t) > 255 {
			neutronBadRequest(w, 400, fmt.Sprintf("Invalid input for tags. Reason: '%s' is not a valid tag (1 to 255 characters).", t))
			return
		}
	}
	now := e.lock()
	defer e.mu.Unlock()
	g, ok := e.secGroups.Get(r.PathValue("id"))
	if !ok {
		neutronError(w, 404, "SecurityGroupNotFound", fmt.Sprintf("Security group %s does not exist", r.PathValue("id")))
		return
	}
	tags := slices.Compact(slices.Sorted(slices.Values(*b.Tags)))
	g.Tags = tags
	g.touch(now)
	writeJSON(w, http.StatusOK, map[string]any{"tags": tags})
}

// revisionMatches applies an "If-Match: revision_number=N" header (Networking
// API reference, "Revisions": a compare-and-swap on the resource's revision):
// a mismatch is 412 RevisionNumberConstraintFailed and nothing changes.
func revisionMatches(w http.ResponseWriter, r *http.Request, current int) bool {
	for _, v := range r.Header.Values("If-Match") {
		want, ok := strings.CutPrefix(strings.TrimSpace(v), "revision_number=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(want)
		if err != nil {
			neutronBadRequest(w, 400, fmt.Sprintf("Invalid If-Match header %q", v))
			return false
		}
		if n != current {
			neutronError(w, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
				fmt.Sprintf("Constrained to %d, but current revision is %d", n, current))
			return false
		}
	}
	return true
}

// createSGRule creates one rule ({"security_group_rule": …}) or several at
// once ({"security_group_rules": […]}, Neutron's bulk create: all or none).
func (e *Emulator) createSGRule(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Rule  *sgRule  `json:"security_group_rule"`
		Rules []sgRule `json:"security_group_rules"`
	}
	if err := decodeJSON(r, &b); err != nil {
		neutronBadRequest(w, 400, "Invalid input: "+err.Error())
		return
	}
	bulk := b.Rule == nil
	in := b.Rules
	if !bulk {
		in = []sgRule{*b.Rule}
	}
	if len(in) == 0 {
		neutronBadRequest(w, 400, "Resource body required")
		return
	}
	for i := range in {
		ru := &in[i]
		if ru.EtherType == "" {
			ru.EtherType = "IPv4"
		}
		if ru.Direction != "ingress" && ru.Direction != "egress" {
			neutronError(w, 400, "InvalidInput", fmt.Sprintf("Invalid input for direction. Reason: '%s' is not in ['ingress', 'egress'].", ru.Direction))
			return
		}
		if ru.EtherType != "IPv4" && ru.EtherType != "IPv6" {
			neutronError(w, 400, "SecurityGroupRuleInvalidEtherType", fmt.Sprintf("Security group rule for ethertype '%s' not supported. Allowed values are ['IPv4', 'IPv6'].", ru.EtherType))
			return
		}
		if ru.PortRangeMin != nil && ru.PortRangeMax != nil && *ru.PortRangeMin > *ru.PortRangeMax {
			neutronError(w, 400, "SecurityGroupInvalidPortRange", "For TCP/UDP protocols, port_range_min must be <= port_range_max")
			return
		}
		if ru.RemoteIPPrefix != nil {
			p, err := netip.ParsePrefix(*ru.RemoteIPPrefix)
			if err != nil {
				neutronBadRequest(w, 400, fmt.Sprintf("Invalid input for remote_ip_prefix. Reason: '%s' is not a valid IP prefix.", *ru.RemoteIPPrefix))
				return
			}
			if (ru.EtherType == "IPv4") != p.Addr().Is4() {
				neutronError(w, 400, "SecurityGroupRuleParameterConflict", fmt.Sprintf("Conflicting value ethertype %s for CIDR %s", ru.EtherType, *ru.RemoteIPPrefix))
				return
			}
		}
	}
	now := e.lock()
	defer e.mu.Unlock()
	for i := range in {
		ru := &in[i]
		if _, ok := e.secGroups.Get(ru.SecurityGroupID); !ok {
			neutronError(w, 404, "SecurityGroupNotFound", fmt.Sprintf("Security group %s does not exist", ru.SecurityGroupID))
			return
		}
		for _, old := range e.sgRules.All() {
			if old.SecurityGroupID == ru.SecurityGroupID && sameRule(old, ru) {
				neutronError(w, 409, "SecurityGroupRuleExists", fmt.Sprintf("Security group rule already exists. Rule id is %s.", old.ID))
				return
			}
		}
		for _, other := range in[:i] {
			if other.SecurityGroupID == ru.SecurityGroupID && sameRule(&other, ru) {
				neutronBadRequest(w, 400, "Duplicate Security Group Rule in POST.")
				return
			}
		}
	}
	out := make([]any, 0, len(in))
	for i := range in {
		nr := in[i]
		nr.ID = e.newID()
		nr.neutronStd = e.std(now)
		e.sgRules.Add(nr.ID, &nr)
		if g, ok := e.secGroups.Get(nr.SecurityGroupID); ok {
			g.touch(now)
		}
		out = append(out, viewCopy(&nr))
	}
	if bulk {
		writeJSON(w, http.StatusCreated, map[string]any{"security_group_rules": out})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"security_group_rule": out[0]})
}

func sameRule(a, b *sgRule) bool {
	for _, k := range []string{"direction", "ethertype", "protocol", "port_range_min", "port_range_max", "remote_ip_prefix", "remote_group_id"} {
		va, _ := field(a, k)
		vb, _ := field(b, k)
		if va != vb {
			return false
		}
	}
	return true
}

func (e *Emulator) deleteSGRule(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e.lock()
	defer e.mu.Unlock()
	if !e.sgRules.Remove(id) {
		neutronError(w, 404, "SecurityGroupRuleNotFound", fmt.Sprintf("Security group rule %s does not exist", id))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// createSubnetHTTP is POST /v2.0/subnets (Networking API reference,
// "Subnets"): network_id and cidr required, ip_version 4 (the default) or 6
// and matching the CIDR, the gateway the first address unless given (null:
// none), the allocation pools all the rest unless given (IPv4 keeps the
// broadcast address out), and no overlap with another subnet of the network.
func (e *Emulator) createSubnetHTTP(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Subnet struct {
			NetworkID       string          `json:"network_id"`
			Name            string          `json:"name"`
			CIDR            string          `json:"cidr"`
			IPVersion       *int            `json:"ip_version"`
			GatewayIP       json.RawMessage `json:"gateway_ip"` // absent: the first address; null: none
			AllocationPools []allocPool     `json:"allocation_pools"`
			EnableDHCP      *bool           `json:"enable_dhcp"`
			IPv6AddressMode *string         `json:"ipv6_address_mode"`
			IPv6RAMode      *string         `json:"ipv6_ra_mode"`
			DNSNameservers  []string        `json:"dns_nameservers"`
		} `json:"subnet"`
	}
	if err := decodeJSON(r, &b); err != nil {
		neutronBadRequest(w, 400, "Invalid input: "+err.Error())
		return
	}
	req := b.Subnet
	version := deref(req.IPVersion, 4)
	prefix, perr := netip.ParsePrefix(req.CIDR)
	switch {
	case req.NetworkID == "":
		neutronBadRequest(w, 400, "Invalid input for network_id. Reason: 'None' is not a valid UUID.")
		return
	case version != 4 && version != 6:
		neutronBadRequest(w, 400, fmt.Sprintf("Invalid input for ip_version. Reason: %d is not in [4, 6].", version))
		return
	case perr != nil || prefix.Masked() != prefix:
		neutronBadRequest(w, 400, fmt.Sprintf("Invalid input for cidr. Reason: '%s' is not a valid IP subnet.", req.CIDR))
		return
	case prefix.Addr().Is4() != (version == 4):
		neutronBadRequest(w, 400, "Invalid input for operation: Cidr and IP version are not compatible.")
		return
	case version == 4 && (req.IPv6AddressMode != nil || req.IPv6RAMode != nil):
		neutronBadRequest(w, 400, "Invalid input for operation: ipv6_ra_mode or ipv6_address_mode cannot be set when enable_dhcp is set to False or on an IPv4 subnet.")
		return
	case prefix.Bits() >= prefix.Addr().BitLen()-1:
		neutronBadRequest(w, 400, fmt.Sprintf("Invalid input for operation: Subnet %s is too small.", req.CIDR))
		return
	}
	first := prefix.Addr().Next()
	last := netaddr.Last(prefix)
	if version == 4 {
		last = last.Prev() // the broadcast address
	}
	gateway := first.String()
	if len(req.GatewayIP) > 0 {
		gateway = ""
		var given *string
		if err := json.Unmarshal(req.GatewayIP, &given); err != nil {
			neutronBadRequest(w, 400, "Invalid input for gateway_ip: "+err.Error())
			return
		}
		if given != nil {
			g, err := netip.ParseAddr(*given)
			if err != nil || !prefix.Contains(g) {
				neutronBadRequest(w, 400, fmt.Sprintf("Invalid input for operation: Gateway IP %s conflicts with the subnet %s.", *given, req.CIDR))
				return
			}
			gateway = g.String()
		}
	}
	var pools [][2]string
	for _, p := range req.AllocationPools {
		lo, err1 := netip.ParseAddr(p.Start)
		hi, err2 := netip.ParseAddr(p.End)
		if err1 != nil || err2 != nil || !prefix.Contains(lo) || !prefix.Contains(hi) || lo.Compare(hi) > 0 {
			neutronBadRequest(w, 400, fmt.Sprintf("Invalid input for operation: The allocation pool %s-%s spans beyond the subnet cidr %s.", p.Start, p.End, req.CIDR))
			return
		}
		pools = append(pools, [2]string{lo.String(), hi.String()})
	}
	if len(pools) == 0 {
		lo := first
		if gateway == first.String() {
			lo = first.Next()
		}
		pools = [][2]string{{lo.String(), last.String()}}
	}
	now := e.lock()
	defer e.mu.Unlock()
	n, ok := e.networks.Get(req.NetworkID)
	if !ok {
		neutronError(w, 404, "NetworkNotFound", fmt.Sprintf("Network %s could not be found.", req.NetworkID))
		return
	}
	for _, sid := range n.Subnets {
		if o, ok := e.subnets.Get(sid); ok && o.ipam.prefix.Overlaps(prefix) {
			neutronBadRequest(w, 400, fmt.Sprintf("Invalid input for operation: Requested subnet with cidr: %s for network: %s overlaps with another subnet.", req.CIDR, n.ID))
			return
		}
	}
	sn := e.addSubnet(n, req.Name, req.CIDR, gateway, pools, deref(req.EnableDHCP, true), now)
	sn.IPv6AddressMode, sn.IPv6RAMode = req.IPv6AddressMode, req.IPv6RAMode
	if req.DNSNameservers != nil {
		sn.DNSNameservers = slices.Clone(req.DNSNameservers)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"subnet": viewCopy(sn)})
}

// deleteSubnetHTTP refuses a subnet any port has an address on (409
// SubnetInUse), as Neutron does for ports it does not own itself.
func (e *Emulator) deleteSubnetHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	sn, ok := e.subnets.Get(id)
	if !ok {
		neutronError(w, 404, "SubnetNotFound", fmt.Sprintf("Subnet %s could not be found.", id))
		return
	}
	for _, p := range e.ports.All() {
		for _, f := range p.FixedIPs {
			if f.SubnetID == id {
				neutronError(w, 409, "SubnetInUse", fmt.Sprintf("Unable to complete operation on subnet %s: One or more ports have an IP allocation from this subnet.", id))
				return
			}
		}
	}
	e.subnets.Remove(id)
	if n, ok := e.networks.Get(sn.NetworkID); ok {
		n.Subnets = without(n.Subnets, id)
		n.touch(now)
	}
	w.WriteHeader(http.StatusNoContent)
}
