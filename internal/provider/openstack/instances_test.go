package openstack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

func TestServerID(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        string
	}{
		{"no providerID means look up by name", "", "", ""},
		{"the usual form", "openstack:///0b7f0c2e-1111-2222-3333-444455556666", "0b7f0c2e-1111-2222-3333-444455556666", ""},
		{"the regional form", "openstack://RegionOne/0b7f0c2e-1111-2222-3333-444455556666", "0b7f0c2e-1111-2222-3333-444455556666", ""},
		{"another cloud's providerID is an error, never a miss", "aws:///us-east-1a/i-0123", "", "does not belong to OpenStack"},
		{"a providerID without a server is malformed", "openstack:///", "", "malformed"},
		{"a providerID with extra parts is malformed", "openstack://r/a/b", "", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := serverID(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNodeAddresses(t *testing.T) {
	addrs := map[string][]osapi.ServerAddress{
		"private": {{Addr: "10.0.0.5", Version: 4, Type: "fixed"}, {Addr: "fd00::5", Version: 6, Type: "fixed"}, {Addr: "203.0.113.9", Version: 4, Type: "floating"}},
		"storage": {{Addr: "192.168.7.5", Version: 4, Type: "fixed"}},
		"public":  {{Addr: "198.51.100.5", Version: 4, Type: "fixed"}},
	}
	tests := []struct {
		name string
		n    Networking
		want []v1.NodeAddress
	}{
		{"fixed IPs are internal, floating ones external, networks in name order", Networking{},
			[]v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeInternalIP, Address: "fd00::5"}, {Type: v1.NodeExternalIP, Address: "203.0.113.9"},
				{Type: v1.NodeInternalIP, Address: "198.51.100.5"}, {Type: v1.NodeInternalIP, Address: "192.168.7.5"},
				{Type: v1.NodeHostName, Address: "node-1"}}},
		{"public and internal network names choose", Networking{PublicNetworkName: []string{"public"}, InternalNetworkName: []string{"private"}, IPv6SupportDisabled: true},
			[]v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeExternalIP, Address: "203.0.113.9"},
				{Type: v1.NodeExternalIP, Address: "198.51.100.5"},
				{Type: v1.NodeHostName, Address: "node-1"}}},
		{"address-sort-order puts its CIDRs first", Networking{AddressSortOrder: "192.168.0.0/16, 198.51.100.0/24", IPv6SupportDisabled: true},
			[]v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: "192.168.7.5"}, {Type: v1.NodeInternalIP, Address: "198.51.100.5"},
				{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeExternalIP, Address: "203.0.113.9"},
				{Type: v1.NodeHostName, Address: "node-1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, nodeAddresses("node-1", addrs, nil, tt.n))
		})
	}
}

// novaStub is a Keystone and Nova that answer GET /servers/{id} with a chosen
// status code, reached through the real gophercloud client and the cloudapi
// transport. It exists to pin the mapping of answers to "gone" and "error".
func novaStub(t *testing.T, serverStatus *atomic.Int32) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v3/auth/tokens", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Subject-Token", "tok")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token":{"expires_at":"2099-01-01T00:00:00.000000Z","catalog":[
{"type":"compute","name":"nova","endpoints":[{"interface":"public","region":"RegionOne","region_id":"RegionOne","url":"%[1]s/compute/v2.1"}]},
{"type":"network","name":"neutron","endpoints":[{"interface":"public","region":"RegionOne","region_id":"RegionOne","url":"%[1]s/network"}]}]}}`, srv.URL)
	})
	mux.HandleFunc("GET /compute/v2.1/servers/detail", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"servers": []any{}})
	})
	mux.HandleFunc("GET /compute/v2.1/servers/{id}", func(w http.ResponseWriter, r *http.Request) {
		code := int(serverStatus.Load())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if code == http.StatusOK {
			fmt.Fprintf(w, `{"server":{"id":%q,"name":"node-x","status":"SHUTOFF","flavor":{"original_name":"m1.small"},"OS-EXT-AZ:availability_zone":"nova","addresses":{}}}`, r.PathValue("id"))
			return
		}
		fmt.Fprintf(w, `{"itemNotFound":{"code":%d,"message":"nope"}}`, code)
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestNeverGoneOnDoubt(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}, Spec: v1.NodeSpec{ProviderID: "openstack:///0b7f0c2e-1111-2222-3333-444455556666"}}
	tests := []struct {
		name       string
		status     int
		wantExists bool
		wantErr    bool
	}{
		{"404 from Nova means gone", http.StatusNotFound, false, false},
		{"a server that answers exists", http.StatusOK, true, false},
		{"500 is an error, not gone", http.StatusInternalServerError, false, true},
		{"403 is an error, not gone", http.StatusForbidden, false, true},
		{"400 is an error, not gone", http.StatusBadRequest, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var status atomic.Int32
			status.Store(int32(tt.status))
			srv := novaStub(t, &status)
			cfg, err := Read(strings.NewReader("[Global]\nauth-url=" + srv.URL + "/v3\napplication-credential-id=i\napplication-credential-secret=s\nregion=RegionOne\n"))
			require.NoError(t, err)
			c, err := New(cfg)
			require.NoError(t, err)
			exists, err := c.InstanceExists(t.Context(), node)
			if tt.wantErr {
				require.Error(t, err)
				assert.NotErrorIs(t, err, cloudprovider.InstanceNotFound)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantExists, exists)
			if tt.wantExists {
				shut, err := c.InstanceShutdown(t.Context(), node)
				require.NoError(t, err)
				assert.True(t, shut, "SHUTOFF is shut down")
				md, err := c.InstanceMetadata(t.Context(), node)
				require.NoError(t, err)
				assert.Equal(t, "openstack:///0b7f0c2e-1111-2222-3333-444455556666", md.ProviderID)
				assert.Equal(t, "m1.small", md.InstanceType)
				assert.Equal(t, "nova", md.Zone)
				assert.Equal(t, "RegionOne", md.Region)
			} else {
				_, err := c.InstanceMetadata(t.Context(), node)
				require.ErrorIs(t, err, cloudprovider.InstanceNotFound)
			}
		})
	}
}

func TestKeystoneDownIsAnErrorNotGone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	t.Cleanup(srv.Close)
	cfg, err := Read(strings.NewReader("[Global]\nauth-url=" + srv.URL + "/v3\nusername=u\npassword=VerySecretPassword\ntenant-id=p\n"))
	require.NoError(t, err)
	c, err := New(cfg)
	require.NoError(t, err)
	exists, err := c.InstanceExists(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}})
	require.Error(t, err)
	assert.False(t, exists)
	assert.NotContains(t, err.Error(), "VerySecretPassword")
}

func TestServerAddressesFromNeutronPorts(t *testing.T) {
	port := func(id, device, owner, network string, ips ...string) osapi.Port {
		p := osapi.Port{ID: id, DeviceID: device, DeviceOwner: owner, NetworkID: network}
		for _, ip := range ips {
			p.FixedIPs = append(p.FixedIPs, osapi.FixedIP{IPAddress: ip})
		}
		return p
	}
	allPorts := []osapi.Port{
		port("p1", "s1", "compute:nova", "n-int", "10.0.0.5", "fd00::5"),
		port("p2", "trunk-1", "trunk:subport", "n-vlan", "192.168.7.5"),
		port("p3", "lb-1", "Octavia", "n-int", "10.0.0.99"),
		port("p4", "s2", "compute:az2", "n-gone", "172.16.0.2"),
	}
	nets := []osapi.Network{{ID: "n-int", Name: "internal"}, {ID: "n-vlan", Name: "vlan7"}}
	fips := []osapi.FloatingIP{{PortID: "p1", FloatingIP: "203.0.113.5"}, {PortID: "", FloatingIP: "203.0.113.6"}}
	got := serverAddresses(allPorts, nets, fips, map[string]string{"p2": "p1"})
	assert.Equal(t, map[string]map[string][]osapi.ServerAddress{
		"s1": {
			"internal": {{Addr: "10.0.0.5", Type: "fixed"}, {Addr: "fd00::5", Type: "fixed"}, {Addr: "203.0.113.5", Type: "floating"}},
			"vlan7":    {{Addr: "192.168.7.5", Type: "fixed"}},
		},
		"s2": {"n-gone": {{Addr: "172.16.0.2", Type: "fixed"}}},
	}, got, "a trunk subport belongs to its parent's server; load balancer ports are nobody's")
	addrs := nodeAddresses("s1", got["s1"], nil, Networking{InternalNetworkName: []string{"internal"}})
	assert.Equal(t, []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeInternalIP, Address: "fd00::5"},
		{Type: v1.NodeExternalIP, Address: "203.0.113.5"}, {Type: v1.NodeHostName, Address: "s1"},
	}, addrs, "internal-network-name keeps the VLAN subport out of InternalIPs")
}

// The lifecycle controller asks about every NotReady Node every few seconds: the
// answers come from the server list the CCM makes anyway (up to
// lifecycle-max-age old), and a missing server is still confirmed by a GET.
func TestLifecycleQuestionsCostNoListingOfTheirOwn(t *testing.T) {
	e, c := emulatorCloud(t)
	id, _ := e.AddServer(emulator.ServerSpec{Name: "node-a"})
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: v1.NodeSpec{ProviderID: ProviderIDPrefix + "/" + id}}
	_, err := c.InstanceMetadata(t.Context(), node)
	require.NoError(t, err)

	computeCalls := func() (n int) {
		for _, call := range e.Calls() {
			if call.Service == "compute" {
				n += call.Count
			}
		}
		return n
	}
	e.ResetCalls()
	require.NoError(t, e.SetServerStatus(id, "SHUTOFF"))
	for range 50 {
		shut, err := c.InstanceShutdown(t.Context(), node)
		require.NoError(t, err)
		require.False(t, shut, "the list is less than lifecycle-max-age old: its answer stands")
		exists, err := c.InstanceExists(t.Context(), node)
		require.NoError(t, err)
		require.True(t, exists)
	}
	assert.Zero(t, computeCalls(), "100 lifecycle questions, no call")

	// The next listing (made for Node updates, or when the list is older than
	// lifecycle-max-age) brings the news.
	c.servers.Invalidate()
	shut, err := c.InstanceShutdown(t.Context(), node)
	require.NoError(t, err)
	assert.True(t, shut)
	require.NoError(t, e.RemoveServer(id))
	c.servers.Invalidate()
	exists, err := c.InstanceExists(t.Context(), node)
	require.NoError(t, err)
	assert.False(t, exists, "gone: the list misses it and a GET says 404")
	assert.Equal(t, 3, computeCalls(), "two listings and the confirming GET")
}

// emulatorCloud is a started emulator and the provider configured for it.
// clientOf is c's client of OpenStack, for a test to make its own calls
// (through the SDK, as someone else would) or change its timeouts.
func clientOf(c *Cloud) *osapi.Client { return c.api.(*osapi.Client) }

func emulatorCloud(t *testing.T) (*emulator.Emulator, *Cloud) {
	t.Helper()
	e := coretest.Serve(t, emulator.New(emulator.Options{}), nil)
	cfg, err := Read(strings.NewReader(e.CloudConf()))
	require.NoError(t, err)
	c, err := New(cfg)
	require.NoError(t, err)
	return e, c
}

// The server list is read page by page (Nova's 1,000 a page), each decoded once
// into the fields the CCM uses, and one listing serves every Node: 1,001
// servers cost two pages, then one list of each Neutron resource.
func TestOneListingOfPagedServersServesEveryNode(t *testing.T) {
	e, c := emulatorCloud(t)
	ids := make([]string, 1001)
	ips := make([]string, len(ids))
	for i := range ids {
		ids[i], ips[i] = e.AddServer(emulator.ServerSpec{Name: fmt.Sprintf("node-%04d", i), AvailabilityZone: "az-" + strconv.Itoa(i%3)})
	}
	e.ResetCalls()
	for i, id := range ids {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i)}}
		if i%2 == 0 {
			node.Spec.ProviderID = ProviderIDPrefix + "/" + id
		}
		md, err := c.InstanceMetadata(t.Context(), node)
		require.NoError(t, err, node.Name)
		require.Equal(t, ProviderIDPrefix+"/"+id, md.ProviderID, node.Name)
		require.Equal(t, "az-"+strconv.Itoa(i%3), md.Zone, node.Name)
		require.NotEmpty(t, md.InstanceType, node.Name)
		require.Contains(t, md.NodeAddresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ips[i]}, node.Name)
	}
	got := map[string]int{}
	for _, call := range e.Calls() {
		got[call.Route] += call.Count
	}
	assert.Equal(t, 2, got["GET /compute/v2.1/servers/detail"], "two pages of servers: %v", got)
	for _, list := range []string{"ports", "networks", "floatingips", "trunks"} {
		assert.Equal(t, 1, got["GET /network/v2.0/"+list], "one list of %s: %v", list, got)
	}
}

// The Nodes' addresses are read with the floating IPs the drift pass listed
// (within addressFIPsMaxAge): in the steady state floating IPs are listed once
// a drift period, not once more for the addresses.
func TestTheAddressesReadTheFloatingIPsTheDriftPassListed(t *testing.T) {
	e, c := emulatorCloud(t)
	id, _ := e.AddServer(emulator.ServerSpec{Name: "node-a"})
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: v1.NodeSpec{ProviderID: ProviderIDPrefix + "/" + id}}
	fipListings := func() (n int) {
		for _, call := range e.Calls() {
			if call.Method == http.MethodGet && strings.HasSuffix(call.Route, "/floatingips") {
				n += call.Count
			}
		}
		return n
	}
	_, err := c.lb.index.fips.All(t.Context()) // the drift pass's listing
	require.NoError(t, err)
	require.Equal(t, 1, fipListings())
	_, err = c.InstanceMetadata(t.Context(), node) // the addresses' first read
	require.NoError(t, err)
	assert.Equal(t, 1, fipListings(), "the addresses took the drift pass's listing")

	c.ports.fetched = time.Time{}
	c.lb.index.fips.Invalidate() // none within addressFIPsMaxAge (no Services)
	_, err = c.InstanceMetadata(t.Context(), node)
	require.NoError(t, err)
	assert.Equal(t, 2, fipListings(), "without one, the addresses list them")
}
