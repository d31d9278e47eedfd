package oci

import (
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// The addresses of the subnets: a private IP object (core.PrivateIp) for
// each private IPv4 address and an IPv6 one (core.Ipv6) for each IPv6
// address held in a subnet, by a VNIC (its primary private IP, its IPv6
// address), by a load balancer or a network load balancer (its private IPv4
// address and its IPv6 ones), or reserved by a user (ReserveAddress: a
// private IP of lifetime RESERVED, not on a VNIC). ListPrivateIps and
// ListIpv6s list them by subnet, vnicId and ipAddress. An address any of
// them holds is taken: the pools skip it, and a network load balancer
// created with it (assignedPrivateIpv4, assignedIpv6) fails
// (networkloadbalancer.go).
//
// That the listings show a load balancer's addresses is this emulator's
// reading of the API reference (ListPrivateIps: "the private IPs in the
// subnet"; a load balancer's are in the customer's subnet, on VNICs of the
// service's own): a guess, which the CCM does not rely on alone (its rebuild
// of a network load balancer that failed for its address is bounded).

// heldIP is a private IP or an IPv6 address of a subnet.
type heldIP struct {
	id, address, subnetID, compartmentID, name string
	created                                    time.Time
	// vnic is the VNIC's whose it is (its view is the VNIC's); owner the
	// load balancer's or network load balancer's OCID; neither: reserved.
	vnic  *vnic
	owner string
}

func (h *heldIP) ocid() string { return h.id }

// addressBook are the subnets' private IPs and IPv6 addresses, listed in
// the order they were made, and by address.
type addressBook struct {
	privateIPs *core.Store[*heldIP]
	ipv6s      *core.Store[*heldIP]
	byAddr     map[netip.Addr]*heldIP
}

func newAddressBook() addressBook {
	return addressBook{privateIPs: core.NewStore[*heldIP](), ipv6s: core.NewStore[*heldIP](), byAddr: map[netip.Addr]*heldIP{}}
}

// of is the store of address's family.
func (b addressBook) of(address string) *core.Store[*heldIP] {
	if addrVersion(address) == IPv6 {
		return b.ipv6s
	}
	return b.privateIPs
}

// put keeps h. Call with mu held.
func (b addressBook) put(h *heldIP) {
	b.of(h.address).Add(h.id, h)
	if a, err := netip.ParseAddr(h.address); err == nil {
		b.byAddr[a] = h
	}
}

// drop forgets the address object id. Call with mu held.
func (b addressBook) drop(id string) {
	for _, st := range []*core.Store[*heldIP]{b.privateIPs, b.ipv6s} {
		if h, ok := st.Get(id); ok {
			st.Remove(id)
			if a, err := netip.ParseAddr(h.address); err == nil && b.byAddr[a] == h {
				delete(b.byAddr, a)
			}
		}
	}
}

// holder is what holds address (compared as addresses, not as text), nil
// for nothing. Call with mu held.
func (b addressBook) holder(address string) *heldIP {
	a, err := netip.ParseAddr(address)
	if err != nil {
		return nil
	}
	return b.byAddr[a]
}

// free is the first address from next on that nothing holds, and next moves
// past it: the pools' next address. Call with mu held.
func (b addressBook) free(next *netip.Addr) netip.Addr {
	a := *next
	for b.holder(a.String()) != nil {
		a = a.Next()
	}
	*next = a.Next()
	return a
}

// subnetOf is the subnet whose CIDR (or IPv6 prefix) has address, else the
// first of fallback: the emulator's load balancers take their IPv4
// addresses from the machine pool whatever their subnet. Call with mu held.
func (e *Emulator) subnetOf(address string, fallback []string) string {
	a, err := netip.ParseAddr(address)
	if err == nil {
		for _, s := range e.subnets.All() {
			for _, c := range append([]string{s.CIDRBlock}, s.IPv6CIDRBlocks...) {
				if p, err := netip.ParsePrefix(c); err == nil && p.Contains(a) {
					return s.ID
				}
			}
		}
	}
	if len(fallback) > 0 {
		return fallback[0]
	}
	return ""
}

// holdFor makes owner (a load balancer of either kind) hold exactly
// addresses (its private IPv4 and its IPv6 ones), in their subnets. Call
// with mu held.
func (e *Emulator) holdFor(owner, compartment string, subnets, addresses []string) {
	keep := map[string]bool{}
	for _, a := range addresses {
		keep[a] = true
	}
	for _, st := range []*core.Store[*heldIP]{e.privateIPs, e.ipv6s} {
		for _, h := range st.All() {
			switch {
			case h.owner != owner:
			case keep[h.address]:
				delete(keep, h.address) // held already
			default:
				e.drop(h.id)
			}
		}
	}
	for _, a := range addresses {
		if !keep[a] {
			continue
		}
		kind := "privateip"
		if addrVersion(a) == IPv6 {
			kind = "ipv6"
		}
		e.put(&heldIP{id: e.newID(kind), address: a, subnetID: e.subnetOf(a, subnets), compartmentID: compartment,
			name: owner, created: e.opts.Clock(), owner: owner})
	}
}

// lbHeld are the addresses of a load balancer's that are its subnets':
// its private IPv4 ones and every IPv6 one.
func lbHeld[A any](addrs []A, of func(A) (ip string, public bool)) []string {
	var out []string
	for _, a := range addrs {
		ip, public := of(a)
		if addrVersion(ip) == IPv6 || (!public && addrVersion(ip) == IPv4) {
			out = append(out, ip)
		}
	}
	return out
}

// holdVNIC makes v's primary private IP and IPv6 address held. Call with
// mu held.
func (e *Emulator) holdVNIC(v *vnic) {
	e.put(&heldIP{id: v.privateIPID, address: v.PrivateIP, subnetID: v.SubnetID, vnic: v})
	if v.ipv6ID != "" {
		e.put(&heldIP{id: v.ipv6ID, address: v.IPv6Addresses[0], subnetID: v.SubnetID, vnic: v})
	}
}

// releaseVNIC gives back what holdVNIC held. Call with mu held.
func (e *Emulator) releaseVNIC(v *vnic) {
	e.drop(v.privateIPID)
	if v.ipv6ID != "" {
		e.drop(v.ipv6ID)
	}
}

// ReserveAddress holds ip in subnet as a user's reserved private IP (or
// IPv6 address) that no VNIC has (CreatePrivateIp of lifetime RESERVED),
// and returns its OCID: the address is then taken.
func (e *Emulator) ReserveAddress(subnet, ip string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sub, ok := e.subnets.Get(subnet)
	if !ok {
		return "", fmt.Errorf("no subnet %s", subnet)
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || !inPrefixes(a, append([]string{sub.CIDRBlock}, sub.IPv6CIDRBlocks...)) {
		return "", fmt.Errorf("%q is no address of subnet %s", ip, subnet)
	}
	if h := e.holder(ip); h != nil {
		return "", fmt.Errorf("%s is held by %s", ip, h.id)
	}
	kind := "privateip"
	if addrVersion(ip) == IPv6 {
		kind = "ipv6"
	}
	h := &heldIP{id: e.newID(kind), address: a.String(), subnetID: subnet, compartmentID: e.fx.CompartmentID, name: "reserved", created: e.opts.Clock()}
	e.put(h)
	return h.id, nil
}

// ReleaseAddress deletes a reserved address (DeletePrivateIp, DeleteIpv6):
// its address is free again.
func (e *Emulator) ReleaseAddress(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drop(id)
}

// sameAddress says whether a filter's ipAddress is address ("" matches all).
func sameAddress(filter, address string) bool {
	if filter == "" {
		return true
	}
	f, err1 := netip.ParseAddr(filter)
	a, err2 := netip.ParseAddr(address)
	return err1 == nil && err2 == nil && f == a
}

// listPrivateIPs answers ListPrivateIps: the private IPs of a subnet, or of
// one VNIC (one of subnetId, vnicId must be given), of an ipAddress when
// it is given.
func (e *Emulator) listPrivateIPs(w http.ResponseWriter, r *http.Request) {
	e.listHeld(w, r, e.privateIPs, "One of subnetId, vnicId or vlanId is required.", viewPrivateIP)
}

// listHeld lists the addresses of st of the subnet or VNIC the query names
// (one of them it must, else missing is the answer), of its ipAddress when
// it names one.
func (e *Emulator) listHeld(w http.ResponseWriter, r *http.Request, st *core.Store[*heldIP], missing string, view func(*heldIP) any) {
	q := r.URL.Query()
	subnetID, vnicID, ip := q.Get("subnetId"), q.Get("vnicId"), q.Get("ipAddress")
	if subnetID == "" && vnicID == "" {
		writeError(w, http.StatusBadRequest, "MissingParameter", missing)
		return
	}
	listPage(e, w, r, st, func(h *heldIP) bool {
		return (subnetID == "" || h.subnetID == subnetID) && (vnicID == "" || (h.vnic != nil && h.vnic.ID == vnicID)) && sameAddress(ip, h.address)
	}, view)
}

// viewPrivateIP is a private IP as core.PrivateIp: a VNIC's its primary
// one, a load balancer's or a reserved one on no VNIC of the caller's.
func viewPrivateIP(h *heldIP) any {
	if v := h.vnic; v != nil {
		return map[string]any{"id": v.privateIPID, "availabilityDomain": v.AvailabilityDomain, "compartmentId": v.CompartmentID,
			"displayName": v.DisplayName, "hostnameLabel": v.HostnameLabel, "ipAddress": v.PrivateIP, "isPrimary": true,
			"subnetId": v.SubnetID, "vnicId": v.ID, "timeCreated": v.TimeCreated}
	}
	state, lifetime := "ASSIGNED", "EPHEMERAL"
	if h.owner == "" {
		state, lifetime = "AVAILABLE", "RESERVED"
	}
	return map[string]any{"id": h.id, "compartmentId": h.compartmentID, "displayName": h.name, "ipAddress": h.address,
		"isPrimary": false, "subnetId": h.subnetID, "timeCreated": h.created, "ipState": state, "lifetime": lifetime}
}

// listIPv6s answers ListIpv6s (GET /ipv6, singular, as oci-go-sdk calls it):
// the IPv6 addresses of a subnet, or of one VNIC (one of subnetId, vnicId
// must be given; core.Ipv6), of an ipAddress when it is given.
func (e *Emulator) listIPv6s(w http.ResponseWriter, r *http.Request) {
	e.listHeld(w, r, e.ipv6s, "One of subnetId or vnicId is required.", viewIPv6)
}

// viewIPv6 is an IPv6 address as core.Ipv6.
func viewIPv6(h *heldIP) any {
	if v := h.vnic; v != nil {
		return map[string]any{"id": v.ipv6ID, "compartmentId": v.CompartmentID, "displayName": v.DisplayName,
			"ipAddress": v.IPv6Addresses[0], "lifecycleState": "AVAILABLE", "subnetId": v.SubnetID, "vnicId": v.ID,
			"timeCreated": v.TimeCreated, "lifetime": "EPHEMERAL", "ipState": "ASSIGNED"}
	}
	state, lifetime := "ASSIGNED", "EPHEMERAL"
	if h.owner == "" {
		state, lifetime = "AVAILABLE", "RESERVED"
	}
	return map[string]any{"id": h.id, "compartmentId": h.compartmentID, "displayName": h.name, "ipAddress": h.address,
		"lifecycleState": "AVAILABLE", "subnetId": h.subnetID, "timeCreated": h.created, "lifetime": lifetime, "ipState": state}
}

// checkAssigned is what CreateNetworkLoadBalancer refuses at once of
// assignedPrivateIpv4 and assignedIpv6 (400 InvalidParameter): an address
// not of its family, of a family nlbIpVersion does not serve, outside its
// subnet (oci-go-sdk v65.110.0: the IPv4 one "has to be in the CIDR range
// of the subnet", the IPv6 one "part of one of the prefixes supported by
// the subnet"), or one of the subnet's first two and last IPv4 addresses,
// which OCI keeps. The code and messages are this emulator's guesses. An
// address something holds is not refused here: the create is accepted and
// fails (newNLB). Call with mu held.
func (e *Emulator) checkAssigned(d *nlbCreateDetails) error {
	sub, ok := e.subnets.Get(d.SubnetID)
	if !ok {
		return nil // checkSubnets refused it
	}
	has4, has6 := families(d.NLBIPVersion)
	if v := d.AssignedPrivateIPv4; v != "" {
		a, err := netip.ParseAddr(v)
		cidr, _ := netip.ParsePrefix(sub.CIDRBlock)
		switch {
		case err != nil || !a.Is4():
			return invalid("assignedPrivateIpv4 %q is not an IPv4 address.", v)
		case !has4:
			return invalid("assignedPrivateIpv4 %s: nlbIpVersion %s serves no IPv4.", v, versionOr(d.NLBIPVersion))
		case !cidr.Contains(a):
			return invalid("assignedPrivateIpv4 %s is not in the CIDR %s of subnet %s.", v, sub.CIDRBlock, sub.ID)
		case a == cidr.Masked().Addr() || a == cidr.Masked().Addr().Next() || !cidr.Contains(a.Next()):
			return invalid("assignedPrivateIpv4 %s is one of the addresses OCI keeps in subnet %s (its first two and its last).", v, sub.ID)
		}
		d.AssignedPrivateIPv4 = a.String()
	}
	if v := d.AssignedIPv6; v != "" {
		a, err := netip.ParseAddr(v)
		switch {
		case err != nil || !a.Is6() || a.Is4In6():
			return invalid("assignedIpv6 %q is not an IPv6 address.", v)
		case !has6:
			return invalid("assignedIpv6 %s: nlbIpVersion %s serves no IPv6.", v, versionOr(d.NLBIPVersion))
		case !inPrefixes(a, sub.IPv6CIDRBlocks):
			return invalid("assignedIpv6 %s is not in an IPv6 prefix of subnet %s %v.", v, sub.ID, sub.IPv6CIDRBlocks)
		}
		d.AssignedIPv6 = a.String() // as OCI shows addresses
	}
	return nil
}

// inPrefixes says whether one of prefixes has a.
func inPrefixes(a netip.Addr, prefixes []string) bool {
	for _, c := range prefixes {
		if p, err := netip.ParsePrefix(c); err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}

// takenAssigned is why a network load balancer asking d's assigned
// addresses cannot take them (something else holds one), nil when it can.
// The work request's error code and message are this emulator's guesses.
// Call with mu held.
func (e *Emulator) takenAssigned(d *nlbCreateDetails) *nlbWRError {
	for _, a := range []string{d.AssignedPrivateIPv4, d.AssignedIPv6} {
		if a == "" {
			continue
		}
		if h := e.holder(a); h != nil {
			return &nlbWRError{Code: "Conflict", Message: fmt.Sprintf("The IP address %s is already in use in subnet %s.", a, d.SubnetID)}
		}
	}
	return nil
}
