package oci

import (
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/loadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureUser is the SDK's configuration of the fixture's user, with the
// SDK's circuit breaker off (a test's errors are wanted as they come).
func fixtureUser(t *testing.T, e *Emulator) common.ConfigurationProvider {
	t.Helper()
	t.Setenv("OCI_SDK_DEFAULT_CIRCUITBREAKER_ENABLED", "false")
	f := e.fx
	return common.NewRawConfigurationProvider(f.TenancyID, f.UserID, e.opts.Region, f.Fingerprint, f.PrivateKeyPEM, nil)
}

// lbClient is the SDK's load balancer client of e, as the fixture's user.
func lbClient(t *testing.T, e *Emulator) loadbalancer.LoadBalancerClient {
	c, err := loadbalancer.NewLoadBalancerClientWithConfigurationProvider(fixtureUser(t, e))
	require.NoError(t, err)
	c.Host = e.URL()
	return c
}

func tcpBackendSet(ips ...string) loadbalancer.BackendSetDetails {
	var backends []loadbalancer.BackendDetails
	for _, ip := range ips {
		backends = append(backends, loadbalancer.BackendDetails{IpAddress: common.String(ip), Port: common.Int(30080)})
	}
	return loadbalancer.BackendSetDetails{Policy: common.String("ROUND_ROBIN"), Backends: backends,
		HealthChecker: &loadbalancer.HealthCheckerDetails{Protocol: common.String("HTTP"), Port: common.Int(10256), UrlPath: common.String("/healthz")}}
}

// createLB creates a load balancer of details through the SDK and reads it
// back (its work request names it).
func createLB(t *testing.T, c loadbalancer.LoadBalancerClient, details loadbalancer.CreateLoadBalancerDetails) (*string, loadbalancer.LoadBalancer) {
	t.Helper()
	created, err := c.CreateLoadBalancer(t.Context(), loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: details})
	require.NoError(t, err)
	wr, err := c.GetWorkRequest(t.Context(), loadbalancer.GetWorkRequestRequest{WorkRequestId: created.OpcWorkRequestId})
	require.NoError(t, err)
	lb, err := c.GetLoadBalancer(t.Context(), loadbalancer.GetLoadBalancerRequest{LoadBalancerId: wr.LoadBalancerId})
	require.NoError(t, err)
	return wr.LoadBalancerId, lb.LoadBalancer
}

// clock is a settable clock for the emulator.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// story is a test told in steps against an emulator whose work requests
// take 10 seconds of a clock the test moves; id is the object it follows.
type story struct {
	t   *testing.T
	e   *Emulator
	clk *clock
	id  *string
}

// newStory starts the emulator of a story.
func newStory(t *testing.T) story {
	clk := &clock{now: time.Now()}
	return story{t: t, e: started(t, Options{Provisioning: 10 * time.Second, Clock: clk.Now}), clk: clk}
}

// advance moves the clock.
func (s *story) advance(d time.Duration) { s.clk.now = s.clk.now.Add(d) }

// steps runs a story's steps in order.
func steps(fns ...func()) {
	for _, f := range fns {
		f()
	}
}

// lbStory is what TestTheSDKBuildsChangesAndDeletesALoadBalancerThroughWorkRequests
// walks through, with the SDK's load balancer client.
type lbStory struct {
	story
	c loadbalancer.LoadBalancerClient
}

// get reads the load balancer.
func (s *lbStory) get() loadbalancer.LoadBalancer {
	lb, err := s.c.GetLoadBalancer(s.t.Context(), loadbalancer.GetLoadBalancerRequest{LoadBalancerId: s.id})
	require.NoError(s.t, err)
	return lb.LoadBalancer
}

// workRequest reads a work request.
func (s *lbStory) workRequest(id *string) loadbalancer.WorkRequest {
	wr, err := s.c.GetWorkRequest(s.t.Context(), loadbalancer.GetWorkRequestRequest{WorkRequestId: id})
	require.NoError(s.t, err)
	return wr.WorkRequest
}

func TestTheSDKBuildsChangesAndDeletesALoadBalancerThroughWorkRequests(t *testing.T) {
	s := &lbStory{story: newStory(t)}
	s.c = lbClient(t, s.e)
	steps(s.create, s.checkActive, s.checkChangesQueue, s.checkChildrenDependOnEachOther, s.checkDelete)
}

// create creates the load balancer with a retry token: the same token and
// body answer the same work request, another body 409; the load balancer
// is CREATING, without an address, until its work request succeeds.
func (s *lbStory) create() {
	t, ctx, f := s.t, s.t.Context(), s.e.fx
	details := loadbalancer.CreateLoadBalancerDetails{CompartmentId: common.String(f.CompartmentID), DisplayName: common.String("svc-uid"),
		ShapeName: common.String("flexible"), SubnetIds: []string{f.SubnetID},
		ShapeDetails: &loadbalancer.ShapeDetails{MinimumBandwidthInMbps: common.Int(10), MaximumBandwidthInMbps: common.Int(100)},
		BackendSets:  map[string]loadbalancer.BackendSetDetails{"TCP-80": tcpBackendSet("10.0.10.2")},
		Listeners: map[string]loadbalancer.ListenerDetails{"TCP-80": {DefaultBackendSetName: common.String("TCP-80"),
			Port: common.Int(80), Protocol: common.String("TCP")}},
		FreeformTags: map[string]string{"overcast-service": "svc-uid"}}
	created, err := s.c.CreateLoadBalancer(ctx, loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: details, OpcRetryToken: common.String("t1")})
	require.NoError(t, err)
	require.NotNil(t, created.OpcWorkRequestId)
	again, err := s.c.CreateLoadBalancer(ctx, loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: details, OpcRetryToken: common.String("t1")})
	require.NoError(t, err)
	assert.Equal(t, *created.OpcWorkRequestId, *again.OpcWorkRequestId)
	details.DisplayName = common.String("other")
	_, err = s.c.CreateLoadBalancer(ctx, loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: details, OpcRetryToken: common.String("t1")})
	requireServiceError(t, err, 409, "InvalidatedRetryToken")

	wr := s.workRequest(created.OpcWorkRequestId)
	assert.Equal(t, loadbalancer.WorkRequestLifecycleStateInProgress, wr.LifecycleState)
	s.id = wr.LoadBalancerId
	lb := s.get()
	assert.Equal(t, loadbalancer.LoadBalancerLifecycleStateCreating, lb.LifecycleState)
	assert.Empty(t, lb.IpAddresses)
}

// checkActive: once built, the load balancer is ACTIVE with a public
// address, the defaults of its children echoed, and listed by name.
func (s *lbStory) checkActive() {
	t := s.t
	s.advance(10 * time.Second)
	lb := s.get()
	assert.Equal(t, loadbalancer.LoadBalancerLifecycleStateActive, lb.LifecycleState)
	require.Len(t, lb.IpAddresses, 1)
	assert.True(t, *lb.IpAddresses[0].IsPublic)
	assert.Equal(t, 100, *lb.ShapeDetails.MaximumBandwidthInMbps)
	bs := lb.BackendSets["TCP-80"]
	assert.Equal(t, "10.0.10.2:30080", *bs.Backends[0].Name)
	assert.Equal(t, 1, *bs.Backends[0].Weight, "defaults echoed")
	assert.Equal(t, 3, *bs.HealthChecker.Retries)
	assert.Equal(t, int64(300), *lb.Listeners["TCP-80"].ConnectionConfiguration.IdleTimeout)
	assert.Equal(t, "svc-uid", lb.FreeformTags["overcast-service"])

	listed, err := s.c.ListLoadBalancers(t.Context(), loadbalancer.ListLoadBalancersRequest{CompartmentId: common.String(s.e.fx.CompartmentID), DisplayName: common.String("svc-uid")})
	require.NoError(t, err)
	require.Len(t, listed.Items, 1)
	assert.Equal(t, *s.id, *listed.Items[0].Id)

	backends, err := s.c.ListBackends(t.Context(), loadbalancer.ListBackendsRequest{LoadBalancerId: s.id, BackendSetName: common.String("TCP-80")})
	require.NoError(t, err)
	require.Len(t, backends.Items, 1, "a backend set's backends, whole")
	assert.Equal(t, "10.0.10.2:30080", *backends.Items[0].Name)
	_, err = s.c.ListBackends(t.Context(), loadbalancer.ListBackendsRequest{LoadBalancerId: s.id, BackendSetName: common.String("none")})
	requireServiceError(t, err, 404, "NotAuthorizedOrNotFound")
}

// checkChangesQueue: two changes queue, the second running after the first.
func (s *lbStory) checkChangesQueue() {
	t, ctx, id := s.t, s.t.Context(), s.id
	upd := tcpBackendSet("10.0.10.2", "10.0.10.3")
	first, err := s.c.UpdateBackendSet(ctx, loadbalancer.UpdateBackendSetRequest{LoadBalancerId: id, BackendSetName: common.String("TCP-80"),
		UpdateBackendSetDetails: loadbalancer.UpdateBackendSetDetails{Policy: upd.Policy, Backends: upd.Backends, HealthChecker: upd.HealthChecker}})
	require.NoError(t, err)
	b443 := tcpBackendSet("10.0.10.2")
	second, err := s.c.CreateBackendSet(ctx, loadbalancer.CreateBackendSetRequest{LoadBalancerId: id,
		CreateBackendSetDetails: loadbalancer.CreateBackendSetDetails{Name: common.String("TCP-443"), Policy: b443.Policy, Backends: b443.Backends, HealthChecker: b443.HealthChecker}})
	require.NoError(t, err)
	s.advance(10 * time.Second)
	assert.Equal(t, loadbalancer.WorkRequestLifecycleStateSucceeded, s.workRequest(first.OpcWorkRequestId).LifecycleState)
	assert.Equal(t, loadbalancer.WorkRequestLifecycleStateInProgress, s.workRequest(second.OpcWorkRequestId).LifecycleState)
	wrs, err := s.c.ListWorkRequests(ctx, loadbalancer.ListWorkRequestsRequest{LoadBalancerId: id})
	require.NoError(t, err)
	assert.Len(t, wrs.Items, 3)
	s.advance(10 * time.Second)
}

// checkChildrenDependOnEachOther: a listener needs its backend set; a
// backend set in use cannot go.
func (s *lbStory) checkChildrenDependOnEachOther() {
	t, ctx, id := s.t, s.t.Context(), s.id
	_, err := s.c.CreateListener(ctx, loadbalancer.CreateListenerRequest{LoadBalancerId: id, CreateListenerDetails: loadbalancer.CreateListenerDetails{
		Name: common.String("TCP-8443"), DefaultBackendSetName: common.String("nope"), Port: common.Int(8443), Protocol: common.String("TCP")}})
	requireServiceError(t, err, 400, "InvalidParameter")
	_, err = s.c.DeleteBackendSet(ctx, loadbalancer.DeleteBackendSetRequest{LoadBalancerId: id, BackendSetName: common.String("TCP-80")})
	requireServiceError(t, err, 400, "InvalidParameter")
	_, err = s.c.CreateListener(ctx, loadbalancer.CreateListenerRequest{LoadBalancerId: id, CreateListenerDetails: loadbalancer.CreateListenerDetails{
		Name: common.String("TCP-443"), DefaultBackendSetName: common.String("TCP-443"), Port: common.Int(443), Protocol: common.String("TCP")}})
	require.NoError(t, err)
	_, err = s.c.DeleteListener(ctx, loadbalancer.DeleteListenerRequest{LoadBalancerId: id, ListenerName: common.String("TCP-80")})
	require.NoError(t, err)
	s.advance(20 * time.Second)
	lb := s.get()
	assert.Len(t, lb.BackendSets["TCP-80"].Backends, 2)
	assert.Contains(t, lb.Listeners, "TCP-443")
	assert.NotContains(t, lb.Listeners, "TCP-80")
	assert.Equal(t, 1, s.e.Objects()["loadBalancer"])
}

// checkDelete: DELETING until the delete's work request succeeds, then gone.
func (s *lbStory) checkDelete() {
	t := s.t
	del, err := s.c.DeleteLoadBalancer(t.Context(), loadbalancer.DeleteLoadBalancerRequest{LoadBalancerId: s.id})
	require.NoError(t, err)
	require.NotNil(t, del.OpcWorkRequestId)
	assert.Equal(t, loadbalancer.LoadBalancerLifecycleStateDeleting, s.get().LifecycleState)
	s.advance(10 * time.Second)
	_, err = s.c.GetLoadBalancer(t.Context(), loadbalancer.GetLoadBalancerRequest{LoadBalancerId: s.id})
	requireServiceError(t, err, 404, "NotAuthorizedOrNotFound")
	assert.Equal(t, 0, s.e.Objects()["loadBalancer"])
}

func TestAFlexibleShapeNeedsItsBandwidth(t *testing.T) {
	e := started(t, Options{})
	c := lbClient(t, e)
	f := e.fx
	_, err := c.CreateLoadBalancer(t.Context(), loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: loadbalancer.CreateLoadBalancerDetails{
		CompartmentId: common.String(f.CompartmentID), DisplayName: common.String("x"), ShapeName: common.String("flexible"), SubnetIds: []string{f.SubnetID}}})
	requireServiceError(t, err, 400, "InvalidParameter")
	_, err = c.CreateLoadBalancer(t.Context(), loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: loadbalancer.CreateLoadBalancerDetails{
		CompartmentId: common.String(f.CompartmentID), DisplayName: common.String("x"), ShapeName: common.String("100Mbps"), SubnetIds: []string{"ocid1.subnet.oc1.iad.nope"}}})
	requireServiceError(t, err, 400, "RelatedResourceNotAuthorizedOrNotFound")
	assert.Equal(t, 0, e.Objects()["loadBalancer"])
}

func requireServiceError(t *testing.T, err error, status int, code string) {
	t.Helper()
	se := serviceError(t, err)
	assert.Equal(t, status, se.GetHTTPStatusCode(), se.GetMessage())
	assert.Equal(t, code, se.GetCode(), se.GetMessage())
}

func TestTheSDKUpdatesASecurityListOnlyWithItsCurrentEtag(t *testing.T) {
	e := started(t, Options{})
	c := fixtureClients(t, e).network
	ctx := t.Context()
	got, err := c.GetSecurityList(ctx, core.GetSecurityListRequest{SecurityListId: common.String(e.fx.SecurityListID)})
	require.NoError(t, err)
	require.NotNil(t, got.Etag)
	require.Len(t, got.IngressSecurityRules, 2)
	rule := core.IngressSecurityRule{Protocol: common.String("6"), Source: common.String("0.0.0.0/0"), Description: common.String("mine"),
		TcpOptions: &core.TcpOptions{DestinationPortRange: &core.PortRange{Min: common.Int(80), Max: common.Int(80)}}}
	upd, err := c.UpdateSecurityList(ctx, core.UpdateSecurityListRequest{SecurityListId: common.String(e.fx.SecurityListID), IfMatch: got.Etag,
		UpdateSecurityListDetails: core.UpdateSecurityListDetails{IngressSecurityRules: append(got.IngressSecurityRules, rule)}})
	require.NoError(t, err)
	assert.NotEqual(t, *got.Etag, *upd.Etag)
	require.Len(t, upd.IngressSecurityRules, 3)
	assert.Equal(t, "mine", *upd.IngressSecurityRules[2].Description)
	assert.Equal(t, 3, *upd.IngressSecurityRules[1].IcmpOptions.Type, "what the emulator does not read is kept")
	// The etag read before the update is stale now.
	_, err = c.UpdateSecurityList(ctx, core.UpdateSecurityListRequest{SecurityListId: common.String(e.fx.SecurityListID), IfMatch: got.Etag,
		UpdateSecurityListDetails: core.UpdateSecurityListDetails{IngressSecurityRules: got.IngressSecurityRules}})
	se := serviceError(t, err)
	assert.Equal(t, 412, se.GetHTTPStatusCode())
	assert.Equal(t, "NoEtagMatch", se.GetCode())
	assert.Contains(t, se.GetMessage(), "has a computed tag of "+*upd.Etag+", but is passed a tag of "+*got.Etag)
}

func TestAReservedPublicIPGoesToTheLoadBalancerAndBack(t *testing.T) {
	e := started(t, Options{})
	c, network := lbClient(t, e), fixtureClients(t, e).network
	ctx := t.Context()
	id, ip := e.ReservePublicIP()
	got, err := network.GetPublicIpByIpAddress(ctx, core.GetPublicIpByIpAddressRequest{
		GetPublicIpByIpAddressDetails: core.GetPublicIpByIpAddressDetails{IpAddress: common.String(ip)}})
	require.NoError(t, err)
	assert.Equal(t, id, *got.Id)
	assert.Equal(t, core.PublicIpLifecycleStateAvailable, got.LifecycleState)
	assert.Equal(t, core.PublicIpLifetimeReserved, got.Lifetime)
	listed, err := network.ListPublicIps(ctx, core.ListPublicIpsRequest{Scope: core.ListPublicIpsScopeRegion,
		CompartmentId: common.String(e.fx.CompartmentID), Lifetime: core.ListPublicIpsLifetimeReserved})
	require.NoError(t, err)
	require.Len(t, listed.Items, 1)

	f := e.fx
	details := loadbalancer.CreateLoadBalancerDetails{CompartmentId: common.String(f.CompartmentID), DisplayName: common.String("svc"),
		ShapeName: common.String("100Mbps"), SubnetIds: []string{f.SubnetID}, ReservedIps: []loadbalancer.ReservedIp{{Id: common.String(id)}}}
	created, err := c.CreateLoadBalancer(ctx, loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: details})
	require.NoError(t, err)
	_, err = c.CreateLoadBalancer(ctx, loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: details})
	requireServiceError(t, err, 409, "Conflict")
	wr, err := c.GetWorkRequest(ctx, loadbalancer.GetWorkRequestRequest{WorkRequestId: created.OpcWorkRequestId})
	require.NoError(t, err)
	lb, err := c.GetLoadBalancer(ctx, loadbalancer.GetLoadBalancerRequest{LoadBalancerId: wr.LoadBalancerId})
	require.NoError(t, err)
	require.Len(t, lb.IpAddresses, 1)
	assert.Equal(t, ip, *lb.IpAddresses[0].IpAddress)
	assert.Equal(t, id, *lb.IpAddresses[0].ReservedIp.Id)
	byID, err := network.GetPublicIp(ctx, core.GetPublicIpRequest{PublicIpId: common.String(id)})
	require.NoError(t, err)
	assert.Equal(t, core.PublicIpLifecycleStateAssigned, byID.LifecycleState)

	_, err = c.DeleteLoadBalancer(ctx, loadbalancer.DeleteLoadBalancerRequest{LoadBalancerId: wr.LoadBalancerId})
	require.NoError(t, err)
	byID, err = network.GetPublicIp(ctx, core.GetPublicIpRequest{PublicIpId: common.String(id)})
	require.NoError(t, err)
	assert.Equal(t, core.PublicIpLifecycleStateAvailable, byID.LifecycleState, "given back with the load balancer")
}
