package openstack

import (
	"encoding/binary"
	"net/netip"
)

// ipam hands out the IPv4 addresses of one subnet's allocation pools.
type ipam struct {
	prefix netip.Prefix
	pools  [][2]uint32 // inclusive ranges
	used   map[uint32]bool
	next   uint32 // where the next search starts
	free   int
}

func ip4(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func addr4(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}

func newIPAM(prefix netip.Prefix, pools [][2]netip.Addr) *ipam {
	a := &ipam{prefix: prefix, used: map[uint32]bool{}}
	for _, p := range pools {
		lo, hi := ip4(p[0]), ip4(p[1])
		a.pools = append(a.pools, [2]uint32{lo, hi})
		a.free += int(hi-lo) + 1
	}
	if len(a.pools) > 0 {
		a.next = a.pools[0][0]
	}
	return a
}

func (a *ipam) inPool(u uint32) bool {
	for _, p := range a.pools {
		if u >= p[0] && u <= p[1] {
			return true
		}
	}
	return false
}

// allocate returns the next free pool address, or false when the pools are full.
func (a *ipam) allocate() (netip.Addr, bool) {
	if a.free <= 0 {
		return netip.Addr{}, false
	}
	// Walk the pools from a.next, wrapping around once.
	for pass := 0; pass < 2; pass++ {
		for _, p := range a.pools {
			lo := p[0]
			if pass == 0 {
				if a.next > p[1] {
					continue
				}
				lo = max(lo, a.next)
			}
			for u := lo; u <= p[1] && u >= lo; u++ {
				if !a.used[u] {
					a.used[u] = true
					a.free--
					a.next = u + 1
					return addr4(u), true
				}
			}
		}
	}
	return netip.Addr{}, false
}

// claim marks a specific address of the subnet as used; false if it is
// already in use. Addresses outside the pools (but inside the subnet) can be
// claimed, as in Neutron.
func (a *ipam) claim(addr netip.Addr) bool {
	u := ip4(addr)
	if a.used[u] {
		return false
	}
	a.used[u] = true
	if a.inPool(u) {
		a.free--
	}
	return true
}

func (a *ipam) release(addr netip.Addr) {
	u := ip4(addr)
	if !a.used[u] {
		return
	}
	delete(a.used, u)
	if a.inPool(u) {
		a.free++
	}
}
