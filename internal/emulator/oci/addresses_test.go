package oci

import (
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/loadbalancer"
	nlb "github.com/oracle/oci-go-sdk/v65/networkloadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assignedNLB is dualNLB of a private or public network load balancer that
// asks for the addresses v4 and v6 ("" for none).
func assignedNLB(f Fixture, subnet string, version nlb.NlbIpVersionEnum, private bool, v4, v6 string) nlb.CreateNetworkLoadBalancerDetails {
	backends := map[nlb.IpVersionEnum]string{}
	if version != nlb.NlbIpVersionIpv6 {
		backends[nlb.IpVersionIpv4] = "10.0.10.2"
	}
	if version != nlb.NlbIpVersionIpv4 && version != "" {
		backends[nlb.IpVersionIpv6] = "2001:db8:0:20::2"
	}
	d := dualNLB(f, subnet, version, backends)
	d.IsPrivate = common.Bool(private)
	if v4 != "" {
		d.AssignedPrivateIpv4 = common.String(v4)
	}
	if v6 != "" {
		d.AssignedIpv6 = common.String(v6)
	}
	return d
}

// addressesOf are a network load balancer's addresses: public ones with a
// "+", IPv6 ones after their version.
func addressesOf(n nlb.NetworkLoadBalancer) []string {
	var out []string
	for _, a := range n.IpAddresses {
		s := *a.IpAddress
		if a.IsPublic != nil && *a.IsPublic {
			s = "+" + s
		}
		out = append(out, s)
	}
	return out
}

// A network load balancer takes the addresses it is assigned: its private
// IPv4 address and its IPv6 one, listed in its subnet (by ipAddress too)
// until it is gone; the VNICs' addresses are listed so too.
func TestANetworkLoadBalancerTakesTheAddressesItIsAssigned(t *testing.T) {
	s := &nlbStory{story: newStory(t)}
	s.c = nlbClient(t, s.e)
	t, ctx, f := s.t, s.t.Context(), s.e.fx
	network := fixtureClients(t, s.e).network
	created, err := s.c.CreateNetworkLoadBalancer(ctx, nlb.CreateNetworkLoadBalancerRequest{
		CreateNetworkLoadBalancerDetails: assignedNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv4AndIpv6, false, "10.0.20.50", "2001:DB8:0:20:0::50")})
	require.NoError(t, err)
	s.id = created.Id
	s.advance(11 * time.Second)
	got := s.get()
	assert.Equal(t, nlb.LifecycleStateActive, got.LifecycleState)
	public := addressesOf(got)[0]
	assert.Equal(t, []string{public, "10.0.20.50", "+2001:db8:0:20::50"}, addressesOf(got), "its public address, then the assigned ones, as OCI spells addresses")

	private, err := network.ListPrivateIps(ctx, core.ListPrivateIpsRequest{SubnetId: &f.DualStackSubnetID, IpAddress: common.String("10.0.20.50")})
	require.NoError(t, err)
	require.Len(t, private.Items, 1, "listed in its subnet")
	assert.Nil(t, private.Items[0].VnicId, "on none of the caller's VNICs")
	assert.False(t, *private.Items[0].IsPrimary)
	six, err := network.ListIpv6s(ctx, core.ListIpv6sRequest{SubnetId: &f.DualStackSubnetID, IpAddress: common.String("2001:DB8:0:20::50")})
	require.NoError(t, err)
	require.Len(t, six.Items, 1, "an address is an address whatever its spelling")
	assert.Equal(t, "2001:db8:0:20::50", *six.Items[0].IpAddress)

	_, ip := s.e.AddMachine("node-1")
	vnics, err := network.ListPrivateIps(ctx, core.ListPrivateIpsRequest{SubnetId: &f.SubnetID, IpAddress: &ip})
	require.NoError(t, err)
	require.Len(t, vnics.Items, 1)
	assert.NotNil(t, vnics.Items[0].VnicId, "a VNIC's")
	none, err := network.ListPrivateIps(ctx, core.ListPrivateIpsRequest{SubnetId: &f.SubnetID, IpAddress: common.String("10.0.10.99")})
	require.NoError(t, err)
	assert.Empty(t, none.Items)

	_, err = s.c.DeleteNetworkLoadBalancer(ctx, nlb.DeleteNetworkLoadBalancerRequest{NetworkLoadBalancerId: s.id})
	require.NoError(t, err)
	s.advance(11 * time.Second)
	private, err = network.ListPrivateIps(ctx, core.ListPrivateIpsRequest{SubnetId: &f.DualStackSubnetID})
	require.NoError(t, err)
	assert.Empty(t, private.Items, "given back with the network load balancer")
}

// A network load balancer asking for an address something else holds (a
// VNIC, a load balancer, a reserved address) is accepted, then fails: no
// address, its work request FAILED with an error, the network load
// balancer FAILED, as OCI leaves it.
func TestANetworkLoadBalancerAskingForATakenAddressFails(t *testing.T) {
	s := &nlbStory{story: newStory(t)}
	s.c = nlbClient(t, s.e)
	t, ctx, f := s.t, s.t.Context(), s.e.fx
	_, machine := s.e.AddMachine("node-1")
	internal, err := lbClient(t, s.e).CreateLoadBalancer(ctx, loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: func() loadbalancer.CreateLoadBalancerDetails {
		d := lbDetails(f, f.SubnetID, "")
		d.IsPrivate = common.Bool(true)
		return d
	}()})
	require.NoError(t, err)
	s.advance(11 * time.Second)
	wr, err := lbClient(t, s.e).GetWorkRequest(ctx, loadbalancer.GetWorkRequestRequest{WorkRequestId: internal.OpcWorkRequestId})
	require.NoError(t, err)
	lb, err := lbClient(t, s.e).GetLoadBalancer(ctx, loadbalancer.GetLoadBalancerRequest{LoadBalancerId: wr.LoadBalancerId})
	require.NoError(t, err)
	lbAddr := *lb.IpAddresses[0].IpAddress
	reservedID, err := s.e.ReserveAddress(f.DualStackSubnetID, "2001:db8:0:20::60")
	require.NoError(t, err)

	for name, d := range map[string]nlb.CreateNetworkLoadBalancerDetails{
		"a VNIC's":           assignedNLB(f, f.SubnetID, "", true, machine, ""),
		"a load balancer's":  assignedNLB(f, f.SubnetID, "", true, lbAddr, ""),
		"a reserved IPv6":    assignedNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv4AndIpv6, false, "", "2001:db8:0:20::60"),
		"a free IPv4 beside": assignedNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv4AndIpv6, false, "10.0.20.61", "2001:db8:0:20::60"),
	} {
		created, err := s.c.CreateNetworkLoadBalancer(ctx, nlb.CreateNetworkLoadBalancerRequest{CreateNetworkLoadBalancerDetails: d})
		require.NoError(t, err, "%s: accepted", name)
		assert.Empty(t, created.IpAddresses, name)
		s.id = created.Id
		s.advance(11 * time.Second)
		got := s.get()
		assert.Equal(t, nlb.LifecycleStateFailed, got.LifecycleState, name)
		assert.Empty(t, got.IpAddresses, "%s: FAILED with no address", name)
		done, err := s.c.GetWorkRequest(ctx, nlb.GetWorkRequestRequest{WorkRequestId: created.OpcWorkRequestId})
		require.NoError(t, err)
		assert.Equal(t, nlb.OperationStatusFailed, done.Status, name)
		errs, err := s.c.ListWorkRequestErrors(ctx, nlb.ListWorkRequestErrorsRequest{WorkRequestId: created.OpcWorkRequestId, CompartmentId: &f.CompartmentID})
		require.NoError(t, err)
		require.Len(t, errs.Items, 1, name)
		assert.Contains(t, *errs.Items[0].Message, "already in use", name)
	}
	list, err := fixtureClients(t, s.e).network.ListPrivateIps(ctx, core.ListPrivateIpsRequest{SubnetId: &f.DualStackSubnetID, IpAddress: common.String("10.0.20.61")})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "a FAILED network load balancer holds none of its addresses")

	// Freed, the address is the next one's.
	s.e.ReleaseAddress(reservedID)
	created, err := s.c.CreateNetworkLoadBalancer(ctx, nlb.CreateNetworkLoadBalancerRequest{
		CreateNetworkLoadBalancerDetails: assignedNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv6, false, "", "2001:db8:0:20::60")})
	require.NoError(t, err)
	s.id = created.Id
	s.advance(11 * time.Second)
	assert.Equal(t, nlb.LifecycleStateActive, s.get().LifecycleState)
	assert.Equal(t, []string{"+2001:db8:0:20::60"}, addressesOf(s.get()))
}

// What the API refuses at once of an assigned address: one not of its
// family, of a family the network load balancer does not serve, outside
// its subnet, or one of the three of the CIDR OCI keeps.
func TestAnAssignedAddressOutsideTheSubnetIsRefused(t *testing.T) {
	e := started(t, Options{})
	c := nlbClient(t, e)
	f := e.fx
	for name, d := range map[string]nlb.CreateNetworkLoadBalancerDetails{
		"no IPv4 address":             assignedNLB(f, f.SubnetID, "", true, "2001:db8:0:20::5", ""),
		"outside the CIDR":            assignedNLB(f, f.SubnetID, "", true, "10.0.20.5", ""),
		"the CIDR's first":            assignedNLB(f, f.SubnetID, "", true, "10.0.10.0", ""),
		"the virtual router's":        assignedNLB(f, f.SubnetID, "", true, "10.0.10.1", ""),
		"the CIDR's last":             assignedNLB(f, f.SubnetID, "", true, "10.0.10.255", ""),
		"IPv4 of an IPv6 one":         assignedNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv6, false, "10.0.20.5", ""),
		"IPv6 of an IPv4 one":         assignedNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv4, false, "", "2001:db8:0:20::5"),
		"no IPv6 address":             assignedNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv6, false, "", "10.0.20.5"),
		"outside the subnet's prefix": assignedNLB(f, f.DualStackSubnetID, nlb.NlbIpVersionIpv6, false, "", "2001:db8:0:21::5"),
	} {
		_, err := c.CreateNetworkLoadBalancer(t.Context(), nlb.CreateNetworkLoadBalancerRequest{CreateNetworkLoadBalancerDetails: d})
		se := serviceError(t, err)
		assert.Equal(t, 400, se.GetHTTPStatusCode(), name)
		assert.Equal(t, "InvalidParameter", se.GetCode(), name)
	}
	assert.Zero(t, e.Objects()["networkLoadBalancer"], "nothing made")
}

// The pools never hand out an address something holds.
func TestThePoolsSkipAHeldAddress(t *testing.T) {
	e := started(t, Options{})
	_, err := e.ReserveAddress(e.fx.SubnetID, "10.0.10.2")
	require.NoError(t, err)
	_, ip := e.AddMachine("node-1")
	assert.Equal(t, "10.0.10.3", ip, "the machine pool's next address, past the held one")
	_, err = e.ReserveAddress(e.fx.SubnetID, "10.0.10.3")
	require.Error(t, err, "taken")
	_, err = e.ReserveAddress(e.fx.SubnetID, "10.0.20.3")
	require.Error(t, err, "of another subnet")
}
