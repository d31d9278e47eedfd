package oci

import (
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/loadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheSDKManagesNetworkSecurityGroupsAndTheirRules(t *testing.T) {
	e := started(t, Options{})
	c := fixtureClients(t, e)
	ctx := t.Context()
	f := e.fx
	mk := func(name string) string {
		g, err := c.network.CreateNetworkSecurityGroup(ctx, core.CreateNetworkSecurityGroupRequest{CreateNetworkSecurityGroupDetails: core.CreateNetworkSecurityGroupDetails{
			CompartmentId: &f.CompartmentID, VcnId: &f.VCNID, DisplayName: common.String(name), FreeformTags: map[string]string{"CreatedBy": "CCM"}}})
		require.NoError(t, err)
		assert.Equal(t, core.NetworkSecurityGroupLifecycleStateAvailable, g.LifecycleState)
		return *g.Id
	}
	front, back := mk("default/web/uid/nsg"), mk("nodes")
	tcp := &core.TcpOptions{DestinationPortRange: &core.PortRange{Min: common.Int(80), Max: common.Int(80)}}
	added, err := c.network.AddNetworkSecurityGroupSecurityRules(ctx, core.AddNetworkSecurityGroupSecurityRulesRequest{NetworkSecurityGroupId: &front,
		AddNetworkSecurityGroupSecurityRulesDetails: core.AddNetworkSecurityGroupSecurityRulesDetails{SecurityRules: []core.AddSecurityRuleDetails{
			{Direction: core.AddSecurityRuleDetailsDirectionIngress, Protocol: common.String("6"), Source: common.String("0.0.0.0/0"),
				SourceType: core.AddSecurityRuleDetailsSourceTypeCidrBlock, TcpOptions: tcp, Description: common.String("uid")},
			{Direction: core.AddSecurityRuleDetailsDirectionEgress, Protocol: common.String("6"), Destination: &back,
				DestinationType: core.AddSecurityRuleDetailsDestinationTypeNetworkSecurityGroup, TcpOptions: tcp},
		}}})
	require.NoError(t, err)
	require.Len(t, added.SecurityRules, 2)
	assert.NotEmpty(t, *added.SecurityRules[0].Id)

	ingress, err := c.network.ListNetworkSecurityGroupSecurityRules(ctx, core.ListNetworkSecurityGroupSecurityRulesRequest{NetworkSecurityGroupId: &front,
		Direction: core.ListNetworkSecurityGroupSecurityRulesDirectionIngress})
	require.NoError(t, err)
	require.Len(t, ingress.Items, 1)
	assert.Equal(t, "uid", *ingress.Items[0].Description)
	assert.Equal(t, 80, *ingress.Items[0].TcpOptions.DestinationPortRange.Min)

	// An NSG that does not exist as a peer: 400; more than 25 at once: 400.
	_, err = c.network.AddNetworkSecurityGroupSecurityRules(ctx, core.AddNetworkSecurityGroupSecurityRulesRequest{NetworkSecurityGroupId: &front,
		AddNetworkSecurityGroupSecurityRulesDetails: core.AddNetworkSecurityGroupSecurityRulesDetails{SecurityRules: []core.AddSecurityRuleDetails{
			{Direction: core.AddSecurityRuleDetailsDirectionEgress, Protocol: common.String("6"), Destination: common.String("ocid1.networksecuritygroup.oc1.iad.nope"),
				DestinationType: core.AddSecurityRuleDetailsDestinationTypeNetworkSecurityGroup}}}})
	assert.Equal(t, 400, serviceError(t, err).GetHTTPStatusCode())

	_, err = c.network.RemoveNetworkSecurityGroupSecurityRules(ctx, core.RemoveNetworkSecurityGroupSecurityRulesRequest{NetworkSecurityGroupId: &front,
		RemoveNetworkSecurityGroupSecurityRulesDetails: core.RemoveNetworkSecurityGroupSecurityRulesDetails{SecurityRuleIds: []string{*added.SecurityRules[1].Id}}})
	require.NoError(t, err)
	all, err := c.network.ListNetworkSecurityGroupSecurityRules(ctx, core.ListNetworkSecurityGroupSecurityRulesRequest{NetworkSecurityGroupId: &front})
	require.NoError(t, err)
	assert.Len(t, all.Items, 1)

	// A load balancer in it: the NSG cannot go until it leaves.
	lbc := lbClient(t, e)
	created, err := lbc.CreateLoadBalancer(ctx, loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: loadbalancer.CreateLoadBalancerDetails{
		CompartmentId: &f.CompartmentID, DisplayName: common.String("uid"), ShapeName: common.String("flexible"), SubnetIds: []string{f.SubnetID},
		ShapeDetails:            &loadbalancer.ShapeDetails{MinimumBandwidthInMbps: common.Int(10), MaximumBandwidthInMbps: common.Int(10)},
		NetworkSecurityGroupIds: []string{front}}})
	require.NoError(t, err)
	_, err = c.network.DeleteNetworkSecurityGroup(ctx, core.DeleteNetworkSecurityGroupRequest{NetworkSecurityGroupId: &front})
	assert.Equal(t, 409, serviceError(t, err).GetHTTPStatusCode())
	wr, err := lbc.GetWorkRequest(ctx, loadbalancer.GetWorkRequestRequest{WorkRequestId: created.OpcWorkRequestId})
	require.NoError(t, err)
	_, err = lbc.UpdateNetworkSecurityGroups(ctx, loadbalancer.UpdateNetworkSecurityGroupsRequest{LoadBalancerId: wr.LoadBalancerId,
		UpdateNetworkSecurityGroupsDetails: loadbalancer.UpdateNetworkSecurityGroupsDetails{NetworkSecurityGroupIds: []string{}}})
	require.NoError(t, err)
	_, err = lbc.GetLoadBalancer(ctx, loadbalancer.GetLoadBalancerRequest{LoadBalancerId: wr.LoadBalancerId}) // settles the work request
	require.NoError(t, err)
	_, err = c.network.DeleteNetworkSecurityGroup(ctx, core.DeleteNetworkSecurityGroupRequest{NetworkSecurityGroupId: &front})
	require.NoError(t, err)
	listed, err := c.network.ListNetworkSecurityGroups(ctx, core.ListNetworkSecurityGroupsRequest{CompartmentId: &f.CompartmentID, VcnId: &f.VCNID})
	require.NoError(t, err)
	require.Len(t, listed.Items, 1)
	assert.Equal(t, back, *listed.Items[0].Id)
}

// UpdateNetworkSecurityGroup replaces the tags it is given, with the etag
// read (412 NoEtagMatch with another), as the peer tags a backend NSG.
func TestTheSDKTagsANetworkSecurityGroupWithItsCurrentEtag(t *testing.T) {
	e := started(t, Options{})
	c := fixtureClients(t, e)
	ctx := t.Context()
	f := e.fx
	g, err := c.network.CreateNetworkSecurityGroup(ctx, core.CreateNetworkSecurityGroupRequest{CreateNetworkSecurityGroupDetails: core.CreateNetworkSecurityGroupDetails{
		CompartmentId: &f.CompartmentID, VcnId: &f.VCNID, DisplayName: common.String("nodes"), FreeformTags: map[string]string{"team": "a"}}})
	require.NoError(t, err)
	got, err := c.network.GetNetworkSecurityGroup(ctx, core.GetNetworkSecurityGroupRequest{NetworkSecurityGroupId: g.Id})
	require.NoError(t, err)
	require.NotNil(t, got.Etag)
	up, err := c.network.UpdateNetworkSecurityGroup(ctx, core.UpdateNetworkSecurityGroupRequest{NetworkSecurityGroupId: g.Id, IfMatch: got.Etag,
		UpdateNetworkSecurityGroupDetails: core.UpdateNetworkSecurityGroupDetails{FreeformTags: map[string]string{"team": "a", "ManagedBy": "CCM"}}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"team": "a", "ManagedBy": "CCM"}, up.FreeformTags)
	assert.Equal(t, "nodes", *up.DisplayName, "what is not given is kept")
	_, err = c.network.UpdateNetworkSecurityGroup(ctx, core.UpdateNetworkSecurityGroupRequest{NetworkSecurityGroupId: g.Id, IfMatch: got.Etag,
		UpdateNetworkSecurityGroupDetails: core.UpdateNetworkSecurityGroupDetails{FreeformTags: map[string]string{}}})
	assert.Equal(t, 412, serviceError(t, err).GetHTTPStatusCode(), "the etag read before the change")
}

// CreateNetworkSecurityGroup with an opc-retry-token is idempotent, as
// oci-go-sdk documents it: the same token and body are answered with the
// NSG first made (not a second one); another body with it is 409.
func TestAnNSGCreateRetriedWithItsTokenMakesOneNSG(t *testing.T) {
	e := started(t, Options{})
	c := fixtureClients(t, e)
	ctx := t.Context()
	f := e.fx
	mk := func(name, token string) (string, error) {
		g, err := c.network.CreateNetworkSecurityGroup(ctx, core.CreateNetworkSecurityGroupRequest{OpcRetryToken: common.String(token),
			CreateNetworkSecurityGroupDetails: core.CreateNetworkSecurityGroupDetails{CompartmentId: &f.CompartmentID, VcnId: &f.VCNID, DisplayName: common.String(name)}})
		if err != nil {
			return "", err
		}
		return *g.Id, nil
	}
	first, err := mk("front", "token-1")
	require.NoError(t, err)
	again, err := mk("front", "token-1")
	require.NoError(t, err)
	assert.Equal(t, first, again, "the retry is answered with the first NSG")
	assert.Equal(t, 1, e.Objects()["networkSecurityGroup"])
	_, err = mk("other", "token-1")
	assert.Equal(t, 409, serviceError(t, err).GetHTTPStatusCode())
	other, err := mk("front", "token-2")
	require.NoError(t, err)
	assert.NotEqual(t, first, other, "another token is another create")
}
