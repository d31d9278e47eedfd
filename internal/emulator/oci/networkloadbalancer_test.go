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

// nlbStory is what TestTheSDKBuildsChangesAndDeletesANetworkLoadBalancer
// walks through, with the SDK's network load balancer client.
type nlbStory struct {
	story
	c nlb.NetworkLoadBalancerClient
}

func TestTheSDKBuildsChangesAndDeletesANetworkLoadBalancer(t *testing.T) {
	s := &nlbStory{story: newStory(t)}
	s.c = nlbClient(t, s.e)
	steps(s.create, s.checkActive, s.checkOneChangeAtATime, s.checkDelete)
}

// get reads the network load balancer.
func (s *nlbStory) get() nlb.NetworkLoadBalancer {
	got, err := s.c.GetNetworkLoadBalancer(s.t.Context(), nlb.GetNetworkLoadBalancerRequest{NetworkLoadBalancerId: s.id})
	require.NoError(s.t, err)
	require.NotNil(s.t, got.Etag)
	return got.NetworkLoadBalancer
}

// updateBackendSet empties the backend set's backends.
func (s *nlbStory) updateBackendSet() (nlb.UpdateBackendSetResponse, error) {
	return s.c.UpdateBackendSet(s.t.Context(), nlb.UpdateBackendSetRequest{NetworkLoadBalancerId: s.id, BackendSetName: common.String("TCP_AND_UDP-53"),
		UpdateBackendSetDetails: nlb.UpdateBackendSetDetails{HealthChecker: &nlb.HealthCheckerDetails{Protocol: nlb.HealthCheckProtocolsHttp, Port: common.Int(10256), UrlPath: common.String("/healthz")}, Backends: []nlb.BackendDetails{}}})
}

// create creates the network load balancer with a retry token: CREATING
// with its address at once, the same token and body answering the same
// creation, a change refused (409) while it is being created.
func (s *nlbStory) create() {
	t, ctx, f := s.t, s.t.Context(), s.e.fx
	id, _ := s.e.AddMachine("node-1")
	set := nlb.BackendSetDetails{Policy: nlb.NetworkLoadBalancingPolicyFiveTuple, IsPreserveSource: common.Bool(true),
		HealthChecker: &nlb.HealthChecker{Protocol: nlb.HealthCheckProtocolsHttp, Port: common.Int(10256), UrlPath: common.String("/healthz")},
		Backends:      []nlb.Backend{{IpAddress: common.String("10.0.10.2"), TargetId: &id, Port: common.Int(30053), Weight: common.Int(1)}}}
	details := nlb.CreateNetworkLoadBalancerDetails{CompartmentId: &f.CompartmentID, DisplayName: common.String("default/dns/uid"),
		SubnetId: &f.SubnetID, IsPreserveSourceDestination: common.Bool(false),
		BackendSets: map[string]nlb.BackendSetDetails{"TCP_AND_UDP-53": set},
		Listeners: map[string]nlb.ListenerDetails{"TCP_AND_UDP-53": {Name: common.String("TCP_AND_UDP-53"),
			DefaultBackendSetName: common.String("TCP_AND_UDP-53"), Port: common.Int(53), Protocol: nlb.ListenerProtocolsTcpAndUdp}}}
	created, err := s.c.CreateNetworkLoadBalancer(ctx, nlb.CreateNetworkLoadBalancerRequest{CreateNetworkLoadBalancerDetails: details, OpcRetryToken: common.String("t1")})
	require.NoError(t, err)
	require.NotNil(t, created.OpcWorkRequestId)
	require.NotNil(t, created.Etag)
	assert.Equal(t, nlb.LifecycleStateCreating, created.LifecycleState)
	require.NotEmpty(t, created.IpAddresses, "the address is there from the creation")
	again, err := s.c.CreateNetworkLoadBalancer(ctx, nlb.CreateNetworkLoadBalancerRequest{CreateNetworkLoadBalancerDetails: details, OpcRetryToken: common.String("t1")})
	require.NoError(t, err)
	assert.Equal(t, *created.Id, *again.Id)
	s.id = created.Id

	wr, err := s.c.GetWorkRequest(ctx, nlb.GetWorkRequestRequest{WorkRequestId: created.OpcWorkRequestId})
	require.NoError(t, err)
	assert.Equal(t, nlb.OperationTypeCreateNetworkLoadBalancer, wr.OperationType)
	assert.Equal(t, *created.Id, *wr.Resources[0].Identifier)
	_, err = s.updateBackendSet()
	assert.Equal(t, 409, serviceError(t, err).GetHTTPStatusCode())
}

// checkActive: once built, ACTIVE with its backends as given (ipAddress
// and port, which the peer reads both), and listed by name.
func (s *nlbStory) checkActive() {
	t := s.t
	s.advance(11 * time.Second)
	got := s.get()
	assert.Equal(t, nlb.LifecycleStateActive, got.LifecycleState)
	bs := got.BackendSets["TCP_AND_UDP-53"]
	require.Len(t, bs.Backends, 1)
	assert.Equal(t, "10.0.10.2", *bs.Backends[0].IpAddress, "backends carry ipAddress and port (the peer reads both)")
	assert.Equal(t, 30053, *bs.Backends[0].Port)
	assert.True(t, *bs.IsPreserveSource)
	assert.False(t, *got.IsPreserveSourceDestination)
	assert.Equal(t, nlb.NlbIpVersionIpv4, got.NlbIpVersion)

	list, err := s.c.ListNetworkLoadBalancers(t.Context(), nlb.ListNetworkLoadBalancersRequest{CompartmentId: &s.e.fx.CompartmentID, DisplayName: common.String("default/dns/uid")})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)

	backends, err := s.c.ListBackends(t.Context(), nlb.ListBackendsRequest{NetworkLoadBalancerId: s.id, BackendSetName: common.String("TCP_AND_UDP-53"), Limit: common.Int(1)})
	require.NoError(t, err)
	require.Len(t, backends.Items, 1, "a backend set's backends, by pages")
	assert.Equal(t, 30053, *backends.Items[0].Port)
	assert.Nil(t, backends.OpcNextPage)
	_, err = s.c.ListBackends(t.Context(), nlb.ListBackendsRequest{NetworkLoadBalancerId: s.id, BackendSetName: common.String("none")})
	assert.Equal(t, 404, serviceError(t, err).GetHTTPStatusCode())
}

// checkOneChangeAtATime: a change makes it UPDATING until its work request
// succeeds, a second change meanwhile refused; a listener's port and
// transport are its own.
func (s *nlbStory) checkOneChangeAtATime() {
	t, ctx := s.t, s.t.Context()
	up, err := s.updateBackendSet()
	require.NoError(t, err)
	require.NotNil(t, up.OpcWorkRequestId)
	_, err = s.c.DeleteListener(ctx, nlb.DeleteListenerRequest{NetworkLoadBalancerId: s.id, ListenerName: common.String("TCP_AND_UDP-53")})
	assert.Equal(t, 409, serviceError(t, err).GetHTTPStatusCode())
	s.advance(11 * time.Second)
	got := s.get()
	assert.Equal(t, nlb.LifecycleStateActive, got.LifecycleState)
	assert.Empty(t, got.BackendSets["TCP_AND_UDP-53"].Backends)
	done, err := s.c.GetWorkRequest(ctx, nlb.GetWorkRequestRequest{WorkRequestId: up.OpcWorkRequestId})
	require.NoError(t, err)
	assert.Equal(t, nlb.OperationStatusSucceeded, done.Status)
	assert.InDelta(t, 100, *done.PercentComplete, 0.01)

	_, err = s.c.CreateListener(ctx, nlb.CreateListenerRequest{NetworkLoadBalancerId: s.id, CreateListenerDetails: nlb.CreateListenerDetails{
		Name: common.String("UDP-53"), DefaultBackendSetName: common.String("TCP_AND_UDP-53"), Port: common.Int(53), Protocol: nlb.ListenerProtocolsUdp}})
	assert.Equal(t, 400, serviceError(t, err).GetHTTPStatusCode())
}

// checkDelete: gone once the delete's work request succeeds.
func (s *nlbStory) checkDelete() {
	t := s.t
	del, err := s.c.DeleteNetworkLoadBalancer(t.Context(), nlb.DeleteNetworkLoadBalancerRequest{NetworkLoadBalancerId: s.id})
	require.NoError(t, err)
	require.NotNil(t, del.OpcWorkRequestId)
	s.advance(11 * time.Second)
	_, err = s.c.GetNetworkLoadBalancer(t.Context(), nlb.GetNetworkLoadBalancerRequest{NetworkLoadBalancerId: s.id})
	assert.Equal(t, 404, serviceError(t, err).GetHTTPStatusCode())
	assert.Zero(t, s.e.Objects()["networkLoadBalancer"])
}
