package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/outcome"
)

// An IPv6 Service: its VIP on the network's IPv6 subnet (found, not named),
// no floating IP (its VIP is its address), the Nodes' IPv6 addresses as
// members; one that requires dual-stack is refused before anything is built.
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
	lb, err := c.findLB(t.Context(), octavia, svc)
	require.NoError(t, err)
	require.NotNil(t, lb)
	assert.Equal(t, sn.ID, lb.VipSubnetID)
	fip, err := c.vipFloatingIP(t.Context(), tg.network, lb)
	require.NoError(t, err)
	assert.Nil(t, fip, "no floating IP for an IPv6 VIP")
	ps, err := listPools(t.Context(), octavia, lb.ID)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	mp, err := pools.ListMembers(octavia, ps[0].ID, pools.ListMembersOpts{}).AllPages(t.Context())
	require.NoError(t, err)
	ms, err := pools.ExtractMembers(mp)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, v6, ms[0].Address, "the Node's IPv6 address")
	deleteLB(t, c, svc)

	required := v1.IPFamilyPolicyRequireDualStack
	dual := contractService(contractName("dual"), nil)
	dual.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	dual.Spec.IPFamilyPolicy = &required
	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	p, ok := outcome.AsProblem(settle(t, c, dual))
	require.True(t, ok)
	assert.Equal(t, outcome.ReasonUnsupportedService, p.Reason)
	assert.Contains(t, p.Message, "RequireDualStack")
	onlyReads(t, tg, "a Service requiring dual-stack")
}

// serverAddress is the server's address in cidr, once its port has one.
func serverAddress(t *testing.T, tg *contractTarget, serverID string, cidr netip.Prefix) string {
	t.Helper()
	var addr string
	require.NoError(t, poll(time.Minute, func() error {
		views, err := listPortViews(t.Context(), tg.network, url.Values{"device_id": {serverID}})
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
