package oci

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// The addresses a network load balancer takes in its subnet
// (oci-network-load-balancer.oraclecloud.com/assigned-private-ipv4 and
// assigned-ipv6: CreateNetworkLoadBalancerDetails' assignedPrivateIpv4 and
// assignedIpv6), sent as oci-cloud-controller-manager v1.35.0 sends them
// (load_balancer_spec.go getAssignedPrivateIP, load_balancer.go
// createLoadBalancer), so that its network load balancers are adopted as
// they are:
//
//   - Read with the spec: an IPv4 address, an IPv6 address; on an lb
//     refused, as the peer refuses them.
//   - Refused before anything is built, with a Warning and no write: an
//     IPv6 address when the network load balancer serves no IPv6 (an IPv4
//     one when it serves IPv6 alone; ipfamilies.go decides), an address
//     outside its subnet's CIDR or IPv6 prefixes or one of the three OCI
//     keeps of the CIDR (its first two and its last), and one something else
//     holds in the subnet (ListPrivateIps, ListIpv6s by subnetId and
//     ipAddress).
//   - OCI leaves a network load balancer created with an address that is
//     taken FAILED, with no address (the peer's loadBalancerToStatus says
//     so). A FAILED one is built anew (Replace), its addresses checked first:
//     one taken is refused with a Warning, no write, and the Service looked
//     at again as any refused one: never a loop of deletes and creates. One
//     that failed with no address though the listings showed its addresses
//     free (something they do not show may hold one) is built anew once per
//     process; failing so again it is refused, until it is deleted.
//   - The addresses are the network load balancer's for good: one rebuilt
//     takes them again (the FAILED one gone first, as with a reserved public
//     IP). A Service asking for others, or adding one it does not have, is
//     refused with a Warning and no write: they cannot change once built.
//     One that no longer asks for them lets it keep them: nothing changes.
//
// The peer sends the values as they are (OCI then refuses what is no
// address of the subnet, one create at a time), updates a FAILED network
// load balancer as if it were ACTIVE, publishes no address for it, and never
// says that the address is taken.

// parseAssigned reads an nlb's assigned addresses into s; on an lb any
// value is refused (an invalid one as invalid).
func (s *lbSpec) parseAssigned(svc *v1.Service, bad func(error)) {
	for _, a := range []struct {
		n     annotation.Name
		parse func(*v1.Service) (netip.Addr, error)
		to    *string
	}{
		{annotation.OCINLBAssignedPrivateIPv4, annotation.OCINLBAssignedPrivateIPv4.IPv4, &s.assigned4},
		{annotation.OCINLBAssignedIPv6, annotation.OCINLBAssignedIPv6.IPv6, &s.assigned6},
	} {
		ip, err := a.parse(svc)
		switch {
		case err != nil:
			bad(err)
		case s.kind != ociapi.KindNLB:
			bad(fmt.Errorf("%s: an address is assigned to a network load balancer alone, as the peer has it; set %s: nlb, or remove the annotation",
				a.n, annotation.OCILoadBalancerType))
		default:
			*a.to = ip.String()
		}
	}
}

// assignedFamilies refuses an assigned address of a family the network
// load balancer does not serve (spec.ipv, as serveFamilies decided it).
func (s lbSpec) assignedFamilies() error {
	has4, has6 := versionFamilies(s.ipv.endpoint)
	serves := map[bool]string{true: "IPv6 alone", false: "IPv4 alone"}[has6]
	switch {
	case s.assigned6 != "" && !has6:
		return outcome.Refuse(outcome.ReasonUnsupportedService, "%s %s: the network load balancer serves %s (%s); ask for IPv6 in spec.ipFamilies and spec.ipFamilyPolicy, or remove the annotation",
			annotation.OCINLBAssignedIPv6, s.assigned6, serves, s.ipv.asked())
	case s.assigned4 != "" && !has4:
		return outcome.Refuse(outcome.ReasonUnsupportedService, "%s %s: the network load balancer serves %s (%s); ask for IPv4 too, or remove the annotation",
			annotation.OCINLBAssignedPrivateIPv4, s.assigned4, serves, s.ipv.asked())
	}
	return nil
}

// assigned are the spec's assigned addresses with their annotations.
func (s lbSpec) assigned() map[annotation.Name]string {
	out := map[annotation.Name]string{}
	if s.assigned4 != "" {
		out[annotation.OCINLBAssignedPrivateIPv4] = s.assigned4
	}
	if s.assigned6 != "" {
		out[annotation.OCINLBAssignedIPv6] = s.assigned6
	}
	return out
}

// checkAssigned refuses, before a network load balancer is built, an
// assigned address outside its subnet, one OCI keeps, or one something
// other than own (the FAILED one being replaced: its addresses are its
// own) holds in the subnet. It reads the subnet (once an hour) and one
// listing per address.
func (st *steps) checkAssigned(ctx context.Context, spec lbSpec, own ociapi.LB) error {
	assigned := spec.assigned()
	if spec.kind != ociapi.KindNLB || len(assigned) == 0 {
		return nil
	}
	sub, err := st.subnet(ctx, spec.subnets[0])
	if err != nil {
		return err
	}
	for _, n := range []annotation.Name{annotation.OCINLBAssignedPrivateIPv4, annotation.OCINLBAssignedIPv6} {
		a, ok := assigned[n]
		if !ok {
			continue
		}
		if why := outsideSubnet(sub, a); why != "" {
			return outcome.Refuse(outcome.ReasonAddressUnavailable, "%s %s is %s: a network load balancer takes an address of its subnet; ask for another", n, a, why)
		}
		if hasAddr(own, a) {
			continue
		}
		holder, err := st.holderOf(ctx, sub.ID, a)
		if err != nil {
			return err
		}
		if holder != "" {
			return outcome.Refuse(outcome.ReasonAddressUnavailable, "%s %s is taken in subnet %s (%s): OCI would leave a network load balancer asking for it FAILED; free it, or ask for another",
				n, a, sub.ID, holder)
		}
	}
	return nil
}

// outsideSubnet says why a is no address a network load balancer can take
// in sub ("" when it is one): outside its IPv4 CIDR (or IPv6 prefixes), or
// one of the CIDR's first two and last addresses, which OCI keeps.
func outsideSubnet(sub ociapi.Subnet, a string) string {
	ip, err := netip.ParseAddr(a)
	if err != nil {
		return "no address"
	}
	if ip.Is6() {
		prefixes := sub.IPv6CIDRBlocks
		if len(prefixes) == 0 && sub.IPv6CIDRBlock != "" {
			prefixes = []string{sub.IPv6CIDRBlock}
		}
		for _, c := range prefixes {
			if p, err := netip.ParsePrefix(c); err == nil && p.Contains(ip) {
				return ""
			}
		}
		if len(prefixes) == 0 {
			return fmt.Sprintf("of no IPv6 prefix of subnet %s, which has none", sub.ID)
		}
		return fmt.Sprintf("outside the IPv6 prefixes of subnet %s (%s)", sub.ID, strings.Join(prefixes, ", "))
	}
	p, err := netip.ParsePrefix(sub.CIDRBlock)
	switch {
	case err != nil:
		return fmt.Sprintf("of no IPv4 CIDR of subnet %s, which has none", sub.ID)
	case !p.Contains(ip):
		return fmt.Sprintf("outside the CIDR %s of subnet %s", sub.CIDRBlock, sub.ID)
	case ip == p.Masked().Addr() || ip == p.Masked().Addr().Next() || !p.Contains(ip.Next()):
		return fmt.Sprintf("one of the three addresses OCI keeps in the CIDR %s of subnet %s (its first two and its last)", sub.CIDRBlock, sub.ID)
	}
	return ""
}

// holderOf names what holds address a in subnet ("" for nothing): a
// private IP (of a VNIC, or reserved) or an IPv6 address.
func (st *steps) holderOf(ctx context.Context, subnet, a string) (string, error) {
	if addrFamily(a) == ipv6Version {
		ips, err := st.api.IPv6sAt(ctx, subnet, a)
		if err != nil || len(ips) == 0 {
			return "", err
		}
		return held("IPv6 address", ips[0].ID, ips[0].VnicID), nil
	}
	ips, err := st.api.PrivateIPsAt(ctx, subnet, a)
	if err != nil || len(ips) == 0 {
		return "", err
	}
	return held("private IP", ips[0].ID, ips[0].VnicID), nil
}

// held names an address object and its VNIC, if it has one.
func held(what, id, vnic string) string {
	if vnic != "" {
		return fmt.Sprintf("%s %s of VNIC %s", what, id, vnic)
	}
	return what + " " + id
}

// hasAddr says whether lb has address a.
func hasAddr(lb ociapi.LB, a string) bool {
	for _, o := range lb.IPAddresses {
		if sameAddr(o.IPAddress, a) {
			return true
		}
	}
	return false
}

// sameAddr says whether two texts are the same address.
func sameAddr(a, b string) bool {
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	return err1 == nil && err2 == nil && x == y
}

// assignedDrift says why the network load balancer's addresses are not
// those the Service assigns ("" when they are): they cannot change once
// it is built.
func assignedDrift(have ociapi.LB, spec lbSpec) string {
	if have.Kind != ociapi.KindNLB {
		return ""
	}
	for _, a := range []struct {
		n       annotation.Name
		want    string
		private bool
		family  string
		what    string
	}{
		{annotation.OCINLBAssignedPrivateIPv4, spec.assigned4, true, ipv4Version, "private IPv4 address"},
		{annotation.OCINLBAssignedIPv6, spec.assigned6, false, ipv6Version, "IPv6 address"},
	} {
		if a.want == "" {
			continue
		}
		var got []string
		for _, ip := range have.IPAddresses {
			if addrFamily(ip.IPAddress) == a.family && (!a.private || !ip.IsPublic) {
				got = append(got, ip.IPAddress)
			}
		}
		if slices.ContainsFunc(got, func(g string) bool { return sameAddr(g, a.want) }) {
			continue
		}
		has := "no " + a.what
		if len(got) > 0 {
			has = "the " + a.what + " " + strings.Join(got, ", ")
		}
		return fmt.Sprintf("network load balancer %s has %s and the Service asks for %s (%s): a network load balancer's address cannot change once built; delete and recreate the Service, or ask for the address it has",
			have.ID, has, a.want, a.n)
	}
	return ""
}

// replaceAssigned checks the assigned addresses of the Service whose
// network load balancer lb is FAILED, before it is deleted to be built
// anew: taken, refused. It returns what to count the rebuild under ("" for
// nothing): one that failed with no address while asking for assigned
// ones is built anew once per process.
func (st *steps) replaceAssigned(ctx context.Context, svc *v1.Service, lb ociLB) (string, error) {
	if lb.Obj.Kind != ociapi.KindNLB {
		return "", nil
	}
	spec, err := st.parseSpec(svc)
	if err != nil {
		return "", outcome.Invalid(err)
	}
	if len(spec.assigned()) == 0 {
		return "", nil
	}
	if err := st.checkAssigned(ctx, spec, lb.Obj); err != nil {
		return "", err
	}
	if len(lb.Obj.IPAddresses) > 0 {
		return "", nil // it had its addresses: it failed for another reason
	}
	key := spec.assigned4 + " " + spec.assigned6
	if st.rebuilt.Is(svc.UID, key) {
		return "", outcome.Refuse(outcome.ReasonAddressUnavailable, "network load balancer %s is %s with no address again: OCI could not give it %s, though subnet %s lists nothing there (something it does not list may hold it); free it or ask for another, then delete the network load balancer to try again",
			lb.ID, lb.Status, strings.TrimSpace(key), spec.subnets[0])
	}
	return key, nil
}
