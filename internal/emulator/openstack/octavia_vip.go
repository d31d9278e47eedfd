package openstack

import (
	"net/netip"
	"time"
)

// The VIP of a new load balancer (Octavia API reference, "Create a Load
// Balancer": vip_port_id, vip_network_id or vip_subnet_id, with
// vip_address; additional_vips from v2.26): a Neutron port of device owner
// Octavia, which the load balancer owns unless it was given one.

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
