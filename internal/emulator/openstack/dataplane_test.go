package openstack

import (
	"testing"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServeTrafficNeedsLoopbackAddresses(t *testing.T) {
	e := New(Options{ServeTraffic: true, PrivateCIDR: "10.0.0.0/24", PublicCIDR: "127.0.72.0/24"})
	err := e.Start("127.0.0.1:0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PrivateCIDR")
	assert.NotContains(t, err.Error(), "PublicCIDR")
}

func TestLoadBalancersCarryTrafficOnLoopback(t *testing.T) {
	ev := newEnv(t, Options{ServeTraffic: true, PrivateCIDR: "127.0.73.0/24", PublicCIDR: "127.0.74.0/24"})
	ctx := t.Context()
	coretest.Answerer(t, "127.0.73.50:31080", "member-a")
	lb, err := loadbalancers.Create(ctx, ev.lb, loadbalancers.CreateOpts{
		Name: "web", VipSubnetID: ev.fx.SubnetID,
		Listeners: []listeners.CreateOpts{{
			Protocol: listeners.ProtocolTCP, ProtocolPort: 8080,
			DefaultPool: &pools.CreateOpts{Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin,
				Members: []pools.CreateMemberOpts{{Address: "127.0.73.50", ProtocolPort: 31080}}},
		}},
	}).Extract()
	require.NoError(t, err)
	fip, err := floatingips.Create(ctx, ev.network, floatingips.CreateOpts{FloatingNetworkID: ev.fx.PublicNetworkID, PortID: lb.VipPortID}).Extract()
	require.NoError(t, err)

	for _, addr := range []string{lb.VipAddress + ":8080", fip.FloatingIP + ":8080"} {
		var got string
		require.Eventually(t, func() bool {
			got, err = coretest.Ask(addr)
			return err == nil
		}, 10*time.Second, 50*time.Millisecond, "%s answers: %v", addr, err)
		assert.Equal(t, "member-a\n", got, "through %s", addr)
	}

	// A new member set reaches the data plane; a deleted load balancer stops listening.
	coretest.Answerer(t, "127.0.73.51:31080", "member-b")
	ps := listAll(t, pools.List(ev.lb, pools.ListOpts{LoadbalancerID: lb.ID}), pools.ExtractPools)
	require.NoError(t, pools.BatchUpdateMembers(ctx, ev.lb, ps[0].ID, []pools.BatchUpdateMemberOpts{{Address: "127.0.73.51", ProtocolPort: 31080}}).ExtractErr())
	require.Eventually(t, func() bool {
		got, err := coretest.Ask(fip.FloatingIP + ":8080")
		return err == nil && got == "member-b\n"
	}, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, loadbalancers.Delete(ctx, ev.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
	require.Eventually(t, func() bool {
		_, err := coretest.Ask(lb.VipAddress + ":8080")
		return err != nil
	}, 10*time.Second, 50*time.Millisecond)
	assert.Empty(t, ev.e.DataPlaneErrors())
}
