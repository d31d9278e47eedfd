package l4proxy

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// proxyHeader is the PROXY protocol header (haproxy's proxy-protocol.txt) that
// tells a backend the client's address src and the address it connected to,
// dst: version 1 is a text line, version 2 binary. Mixed families (a client of
// one family on a listener of the other) cannot be told in one header: they
// are sent as UNKNOWN (v1) or LOCAL (v2), which a backend treats as a direct
// connection.
func proxyHeader(version int, src, dst netip.AddrPort) []byte {
	src, dst = unmap(src), unmap(dst)
	same := src.Addr().Is4() == dst.Addr().Is4() && src.IsValid() && dst.IsValid()
	if version == 1 {
		if !same {
			return []byte("PROXY UNKNOWN\r\n")
		}
		family := "TCP4"
		if !src.Addr().Is4() {
			family = "TCP6"
		}
		return fmt.Appendf(nil, "PROXY %s %s %s %d %d\r\n", family, src.Addr(), dst.Addr(), src.Port(), dst.Port())
	}
	h := []byte("\r\n\r\n\x00\r\nQUIT\n")
	if !same {
		return append(h, 0x20, 0x00, 0x00, 0x00) // v2, LOCAL, UNSPEC, no addresses
	}
	if src.Addr().Is4() {
		h = append(h, 0x21, 0x11, 0x00, 12) // v2 PROXY, TCP over IPv4, 12 bytes
		s4, d4 := src.Addr().As4(), dst.Addr().As4()
		h = append(h, s4[:]...)
		h = append(h, d4[:]...)
	} else {
		h = append(h, 0x21, 0x21, 0x00, 36) // v2 PROXY, TCP over IPv6, 36 bytes
		s16, d16 := src.Addr().As16(), dst.Addr().As16()
		h = append(h, s16[:]...)
		h = append(h, d16[:]...)
	}
	h = binary.BigEndian.AppendUint16(h, src.Port())
	return binary.BigEndian.AppendUint16(h, dst.Port())
}
