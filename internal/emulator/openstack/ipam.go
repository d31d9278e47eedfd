package openstack

import (
	"encoding/binary"
	"math/big"
	"net/netip"
)

// ipam hands out the addresses of one subnet's allocation pools, IPv4 or
// IPv6.
type ipam struct {
	prefix netip.Prefix
	pools  [][2]netip.Addr // inclusive ranges
	used   map[netip.Addr]bool
	next   netip.Addr // where the next search starts
	free   uint64     // pool addresses not in use (saturated at maxFree)
}

// maxFree: an IPv6 pool has more addresses than anyone counts.
const maxFree = 1 << 62

func ip4(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func addr4(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}

// rangeSize is how many addresses lo..hi holds, saturated at maxFree.
func rangeSize(lo, hi netip.Addr) uint64 {
	if lo.Is4() {
		return uint64(ip4(hi)-ip4(lo)) + 1
	}
	l, h := lo.As16(), hi.As16()
	n := new(big.Int).Sub(new(big.Int).SetBytes(h[:]), new(big.Int).SetBytes(l[:]))
	n.Add(n, big.NewInt(1))
	if !n.IsUint64() || n.Uint64() > maxFree {
		return maxFree
	}
	return n.Uint64()
}

func newIPAM(prefix netip.Prefix, pools [][2]netip.Addr) *ipam {
	a := &ipam{prefix: prefix, used: map[netip.Addr]bool{}}
	for _, p := range pools {
		a.pools = append(a.pools, p)
		a.free = min(maxFree, a.free+rangeSize(p[0], p[1]))
	}
	if len(a.pools) > 0 {
		a.next = a.pools[0][0]
	}
	return a
}

func (a *ipam) inPool(u netip.Addr) bool {
	for _, p := range a.pools {
		if u.Compare(p[0]) >= 0 && u.Compare(p[1]) <= 0 {
			return true
		}
	}
	return false
}

// allocate returns the next free pool address, or false when the pools are full.
func (a *ipam) allocate() (netip.Addr, bool) {
	if a.free == 0 {
		return netip.Addr{}, false
	}
	// Walk the pools from a.next, wrapping around once. Among len(used)+1
	// addresses in a row one is free, so no walk is longer than that.
	for pass := 0; pass < 2; pass++ {
		for _, p := range a.pools {
			lo := p[0]
			if pass == 0 {
				if a.next.Compare(p[1]) > 0 {
					continue
				}
				if a.next.Compare(lo) > 0 {
					lo = a.next
				}
			}
			steps := 0
			for u := lo; u.IsValid() && u.Compare(p[1]) <= 0 && steps <= len(a.used); u, steps = u.Next(), steps+1 {
				if !a.used[u] {
					a.used[u] = true
					a.free--
					a.next = u.Next()
					return u, true
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
	if a.used[addr] {
		return false
	}
	a.used[addr] = true
	if a.inPool(addr) && a.free < maxFree {
		a.free--
	}
	return true
}

func (a *ipam) release(addr netip.Addr) {
	if !a.used[addr] {
		return
	}
	delete(a.used, addr)
	if a.inPool(addr) && a.free < maxFree {
		a.free++
	}
}
