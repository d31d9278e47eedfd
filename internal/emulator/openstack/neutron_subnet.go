package openstack

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/netaddr"
)

// subnetReq is POST /v2.0/subnets' body.
type subnetReq struct {
	IPVersion       *int            `json:"ip_version"`
	EnableDHCP      *bool           `json:"enable_dhcp"`
	IPv6AddressMode *string         `json:"ipv6_address_mode"`
	IPv6RAMode      *string         `json:"ipv6_ra_mode"`
	NetworkID       string          `json:"network_id"`
	Name            string          `json:"name"`
	CIDR            string          `json:"cidr"`
	GatewayIP       json.RawMessage `json:"gateway_ip"` // absent: the first address; null: none
	AllocationPools []allocPool     `json:"allocation_pools"`
	DNSNameservers  []string        `json:"dns_nameservers"`
}

// subnetPlan is a subnet create checked as far as it can be without the
// network: the request, its prefix, gateway ("": none) and pools.
type subnetPlan struct {
	req     subnetReq
	prefix  netip.Prefix
	gateway string
	pools   [][2]string
}

// decodeSubnet reads and checks a subnet create (Networking API reference,
// "Subnets"): network_id and cidr required, ip_version 4 (the default) or 6
// and matching the CIDR, the gateway the first address unless given (null:
// none), the allocation pools all the rest unless given (IPv4 keeps the
// broadcast address out).
func decodeSubnet(r *http.Request, p *subnetPlan) *apiErr {
	var b struct {
		Subnet subnetReq `json:"subnet"`
	}
	if aerr := neutronBody(r, &b); aerr != nil {
		return aerr
	}
	p.req = b.Subnet
	if aerr := p.checkCIDR(); aerr != nil {
		return aerr
	}
	if aerr := p.pickGateway(); aerr != nil {
		return aerr
	}
	return p.pickPools()
}

// checkCIDR checks network_id, ip_version and cidr, and keeps the prefix.
func (p *subnetPlan) checkCIDR() *apiErr {
	req := p.req
	version := deref(req.IPVersion, 4)
	prefix, perr := netip.ParsePrefix(req.CIDR)
	switch {
	case req.NetworkID == "":
		return badRequest("Invalid input for network_id. Reason: 'None' is not a valid UUID.")
	case version != 4 && version != 6:
		return badRequestf("Invalid input for ip_version. Reason: %d is not in [4, 6].", version)
	case perr != nil || prefix.Masked() != prefix:
		return badRequestf("Invalid input for cidr. Reason: '%s' is not a valid IP subnet.", req.CIDR)
	case prefix.Addr().Is4() != (version == 4):
		return badRequest("Invalid input for operation: Cidr and IP version are not compatible.")
	case version == 4 && (req.IPv6AddressMode != nil || req.IPv6RAMode != nil):
		return badRequest("Invalid input for operation: ipv6_ra_mode or ipv6_address_mode cannot be set when enable_dhcp is set to False or on an IPv4 subnet.")
	case prefix.Bits() >= prefix.Addr().BitLen()-1:
		return badRequestf("Invalid input for operation: Subnet %s is too small.", req.CIDR)
	}
	p.prefix = prefix
	return nil
}

// pickGateway is gateway_ip: absent, the first address; null, none; else
// an address of the subnet.
func (p *subnetPlan) pickGateway() *apiErr {
	p.gateway = p.prefix.Addr().Next().String()
	if len(p.req.GatewayIP) == 0 {
		return nil
	}
	p.gateway = ""
	var given *string
	if err := json.Unmarshal(p.req.GatewayIP, &given); err != nil {
		return badRequest("Invalid input for gateway_ip: " + err.Error())
	}
	if given != nil {
		g, err := netip.ParseAddr(*given)
		if err != nil || !p.prefix.Contains(g) {
			return badRequestf("Invalid input for operation: Gateway IP %s conflicts with the subnet %s.", *given, p.req.CIDR)
		}
		p.gateway = g.String()
	}
	return nil
}

// pickPools is allocation_pools, each within the subnet; none given, all
// the addresses after the gateway (IPv4: but the broadcast address).
func (p *subnetPlan) pickPools() *apiErr {
	for _, ap := range p.req.AllocationPools {
		lo, err1 := netip.ParseAddr(ap.Start)
		hi, err2 := netip.ParseAddr(ap.End)
		if err1 != nil || err2 != nil || !p.prefix.Contains(lo) || !p.prefix.Contains(hi) || lo.Compare(hi) > 0 {
			return badRequestf("Invalid input for operation: The allocation pool %s-%s spans beyond the subnet cidr %s.", ap.Start, ap.End, p.req.CIDR)
		}
		p.pools = append(p.pools, [2]string{lo.String(), hi.String()})
	}
	if len(p.pools) > 0 {
		return nil
	}
	first, last := p.prefix.Addr().Next(), netaddr.Last(p.prefix)
	if p.prefix.Addr().Is4() {
		last = last.Prev() // the broadcast address
	}
	lo := first
	if p.gateway == first.String() {
		lo = first.Next()
	}
	p.pools = [][2]string{{lo.String(), last.String()}}
	return nil
}

// createSubnetHTTP is POST /v2.0/subnets: the checked subnet added to its
// network, unless it overlaps another subnet of the network.
func (e *Emulator) createSubnetHTTP(_ *http.Request, p *subnetPlan, now time.Time) (core.Reply, *apiErr) {
	req := p.req
	n, aerr := lookup(e.networks, req.NetworkID, networkMissing)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	for _, sid := range n.Subnets {
		if o, ok := e.subnets.Get(sid); ok && o.ipam.prefix.Overlaps(p.prefix) {
			return core.Reply{}, badRequestf("Invalid input for operation: Requested subnet with cidr: %s for network: %s overlaps with another subnet.", req.CIDR, n.ID)
		}
	}
	sn := e.addSubnet(n, req.Name, req.CIDR, p.gateway, p.pools, deref(req.EnableDHCP, true), now)
	sn.IPv6AddressMode, sn.IPv6RAMode = req.IPv6AddressMode, req.IPv6RAMode
	if req.DNSNameservers != nil {
		sn.DNSNameservers = slices.Clone(req.DNSNameservers)
	}
	return core.Created(keyed("subnet", viewCopy(sn))), nil
}

// deleteSubnetHTTP refuses a subnet any port has an address on (409
// SubnetInUse), as Neutron does for ports it does not own itself.
func (e *Emulator) deleteSubnetHTTP(sn *subnet, _ *http.Request, _ *struct{}, now time.Time) (core.Reply, *apiErr) {
	id := sn.ID
	for _, p := range e.ports.All() {
		for _, f := range p.FixedIPs {
			if f.SubnetID == id {
				return core.Reply{}, errf(409, "SubnetInUse", "Unable to complete operation on subnet %s: One or more ports have an IP allocation from this subnet.", id)
			}
		}
	}
	e.subnets.Remove(id)
	if n, ok := e.networks.Get(sn.NetworkID); ok {
		n.Subnets = without(n.Subnets, id)
		n.touch(now)
	}
	return core.NoContent(), nil
}
