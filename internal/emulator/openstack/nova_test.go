package openstack

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func listAllServers(t *testing.T, ev *env, opts servers.ListOpts) (all []servers.Server, pages int) {
	t.Helper()
	err := servers.List(ev.compute, opts).EachPage(t.Context(), func(_ context.Context, p pagination.Page) (bool, error) {
		s, err := servers.ExtractServers(p)
		if err != nil {
			return false, err
		}
		pages++
		all = append(all, s...)
		return true, nil
	})
	require.NoError(t, err)
	return all, pages
}

func TestServerListPaging(t *testing.T) {
	ev := newEnv(t, Options{})
	const n = 2500
	for i := range n {
		ev.e.AddServer(ServerSpec{Name: fmt.Sprintf("node-%04d", i)})
	}

	all, pages := listAllServers(t, ev, servers.ListOpts{Limit: 1000})
	assert.Equal(t, 3, pages)
	require.Len(t, all, n)
	seen := map[string]bool{}
	for _, s := range all {
		seen[s.ID] = true
	}
	assert.Len(t, seen, n, "every server exactly once")
	assert.Equal(t, "node-2499", all[0].Name, "newest first, as Nova")

	assert.Equal(t, 3, callCount(ev.e, "GET /compute/v2.1/servers/detail", 200))

	// Without a limit Nova still pages at 1000 (the short list is cheaper to decode).
	pages = 0
	err := servers.ListSimple(ev.compute, servers.ListOpts{}).EachPage(t.Context(), func(_ context.Context, p pagination.Page) (bool, error) {
		pages++
		return true, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, pages)

	// More servers than a /24 holds: the overflow subnets keep addresses unique.
	ips := map[string]bool{}
	for _, s := range all {
		for _, a := range s.Addresses["private"].([]any) {
			ips[a.(map[string]any)["addr"].(string)] = true
		}
	}
	assert.Len(t, ips, n)
}

func TestServerListFilters(t *testing.T) {
	ev := newEnv(t, Options{})
	for i := range 30 {
		ev.e.AddServer(ServerSpec{Name: fmt.Sprintf("node-%d", i)})
	}
	id, _ := ev.e.AddServer(ServerSpec{Name: "other", Status: "SHUTOFF"})
	tests := []struct {
		name string
		opts servers.ListOpts
		want int
	}{
		{"an anchored name matches exactly", servers.ListOpts{Name: "^node-1$"}, 1},
		{"a plain name matches as a substring", servers.ListOpts{Name: "node-1"}, 11},
		{"a status filters", servers.ListOpts{Status: "SHUTOFF"}, 1},
		{"no filter lists all", servers.ListOpts{}, 31},
		{"an unknown name matches nothing", servers.ListOpts{Name: "^nope$"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, _ := listAllServers(t, ev, tt.opts)
			assert.Len(t, all, tt.want)
		})
	}
	all, _ := listAllServers(t, ev, servers.ListOpts{Status: "SHUTOFF"})
	require.Len(t, all, 1)
	assert.Equal(t, id, all[0].ID)
}

func TestServerChangesSince(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	kept, _ := ev.e.AddServer(ServerSpec{Name: "kept"})
	gone, _ := ev.e.AddServer(ServerSpec{Name: "gone"})
	ev.clock.Step(time.Minute)
	cut := ev.clock.Now().UTC().Format(time.RFC3339)
	fresh, _ := ev.e.AddServer(ServerSpec{Name: "fresh"})
	require.NoError(t, servers.Delete(ctx, ev.compute, gone).ExtractErr())

	status := func(opts servers.ListOpts) map[string]string {
		all, _ := listAllServers(t, ev, opts)
		out := map[string]string{}
		for _, s := range all {
			out[s.ID] = s.Status
		}
		return out
	}
	assert.Equal(t, map[string]string{kept: "ACTIVE", fresh: "ACTIVE"}, status(servers.ListOpts{}),
		"a plain list leaves the deleted server out")
	assert.Equal(t, map[string]string{gone: "DELETED", fresh: "ACTIVE"}, status(servers.ListOpts{ChangesSince: cut}),
		"changes-since lists what changed since, the deleted server as DELETED")
	_, err := servers.Get(ctx, ev.compute, gone).Extract()
	assert.Equal(t, 404, codeOf(err), "a deleted server is not found")
	assert.Equal(t, 404, codeOf(servers.Delete(ctx, ev.compute, gone).ExtractErr()), "nor deleted twice")
	_, err = servers.List(ev.compute, servers.ListOpts{ChangesSince: "yesterday"}).AllPages(ctx)
	assert.Equal(t, 400, codeOf(err))
}

func TestServerLifecycle(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()

	created, err := servers.Create(ctx, ev.compute, servers.CreateOpts{
		Name: "web-1", FlavorRef: ev.fx.FlavorID, ImageRef: ev.fx.ImageID,
		Networks: []servers.Network{{UUID: ev.fx.NetworkID}},
	}, nil).Extract()
	require.NoError(t, err)

	s, err := servers.Get(ctx, ev.compute, created.ID).Extract()
	require.NoError(t, err)
	assert.Equal(t, "web-1", s.Name)
	assert.Equal(t, "ACTIVE", s.Status)
	assert.Equal(t, "nova", s.AvailabilityZone)
	assert.Equal(t, ev.fx.ProjectID, s.TenantID)
	assert.Equal(t, "m1.small", s.Flavor["original_name"], "microversion 2.47 embeds the flavor")
	assert.NotContains(t, s.Flavor, "id")
	assert.Equal(t, ev.fx.ImageID, s.Image["id"])
	addrs := s.Addresses["private"].([]any)
	require.Len(t, addrs, 1)
	assert.Equal(t, "fixed", addrs[0].(map[string]any)["OS-EXT-IPS:type"])

	// The server's port is in Neutron.
	ps := listAll(t, ports.List(ev.network, ports.ListOpts{DeviceID: created.ID}), ports.ExtractPorts)
	require.Len(t, ps, 1)
	assert.Equal(t, "compute:nova", ps[0].DeviceOwner)
	assert.Equal(t, addrs[0].(map[string]any)["addr"], ps[0].FixedIPs[0].IPAddress)

	require.NoError(t, servers.Stop(ctx, ev.compute, created.ID).ExtractErr())
	s, err = servers.Get(ctx, ev.compute, created.ID).Extract()
	require.NoError(t, err)
	assert.Equal(t, "SHUTOFF", s.Status)
	assert.Equal(t, 409, codeOf(servers.Stop(ctx, ev.compute, created.ID).ExtractErr()), "stopping a stopped server conflicts")
	require.NoError(t, servers.Start(ctx, ev.compute, created.ID).ExtractErr())
	s, err = servers.Get(ctx, ev.compute, created.ID).Extract()
	require.NoError(t, err)
	assert.Equal(t, "ACTIVE", s.Status)

	require.NoError(t, servers.Delete(ctx, ev.compute, created.ID).ExtractErr())
	_, err = servers.Get(ctx, ev.compute, created.ID).Extract()
	assert.Equal(t, 404, codeOf(err))
	_, err = ports.Get(ctx, ev.network, ps[0].ID).Extract()
	assert.Equal(t, 404, codeOf(err), "the server's port goes with it")

	assert.Equal(t, 1, callCount(ev.e, "GET /compute/v2.1/servers/{id}", 404))
	assert.Equal(t, 1, callCount(ev.e, "POST /compute/v2.1/servers", 202))
	assert.Equal(t, 2, callCount(ev.e, "POST /compute/v2.1/servers/{id}/action", 202))
	assert.Equal(t, 1, callCount(ev.e, "POST /compute/v2.1/servers/{id}/action", 409))
}

func TestServerCreateValidation(t *testing.T) {
	ev := newEnv(t, Options{})
	tests := []struct {
		name string
		opts servers.CreateOpts
	}{
		{"an unknown flavor", servers.CreateOpts{Name: "a", FlavorRef: "99", ImageRef: ev.fx.ImageID}},
		{"an unknown image", servers.CreateOpts{Name: "a", FlavorRef: ev.fx.FlavorID, ImageRef: "nope"}},
		{"an unknown network", servers.CreateOpts{Name: "a", FlavorRef: ev.fx.FlavorID, ImageRef: ev.fx.ImageID,
			Networks: []servers.Network{{UUID: "nope"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is a bad request", func(t *testing.T) {
			_, err := servers.Create(t.Context(), ev.compute, tt.opts, nil).Extract()
			assert.Equal(t, 400, codeOf(err))
		})
	}
}

func TestDirectServerState(t *testing.T) {
	ev := newEnv(t, Options{})
	ev.e.ResetCalls()
	id, ip := ev.e.AddServer(ServerSpec{Name: "n1"})
	assert.Equal(t, "10.0.0.2", ip)
	require.NoError(t, ev.e.SetServerStatus(id, "ERROR"))
	s, err := servers.Get(t.Context(), ev.compute, id).Extract()
	require.NoError(t, err)
	assert.Equal(t, "ERROR", s.Status)
	require.NoError(t, ev.e.RemoveServer(id))
	require.ErrorIs(t, ev.e.RemoveServer(id), ErrNotFound)
	require.ErrorIs(t, ev.e.SetServerStatus(id, "ACTIVE"), ErrNotFound)
	_, ip = ev.e.AddServer(ServerSpec{Name: "n2"})
	assert.Equal(t, "10.0.0.3", ip, "addresses are not reused at once")
	assert.Equal(t, []CallCount{{Service: "compute", Method: "GET", Route: "GET /compute/v2.1/servers/{id}", Code: 200, Count: 1}},
		ev.e.Calls(), "direct state is not counted")
}

func TestConcurrentUse(t *testing.T) {
	ev := newEnv(t, Options{})
	for i := range 100 {
		ev.e.AddServer(ServerSpec{Name: fmt.Sprintf("n-%d", i)})
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				if w%2 == 0 {
					id, _ := ev.e.AddServer(ServerSpec{})
					_ = ev.e.RemoveServer(id)
					continue
				}
				_, err := servers.List(ev.compute, servers.ListOpts{Limit: 40}).AllPages(t.Context())
				assert.NoError(t, err, i)
			}
		}()
	}
	wg.Wait()
}
