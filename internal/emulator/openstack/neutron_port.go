package openstack

import (
	"net/http"
	"slices"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Ports over HTTP (Networking API reference, "Ports"): created on a
// network, updated in place (not their network or addresses here), and not
// deleted directly when a router or a floating IP owns them.

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

// deref is *p, or def for nil: an attribute a request may leave out.
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// decodeNewPort reads a create's body: network_id is required.
func decodeNewPort(r *http.Request, b *portBody) *apiErr {
	if aerr := neutronBody(r, b); aerr != nil {
		return aerr
	}
	if b.Port.NetworkID == "" {
		return badRequest("Invalid input for operation: network_id is required.")
	}
	return nil
}

// createPortHTTP creates a port with the address(es) asked for, or one of
// its network.
func (e *Emulator) createPortHTTP(_ *http.Request, b *portBody, now time.Time) (core.Reply, *apiErr) {
	p, aerr := e.createPort(portSpec{NetworkID: b.Port.NetworkID, Name: deref(b.Port.Name, ""),
		Description: deref(b.Port.Description, ""), DeviceID: deref(b.Port.DeviceID, ""),
		DeviceOwner: deref(b.Port.DeviceOwner, ""), FixedIPs: deref(b.Port.FixedIPs, nil),
		SecurityGroups: b.Port.SecurityGroups, AllowedAddressPairs: deref(b.Port.AllowedAddressPairs, nil),
		AdminStateUp: deref(b.Port.AdminStateUp, true)}, now)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	if b.Port.PortSecurity != nil {
		p.PortSecurity = *b.Port.PortSecurity
	}
	if b.Port.MACAddress != nil {
		p.MACAddress = *b.Port.MACAddress
	}
	return core.Created(keyed("port", viewCopy(p))), nil
}

// decodePortUpdate reads an update's body: the emulator does not move a
// port to another network or other addresses.
func decodePortUpdate(r *http.Request, b *portBody) *apiErr {
	if aerr := neutronBody(r, b); aerr != nil {
		return aerr
	}
	if b.Port.FixedIPs != nil || b.Port.NetworkID != "" {
		return badRequest("The emulator does not support changing network_id or fixed_ips of a port.")
	}
	return nil
}

// updatePortHTTP changes a port, under its revision when If-Match names one.
func (e *Emulator) updatePortHTTP(p *port, r *http.Request, b *portBody, now time.Time) (core.Reply, *apiErr) {
	if aerr := revisionMatches(r, p.Revision); aerr != nil {
		return core.Reply{}, aerr
	}
	if b.Port.SecurityGroups != nil {
		for _, sg := range *b.Port.SecurityGroups {
			if _, aerr := lookup(e.secGroups, sg, secGroupMissing); aerr != nil {
				return core.Reply{}, aerr
			}
		}
		p.SecurityGroups = slices.Clone(*b.Port.SecurityGroups)
	}
	e.applyPort(p, b)
	p.touch(now)
	return core.OK(keyed("port", viewCopy(p))), nil
}

// applyPort applies the attributes an update gives (nil: kept), the port's
// device index and status following.
func (e *Emulator) applyPort(p *port, b *portBody) {
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
}

// deletePortHTTP deletes a port; a router's or a floating IP's is refused
// (409 ServicePortInUse), as neutron-server refuses it.
func (e *Emulator) deletePortHTTP(p *port, _ *http.Request, _ *struct{}, now time.Time) (core.Reply, *apiErr) {
	switch p.DeviceOwner {
	case ownerRouterInterface, ownerRouterGateway, ownerFloatingIP:
		return core.Reply{}, errf(409, "ServicePortInUse", "Port %s cannot be deleted directly via the port API: has device owner %s.", p.ID, p.DeviceOwner)
	}
	e.deletePort(p.ID, now)
	return core.NoContent(), nil
}
