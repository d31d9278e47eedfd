package netaddr

import (
	"net/netip"
	"testing"
)

func TestLast(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.0/24": "10.0.0.255", "10.1.2.3/16": "10.1.255.255", "192.0.2.7/32": "192.0.2.7",
		"fd00:10::/64": "fd00:10::ffff:ffff:ffff:ffff", "2001:db8::/127": "2001:db8::1",
	} {
		if got := Last(netip.MustParsePrefix(in)); got.String() != want {
			t.Errorf("Last(%s) = %s, want %s", in, got, want)
		}
	}
}
