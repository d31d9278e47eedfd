package l4proxy

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The headers of haproxy's proxy-protocol.txt, byte for byte.
func TestPROXYHeaders(t *testing.T) {
	src4, dst4 := netip.MustParseAddrPort("192.0.2.10:51234"), netip.MustParseAddrPort("127.0.0.5:80")
	assert.Equal(t, "PROXY TCP4 192.0.2.10 127.0.0.5 51234 80\r\n", string(proxyHeader(1, src4, dst4)))
	src6, dst6 := netip.MustParseAddrPort("[2001:db8::1]:40000"), netip.MustParseAddrPort("[::1]:443")
	assert.Equal(t, "PROXY TCP6 2001:db8::1 ::1 40000 443\r\n", string(proxyHeader(1, src6, dst6)))
	assert.Equal(t, "PROXY UNKNOWN\r\n", string(proxyHeader(1, src4, dst6)), "mixed families cannot be told")
	mapped := netip.MustParseAddrPort("[::ffff:192.0.2.10]:51234")
	assert.Equal(t, "PROXY TCP4 192.0.2.10 127.0.0.5 51234 80\r\n", string(proxyHeader(1, mapped, dst4)), "IPv4-mapped is IPv4")

	sig := "\r\n\r\n\x00\r\nQUIT\n"
	assert.Equal(t, sig+"\x21\x11\x00\x0c"+"\xc0\x00\x02\x0a"+"\x7f\x00\x00\x05"+"\xc8\x22"+"\x00\x50", string(proxyHeader(2, src4, dst4)))
	v6 := proxyHeader(2, src6, dst6)
	assert.Equal(t, sig+"\x21\x21\x00\x24", string(v6[:16]))
	assert.Len(t, v6, 16+36)
	assert.Equal(t, sig+"\x20\x00\x00\x00", string(proxyHeader(2, src4, dst6)), "LOCAL for mixed families")
}
