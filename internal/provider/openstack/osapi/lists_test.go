package osapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
)

// TestListsFollowOctaviasPages: Octavia pages every list at 1,000; a pool of
// 2,500 members is read in three pages, with only the fields compared.
func TestListsFollowOctaviasPages(t *testing.T) {
	e, c := emulatorClient(t)
	ctx := t.Context()
	octavia, err := c.OctaviaClient(ctx)
	require.NoError(t, err)

	lb, err := loadbalancers.Create(ctx, octavia, loadbalancers.CreateOpts{Name: "lb", VipNetworkID: e.Fixture().NetworkID}).Extract()
	require.NoError(t, err)
	active := func() {
		require.Eventually(t, func() bool {
			got, err := loadbalancers.Get(ctx, octavia, lb.ID).Extract()
			return err == nil && got.ProvisioningStatus == "ACTIVE"
		}, time.Minute, 10*time.Millisecond, "the load balancer becomes ACTIVE")
	}
	active()
	pool, err := pools.Create(ctx, octavia, pools.CreateOpts{LoadbalancerID: lb.ID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin, Name: "p"}).Extract()
	require.NoError(t, err)
	active()
	var batch []pools.BatchUpdateMemberOpts
	for i := range 2500 {
		monitor := 10256
		batch = append(batch, pools.BatchUpdateMemberOpts{Address: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), ProtocolPort: 30080, MonitorPort: &monitor})
	}
	require.NoError(t, pools.BatchUpdateMembers(ctx, octavia, pool.ID, batch).ExtractErr())
	active()

	e.ResetCalls()
	members, err := listMembers(ctx, octavia, pool.ID)
	require.NoError(t, err)
	require.Len(t, members, 2500)
	assert.Equal(t, "10.1.0.1", members[0].Address)
	assert.Equal(t, 30080, members[0].ProtocolPort)
	require.NotNil(t, members[0].MonitorPort)
	assert.Equal(t, 10256, *members[0].MonitorPort)
	seen := map[string]bool{}
	for _, m := range members {
		seen[m.Address] = true
	}
	assert.Len(t, seen, 2500, "no member twice, none left out")
	pages := 0
	for _, call := range e.Calls() {
		if strings.HasSuffix(call.Route, "/members") && call.Method == http.MethodGet {
			pages += call.Count
		}
	}
	assert.Equal(t, 3, pages)

	all, err := listPools(ctx, octavia, lb.ID)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, "p", all[0].Name)
	assert.Len(t, all[0].Members, 2500)
}

// The create body encoded straight from the options is the body gophercloud
// builds, key for key, for a fully populated load balancer with every option
// set (timeouts, allowed CIDRs, a connection limit, a monitor on its own port).
func TestTheLeanCreateBodyIsGophercloudsBody(t *testing.T) {
	ms, limit, monitorPort := 5000, 100, 32000
	member := PoolMember{Address: "10.0.0.1", ProtocolPort: 30080, SubnetID: "sub-1", MonitorPort: &monitorPort}
	monitor := &MonitorCreate{Name: "m", Type: "HTTP", Delay: 5, Timeout: 3, MaxRetries: 2, MaxRetriesDown: 3, HTTPMethod: "GET", URLPath: "/healthz", ExpectedCodes: "200"}
	pool := &PoolCreate{Name: "p", Protocol: "TCP", LBMethod: "ROUND_ROBIN", Members: []PoolMember{member}, Monitor: monitor}
	listener := func(port int) ListenerCreate {
		return ListenerCreate{Name: "l", Protocol: "TCP", ProtocolPort: port, AllowedCIDRs: []string{"10.0.0.0/8"}, ConnLimit: &limit,
			TimeoutClientData: &ms, TimeoutMemberConnect: &ms, TimeoutMemberData: &ms, TimeoutTCPInspect: &ms, DefaultPool: pool, Tags: []string{"t"}}
	}
	opts := loadBalancerCreateOpts(LoadBalancerCreate{Name: "lb", Description: "d", VipSubnetID: "sub-1", Provider: "amphora", Tags: []string{"t"},
		Listeners: []ListenerCreate{listener(80), listener(443)}})
	require.Len(t, opts.Listeners, 2)
	require.NotNil(t, opts.Listeners[0].DefaultPool.Monitor)

	want, err := opts.ToLoadBalancerCreateMap()
	require.NoError(t, err)
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	got, err := RequestBody(LoadBalancerCreate{Name: "lb", Description: "d", VipSubnetID: "sub-1", Provider: "amphora", Tags: []string{"t"},
		Listeners: []ListenerCreate{listener(80), listener(443)}})
	require.NoError(t, err)
	assert.JSONEq(t, string(wantJSON), got)
}

// TestAListWhoseNextPageNeverEndsIsAnError: a cloud linking a next page for
// ever (the emulator's endless-pages fault) ends both kinds of listing, ours
// and gophercloud's pagers, with an error after maxListPages pages, never
// with what was read so far.
func TestAListWhoseNextPageNeverEndsIsAnError(t *testing.T) {
	e, c := emulatorClient(t)
	ctx := t.Context()
	octavia, err := c.OctaviaClient(ctx)
	require.NoError(t, err)
	_, err = loadbalancers.Create(ctx, octavia, loadbalancers.CreateOpts{Name: "lb", VipNetworkID: e.Fixture().NetworkID}).Extract()
	require.NoError(t, err)

	defer func(n int) { maxListPages = n }(maxListPages)
	maxListPages = 50
	e.InjectFault(core.Fault{Mangle: core.MangleEndlessPages})
	e.ResetCalls()
	lbs, err := allPages(ctx, loadbalancers.List(octavia, loadbalancers.ListOpts{}), loadbalancers.ExtractLoadBalancers)
	require.ErrorContains(t, err, "more than 50 pages")
	assert.Nil(t, lbs)
	_, err = listAll[pools.Pool](ctx, octavia, "loadbalancers", nil, "lbaas", "loadbalancers")
	require.ErrorContains(t, err, "more than 50 pages")
	n := 0
	for _, call := range e.Calls() {
		n += call.Count
	}
	// gophercloud's pager fetches a page before it is counted: one more.
	assert.Equal(t, 2*maxListPages+1, n, "each listing read its page bound and stopped")
}

// emulatorClient is a client of a new emulated OpenStack.
func emulatorClient(t *testing.T) (*emulator.Emulator, *Client) {
	t.Helper()
	e := coretest.Serve(t, emulator.New(emulator.Options{}), nil)
	fx := e.Fixture()
	return e, New(Settings{AuthURL: e.URL() + "/identity/v3", ApplicationCredentialID: fx.AppCredentialID, ApplicationCredentialSecret: fx.AppCredentialSecret})
}
