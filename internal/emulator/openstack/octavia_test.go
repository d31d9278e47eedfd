package openstack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lifecycleDelay is the provisioning delay of TestLoadBalancerLifecycle.
const lifecycleDelay = 2 * time.Second

// TestLoadBalancerLifecycle drives one load balancer through Octavia's
// states with gophercloud: created with its listeners, pending then ACTIVE,
// given a pool, members and a monitor, listed by tags, deleted by cascade.
func TestLoadBalancerLifecycle(t *testing.T) {
	ev := newEnv(t, Options{ProvisioningDelay: lifecycleDelay})
	lb, fipID := createLBBehindFloatingIP(t, ev)
	checkPendingConflicts(t, ev, lb.ID)
	l80 := checkActiveListener(t, ev, lb.ID)
	checkPoolMembersAndMonitor(t, ev, lb.ID, l80.ID)
	checkTagFilters(t, ev)
	checkCascadeDelete(t, ev, lb, l80.ID, fipID)
}

// createLBBehindFloatingIP creates a load balancer with two listeners, and
// a floating IP on its VIP: the VIP is a real Neutron port.
func createLBBehindFloatingIP(t *testing.T, ev *env) (*loadbalancers.LoadBalancer, string) {
	ctx := t.Context()
	lb, err := loadbalancers.Create(ctx, ev.lb, loadbalancers.CreateOpts{
		Name: "kube_service_a", VipSubnetID: ev.fx.SubnetID, Tags: []string{"kube_service_a", "cluster-x"},
		Listeners: []listeners.CreateOpts{
			{Name: "l-80", Protocol: listeners.ProtocolTCP, ProtocolPort: 80},
			{Name: "l-443", Protocol: listeners.ProtocolTCP, ProtocolPort: 443},
		},
	}).Extract()
	require.NoError(t, err)
	assert.Equal(t, "PENDING_CREATE", lb.ProvisioningStatus)
	assert.Equal(t, "OFFLINE", lb.OperatingStatus)
	assert.Len(t, lb.Listeners, 2)
	assert.NotEmpty(t, lb.VipAddress)

	vip, err := ports.Get(ctx, ev.network, lb.VipPortID).Extract()
	require.NoError(t, err)
	assert.Equal(t, "Octavia", vip.DeviceOwner)
	assert.Equal(t, lb.VipAddress, vip.FixedIPs[0].IPAddress)
	fip, err := floatingips.Create(ctx, ev.network, floatingips.CreateOpts{FloatingNetworkID: ev.fx.PublicNetworkID,
		PortID: lb.VipPortID}).Extract()
	require.NoError(t, err)
	return lb, fip.ID
}

// checkPendingConflicts: while pending, every mutation of the load
// balancer and its children conflicts; after the delay it is ACTIVE.
func checkPendingConflicts(t *testing.T, ev *env, lbID string) {
	ctx := t.Context()
	_, err := listeners.Create(ctx, ev.lb, listeners.CreateOpts{LoadbalancerID: lbID, Protocol: listeners.ProtocolTCP, ProtocolPort: 8080}).Extract()
	assert.Equal(t, 409, codeOf(err))
	ev.clock.Step(lifecycleDelay / 2)
	name := "renamed"
	_, err = loadbalancers.Update(ctx, ev.lb, lbID, loadbalancers.UpdateOpts{Name: &name}).Extract()
	assert.Equal(t, 409, codeOf(err))

	ev.clock.Step(lifecycleDelay / 2)
	lb, err := loadbalancers.Get(ctx, ev.lb, lbID).Extract()
	require.NoError(t, err)
	assert.Equal(t, "ACTIVE", lb.ProvisioningStatus)
	assert.Equal(t, "ONLINE", lb.OperatingStatus)
}

// checkActiveListener finds the port-80 listener by a filtered list, with
// Octavia's defaults, and a duplicate protocol_port refused.
func checkActiveListener(t *testing.T, ev *env, lbID string) listeners.Listener {
	ctx := t.Context()
	l80s := listAll(t, listeners.List(ev.lb, listeners.ListOpts{LoadbalancerID: lbID, ProtocolPort: 80}), listeners.ExtractListeners)
	require.Len(t, l80s, 1)
	l80 := l80s[0]
	assert.Equal(t, "ACTIVE", l80.ProvisioningStatus)
	assert.Equal(t, -1, l80.ConnLimit)
	assert.Equal(t, 50000, l80.TimeoutClientData)
	assert.Equal(t, 5000, l80.TimeoutMemberConnect)

	_, err := listeners.Create(ctx, ev.lb, listeners.CreateOpts{LoadbalancerID: lbID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80}).Extract()
	assert.Equal(t, 409, codeOf(err), "a duplicate protocol_port")
	return l80
}

// checkPoolMembersAndMonitor gives the listener a pool, then members by
// batch (updated, created and deleted by address), then a monitor.
func checkPoolMembersAndMonitor(t *testing.T, ev *env, lbID, listenerID string) {
	ctx := t.Context()
	pool, err := pools.Create(ctx, ev.lb, pools.CreateOpts{ListenerID: listenerID, Protocol: pools.ProtocolTCP,
		LBMethod: pools.LBMethodRoundRobin, Name: "pool-80"}).Extract()
	require.NoError(t, err)
	assert.Equal(t, "PENDING_CREATE", pool.ProvisioningStatus)
	lb, err := loadbalancers.Get(ctx, ev.lb, lbID).Extract()
	require.NoError(t, err)
	assert.Equal(t, "PENDING_UPDATE", lb.ProvisioningStatus)
	err = pools.BatchUpdateMembers(ctx, ev.lb, pool.ID, []pools.BatchUpdateMemberOpts{{Address: "10.0.0.5", ProtocolPort: 30080}}).ExtractErr()
	assert.Equal(t, 409, codeOf(err), "the pool is pending")
	ev.clock.Step(lifecycleDelay)

	l, err := listeners.Get(ctx, ev.lb, listenerID).Extract()
	require.NoError(t, err)
	assert.Equal(t, pool.ID, l.DefaultPoolID)

	checkBatchMembers(t, ev, pool.ID)
	mon, err := monitors.Create(ctx, ev.lb, monitors.CreateOpts{PoolID: pool.ID, Type: monitors.TypeTCP, Delay: 10, Timeout: 5, MaxRetries: 3}).Extract()
	require.NoError(t, err)
	assert.Equal(t, 3, mon.MaxRetriesDown)
	ev.clock.Step(lifecycleDelay)
	_, err = monitors.Create(ctx, ev.lb, monitors.CreateOpts{PoolID: pool.ID, Type: monitors.TypeTCP, Delay: 10, Timeout: 5, MaxRetries: 3}).Extract()
	assert.Equal(t, 409, codeOf(err), "one monitor per pool")
	p, err := pools.Get(ctx, ev.lb, pool.ID).Extract()
	require.NoError(t, err)
	assert.Equal(t, mon.ID, p.MonitorID)
	assert.Len(t, p.Members, 2)
}

// checkBatchMembers replaces a pool's members twice: the second batch
// deletes one, updates one and creates one, each pending until the delay.
func checkBatchMembers(t *testing.T, ev *env, poolID string) {
	ctx := t.Context()
	w := 5
	require.NoError(t, pools.BatchUpdateMembers(ctx, ev.lb, poolID, []pools.BatchUpdateMemberOpts{
		{Address: "10.0.0.5", ProtocolPort: 30080}, {Address: "10.0.0.6", ProtocolPort: 30080},
	}).ExtractErr())
	ev.clock.Step(lifecycleDelay)
	require.NoError(t, pools.BatchUpdateMembers(ctx, ev.lb, poolID, []pools.BatchUpdateMemberOpts{
		{Address: "10.0.0.6", ProtocolPort: 30080, Weight: &w}, {Address: "10.0.0.7", ProtocolPort: 30080},
	}).ExtractErr())
	status := map[string]string{}
	for _, m := range poolMembers(t, ev, poolID) {
		status[m.Address] = m.ProvisioningStatus
	}
	assert.Equal(t, map[string]string{"10.0.0.5": "PENDING_DELETE", "10.0.0.6": "PENDING_UPDATE", "10.0.0.7": "PENDING_CREATE"}, status)
	ev.clock.Step(lifecycleDelay)
	members := poolMembers(t, ev, poolID)
	require.Len(t, members, 2)
	for _, m := range members {
		assert.Equal(t, "ACTIVE", m.ProvisioningStatus)
		assert.Equal(t, "NO_MONITOR", m.OperatingStatus)
		if m.Address == "10.0.0.6" {
			assert.Equal(t, 5, m.Weight)
		}
	}
}

// poolMembers lists a pool's members.
func poolMembers(t *testing.T, ev *env, poolID string) []pools.Member {
	members := listAll(t, pools.ListMembers(ev.lb, poolID, nil), pools.ExtractMembers)
	return members
}

// checkTagFilters: the tags filter keeps the load balancers with all the
// tags given.
func checkTagFilters(t *testing.T, ev *env) {
	for _, c := range []struct {
		tags []string
		n    int
	}{{[]string{"kube_service_a", "cluster-x"}, 1}, {[]string{"kube_service_a", "other"}, 0}} {
		lbs := listAll(t, loadbalancers.List(ev.lb, loadbalancers.ListOpts{Tags: c.tags}), loadbalancers.ExtractLoadBalancers)
		assert.Len(t, lbs, c.n, c.tags)
	}
}

// checkCascadeDelete: without cascade a load balancer with children is
// refused; with it, it goes with its children and VIP port, the floating IP
// released.
func checkCascadeDelete(t *testing.T, ev *env, lb *loadbalancers.LoadBalancer, listenerID, fipID string) {
	ctx := t.Context()
	err := loadbalancers.Delete(ctx, ev.lb, lb.ID, nil).ExtractErr()
	assert.Equal(t, 400, codeOf(err))
	require.NoError(t, loadbalancers.Delete(ctx, ev.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
	got, err := loadbalancers.Get(ctx, ev.lb, lb.ID).Extract()
	require.NoError(t, err)
	assert.Equal(t, "PENDING_DELETE", got.ProvisioningStatus)
	ev.clock.Step(lifecycleDelay)
	_, err = loadbalancers.Get(ctx, ev.lb, lb.ID).Extract()
	assert.Equal(t, 404, codeOf(err))
	_, err = listeners.Get(ctx, ev.lb, listenerID).Extract()
	assert.Equal(t, 404, codeOf(err))
	_, err = ports.Get(ctx, ev.network, lb.VipPortID).Extract()
	assert.Equal(t, 404, codeOf(err), "the VIP port goes with the load balancer")
	fip, err := floatingips.Get(ctx, ev.network, fipID).Extract()
	require.NoError(t, err)
	assert.Empty(t, fip.PortID, "the floating IP is released from the VIP")
}

func TestLoadBalancerGraphWithPools(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	lb, err := loadbalancers.Create(ctx, ev.lb, loadbalancers.CreateOpts{
		Name: "graph", VipNetworkID: ev.fx.NetworkID,
		Listeners: []listeners.CreateOpts{{
			Protocol: listeners.ProtocolTCP, ProtocolPort: 80,
			DefaultPool: &pools.CreateOpts{Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin,
				Members: []pools.CreateMemberOpts{{Address: "10.0.0.9", ProtocolPort: 31000}},
				Monitor: monitors.CreateOpts{Type: monitors.TypeHTTP, Delay: 5, Timeout: 3, MaxRetries: 2, HTTPVersion: "1.1"}},
		}},
	}).Extract()
	require.NoError(t, err)
	// With no provisioning delay the next request sees everything ACTIVE.
	ps := listAll(t, pools.List(ev.lb, pools.ListOpts{LoadbalancerID: lb.ID}), pools.ExtractPools)
	require.Len(t, ps, 1)
	assert.Equal(t, "ACTIVE", ps[0].ProvisioningStatus)
	assert.Len(t, ps[0].Members, 1)
	mon, err := monitors.Get(ctx, ev.lb, ps[0].MonitorID).Extract()
	require.NoError(t, err)
	assert.Equal(t, "/", mon.URLPath)
	assert.Equal(t, "1.1", mon.HTTPVersion)
	m, err := pools.GetMember(ctx, ev.lb, ps[0].ID, ps[0].Members[0].ID).Extract()
	require.NoError(t, err)
	assert.Equal(t, "ONLINE", m.OperatingStatus, "monitored members are healthy")

	require.NoError(t, pools.Delete(ctx, ev.lb, ps[0].ID).ExtractErr())
	_, err = monitors.Get(ctx, ev.lb, mon.ID).Extract()
	assert.Equal(t, 404, codeOf(err), "a pool takes its monitor along")
	l, err := listeners.Get(ctx, ev.lb, lb.Listeners[0].ID).Extract()
	require.NoError(t, err)
	assert.Empty(t, l.DefaultPoolID)
}

func TestLoadBalancerInError(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	lb, err := loadbalancers.Create(ctx, ev.lb, loadbalancers.CreateOpts{VipSubnetID: ev.fx.SubnetID}).Extract()
	require.NoError(t, err)
	require.NoError(t, ev.e.SetLoadBalancerError(lb.ID))
	_, err = listeners.Create(ctx, ev.lb, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolUDP, ProtocolPort: 53}).Extract()
	assert.Equal(t, 409, codeOf(err))
	require.NoError(t, loadbalancers.Delete(ctx, ev.lb, lb.ID, nil).ExtractErr())
	_, err = loadbalancers.Get(ctx, ev.lb, lb.ID).Extract()
	assert.Equal(t, 404, codeOf(err))
	require.ErrorIs(t, ev.e.SetLoadBalancerError(lb.ID), ErrNotFound)
}

// A member's address and port are its pool's once: a second is refused
// (Octavia's 409), one by one and inside a graph; a pool's listing pages
// its own members, 1,000 at most, in the order they were created.
func TestAPoolsMembersAreUniqueAndListedByPage(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	graph := func(members ...pools.CreateMemberOpts) error {
		_, err := loadbalancers.Create(ctx, ev.lb, loadbalancers.CreateOpts{
			Name: "graph", VipNetworkID: ev.fx.NetworkID,
			Listeners: []listeners.CreateOpts{{Protocol: listeners.ProtocolTCP, ProtocolPort: 80,
				DefaultPool: &pools.CreateOpts{Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin, Members: members}}},
		}).Extract()
		return err
	}
	twice := pools.CreateMemberOpts{Address: "10.0.0.9", ProtocolPort: 31000}
	assert.Equal(t, 409, codeOf(graph(twice, pools.CreateMemberOpts{Address: "10.0.0.8", ProtocolPort: 31000}, twice)))

	many := make([]pools.CreateMemberOpts, 2500)
	for i := range many {
		many[i] = pools.CreateMemberOpts{Address: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), ProtocolPort: 31000}
	}
	require.NoError(t, graph(many...))
	require.NoError(t, graph(pools.CreateMemberOpts{Address: "10.0.0.9", ProtocolPort: 31000}), "another pool's members are not this one's")
	ps := listAll(t, pools.List(ev.lb, pools.ListOpts{}), pools.ExtractPools)
	require.Len(t, ps, 2)
	big := ps[0]
	_, err := pools.CreateMember(ctx, ev.lb, big.ID, pools.CreateMemberOpts{Address: "10.1.0.1", ProtocolPort: 31000}).Extract()
	assert.Equal(t, 409, codeOf(err))

	pages := 0
	var addrs []string
	require.NoError(t, pools.ListMembers(ev.lb, big.ID, nil).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		ms, err := pools.ExtractMembers(p)
		pages++
		for _, m := range ms {
			addrs = append(addrs, m.Address)
		}
		return true, err
	}))
	assert.Equal(t, 3, pages, "Octavia's pages of 1,000")
	require.Len(t, addrs, len(many))
	for i, m := range many {
		require.Equal(t, m.Address, addrs[i], "member %d", i)
	}
}
