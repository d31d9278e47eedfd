package openstack

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/trunks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNetworksAndSubnets(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	iTrue := true
	pages, err := networks.List(ev.network, external.ListOptsExt{ListOptsBuilder: networks.ListOpts{}, External: &iTrue}).AllPages(ctx)
	require.NoError(t, err)
	var nets []struct {
		networks.Network
		external.NetworkExternalExt
	}
	require.NoError(t, networks.ExtractNetworksInto(pages, &nets))
	require.Len(t, nets, 1)
	assert.Equal(t, ev.fx.PublicNetworkID, nets[0].ID)
	assert.True(t, nets[0].External)

	n, err := networks.Get(ctx, ev.network, ev.fx.NetworkID).Extract()
	require.NoError(t, err)
	assert.Equal(t, "private", n.Name)
	assert.Equal(t, []string{ev.fx.SubnetID}, n.Subnets)

	ss := listAll(t, subnets.List(ev.network, subnets.ListOpts{NetworkID: ev.fx.NetworkID}), subnets.ExtractSubnets)
	require.Len(t, ss, 1)
	assert.Equal(t, "10.0.0.0/24", ss[0].CIDR)
	assert.Equal(t, []string{}, ss[0].Tags)

	_, err = networks.Get(ctx, ev.network, "nope").Extract()
	assert.Equal(t, 404, codeOf(err))

	// Unknown filters are refused, as with Neutron's filter validation.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ev.e.URL()+"/network/v2.0/networks?colour=red", nil)
	req.Header.Set("X-Auth-Token", ev.pc.Token())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	// Trunks are not enabled; the extension list says so too.
	_, err = trunks.Get(ctx, ev.network, "x").Extract()
	assert.Equal(t, 404, codeOf(err))
	exts := listAll(t, extensions.List(ev.network), extensions.ExtractExtensions)
	aliases := map[string]bool{}
	for _, x := range exts {
		aliases[x.Alias] = true
	}
	assert.True(t, aliases["extraroute-atomic"])
	assert.False(t, aliases["trunk"])
}

func TestPortsPagingAndFilters(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	var ids []string
	for range 7 {
		id, _ := ev.e.AddServer(ServerSpec{})
		ids = append(ids, id)
	}
	count := 0
	pages := 0
	err := ports.List(ev.network, ports.ListOpts{DeviceOwner: "compute:nova", Limit: 3}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		ps, err := ports.ExtractPorts(p)
		pages++
		count += len(ps)
		return err == nil, err
	})
	require.NoError(t, err)
	assert.Equal(t, 7, count)
	assert.Equal(t, 3, pages)

	ps := listAll(t, ports.List(ev.network, ports.ListOpts{DeviceID: ids[3]}), ports.ExtractPorts)
	require.Len(t, ps, 1)
	assert.Equal(t, ids[3], ps[0].DeviceID)

	// A port for a load balancer VIP.
	p, err := ports.Create(ctx, ev.network, ports.CreateOpts{NetworkID: ev.fx.NetworkID, Name: "vip",
		FixedIPs: []ports.IP{{SubnetID: ev.fx.SubnetID, IPAddress: "10.0.0.200"}}}).Extract()
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.200", p.FixedIPs[0].IPAddress)
	_, err = ports.Create(ctx, ev.network, ports.CreateOpts{NetworkID: ev.fx.NetworkID,
		FixedIPs: []ports.IP{{SubnetID: ev.fx.SubnetID, IPAddress: "10.0.0.200"}}}).Extract()
	assert.Equal(t, 409, codeOf(err), "the address is taken")
	require.NoError(t, ports.Delete(ctx, ev.network, p.ID).ExtractErr())
	_, err = ports.Get(ctx, ev.network, p.ID).Extract()
	assert.Equal(t, 404, codeOf(err))
}

func TestFloatingIPs(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	srv, fixed := ev.e.AddServer(ServerSpec{Name: "web"})
	ps := listAll(t, ports.List(ev.network, ports.ListOpts{DeviceID: srv}), ports.ExtractPorts)
	portID := ps[0].ID

	fip, err := floatingips.Create(ctx, ev.network, floatingips.CreateOpts{FloatingNetworkID: ev.fx.PublicNetworkID,
		PortID: portID, Description: "owned"}).Extract()
	require.NoError(t, err)
	assert.Equal(t, fixed, fip.FixedIP)
	assert.Equal(t, ev.fx.RouterID, fip.RouterID)
	assert.Equal(t, "ACTIVE", fip.Status)
	assert.Equal(t, "203.0.113.11", fip.FloatingIP, "the router's gateway has .10")

	s, err := servers.Get(ctx, ev.compute, srv).Extract()
	require.NoError(t, err)
	addrs := s.Addresses["private"].([]any)
	require.Len(t, addrs, 2)
	assert.Equal(t, "floating", addrs[1].(map[string]any)["OS-EXT-IPS:type"])
	assert.Equal(t, fip.FloatingIP, addrs[1].(map[string]any)["addr"])

	fips := listAll(t, floatingips.List(ev.network, floatingips.ListOpts{PortID: portID}), floatingips.ExtractFloatingIPs)
	require.Len(t, fips, 1)

	_, err = floatingips.Create(ctx, ev.network, floatingips.CreateOpts{FloatingNetworkID: ev.fx.PublicNetworkID,
		PortID: portID}).Extract()
	assert.Equal(t, 409, codeOf(err), "the port already has a floating IP")
	_, err = floatingips.Create(ctx, ev.network, floatingips.CreateOpts{FloatingNetworkID: ev.fx.NetworkID}).Extract()
	assert.Equal(t, 400, codeOf(err), "not an external network")
	_, err = floatingips.Create(ctx, ev.network, floatingips.CreateOpts{FloatingNetworkID: ev.fx.PublicNetworkID,
		FloatingIP: fip.FloatingIP}).Extract()
	assert.Equal(t, 409, codeOf(err), "the address is taken")

	empty := ""
	fip, err = floatingips.Update(ctx, ev.network, fip.ID, floatingips.UpdateOpts{PortID: &empty}).Extract()
	require.NoError(t, err)
	assert.Empty(t, fip.PortID)
	assert.Empty(t, fip.FixedIP)
	assert.Equal(t, "DOWN", fip.Status)
	fip, err = floatingips.Update(ctx, ev.network, fip.ID, floatingips.UpdateOpts{PortID: &portID}).Extract()
	require.NoError(t, err)
	assert.Equal(t, fixed, fip.FixedIP)

	require.NoError(t, floatingips.Delete(ctx, ev.network, fip.ID).ExtractErr())
	_, err = floatingips.Get(ctx, ev.network, fip.ID).Extract()
	assert.Equal(t, 404, codeOf(err))

	// The pool .10-.250 minus the router gateway: 240 addresses, then 409.
	n := 0
	for range 300 {
		_, err := floatingips.Create(ctx, ev.network, floatingips.CreateOpts{FloatingNetworkID: ev.fx.PublicNetworkID}).Extract()
		if err != nil {
			assert.Equal(t, 409, codeOf(err))
			break
		}
		n++
	}
	assert.Equal(t, 240, n)
}

func TestRouterExtraRoutes(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	r1 := routers.Route{DestinationCIDR: "10.244.1.0/24", NextHop: "10.0.0.5"}
	r2 := routers.Route{DestinationCIDR: "10.244.2.0/24", NextHop: "10.0.0.6"}

	rt, err := extraroutes.Add(ctx, ev.network, ev.fx.RouterID, extraroutes.Opts{Routes: &[]routers.Route{r1, r2}}).Extract()
	require.NoError(t, err)
	assert.Equal(t, []routers.Route{r1, r2}, rt.Routes)
	rt, err = extraroutes.Add(ctx, ev.network, ev.fx.RouterID, extraroutes.Opts{Routes: &[]routers.Route{r1}}).Extract()
	require.NoError(t, err)
	assert.Equal(t, []routers.Route{r1, r2}, rt.Routes, "adding is idempotent")

	rt, err = extraroutes.Remove(ctx, ev.network, ev.fx.RouterID, extraroutes.Opts{Routes: &[]routers.Route{r1}}).Extract()
	require.NoError(t, err)
	assert.Equal(t, []routers.Route{r2}, rt.Routes)
	rt, err = extraroutes.Remove(ctx, ev.network, ev.fx.RouterID, extraroutes.Opts{Routes: &[]routers.Route{r1}}).Extract()
	require.NoError(t, err)
	assert.Equal(t, []routers.Route{r2}, rt.Routes, "removing is idempotent")

	_, err = extraroutes.Add(ctx, ev.network, ev.fx.RouterID, extraroutes.Opts{Routes: &[]routers.Route{
		{DestinationCIDR: "10.244.3.0/24", NextHop: "192.168.9.9"}}}).Extract()
	assert.Equal(t, 400, codeOf(err), "a nexthop off the router's subnets")

	got, err := routers.Get(ctx, ev.network, ev.fx.RouterID).Extract()
	require.NoError(t, err)
	assert.Equal(t, []routers.Route{r2}, got.Routes)
	assert.Equal(t, ev.fx.PublicNetworkID, got.GatewayInfo.NetworkID)
}

func TestSecurityGroups(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	g, err := groups.Create(ctx, ev.network, groups.CreateOpts{Name: "lb-sg"}).Extract()
	require.NoError(t, err)
	assert.Len(t, g.Rules, 2)
	gs := listAll(t, groups.List(ev.network, groups.ListOpts{Name: "lb-sg"}), groups.ExtractGroups)
	require.Len(t, gs, 1)
	require.NoError(t, groups.Delete(ctx, ev.network, g.ID).ExtractErr())
	_, err = groups.Get(ctx, ev.network, g.ID).Extract()
	assert.Equal(t, 404, codeOf(err))
}

// The tag extension's replace-all on a security group, bulk rule creation (all
// or nothing) and If-Match on a port's revision, as the Networking API
// reference describes them.
func TestSecurityGroupTagsBulkRulesAndRevisions(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	g, err := groups.Create(ctx, ev.network, groups.CreateOpts{Name: "lb-sg-x"}).Extract()
	require.NoError(t, err)
	tags, err := attributestags.ReplaceAll(ctx, ev.network, "security-groups", g.ID, attributestags.ReplaceAllOpts{Tags: []string{"b", "a"}}).Extract()
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, tags)
	gs := listAll(t, groups.List(ev.network, groups.ListOpts{Tags: "a,b"}), groups.ExtractGroups)
	require.Len(t, gs, 1)

	rule := func(port int, prefix string) rules.CreateOpts {
		ether := rules.EtherType4
		if strings.Contains(prefix, ":") {
			ether = rules.EtherType6
		}
		return rules.CreateOpts{Direction: rules.DirIngress, EtherType: ether, SecGroupID: g.ID, Protocol: rules.ProtocolTCP,
			PortRangeMin: port, PortRangeMax: port, RemoteIPPrefix: prefix}
	}
	created, err := rules.CreateBulk(ctx, ev.network, []rules.CreateOpts{rule(30080, "10.0.0.0/24"), rule(30080, "fd00::/64")}).Extract()
	require.NoError(t, err)
	assert.Len(t, created, 2)
	_, err = rules.CreateBulk(ctx, ev.network, []rules.CreateOpts{rule(30081, "10.0.0.0/24"), rule(30080, "10.0.0.0/24")}).Extract()
	assert.Equal(t, http.StatusConflict, codeOf(err), "one rule exists: none is created")
	bad := rule(30082, "fd00::/64")
	bad.EtherType = rules.EtherType4
	_, err = rules.Create(ctx, ev.network, bad).Extract()
	assert.Equal(t, http.StatusBadRequest, codeOf(err), "an IPv6 prefix in an IPv4 rule")
	rs := listAll(t, rules.List(ev.network, rules.ListOpts{SecGroupID: g.ID, Direction: "ingress"}), rules.ExtractRules)
	assert.Len(t, rs, 2)

	p, err := ports.Create(ctx, ev.network, ports.CreateOpts{NetworkID: ev.fx.NetworkID}).Extract()
	require.NoError(t, err)
	stale := p.RevisionNumber - 1
	sgs := []string{g.ID}
	_, err = ports.Update(ctx, ev.network, p.ID, ports.UpdateOpts{SecurityGroups: &sgs, RevisionNumber: &stale}).Extract()
	assert.Equal(t, http.StatusPreconditionFailed, codeOf(err))
	rev := p.RevisionNumber
	updated, err := ports.Update(ctx, ev.network, p.ID, ports.UpdateOpts{SecurityGroups: &sgs, RevisionNumber: &rev}).Extract()
	require.NoError(t, err)
	assert.Equal(t, sgs, updated.SecurityGroups)
	assert.Greater(t, updated.RevisionNumber, rev)
}

// An IPv6 subnet made through the API, as the Networking API reference has
// it: a port then gets an address of each version, a floating IP goes to its
// IPv4 one, a load balancer's VIP on the IPv6 subnet is an IPv6 address, and
// the checks on a subnet's CIDR, version and overlap, and on deleting one in
// use, answer as Neutron does.
func TestIPv6Subnets(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	v6 := gophercloud.IPv6
	sn, err := subnets.Create(ctx, ev.network, subnets.CreateOpts{NetworkID: ev.fx.NetworkID, CIDR: "fd00:10::/64", IPVersion: v6, Name: "private-v6"}).Extract()
	require.NoError(t, err)
	assert.Equal(t, 6, sn.IPVersion)
	assert.Equal(t, "fd00:10::1", sn.GatewayIP)
	require.Len(t, sn.AllocationPools, 1)
	assert.Equal(t, "fd00:10::2", sn.AllocationPools[0].Start)
	assert.Equal(t, "fd00:10::ffff:ffff:ffff:ffff", sn.AllocationPools[0].End)

	for _, bad := range []subnets.CreateOpts{
		{NetworkID: ev.fx.NetworkID, CIDR: "fd00:10::/80", IPVersion: v6},               // overlaps
		{NetworkID: ev.fx.NetworkID, CIDR: "fd00:20::/64", IPVersion: gophercloud.IPv4}, // wrong version
		{NetworkID: ev.fx.NetworkID, CIDR: "fd00:20::1/64", IPVersion: v6},              // not a network address
	} {
		_, err := subnets.Create(ctx, ev.network, bad).Extract()
		assert.Equal(t, http.StatusBadRequest, codeOf(err), "%+v", bad)
	}
	_, err = subnets.Create(ctx, ev.network, subnets.CreateOpts{NetworkID: "nope", CIDR: "fd00:30::/64", IPVersion: v6}).Extract()
	assert.Equal(t, http.StatusNotFound, codeOf(err))

	p, err := ports.Create(ctx, ev.network, ports.CreateOpts{NetworkID: ev.fx.NetworkID}).Extract()
	require.NoError(t, err)
	require.Len(t, p.FixedIPs, 2, "an address of each version")
	assert.Equal(t, ev.fx.SubnetID, p.FixedIPs[0].SubnetID)
	assert.Equal(t, sn.ID, p.FixedIPs[1].SubnetID)
	fip, err := floatingips.Create(ctx, ev.network, floatingips.CreateOpts{FloatingNetworkID: ev.fx.PublicNetworkID, PortID: p.ID}).Extract()
	require.NoError(t, err)
	assert.Equal(t, p.FixedIPs[0].IPAddress, fip.FixedIP, "the IPv4 address")
	_, err = floatingips.Create(ctx, ev.network, floatingips.CreateOpts{FloatingNetworkID: ev.fx.PublicNetworkID, PortID: p.ID, FixedIP: p.FixedIPs[1].IPAddress}).Extract()
	assert.Equal(t, http.StatusBadRequest, codeOf(err), "no floating IP for an IPv6 address")

	lb, err := loadbalancers.Create(ctx, ev.lb, loadbalancers.CreateOpts{VipSubnetID: sn.ID}).Extract()
	require.NoError(t, err)
	assert.True(t, netip.MustParseAddr(lb.VipAddress).Is6(), "an IPv6 VIP: %s", lb.VipAddress)

	err = subnets.Delete(ctx, ev.network, sn.ID).ExtractErr()
	assert.Equal(t, http.StatusConflict, codeOf(err), "in use")
}
