package openstack

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Floating IPs (Networking API reference, "Floating IPs"): an address of an
// external network held by a network:floatingip port, associated with a
// port whose subnet a router connects to that network.

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

// fipReq is a floating IP create's body.
type fipReq struct {
	FloatingIP struct {
		FloatingNetworkID string `json:"floating_network_id"`
		SubnetID          string `json:"subnet_id"`
		PortID            string `json:"port_id"`
		FixedIPAddress    string `json:"fixed_ip_address"`
		FloatingIPAddress string `json:"floating_ip_address"`
		Description       string `json:"description"`
	} `json:"floatingip"`
}

// createFloatingIP allocates a floating IP on an external network,
// associated at once when port_id is given: the association is checked
// first, so that a failure allocates nothing.
func (e *Emulator) createFloatingIP(_ *http.Request, b *fipReq, now time.Time) (core.Reply, *apiErr) {
	req := b.FloatingIP
	n, aerr := e.checkFloatingNetwork(req.FloatingNetworkID, req.SubnetID)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	f := &floatingIP{ID: e.newID(), Description: req.Description, FloatingNetworkID: n.ID, neutronStd: e.std(now)}
	if req.PortID != "" {
		probe := *f
		probe.FloatingIPAddress = req.FloatingIPAddress
		if aerr := e.associate(&probe, req.PortID, req.FixedIPAddress); aerr != nil {
			return core.Reply{}, aerr
		}
		delete(e.fipByPort, req.PortID)
	}
	fp, aerr := e.createPort(portSpec{NetworkID: n.ID, DeviceID: f.ID, DeviceOwner: ownerFloatingIP,
		FixedIPs: []fixedIP{{SubnetID: req.SubnetID, IPAddress: req.FloatingIPAddress}}, AdminStateUp: true}, now)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	f.ownPortID = fp.ID
	f.FloatingIPAddress = fp.FixedIPs[0].IPAddress
	f.SubnetID = fp.FixedIPs[0].SubnetID
	if req.PortID != "" {
		_ = e.associate(f, req.PortID, req.FixedIPAddress)
	}
	e.fips.Add(f.ID, f)
	return core.Created(keyed("floatingip", f.view())), nil
}

// checkFloatingNetwork is the external network a new floating IP is on (on
// subnetID of it, if given), within the quota.
func (e *Emulator) checkFloatingNetwork(networkID, subnetID string) (*network, *apiErr) {
	n, aerr := lookup(e.networks, networkID, networkMissing)
	if aerr != nil {
		return nil, aerr
	}
	if !n.External {
		return nil, errf(400, "BadRequest", "Bad floatingip request: Network %s is not a valid external network.", n.ID)
	}
	if subnetID != "" {
		if s, ok := e.subnets.Get(subnetID); !ok || s.NetworkID != n.ID {
			return nil, errf(400, "BadRequest", "Bad floatingip request: Subnet %s is not on network %s.", subnetID, n.ID)
		}
	}
	if e.quotaMet(QuotaFloatingIP, e.fips.Len()) {
		// neutron_lib/exceptions/__init__.py OverQuota (a Conflict: HTTP 409),
		// "Quota exceeded for resources: %(overs)s." with the sorted list of
		// resources as Python prints it.
		return nil, errf(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['floatingip'].")
	}
	return n, nil
}

// fipUpdate is a floating IP update's body, the attributes given: a
// port_id of null (or "") disassociates.
type fipUpdate struct {
	portID, fixed, desc  string
	portGiven, descGiven bool
}

// decodeFIPUpdate reads {"floatingip": {...}}: port_id, fixed_ip_address
// and description, each a string or null.
func decodeFIPUpdate(r *http.Request, u *fipUpdate) *apiErr {
	var b struct {
		FloatingIP map[string]json.RawMessage `json:"floatingip"`
	}
	if err := decodeJSON(r, &b); err != nil || b.FloatingIP == nil {
		return badRequest("Invalid input: a floatingip object is required.")
	}
	str := func(k string) (val string, present bool, err error) {
		raw, ok := b.FloatingIP[k]
		if !ok || string(raw) == "null" {
			return "", ok, nil
		}
		return val, true, json.Unmarshal(raw, &val)
	}
	var err1, err2, err3 error
	u.portID, u.portGiven, err1 = str("port_id")
	u.fixed, _, err2 = str("fixed_ip_address")
	u.desc, u.descGiven, err3 = str("description")
	if err1 != nil || err2 != nil || err3 != nil {
		return badRequest("Invalid input: port_id, fixed_ip_address and description must be strings.")
	}
	return nil
}

// updateFloatingIP associates, moves or disassociates a floating IP, and
// changes its description.
func (e *Emulator) updateFloatingIP(f *floatingIP, _ *http.Request, u *fipUpdate, now time.Time) (core.Reply, *apiErr) {
	if u.portGiven {
		if u.portID == "" {
			e.disassociate(f)
		} else if aerr := e.associate(f, u.portID, u.fixed); aerr != nil {
			return core.Reply{}, aerr
		}
	}
	if u.descGiven {
		f.Description = u.desc
	}
	f.touch(now)
	return core.OK(keyed("floatingip", f.view())), nil
}

// disassociate frees a floating IP of its port.
func (e *Emulator) disassociate(f *floatingIP) {
	if f.PortID != "" {
		delete(e.fipByPort, f.PortID)
	}
	f.PortID, f.FixedIPAddress, f.RouterID = "", "", ""
}

// deleteFloatingIP releases a floating IP and its address.
func (e *Emulator) deleteFloatingIP(f *floatingIP, _ *http.Request, _ *struct{}, now time.Time) (core.Reply, *apiErr) {
	if f.PortID != "" {
		delete(e.fipByPort, f.PortID)
	}
	e.deletePort(f.ownPortID, now)
	e.fips.Remove(f.ID)
	return core.NoContent(), nil
}
