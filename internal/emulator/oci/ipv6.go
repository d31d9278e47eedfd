package oci

import (
	"net/http"
	"net/netip"
	"slices"
)

// IPv6 and dual-stack load balancers. Subnets carry ipv6CidrBlock and
// ipv6CidrBlocks when they are dual-stack (the fixture's DualStackSubnetID
// always; its node subnet with Options.IPv6CIDR). A load balancer created
// with ipMode IPV6 (loadbalancer.CreateLoadBalancerDetails) has an IPv4
// address and an IPv6 one of its subnet's prefix; a network load balancer
// serves the families of its nlbIpVersion (networkloadbalancer.NlbIpVersionEnum:
// IPV4, IPV6, IPV4_AND_IPV6), at its creation and through
// UpdateNetworkLoadBalancer (PUT /networkLoadBalancers/{id}, a work
// request), and its listeners and backend sets carry ipVersion (IpVersionEnum:
// IPV4, IPV6; IPV4 by default).
//
// What the API refuses, from oci-go-sdk v65.110.0's models and the Network
// Load Balancer documentation ("Allow IPv6 address assignment" makes a
// network load balancer dual-stack, on a subnet with an IPv6 prefix): an
// IPv6 address family on a subnet without an IPv6 prefix, a listener or a
// backend set of a family the network load balancer does not serve, a
// listener whose backend set is of the other family, and a backend whose
// address is not of its set's family. The SDK and the API reference name
// no error code for these: 400 InvalidParameter, the code both APIs give a
// request they refuse for its content, and the messages are this emulator's
// guesses. Not emulated: ipv6SubnetCidr and subnetIpv6Cidr (the subnet's
// first prefix is taken), reserved IPv6 addresses of a network load
// balancer (reservedIpv6Id), assignedIpv6 in an update, and
// updating an lb's ipMode (UpdateLoadBalancerDetails has it; the peer never
// sends it). The data plane serves IPv4 listeners alone (dataplane.go).

// IP versions (networkloadbalancer.NlbIpVersionEnum, IpVersionEnum;
// loadbalancer's ipMode takes the first two).
const (
	IPv4      = "IPV4"
	IPv6      = "IPV6"
	IPv4AndV6 = "IPV4_AND_IPV6"
)

// DualStackIPv6CIDR is the IPv6 prefix of the fixture's DualStackSubnetID
// (a documentation prefix, RFC 3849).
const DualStackIPv6CIDR = "2001:db8:0:20::/64"

// dualStackCIDR is the IPv4 CIDR of the fixture's dual-stack subnet. Load
// balancers on it take their IPv4 addresses where every load balancer of
// this emulator does (the machine and public pools), whatever the subnet.
const dualStackCIDR = "10.0.20.0/24"

// versionOr is an IP version, IPV4 when unset (the API's default).
func versionOr(v string) string {
	if v == "" {
		return IPv4
	}
	return v
}

// families says which address families version serves.
func families(version string) (v4, v6 bool) {
	switch versionOr(version) {
	case IPv6:
		return false, true
	case IPv4AndV6:
		return true, true
	}
	return true, false
}

// addrVersion is the IP version of an address ("" when it is none).
func addrVersion(ip string) string {
	a, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return ""
	case a.Is4() || a.Is4In6():
		return IPv4
	}
	return IPv6
}

// seedDualStackSubnet adds the fixture's dual-stack subnet to VCN v, with
// security list sl. Call before serving.
func (e *Emulator) seedDualStackSubnet(v *vcn, sl string) {
	s := &subnet{resource: e.newResource("subnet", e.fx.CompartmentID, "AVAILABLE", e.opts.Clock()),
		VCNID: v.ID, DisplayName: "dual-stack", CIDRBlock: dualStackCIDR, RouteTableID: e.newID("routetable"),
		VirtualRouterIP: "10.0.20.1", VirtualRouterMac: "00:00:17:00:00:02", SecurityListIDs: []string{sl},
		IPv6CIDRBlock: DualStackIPv6CIDR, IPv6CIDRBlocks: []string{DualStackIPv6CIDR}}
	e.subnets.Add(s.ID, s)
	e.fx.DualStackSubnetID = s.ID
	vcnPrefix, _ := netip.MustParsePrefix(DualStackIPv6CIDR).Addr().Prefix(56)
	v.IPv6CIDRBlocks = []string{vcnPrefix.String()}
	if s, ok := e.subnets.Get(e.fx.SubnetID); ok && s.IPv6CIDRBlock != "" {
		v.IPv6CIDRBlocks = append(v.IPv6CIDRBlocks, s.IPv6CIDRBlock)
	}
}

// subnetsWithIPv6 says whether one of the subnets has an IPv6 prefix. Call
// with mu held.
func (e *Emulator) subnetsWithIPv6(ids ...string) bool {
	return slices.ContainsFunc(ids, func(id string) bool {
		s, ok := e.subnets.Get(id)
		return ok && s.IPv6CIDRBlock != ""
	})
}

// newIPv6 is a new address of the first of the subnets with an IPv6
// prefix: the node subnet's next VNIC address, another's next of its own.
// Call with mu held.
func (e *Emulator) newIPv6(ids ...string) string {
	for _, id := range ids {
		s, ok := e.subnets.Get(id)
		if !ok || s.IPv6CIDRBlock == "" {
			continue
		}
		if id == e.fx.SubnetID && e.ipv6Next.IsValid() {
			return e.free(&e.ipv6Next).String()
		}
		if e.ipv6Pools == nil {
			e.ipv6Pools = map[string]netip.Addr{}
		}
		a, ok := e.ipv6Pools[id]
		if !ok {
			a = nth(netip.MustParsePrefix(s.IPv6CIDRBlock).Addr(), 0x100)
		}
		got := e.free(&a)
		e.ipv6Pools[id] = a
		return got.String()
	}
	return ""
}

// checkIPMode is what CreateLoadBalancer refuses of an ipMode: a value
// not of the enum, IPV6 without a subnet with an IPv6 prefix. Call with mu
// held.
func (e *Emulator) checkIPMode(d *createDetails) error {
	switch versionOr(d.IPMode) {
	case IPv4:
		d.IPMode = IPv4
		return nil
	case IPv6:
		if !e.subnetsWithIPv6(d.SubnetIDs...) {
			return invalid("ipMode IPV6: subnet %v has no IPv6 prefix.", d.SubnetIDs)
		}
		return nil
	}
	return invalid("ipMode %q is not one of [IPV4 IPV6].", d.IPMode)
}

// lbIPv6 adds an IPv6 address to a load balancer of ipMode IPV6 (public
// when it is). Call with mu held.
func (e *Emulator) lbIPv6(lb *loadBalancer) {
	if lb.IPMode == IPv6 {
		lb.IPAddresses = append(lb.IPAddresses, lbIPAddress{IPAddress: e.newIPv6(lb.SubnetIDs...), IsPublic: !lb.IsPrivate})
	}
}

// checkNLBVersion is what the API refuses of an nlbIpVersion on subnet: a
// value not of the enum, an IPv6 one without the subnet's IPv6 prefix. Call
// with mu held.
func (e *Emulator) checkNLBVersion(version, subnet string) error {
	if !slices.Contains([]string{IPv4, IPv6, IPv4AndV6}, versionOr(version)) {
		return invalid("nlbIpVersion %q is not one of [IPV4 IPV6 IPV4_AND_IPV6].", version)
	}
	if _, v6 := families(version); v6 && !e.subnetsWithIPv6(subnet) {
		return invalid("nlbIpVersion %s: subnet %s has no IPv6 prefix.", version, subnet)
	}
	return nil
}

// checkNLBFamilies checks a network load balancer's listeners and backend
// sets against its version.
func checkNLBFamilies(version string, listeners map[string]*nlbListener, sets map[string]*nlbBackendSet) error {
	for _, bs := range sets {
		if err := checkSetFamily(version, bs); err != nil {
			return err
		}
	}
	for _, l := range listeners {
		if err := checkListenerFamily(version, sets, l); err != nil {
			return err
		}
	}
	return nil
}

// checkSetFamily refuses a backend set of a family the network load
// balancer of version does not serve, or with a backend of the other one.
func checkSetFamily(version string, bs *nlbBackendSet) error {
	if err := servedBy(version, bs.IPVersion, "Backend set "+bs.Name); err != nil {
		return err
	}
	for _, b := range bs.Backends {
		if got := addrVersion(b.IPAddress); got != "" && got != versionOr(bs.IPVersion) {
			return invalid("Backend set %s is %s: backend %s is an %s address.", bs.Name, versionOr(bs.IPVersion), b.IPAddress, got)
		}
	}
	return nil
}

// checkListenerFamily refuses a listener of a family the network load
// balancer of version does not serve, or whose backend set is of the other.
func checkListenerFamily(version string, sets map[string]*nlbBackendSet, l *nlbListener) error {
	if err := servedBy(version, l.IPVersion, "Listener "+l.Name); err != nil {
		return err
	}
	if bs := sets[l.DefaultBackendSetName]; bs != nil && versionOr(bs.IPVersion) != versionOr(l.IPVersion) {
		return invalid("Listener %s is %s and its backend set %s is %s.", l.Name, versionOr(l.IPVersion), bs.Name, versionOr(bs.IPVersion))
	}
	return nil
}

// servedBy refuses what (a listener, a backend set) of ipVersion v on a
// network load balancer of version.
func servedBy(version, v, what string) error {
	v4, v6 := families(version)
	switch versionOr(v) {
	case IPv4:
		if !v4 {
			return invalid("%s is IPV4 and the network load balancer's nlbIpVersion is %s.", what, versionOr(version))
		}
	case IPv6:
		if !v6 {
			return invalid("%s is IPV6 and the network load balancer's nlbIpVersion is %s.", what, versionOr(version))
		}
	default:
		return invalid("%s: ipVersion %q is not one of [IPV4 IPV6].", what, v)
	}
	return nil
}

// nlbFamilyAddresses are the addresses of a new network load balancer of
// version: its IPv4 ones (as nlbAddresses gives them) unless it is IPV6
// alone, then an IPv6 one of its subnet (public when it is): assigned6, or
// the pool's. Call with mu held.
func (e *Emulator) nlbFamilyAddresses(n *networkLoadBalancer, v4 []nlbIPAddress, assigned6 string) []nlbIPAddress {
	has4, has6 := families(n.NLBIPVersion)
	var out []nlbIPAddress
	if has4 {
		out = v4
	}
	if has6 {
		if assigned6 == "" {
			assigned6 = e.newIPv6(n.SubnetID)
		}
		out = append(out, nlbIPAddress{IPAddress: assigned6, IsPublic: !n.IsPrivate, IPVersion: IPv6})
	}
	return out
}

// nlbUpdateDetails is UpdateNetworkLoadBalancerDetails, the parts kept.
type nlbUpdateDetails struct {
	DisplayName  *string                    `json:"displayName"`
	NLBIPVersion *string                    `json:"nlbIpVersion"`
	FreeformTags *map[string]string         `json:"freeformTags"`
	DefinedTags  *map[string]map[string]any `json:"definedTags"`
}

// updateNLB answers UpdateNetworkLoadBalancer: its name, tags and
// nlbIpVersion, in effect when its work request succeeds. A version that
// drops a family the listeners or backend sets still use is refused; one
// that adds IPv6 needs the subnet's prefix.
func (e *Emulator) updateNLB(w http.ResponseWriter, r *http.Request) {
	var d nlbUpdateDetails
	if !decodeBody(w, r, &d) {
		return
	}
	e.nlbChange(w, r, "UPDATE_NETWORK_LOAD_BALANCER", func(n *networkLoadBalancer) (func(), error) {
		version := n.NLBIPVersion
		if d.NLBIPVersion != nil {
			version = versionOr(*d.NLBIPVersion)
			if err := e.checkNLBVersion(version, n.SubnetID); err != nil {
				return nil, err
			}
			if err := checkNLBFamilies(version, n.Listeners, n.BackendSets); err != nil {
				return nil, err
			}
		}
		return func() {
			replaceIf(&n.DisplayName, d.DisplayName)
			replaceIf(&n.FreeformTags, d.FreeformTags)
			replaceIf(&n.DefinedTags, d.DefinedTags)
			e.setNLBVersion(n, version)
		}, nil
	})
}

// setNLBVersion gives n version, with the addresses of the families it
// gains and without those of the families it loses. Call with mu held.
func (e *Emulator) setNLBVersion(n *networkLoadBalancer, version string) {
	had4, had6 := families(n.NLBIPVersion)
	has4, has6 := families(version)
	n.NLBIPVersion = version
	var kept []nlbIPAddress
	for _, a := range n.IPAddresses {
		if v := versionOr(a.IPVersion); (v == IPv4 && has4) || (v == IPv6 && has6) {
			kept = append(kept, a)
		}
	}
	if has4 && !had4 {
		kept = append(e.nlbAddresses(n.IsPrivate, nil, ""), kept...)
	}
	if has6 && !had6 {
		kept = append(kept, nlbIPAddress{IPAddress: e.newIPv6(n.SubnetID), IsPublic: !n.IsPrivate, IPVersion: IPv6})
	}
	n.IPAddresses = kept
	e.holdNLB(n)
}

// ipv6State is what the emulator keeps of IPv6 beside the node subnet's
// addresses: the next address of each other dual-stack subnet.
type ipv6State struct {
	ipv6Pools map[string]netip.Addr
}

// routeNLBUpdate serves UpdateNetworkLoadBalancer under p.
func (e *Emulator) routeNLBUpdate(p string) {
	e.handle("PUT "+p+"/{id}", e.updateNLB)
}
