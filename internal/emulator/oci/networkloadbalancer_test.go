package oci

import (
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	nlb "github.com/oracle/oci-go-sdk/v65/networkloadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nlbClient is the SDK's network load balancer client of e, as the
// fixture's user.
func nlbClient(t *testing.T, e *Emulator) nlb.NetworkLoadBalancerClient {
	c, err := nlb.NewNetworkLoadBalancerClientWithConfigurationProvider(fixtureUser(t, e))
	require.NoError(t, err)
	c.Host = e.URL()
	return c
}

func TestTheSDKBuildsChangesAndDeletesANetworkLoadBalancer(t *testing.T) {
	clk := &clock{now: time.Now()}
	e := started(t, Options{Provisioning: 10 * time.Second, Clock: clk.Now})
	c := nlbClient(t, e)
	ctx := t.Context()
	f := e.fx
	id, _ := e.AddMachine("node-1")
	set := nlb.BackendSetDetails{Policy: nlb.NetworkLoadBalancingPolicyFiveTuple, IsPreserveSource: common.Bool(true),
		HealthChecker: &nlb.HealthChecker{Protocol: nlb.HealthCheckProtocolsHttp, Port: common.Int(10256), UrlPath: common.String("/healthz")},
		Backends:      []nlb.Backend{{IpAddress: common.String("10.0.10.2"), TargetId: &id, Port: common.Int(30053), Weight: common.Int(1)}}}
	details := nlb.CreateNetworkLoadBalancerDetails{CompartmentId: &f.CompartmentID, DisplayName: common.String("default/dns/uid"),
		SubnetId: &f.SubnetID, IsPreserveSourceDestination: common.Bool(false),
		BackendSets: map[string]nlb.BackendSetDetails{"TCP_AND_UDP-53": set},
		Listeners: map[string]nlb.ListenerDetails{"TCP_AND_UDP-53": {Name: common.String("TCP_AND_UDP-53"),
			DefaultBackendSetName: common.String("TCP_AND_UDP-53"), Port: common.Int(53), Protocol: nlb.ListenerProtocolsTcpAndUdp}}}
	created, err := c.CreateNetworkLoadBalancer(ctx, nlb.CreateNetworkLoadBalancerRequest{CreateNetworkLoadBalancerDetails: details, OpcRetryToken: common.String("t1")})
	require.NoError(t, err)
	require.NotNil(t, created.OpcWorkRequestId)
	require.NotNil(t, created.Etag)
	assert.Equal(t, nlb.LifecycleStateCreating, created.LifecycleState)
	require.NotEmpty(t, created.IpAddresses, "the address is there from the creation")
	// The same token and body: the same creation.
	again, err := c.CreateNetworkLoadBalancer(ctx, nlb.CreateNetworkLoadBalancerRequest{CreateNetworkLoadBalancerDetails: details, OpcRetryToken: common.String("t1")})
	require.NoError(t, err)
	assert.Equal(t, *created.Id, *again.Id)

	wr, err := c.GetWorkRequest(ctx, nlb.GetWorkRequestRequest{WorkRequestId: created.OpcWorkRequestId})
	require.NoError(t, err)
	assert.Equal(t, nlb.OperationTypeCreateNetworkLoadBalancer, wr.OperationType)
	assert.Equal(t, *created.Id, *wr.Resources[0].Identifier)

	// A change while it is being created: 409.
	_, err = c.UpdateBackendSet(ctx, nlb.UpdateBackendSetRequest{NetworkLoadBalancerId: created.Id, BackendSetName: common.String("TCP_AND_UDP-53"),
		UpdateBackendSetDetails: nlb.UpdateBackendSetDetails{HealthChecker: &nlb.HealthCheckerDetails{Protocol: nlb.HealthCheckProtocolsHttp, Port: common.Int(10256), UrlPath: common.String("/healthz")}, Backends: []nlb.BackendDetails{}}})
	assert.Equal(t, 409, serviceError(t, err).GetHTTPStatusCode())

	clk.now = clk.now.Add(11 * time.Second)
	got, err := c.GetNetworkLoadBalancer(ctx, nlb.GetNetworkLoadBalancerRequest{NetworkLoadBalancerId: created.Id})
	require.NoError(t, err)
	assert.Equal(t, nlb.LifecycleStateActive, got.LifecycleState)
	require.NotNil(t, got.Etag)
	bs := got.BackendSets["TCP_AND_UDP-53"]
	require.Len(t, bs.Backends, 1)
	assert.Equal(t, "10.0.10.2", *bs.Backends[0].IpAddress, "backends carry ipAddress and port (the peer reads both)")
	assert.Equal(t, 30053, *bs.Backends[0].Port)
	assert.True(t, *bs.IsPreserveSource)
	assert.False(t, *got.IsPreserveSourceDestination)
	assert.Equal(t, nlb.NlbIpVersionIpv4, got.NlbIpVersion)

	list, err := c.ListNetworkLoadBalancers(ctx, nlb.ListNetworkLoadBalancersRequest{CompartmentId: &f.CompartmentID, DisplayName: common.String("default/dns/uid")})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)

	// A change: UPDATING until its work request succeeds, and a second
	// change meanwhile is refused.
	up, err := c.UpdateBackendSet(ctx, nlb.UpdateBackendSetRequest{NetworkLoadBalancerId: created.Id, BackendSetName: common.String("TCP_AND_UDP-53"),
		UpdateBackendSetDetails: nlb.UpdateBackendSetDetails{HealthChecker: &nlb.HealthCheckerDetails{Protocol: nlb.HealthCheckProtocolsHttp, Port: common.Int(10256), UrlPath: common.String("/healthz")}, Backends: []nlb.BackendDetails{}}})
	require.NoError(t, err)
	require.NotNil(t, up.OpcWorkRequestId)
	_, err = c.DeleteListener(ctx, nlb.DeleteListenerRequest{NetworkLoadBalancerId: created.Id, ListenerName: common.String("TCP_AND_UDP-53")})
	assert.Equal(t, 409, serviceError(t, err).GetHTTPStatusCode())
	clk.now = clk.now.Add(11 * time.Second)
	got, err = c.GetNetworkLoadBalancer(ctx, nlb.GetNetworkLoadBalancerRequest{NetworkLoadBalancerId: created.Id})
	require.NoError(t, err)
	assert.Equal(t, nlb.LifecycleStateActive, got.LifecycleState)
	assert.Empty(t, got.BackendSets["TCP_AND_UDP-53"].Backends)
	done, err := c.GetWorkRequest(ctx, nlb.GetWorkRequestRequest{WorkRequestId: up.OpcWorkRequestId})
	require.NoError(t, err)
	assert.Equal(t, nlb.OperationStatusSucceeded, done.Status)
	assert.InDelta(t, 100, *done.PercentComplete, 0.01)

	// A listener's port and transport are its own.
	_, err = c.CreateListener(ctx, nlb.CreateListenerRequest{NetworkLoadBalancerId: created.Id, CreateListenerDetails: nlb.CreateListenerDetails{
		Name: common.String("UDP-53"), DefaultBackendSetName: common.String("TCP_AND_UDP-53"), Port: common.Int(53), Protocol: nlb.ListenerProtocolsUdp}})
	assert.Equal(t, 400, serviceError(t, err).GetHTTPStatusCode())

	del, err := c.DeleteNetworkLoadBalancer(ctx, nlb.DeleteNetworkLoadBalancerRequest{NetworkLoadBalancerId: created.Id})
	require.NoError(t, err)
	require.NotNil(t, del.OpcWorkRequestId)
	clk.now = clk.now.Add(11 * time.Second)
	_, err = c.GetNetworkLoadBalancer(ctx, nlb.GetNetworkLoadBalancerRequest{NetworkLoadBalancerId: created.Id})
	assert.Equal(t, 404, serviceError(t, err).GetHTTPStatusCode())
	assert.Zero(t, e.Objects()["networkLoadBalancer"])
}
