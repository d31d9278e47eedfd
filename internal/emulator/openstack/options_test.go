package openstack

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPrivateCIDRMovesTheTenantSubnet(t *testing.T) {
	e := New(Options{PrivateCIDR: "127.0.60.0/24"})
	_, ip := e.AddServer(ServerSpec{Name: "a"})
	assert.True(t, netip.MustParsePrefix("127.0.60.0/24").Contains(netip.MustParseAddr(ip)), "got %s", ip)
	assert.Contains(t, e.CloudConf(), e.Fixture().SubnetID)

	assert.Panics(t, func() { New(Options{PrivateCIDR: "10.0.0.0/16"}) }, "only a /24")
}
