package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// An IPv6 Service: its VIP on the network's IPv6 subnet (found, not named),
// no floating IP (its VIP is its address), the Nodes' IPv6 addresses as
// members. A dual-stack one: both VIPs on one load balancer.
func TestContractIPv6LoadBalancer(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	sn, err := subnets.Create(t.Context(), tg.network, subnets.CreateOpts{NetworkID: tg.netID, CIDR: "fd00:" + contractName("")[1:5] + "::/64",
		IPVersion: gophercloud.IPv6, Name: contractName("v6")}).Extract()
	require.NoError(t, err)
	// Registered first, so it runs last: after the servers and the load
	// balancer have given their addresses back.
	t.Cleanup(func() {
		_ = poll(2*time.Minute, func() error { return subnets.Delete(context.Background(), tg.network, sn.ID).ExtractErr() })
	})
	cidr := netip.MustParsePrefix(sn.CIDR)
	s := tg.server(t, contractName("v6-node"))
	v6 := serverAddress(t, tg, s.id, cidr)
	node := contractNode(s.name, "openstack:///"+s.id, s.fixedIP)
	node.Status.Addresses = append(node.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: v6})

	svc := contractService(contractName("web6"), nil)
	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol}
	svc.Spec.Ports = svc.Spec.Ports[:1]
	st := ensure(t, c, svc, []*v1.Node{node})
	require.Len(t, st.Ingress, 1)
	vip := netip.MustParseAddr(st.Ingress[0].IP)
	assert.True(t, cidr.Contains(vip), "the VIP, on the IPv6 subnet: %s", vip)
	octavia := tg.octavia(t, c)
	lb, err := c.lb.findLB(t.Context(), svc)
	require.NoError(t, err)
	require.NotNil(t, lb)
	assert.Equal(t, sn.ID, lb.VipSubnetID)
	fip, err := c.lb.vipFloatingIP(t.Context(), lb)
	require.NoError(t, err)
	assert.Nil(t, fip, "no floating IP for an IPv6 VIP")
	ps, err := c.api.ListPools(t.Context(), lb.ID)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	mp, err := pools.ListMembers(octavia, ps[0].ID, pools.ListMembersOpts{}).AllPages(t.Context())
	require.NoError(t, err)
	ms, err := pools.ExtractMembers(mp)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, v6, ms[0].Address, "the Node's IPv6 address")
	deleteLB(t, c, svc)

	// Dual-stack, IPv4 first: one load balancer, its IPv6 VIP Octavia's
	// additional VIP, the status its floating IP and that address.
	preferred := v1.IPFamilyPolicyPreferDualStack
	dual := contractService(contractName("dual"), nil)
	dual.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	dual.Spec.IPFamilyPolicy = &preferred
	dual.Spec.Ports = dual.Spec.Ports[:1]
	st = ensure(t, c, dual, []*v1.Node{node})
	require.Len(t, st.Ingress, 2, "%+v", st.Ingress)
	assert.True(t, tg.publicCIDR.Contains(netip.MustParseAddr(st.Ingress[0].IP)), "its floating IP first: %s", st.Ingress[0].IP)
	assert.True(t, cidr.Contains(netip.MustParseAddr(st.Ingress[1].IP)), "then its IPv6 VIP: %s", st.Ingress[1].IP)
	lb, err = c.lb.findLB(t.Context(), dual)
	require.NoError(t, err)
	require.Len(t, lb.AdditionalVips, 1)
	assert.Equal(t, sn.ID, lb.AdditionalVips[0].SubnetID)
	deleteLB(t, c, dual)
	fips := sdkAll(t, floatingips.List(tg.network, floatingips.ListOpts{FloatingIP: st.Ingress[0].IP}), floatingips.ExtractFloatingIPs)
	assert.Empty(t, fips)
}

// Where Octavia has no additional VIPs (before API v2.26): a Service that
// requires dual-stack is refused before anything is built, one that prefers
// it gets its first family.
func TestContractDualStackOnAnOlderOctavia(t *testing.T) {
	tg := newContractTargetWith(t, emulator.Options{OctaviaBefore226: true})
	if tg.emu == nil {
		t.Skip("the harness's Octavia has additional VIPs: an older one is the emulator's")
	}
	c := tg.cloud(t, "")
	_, err := subnets.Create(t.Context(), tg.network, subnets.CreateOpts{NetworkID: tg.netID, CIDR: "fd00:99::/64", IPVersion: gophercloud.IPv6}).Extract()
	require.NoError(t, err)
	required := v1.IPFamilyPolicyRequireDualStack
	dual := contractService(contractName("dual"), nil)
	dual.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	dual.Spec.IPFamilyPolicy = &required
	tg.emu.ResetCalls()
	p, ok := outcome.AsProblem(settle(t, c, dual))
	require.True(t, ok)
	assert.Equal(t, outcome.ReasonUnsupportedService, p.Reason)
	assert.Contains(t, p.Message, "API v2.25")
	onlyReads(t, tg, "a Service requiring dual-stack on an older Octavia")

	preferred := v1.IPFamilyPolicyPreferDualStack
	dual.Spec.IPFamilyPolicy = &preferred
	st := ensure(t, c, dual, nil)
	require.Len(t, st.Ingress, 1, "its IPv4 address only")
	lb, err := c.lb.findLB(t.Context(), dual)
	require.NoError(t, err)
	assert.Empty(t, lb.AdditionalVips)
	deleteLB(t, c, dual)
}

// serverAddress is the server's address in cidr, once its port has one.
func serverAddress(t *testing.T, tg *contractTarget, serverID string, cidr netip.Prefix) string {
	t.Helper()
	var addr string
	require.NoError(t, poll(time.Minute, func() error {
		pages, err := ports.List(tg.network, ports.ListOpts{DeviceID: serverID}).AllPages(t.Context())
		if err != nil {
			return err
		}
		views, err := ports.ExtractPorts(pages)
		if err != nil {
			return err
		}
		for _, p := range views {
			for _, ip := range p.FixedIPs {
				if a, err := netip.ParseAddr(ip.IPAddress); err == nil && cidr.Contains(a) {
					addr = a.String()
					return nil
				}
			}
		}
		return fmt.Errorf("server %s has no address in %s yet", serverID, cidr)
	}))
	return addr
}
