package openstack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"time"
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

// routesBody is a router update's body, and add_extraroutes' and
// remove_extraroutes'.
type routesBody struct {
	Router struct {
		Name         *string          `json:"name"`
		Description  *string          `json:"description"`
		AdminStateUp *bool            `json:"admin_state_up"`
		Routes       *[]route         `json:"routes"`
		Gateway      *json.RawMessage `json:"external_gateway_info"`
	} `json:"router"`
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
		create: neutronWrite(e, decodeSubnet, e.createSubnetHTTP), remove: neutronWrite(e, nil, onObject(e.subnets, subnetMissing, e.deleteSubnetHTTP))}.route(e, np)
	collection[port, *port]{path: "ports", key: "port", st: e.ports, view: viewCopy[port],
		notFound: nf("PortNotFound", "Port"), badRequest: neutronBadRequest,
		create: neutronWrite(e, decodeNewPort, e.createPortHTTP),
		update: neutronWrite(e, decodePortUpdate, onObject(e.ports, portMissing, e.updatePortHTTP)),
		remove: neutronWrite(e, nil, onObject(e.ports, portMissing, e.deletePortHTTP))}.route(e, np)
	collection[floatingIP, *floatingIP]{path: "floatingips", key: "floatingip", st: e.fips, view: (*floatingIP).view,
		notFound: nf("FloatingIPNotFound", "Floating IP"), badRequest: neutronBadRequest,
		create: neutronWrite(e, neutronBody[fipReq], e.createFloatingIP),
		update: neutronWrite(e, decodeFIPUpdate, onObject(e.fips, fipMissing, e.updateFloatingIP)),
		remove: neutronWrite(e, nil, onObject(e.fips, fipMissing, e.deleteFloatingIP))}.route(e, np)
	collection[router, *router]{path: "routers", key: "router", st: e.routers, view: (*router).view,
		notFound: nf("RouterNotFound", "Router"), badRequest: neutronBadRequest, update: neutronWrite(e, decodeRouterUpdate, onObject(e.routers, routerMissing, e.updateRouter))}.route(e, np)
	e.handle("PUT "+np+"/routers/{id}/add_extraroutes", neutronWrite(e, decodeExtraRoutes, e.extraRoutes(true)))
	e.handle("PUT "+np+"/routers/{id}/remove_extraroutes", neutronWrite(e, decodeExtraRoutes, e.extraRoutes(false)))
	collection[secGroup, *secGroup]{path: "security-groups", key: "security_group", st: e.secGroups, view: e.secGroupView,
		notFound: nf("SecurityGroupNotFound", "Security group"), badRequest: neutronBadRequest,
		create: neutronWrite(e, neutronBody[secGroupReq], e.createSecGroup), remove: neutronWrite(e, nil, onObject(e.secGroups, secGroupMissing, e.deleteSecGroup))}.route(e, np)
	e.handle("PUT "+np+"/security-groups/{id}/tags", neutronWrite(e, decodeTags, onObject(e.secGroups, secGroupMissing, e.replaceSecGroupTags)))
	collection[sgRule, *sgRule]{path: "security-group-rules", key: "security_group_rule", st: e.sgRules, view: viewCopy[sgRule],
		notFound: nf("SecurityGroupRuleNotFound", "Security group rule"), badRequest: neutronBadRequest,
		create: neutronWrite(e, decodeSGRules, e.createSGRule), remove: neutronWrite(e, nil, e.deleteSGRule)}.route(e, np)

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
