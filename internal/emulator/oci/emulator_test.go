package oci

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/identity"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
)

// The emulator is driven through oci-go-sdk's own clients, signed as the SDK
// signs: what the SDK sends it must accept, and what it answers the SDK must
// decode.

// started is an emulator of opts serving on loopback for the test.
func started(t *testing.T, opts Options) *Emulator { t.Helper(); return coretest.Start(t, New, opts) }

type sdkClients struct {
	compute  core.ComputeClient
	network  core.VirtualNetworkClient
	identity identity.IdentityClient
}

// clients are the SDK's clients of the emulator, as the user of keyPEM.
func clients(t *testing.T, e *Emulator, userID, fp, keyPEM string) sdkClients {
	t.Helper()
	t.Setenv("OCI_SDK_DEFAULT_CIRCUITBREAKER_ENABLED", "false")
	p := common.NewRawConfigurationProvider(e.fx.TenancyID, userID, e.opts.Region, fp, keyPEM, nil)
	var c sdkClients
	var err error
	c.compute, err = core.NewComputeClientWithConfigurationProvider(p)
	require.NoError(t, err)
	c.compute.Host = e.URL()
	c.network, err = core.NewVirtualNetworkClientWithConfigurationProvider(p)
	require.NoError(t, err)
	c.network.Host = e.URL()
	c.identity, err = identity.NewIdentityClientWithConfigurationProvider(p)
	require.NoError(t, err)
	c.identity.Host = e.URL()
	return c
}

func fixtureClients(t *testing.T, e *Emulator) sdkClients {
	return clients(t, e, e.fx.UserID, e.fx.Fingerprint, e.fx.PrivateKeyPEM)
}

func serviceError(t *testing.T, err error) common.ServiceError {
	t.Helper()
	require.Error(t, err)
	se, ok := common.IsServiceError(err)
	require.True(t, ok, "a service error, not %v", err)
	return se
}

func TestTheSDKListsInstancesPageByPage(t *testing.T) {
	e := started(t, Options{})
	c := fixtureClients(t, e)
	ctx := t.Context()
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		e.AddMachine(n)
	}
	var names []string
	var page *string
	for pages := 1; ; pages++ {
		resp, err := c.compute.ListInstances(ctx, core.ListInstancesRequest{CompartmentId: &e.fx.CompartmentID, Limit: common.Int(2), Page: page})
		require.NoError(t, err)
		assert.NotEmpty(t, *resp.OpcRequestId)
		for _, i := range resp.Items {
			names = append(names, *i.DisplayName)
			assert.Equal(t, core.InstanceLifecycleStateRunning, i.LifecycleState)
			assert.Equal(t, "iad", *i.Region, "OCI answers the oldest regions by their short code")
			assert.Equal(t, "VM.Standard.E4.Flex", *i.Shape)
		}
		if resp.OpcNextPage == nil {
			assert.Equal(t, 2, pages)
			break
		}
		page = resp.OpcNextPage
	}
	assert.Equal(t, []string{"node-1", "node-2", "node-3"}, names)

	one, err := c.compute.ListInstances(ctx, core.ListInstancesRequest{CompartmentId: &e.fx.CompartmentID, DisplayName: common.String("node-2")})
	require.NoError(t, err)
	require.Len(t, one.Items, 1)
	assert.Equal(t, "Uocm:US-ASHBURN-AD-2", *one.Items[0].AvailabilityDomain)
	assert.Equal(t, "FAULT-DOMAIN-2", *one.Items[0].FaultDomain)
}

func TestTheSDKReadsAnInstanceAndItsPrimaryVNIC(t *testing.T) {
	e := started(t, Options{})
	c := fixtureClients(t, e)
	ctx := t.Context()
	id, ip := e.AddMachine("node-1")

	inst, err := c.compute.GetInstance(ctx, core.GetInstanceRequest{InstanceId: &id})
	require.NoError(t, err)
	assert.Equal(t, "node-1", *inst.DisplayName)
	assert.Equal(t, e.fx.CompartmentID, *inst.CompartmentId)

	atts, err := c.compute.ListVnicAttachments(ctx, core.ListVnicAttachmentsRequest{CompartmentId: &e.fx.CompartmentID, InstanceId: &id})
	require.NoError(t, err)
	require.Len(t, atts.Items, 1)
	assert.Equal(t, core.VnicAttachmentLifecycleStateAttached, atts.Items[0].LifecycleState)
	vnic, err := c.network.GetVnic(ctx, core.GetVnicRequest{VnicId: atts.Items[0].VnicId})
	require.NoError(t, err)
	assert.True(t, *vnic.IsPrimary)
	assert.Equal(t, ip, *vnic.PrivateIp)
	assert.NotEmpty(t, *vnic.PublicIp)

	sub, err := c.network.GetSubnet(ctx, core.GetSubnetRequest{SubnetId: vnic.SubnetId})
	require.NoError(t, err)
	assert.Equal(t, e.fx.VCNID, *sub.VcnId)
	assert.Nil(t, sub.AvailabilityDomain, "a regional subnet")
	v, err := c.network.GetVcn(ctx, core.GetVcnRequest{VcnId: sub.VcnId})
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.0/16", *v.CidrBlock)

	ads, err := c.identity.ListAvailabilityDomains(ctx, identity.ListAvailabilityDomainsRequest{CompartmentId: &e.fx.CompartmentID})
	require.NoError(t, err)
	assert.Len(t, ads.Items, 3)

	require.NoError(t, e.SetInstanceState(id, StateTerminated))
	inst, err = c.compute.GetInstance(ctx, core.GetInstanceRequest{InstanceId: &id})
	require.NoError(t, err)
	assert.Equal(t, core.InstanceLifecycleStateTerminated, inst.LifecycleState)

	_, err = c.compute.GetInstance(ctx, core.GetInstanceRequest{InstanceId: common.String("ocid1.instance.oc1.iad.gone")})
	se := serviceError(t, err)
	assert.Equal(t, http.StatusNotFound, se.GetHTTPStatusCode())
	assert.Equal(t, "NotAuthorizedOrNotFound", se.GetCode())
	assert.NotEmpty(t, se.GetOpcRequestID())
}

func newKey(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

func TestRequestsNotSignedByAKnownKeyAreNotAuthenticated(t *testing.T) {
	e := started(t, Options{})
	ctx := t.Context()
	_, otherPEM := newKey(t)
	for name, c := range map[string]sdkClients{
		"another key under the user's fingerprint": clients(t, e, e.fx.UserID, e.fx.Fingerprint, otherPEM),
		"an unknown user":                          clients(t, e, "ocid1.user.oc1..nobody", e.fx.Fingerprint, e.fx.PrivateKeyPEM),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.compute.ListInstances(ctx, core.ListInstancesRequest{CompartmentId: &e.fx.CompartmentID})
			se := serviceError(t, err)
			assert.Equal(t, http.StatusUnauthorized, se.GetHTTPStatusCode())
			assert.Equal(t, "NotAuthenticated", se.GetCode())
		})
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL()+corePath+"/instances?compartmentId="+e.fx.CompartmentID, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no signature at all")
}

func TestARequestSignedMoreThanFiveMinutesAgoIsRefused(t *testing.T) {
	var offset atomic.Int64 // read by the server's goroutines
	e := started(t, Options{Clock: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }})
	c := fixtureClients(t, e)
	_, err := c.compute.ListInstances(context.Background(), core.ListInstancesRequest{CompartmentId: &e.fx.CompartmentID})
	require.NoError(t, err)
	offset.Store(int64(6 * time.Minute))
	_, err = c.compute.ListInstances(context.Background(), core.ListInstancesRequest{CompartmentId: &e.fx.CompartmentID})
	assert.Equal(t, "NotAuthenticated", serviceError(t, err).GetCode())
}

// A user whose policies do not cover a service gets OCI's answer to a missing
// policy: 404 NotAuthorizedOrNotFound, as for something that does not exist.
func TestAUserWithoutAPolicyGetsNotAuthorizedOrNotFound(t *testing.T) {
	e := started(t, Options{})
	id, _ := e.AddMachine("node-1")
	key, keyPEM := newKey(t)
	userID, fp := e.AddUser(&key.PublicKey, "network", "identity")
	c := clients(t, e, userID, fp, keyPEM)
	_, err := c.compute.GetInstance(t.Context(), core.GetInstanceRequest{InstanceId: &id})
	se := serviceError(t, err)
	assert.Equal(t, http.StatusNotFound, se.GetHTTPStatusCode())
	assert.Equal(t, "NotAuthorizedOrNotFound", se.GetCode())
	_, err = c.network.GetSubnet(t.Context(), core.GetSubnetRequest{SubnetId: &e.fx.SubnetID})
	require.NoError(t, err, "what its policies allow works")
}

// A node's addresses from two listings, flat in the number of nodes: the
// private IPs of the subnet and the ephemeral public IPs of an availability
// domain, joined by the private IP's OCID.
func TestTheSDKListsPrivateAndPublicIPs(t *testing.T) {
	e := started(t, Options{})
	c := fixtureClients(t, e)
	ctx := t.Context()
	for _, n := range []string{"node-1", "node-2", "node-3", "node-4"} {
		e.AddMachine(n)
	}
	private, err := c.network.ListPrivateIps(ctx, core.ListPrivateIpsRequest{SubnetId: &e.fx.SubnetID})
	require.NoError(t, err)
	require.Len(t, private.Items, 4)
	byID := map[string]core.PrivateIp{}
	for _, p := range private.Items {
		assert.True(t, *p.IsPrimary)
		byID[*p.Id] = p
	}
	ad := e.fx.AvailabilityDomains[0]
	public, err := c.network.ListPublicIps(ctx, core.ListPublicIpsRequest{Scope: core.ListPublicIpsScopeAvailabilityDomain,
		CompartmentId: &e.fx.CompartmentID, AvailabilityDomain: &ad, Lifetime: core.ListPublicIpsLifetimeEphemeral})
	require.NoError(t, err)
	require.Len(t, public.Items, 2, "node-1 and node-4 are in the first availability domain")
	for _, p := range public.Items {
		assert.Equal(t, core.PublicIpLifecycleStateAssigned, p.LifecycleState)
		priv, ok := byID[*p.PrivateIpId]
		require.True(t, ok)
		assert.Equal(t, ad, *priv.AvailabilityDomain)
	}

	_, err = c.network.ListPublicIps(ctx, core.ListPublicIpsRequest{Scope: core.ListPublicIpsScopeAvailabilityDomain, CompartmentId: &e.fx.CompartmentID})
	assert.Equal(t, "MissingParameter", serviceError(t, err).GetCode(), "an availability domain's scope names it")
}

// An SDK client left at OCI's real host names reaches the emulator through
// it as an HTTPS proxy, trusting its CA: the signature covers the real host.
func TestTheSDKReachesTheEmulatorAtOCIsHostNamesThroughItAsAProxy(t *testing.T) {
	e := started(t, Options{})
	id, _ := e.AddMachine("node-a")
	proxy, err := url.Parse(e.URL())
	require.NoError(t, err)
	c := fixtureClients(t, e).compute
	c.Host = "https://iaas.us-ashburn-1.oraclecloud.com" // as the SDK sets it for the region
	c.HTTPClient = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy),
		TLSClientConfig: &tls.Config{RootCAs: e.CAPool(), MinVersion: tls.VersionTLS12}}}
	got, err := c.GetInstance(t.Context(), core.GetInstanceRequest{InstanceId: common.String(id)})
	require.NoError(t, err)
	assert.Equal(t, "node-a", *got.DisplayName)
	calls := 0
	for _, call := range e.Calls() {
		calls += call.Count
		assert.NotEqual(t, http.MethodConnect, call.Method, "a tunnel is not an API call")
	}
	assert.Equal(t, 1, calls)

	// Only OCI's host names: nothing else is reached through the emulator.
	c.Host = "https://example.com"
	_, err = c.GetInstance(t.Context(), core.GetInstanceRequest{InstanceId: common.String(id)})
	require.Error(t, err)
}

func TestTheSDKListsTheIPv6AddressesOfADualStackSubnet(t *testing.T) {
	e := started(t, Options{IPv6CIDR: "fd00:10:0:1::/64"})
	_, _ = e.AddMachine("node-a")
	c := fixtureClients(t, e).network
	sub, err := c.GetSubnet(t.Context(), core.GetSubnetRequest{SubnetId: common.String(e.fx.SubnetID)})
	require.NoError(t, err)
	assert.Equal(t, "fd00:10:0:1::/64", *sub.Ipv6CidrBlock)
	assert.Equal(t, []string{"fd00:10:0:1::/64"}, sub.Ipv6CidrBlocks)
	got, err := c.ListIpv6s(t.Context(), core.ListIpv6sRequest{SubnetId: common.String(e.fx.SubnetID)})
	require.NoError(t, err)
	require.Len(t, got.Items, 1)
	assert.Equal(t, "fd00:10:0:1::10", *got.Items[0].IpAddress)
	vnic, err := c.GetVnic(t.Context(), core.GetVnicRequest{VnicId: got.Items[0].VnicId})
	require.NoError(t, err)
	assert.Equal(t, []string{"fd00:10:0:1::10"}, vnic.Ipv6Addresses)

	_, err = New(Options{IPv6CIDR: "10.0.0.0/64"})
	require.ErrorContains(t, err, "not an IPv6 /64")
}
