// Package netaddr holds the address arithmetic more than one package needs.
package netaddr

import "net/netip"

// Last is the last address of a prefix (its broadcast address in IPv4).
func Last(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := range 8 {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
