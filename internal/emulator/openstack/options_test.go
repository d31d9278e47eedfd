package openstack

import (
	"net/netip"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrivateCIDRMovesTheTenantSubnet(t *testing.T) {
	e := New(Options{PrivateCIDR: "127.0.60.0/24"})
	_, ip := e.AddServer(ServerSpec{Name: "a"})
	assert.True(t, netip.MustParsePrefix("127.0.60.0/24").Contains(netip.MustParseAddr(ip)), "got %s", ip)
	assert.Contains(t, e.CloudConf(), e.Fixture().SubnetID)

	for _, bad := range []string{"10.0.0.0/25", "fd00::/64", "10.0.0.0/7", "nonsense"} {
		assert.Panics(t, func() { New(Options{PrivateCIDR: bad}) }, bad)
		assert.Panics(t, func() { New(Options{PublicCIDR: bad}) }, bad)
	}
}

// The benchmark needs thousands of servers, VIPs and floating IPs.
func TestBigSubnets(t *testing.T) {
	ev := newEnv(t, Options{PrivateCIDR: "10.0.0.0/16", PublicCIDR: "198.18.0.0/16"})
	priv := netip.MustParsePrefix("10.0.0.0/16")
	for i := range 600 {
		_, ip := ev.e.AddServer(ServerSpec{})
		require.True(t, priv.Contains(netip.MustParseAddr(ip)), "server %d got %s", i, ip)
	}
	pub := netip.MustParsePrefix("198.18.0.0/16")
	for i := range 300 {
		fip, err := floatingips.Create(t.Context(), ev.network, floatingips.CreateOpts{FloatingNetworkID: ev.fx.PublicNetworkID}).Extract()
		require.NoError(t, err, "floating IP %d", i)
		require.True(t, pub.Contains(netip.MustParseAddr(fip.FloatingIP)), "floating IP %d is %s", i, fip.FloatingIP)
	}
}
