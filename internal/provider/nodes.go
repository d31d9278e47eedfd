package provider

import (
	"net/netip"

	v1 "k8s.io/api/core/v1"
)

// InternalIP is the address a load balancer reaches a Node at: its first
// InternalIP of family (IPv4Protocol or IPv6Protocol), else its first
// InternalIP; with no family, its first InternalIP. ok is false when it has
// none.
func InternalIP(addrs []v1.NodeAddress, family v1.IPFamily) (netip.Addr, bool) {
	var first netip.Addr
	for _, a := range addrs {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		if family == "" || (family == v1.IPv4Protocol) == ip.Is4() {
			return ip, true
		}
		if !first.IsValid() {
			first = ip
		}
	}
	return first, first.IsValid()
}

// AwaitingAddresses says a Node has its providerID but not yet its addresses.
// The node controller writes the providerID first and the addresses a moment
// later, and only the first change makes the service controller sync: a cloud
// must take such a Node's address from its machine, or the Node stays out of
// load balancers until an unrelated sync.
func AwaitingAddresses(n *v1.Node) bool {
	return len(n.Status.Addresses) == 0 && n.Spec.ProviderID != ""
}
