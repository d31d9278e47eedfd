package openstack

import (
	"net/netip"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// nodeAddresses turns a server's addresses into Node addresses:
//   - floating IPs, accessIPv4/v6 and fixed IPs on a [Networking] public-network-name
//     network are ExternalIP;
//   - other fixed IPs are InternalIP, only on internal-network-name networks when
//     that is set;
//   - IPv6 is left out when ipv6-support-disabled;
//   - address-sort-order CIDRs come first, in their order; the rest keep theirs;
//   - the server name is the Hostname.
func nodeAddresses(name string, addrs map[string][]osapi.ServerAddress, accessIPs []string, n Networking) []v1.NodeAddress {
	nets := make([]string, 0, len(addrs))
	for net := range addrs {
		nets = append(nets, net)
	}
	sort.Strings(nets) // the API's map order is not stable
	var out []v1.NodeAddress
	seen := map[v1.NodeAddress]bool{}
	add := func(t v1.NodeAddressType, ip string) {
		a, err := netip.ParseAddr(ip)
		if err != nil || (a.Is6() && !a.Is4In6() && n.IPv6SupportDisabled) {
			return
		}
		na := v1.NodeAddress{Type: t, Address: a.Unmap().String()}
		if !seen[na] {
			seen[na] = true
			out = append(out, na)
		}
	}
	for _, net := range nets {
		public := slices.Contains(n.PublicNetworkName, net)
		internal := len(n.InternalNetworkName) == 0 || slices.Contains(n.InternalNetworkName, net)
		for _, a := range addrs[net] {
			switch {
			case a.Type == "floating" || public:
				add(v1.NodeExternalIP, a.Addr)
			case internal:
				add(v1.NodeInternalIP, a.Addr)
			}
		}
	}
	for _, ip := range accessIPs {
		if ip != "" {
			add(v1.NodeExternalIP, ip)
		}
	}
	if order := sortOrder(n.AddressSortOrder); len(order) > 0 {
		rank := func(na v1.NodeAddress) int {
			a, err := netip.ParseAddr(na.Address)
			if err != nil {
				return len(order)
			}
			for i, p := range order {
				if p.Contains(a) {
					return i
				}
			}
			return len(order)
		}
		sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	}
	if name != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: name})
	}
	return out
}

func sortOrder(s string) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range strings.Split(s, ",") {
		if p, err := netip.ParsePrefix(strings.TrimSpace(c)); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}
