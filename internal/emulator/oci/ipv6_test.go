package oci

import (
	"net/netip"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/loadbalancer"
	nlb "github.com/oracle/oci-go-sdk/v65/networkloadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheFixtureHasADualStackSubnetBesideTheIPv4One(t *testing.T) {
	e := started(t, Options{})
	c := fixtureClients(t, e)
	dual, err := c.network.GetSubnet(t.Context(), core.GetSubnetRequest{SubnetId: &e.fx.DualStackSubnetID})
	require.NoError(t, err)
	assert.Equal(t, DualStackIPv6CIDR, *dual.Ipv6CidrBlock)
	assert.Equal(t, []string{DualStackIPv6CIDR}, dual.Ipv6CidrBlocks)
	assert.Equal(t, e.fx.VCNID, *dual.VcnId)
	assert.Equal(t, []string{e.fx.SecurityListID}, dual.SecurityListIds)
	nodes, err := c.network.GetSubnet(t.Context(), core.GetSubnetRequest{SubnetId: &e.fx.SubnetID})
	require.NoError(t, err)
	assert.Nil(t, nodes.Ipv6CidrBlock, "the node subnet stays IPv4 only")
	assert.Empty(t, nodes.Ipv6CidrBlocks)
	vcn, err := c.network.GetVcn(t.Context(), core.GetVcnRequest{VcnId: &e.fx.VCNID})
	require.NoError(t, err)
	assert.Equal(t, []string{"2001:db8::/56"}, vcn.Ipv6CidrBlocks)
}

// lbDetails is a load balancer of one TCP listener on subnet, of ipMode.
func lbDetails(f Fixture, subnet string, mode loadbalancer.CreateLoadBalancerDetailsIpModeEnum) loadbalancer.CreateLoadBalancerDetails {
	return loadbalancer.CreateLoadBalancerDetails{CompartmentId: common.String(f.CompartmentID), DisplayName: common.String("dual"),
		ShapeName: common.String("flexible"), SubnetIds: []string{subnet}, IpMode: mode,
		ShapeDetails: &loadbalancer.ShapeDetails{MinimumBandwidthInMbps: common.Int(10), MaximumBandwidthInMbps: common.Int(100)},
		BackendSets:  map[string]loadbalancer.BackendSetDetails{"TCP-80": tcpBackendSet("10.0.10.2")},
		Listeners: map[string]loadbalancer.ListenerDetails{"TCP-80": {DefaultBackendSetName: common.String("TCP-80"),
			Port: common.Int(80), Protocol: common.String("TCP")}}}
}

func TestALoadBalancerOfIPModeIPv6HasAnIPv4AndAnIPv6Address(t *testing.T) {
	e := started(t, Options{})
	c := lbClient(t, e)
	f := e.fx
	_, lb := createLB(t, c, lbDetails(f, f.DualStackSubnetID, loadbalancer.CreateLoadBalancerDetailsIpModeIpv6))
	assert.Equal(t, loadbalancer.LoadBalancerIpModeIpv6, lb.IpMode)
	require.Len(t, lb.IpAddresses, 2)
	assert.True(t, netip.MustParseAddr(*lb.IpAddresses[0].IpAddress).Is4(), "IPv4 first")
	v6 := netip.MustParseAddr(*lb.IpAddresses[1].IpAddress)
	assert.True(t, netip.MustParsePrefix(DualStackIPv6CIDR).Contains(v6), "%s is of the subnet's prefix", v6)
	assert.True(t, *lb.IpAddresses[1].IsPublic)

	_, plain := createLB(t, c, lbDetails(f, f.SubnetID, ""))
	assert.Equal(t, loadbalancer.LoadBalancerIpModeIpv4, plain.IpMode, "IPV4 by default")
	assert.Len(t, plain.IpAddresses, 1)

	_, err := c.CreateLoadBalancer(t.Context(), loadbalancer.CreateLoadBalancerRequest{
		CreateLoadBalancerDetails: lbDetails(f, f.SubnetID, loadbalancer.CreateLoadBalancerDetailsIpModeIpv6)})
	requireServiceError(t, err, 400, "InvalidParameter")
}

// dualNLB is a network load balancer of nlbIpVersion version on subnet,
// with a TCP listener on port 80 and its backend set of each family
// versions names (IPv6 ones named with -IPv6, as the peer names them).
func dualNLB(f Fixture, subnet string, version nlb.NlbIpVersionEnum, backends map[nlb.IpVersionEnum]string) nlb.CreateNetworkLoadBalancerDetails {
	d := nlb.CreateNetworkLoadBalancerDetails{CompartmentId: &f.CompartmentID, DisplayName: common.String("default/dual/uid"),
		SubnetId: &subnet, NlbIpVersion: version, IsPrivate: common.Bool(false),
		BackendSets: map[string]nlb.BackendSetDetails{}, Listeners: map[string]nlb.ListenerDetails{}}
	for v, ip := range backends {
		name := "TCP-80"
		if v == nlb.IpVersionIpv6 {
			name += "-IPv6"
		}
		d.BackendSets[name] = nlb.BackendSetDetails{Policy: nlb.NetworkLoadBalancingPolicyFiveTuple, IpVersion: v,
			HealthChecker: &nlb.HealthChecker{Protocol: nlb.HealthCheckProtocolsHttp, Port: common.Int(10256), UrlPath: common.String("/healthz")},
			Backends:      []nlb.Backend{{IpAddress: common.String(ip), Port: common.Int(30080), Weight: common.Int(1)}}}
		d.Listeners[name] = nlb.ListenerDetails{Name: common.String(name), DefaultBackendSetName: common.String(name), Port: common.Int(80),
			Protocol: nlb.ListenerProtocolsTcp, IpVersion: v}
	}
	return d
}

func TestANetworkLoadBalancerServesTheFamiliesOfItsIPVersion(t *testing.T) {
	s := &nlbStory{story: newStory(t)}
	s.c = nlbClient(t, s.e)
	t, ctx, f := s.t, s.t.Context(), s.e.fx
	both := map[nlb.IpVersionEnum]string{nlb.IpVersionIpv4: "10.0.10.2", nlb.IpVersionIpv6: "2001:db8:0:20::2"}
	created, err := s.c.CreateNetworkLoadBalancer(ctx, nlb.CreateNetworkLoadBalancerRequest{
		CreateNetworkLoadBalancerDetails: dualNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv4AndIpv6, both)})
	require.NoError(t, err, "two listeners of one port, one of each family")
	s.id = created.Id
	s.advance(11 * time.Second)
	got := s.get()
	assert.Equal(t, nlb.NlbIpVersionIpv4AndIpv6, got.NlbIpVersion)
	var versions []nlb.IpVersionEnum
	for _, a := range got.IpAddresses {
		versions = append(versions, a.IpVersion)
	}
	assert.Equal(t, []nlb.IpVersionEnum{nlb.IpVersionIpv4, nlb.IpVersionIpv4, nlb.IpVersionIpv6}, versions, "public, private, then IPv6")
	assert.Equal(t, nlb.IpVersionIpv6, got.Listeners["TCP-80-IPv6"].IpVersion)
	assert.Equal(t, nlb.IpVersionIpv4, got.BackendSets["TCP-80"].IpVersion)

	for name, d := range map[string]nlb.CreateNetworkLoadBalancerDetails{
		"dual-stack on an IPv4-only subnet": dualNLB(f, f.SubnetID, nlb.NlbIpVersionIpv4AndIpv6, map[nlb.IpVersionEnum]string{nlb.IpVersionIpv4: "10.0.10.2"}),
		"an IPv6 listener on an IPv4 one":   dualNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv4, both),
		"an IPv4 listener on an IPv6 one":   dualNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv6, both),
		"an IPv6 backend in an IPv4 set":    dualNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv4, map[nlb.IpVersionEnum]string{nlb.IpVersionIpv4: "2001:db8:0:20::2"}),
	} {
		_, err := s.c.CreateNetworkLoadBalancer(ctx, nlb.CreateNetworkLoadBalancerRequest{CreateNetworkLoadBalancerDetails: d})
		se := serviceError(t, err)
		assert.Equal(t, 400, se.GetHTTPStatusCode(), name)
		assert.Equal(t, "InvalidParameter", se.GetCode(), name)
	}
}

func TestANetworkLoadBalancersIPVersionChangesThroughAWorkRequest(t *testing.T) {
	s := &nlbStory{story: newStory(t)}
	s.c = nlbClient(t, s.e)
	t, ctx, f := s.t, s.t.Context(), s.e.fx
	v4 := map[nlb.IpVersionEnum]string{nlb.IpVersionIpv4: "10.0.10.2"}
	created, err := s.c.CreateNetworkLoadBalancer(ctx, nlb.CreateNetworkLoadBalancerRequest{
		CreateNetworkLoadBalancerDetails: dualNLB(f, f.DualStackSubnetID, "", v4)})
	require.NoError(t, err)
	s.id = created.Id
	s.advance(11 * time.Second)
	require.Len(t, s.get().IpAddresses, 2)

	six := nlb.CreateListenerDetails{Name: common.String("TCP-80-IPv6"), DefaultBackendSetName: common.String("TCP-80"), Port: common.Int(80),
		Protocol: nlb.ListenerProtocolsTcp, IpVersion: nlb.IpVersionIpv6}
	_, err = s.c.CreateListener(ctx, nlb.CreateListenerRequest{NetworkLoadBalancerId: s.id, CreateListenerDetails: six})
	assert.Equal(t, 400, serviceError(t, err).GetHTTPStatusCode(), "an IPv6 listener on an IPv4 network load balancer")

	up, err := s.c.UpdateNetworkLoadBalancer(ctx, nlb.UpdateNetworkLoadBalancerRequest{NetworkLoadBalancerId: s.id,
		UpdateNetworkLoadBalancerDetails: nlb.UpdateNetworkLoadBalancerDetails{NlbIpVersion: nlb.NlbIpVersionIpv4AndIpv6}})
	require.NoError(t, err)
	wr, err := s.c.GetWorkRequest(ctx, nlb.GetWorkRequestRequest{WorkRequestId: up.OpcWorkRequestId})
	require.NoError(t, err)
	assert.Equal(t, nlb.OperationTypeUpdateNetworkLoadBalancer, wr.OperationType)
	assert.Equal(t, nlb.LifecycleStateUpdating, s.get().LifecycleState)
	s.advance(11 * time.Second)
	got := s.get()
	assert.Equal(t, nlb.NlbIpVersionIpv4AndIpv6, got.NlbIpVersion)
	require.Len(t, got.IpAddresses, 3)
	assert.Equal(t, nlb.IpVersionIpv6, got.IpAddresses[2].IpVersion)

	// An IPv6 listener needs an IPv6 backend set.
	_, err = s.c.CreateListener(ctx, nlb.CreateListenerRequest{NetworkLoadBalancerId: s.id, CreateListenerDetails: six})
	assert.Equal(t, 400, serviceError(t, err).GetHTTPStatusCode(), "a listener of the other family than its backend set")
	_, err = s.c.CreateBackendSet(ctx, nlb.CreateBackendSetRequest{NetworkLoadBalancerId: s.id, CreateBackendSetDetails: nlb.CreateBackendSetDetails{
		Name: common.String("TCP-80-IPv6"), Policy: nlb.NetworkLoadBalancingPolicyFiveTuple, IpVersion: nlb.IpVersionIpv6,
		HealthChecker: &nlb.HealthCheckerDetails{Protocol: nlb.HealthCheckProtocolsTcp, Port: common.Int(10256)},
		Backends:      []nlb.BackendDetails{{IpAddress: common.String("2001:db8:0:20::2"), Port: common.Int(30080)}}}})
	require.NoError(t, err)
	s.advance(11 * time.Second)
	six.DefaultBackendSetName = common.String("TCP-80-IPv6")
	_, err = s.c.CreateListener(ctx, nlb.CreateListenerRequest{NetworkLoadBalancerId: s.id, CreateListenerDetails: six})
	require.NoError(t, err)
	s.advance(11 * time.Second)

	_, err = s.c.UpdateNetworkLoadBalancer(ctx, nlb.UpdateNetworkLoadBalancerRequest{NetworkLoadBalancerId: s.id,
		UpdateNetworkLoadBalancerDetails: nlb.UpdateNetworkLoadBalancerDetails{NlbIpVersion: nlb.NlbIpVersionIpv4}})
	assert.Equal(t, 400, serviceError(t, err).GetHTTPStatusCode(), "IPv6 listeners and backend sets are still there")
}

func TestAVNICOfADualStackSubnetReportsItsIPv6Address(t *testing.T) {
	e := started(t, Options{IPv6CIDR: "fd00:10:0:1::/64"})
	c := fixtureClients(t, e)
	id, _ := e.AddMachine("node-1")
	atts, err := c.compute.ListVnicAttachments(t.Context(), core.ListVnicAttachmentsRequest{CompartmentId: &e.fx.CompartmentID, InstanceId: &id})
	require.NoError(t, err)
	require.Len(t, atts.Items, 1)
	v, err := c.network.GetVnic(t.Context(), core.GetVnicRequest{VnicId: atts.Items[0].VnicId})
	require.NoError(t, err)
	assert.Equal(t, []string{"fd00:10:0:1::10"}, v.Ipv6Addresses)
	vcn, err := c.network.GetVcn(t.Context(), core.GetVcnRequest{VcnId: &e.fx.VCNID})
	require.NoError(t, err)
	assert.Equal(t, []string{"2001:db8::/56", "fd00:10:0:1::/64"}, vcn.Ipv6CidrBlocks)
}
