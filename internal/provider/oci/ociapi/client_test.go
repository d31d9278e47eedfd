package ociapi

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/identity"
	"github.com/oracle/oci-go-sdk/v65/loadbalancer"
	"github.com/oracle/oci-go-sdk/v65/networkloadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	emucore "github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/emulator/oci/ocitest"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

func startEmulator(t *testing.T) *emulator.Emulator {
	t.Helper()
	e, err := emulator.New(emulator.Options{})
	return coretest.Serve(t, e, err)
}

// gatewayOf is a gateway to e as the fixture's user.
func gatewayOf(t *testing.T, e *emulator.Emulator) *Client {
	t.Helper()
	f := e.Fixture()
	block, _ := pem.Decode([]byte(f.PrivateKeyPEM))
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	require.NoError(t, err)
	g, err := New(Endpoints{Core: e.URL(), Identity: e.URL()},
		APIKey{KeyID: f.TenancyID + "/" + f.UserID + "/" + f.Fingerprint, Key: key}, Limits{}, time.Now)
	require.NoError(t, err)
	return g
}

// The identities the tests sign as.
const (
	tenancy     = "ocid1.tenancy.oc1..aaaatenancy"
	user        = "ocid1.user.oc1..aaaauser"
	compartment = "ocid1.compartment.oc1..aaaacompartment"
)

// pemOf is k as an unencrypted PKCS#1 PEM.
func pemOf(k *rsa.PrivateKey) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

// testKey is a key OCI does not know.
var testKey = func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}()

func TestTheGatewayReadsNodesThroughTheEmulator(t *testing.T) {
	e := startEmulator(t)
	g := gatewayOf(t, e)
	ctx := t.Context()
	f := e.Fixture()
	var ids []string
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5"} {
		id, _ := e.AddMachine(n)
		ids = append(ids, id)
	}
	e.ResetCalls()
	g.pageSize = 2
	all, err := g.Instances(ctx, InCompartment(f.CompartmentID))
	require.NoError(t, err)
	require.Len(t, all, 5)
	assert.Equal(t, "n5", all[4].DisplayName)
	reads, _ := ocitest.ReadsAndWrites(e)
	assert.Equal(t, 3, reads, "five instances in pages of two")

	inst, err := g.Instance(ctx, ids[1])
	require.NoError(t, err)
	assert.Equal(t, "RUNNING", inst.LifecycleState)
	atts, err := g.Attachments(ctx, InCompartment(f.CompartmentID))
	require.NoError(t, err)
	require.Len(t, atts, 5)
	v, err := g.Vnic(ctx, atts[1].VnicID)
	require.NoError(t, err)
	assert.True(t, v.IsPrimary)
	assert.NotEmpty(t, v.PublicIP)
	s, err := g.Subnet(ctx, v.SubnetID)
	require.NoError(t, err)
	assert.Equal(t, f.VCNID, s.VCNID)
	ads, err := g.AvailabilityDomains(ctx, f.CompartmentID)
	require.NoError(t, err)
	assert.Len(t, ads, 3)

	// Every node's addresses in 1 + 3 listings (5 nodes, pages of 2: 3 + 3 pages).
	e.ResetCalls()
	private, err := g.PrivateIPs(ctx, f.SubnetID)
	require.NoError(t, err)
	require.Len(t, private, 5)
	addrOf := map[string]string{}
	for _, p := range private {
		addrOf[p.ID] = p.IPAddress
	}
	public := 0
	for _, ad := range ads {
		ips, err := g.EphemeralPublicIPs(ctx, f.CompartmentID, ad)
		require.NoError(t, err)
		for _, ip := range ips {
			assert.NotEmpty(t, addrOf[ip.PrivateIPID], "each public IP is on a private IP of the subnet")
			public++
		}
	}
	assert.Equal(t, 5, public)
	reads, _ = ocitest.ReadsAndWrites(e)
	assert.Equal(t, 6, reads)
}

func TestOCIErrorsAreTranslatedOnceWithTheirCodeAndRequestID(t *testing.T) {
	e := startEmulator(t)
	g := gatewayOf(t, e)
	_, err := g.Instance(t.Context(), "ocid1.instance.oc1.iad.gone")
	require.ErrorIs(t, err, outcome.ErrNotFound)
	var oe *Error
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "NotAuthorizedOrNotFound", oe.Code)
	assert.NotEmpty(t, oe.RequestID)
	assert.Contains(t, err.Error(), "GET /20160918/instances/{id}", "the operation, not the OCID")

	// A key OCI does not know: the credentials are refused, never "not
	// found", and no secret is in the error.
	f := e.Fixture()
	stranger, err := New(Endpoints{Core: e.URL()}, APIKey{KeyID: f.TenancyID + "/" + f.UserID + "/" + f.Fingerprint, Key: testKey}, Limits{}, time.Now)
	require.NoError(t, err)
	_, err = stranger.Instances(t.Context(), InCompartment(f.CompartmentID))
	require.ErrorIs(t, err, outcome.ErrAuth)
	assert.NotErrorIs(t, err, outcome.ErrNotFound)
	assert.Contains(t, err.Error(), "401 NotAuthenticated")
	assert.NotContains(t, err.Error(), "Signature")
}

// The public endpoints of a region are the hosts oci-go-sdk's clients call.
func TestEndpointsAreTheSDKs(t *testing.T) {
	t.Setenv("OCI_SDK_DEFAULT_CIRCUITBREAKER_ENABLED", "false")
	p := common.NewRawConfigurationProvider(tenancy, user, "us-ashburn-1", "aa:bb", pemOf(testKey), nil)
	compute, err := core.NewComputeClientWithConfigurationProvider(p)
	require.NoError(t, err)
	id, err := identity.NewIdentityClientWithConfigurationProvider(p)
	require.NoError(t, err)
	lb, err := loadbalancer.NewLoadBalancerClientWithConfigurationProvider(p)
	require.NoError(t, err)
	nlb, err := networkloadbalancer.NewNetworkLoadBalancerClientWithConfigurationProvider(p)
	require.NoError(t, err)
	assert.Equal(t, Endpoints{Core: compute.Host, Identity: id.Host, LoadBalancer: lb.Host, NetworkLoadBalancer: nlb.Host},
		EndpointsFor("us-ashburn-1"))
}

func TestA429IsWaitedOutAsRetryAfterSaysAndTheRetryIsSignedAnew(t *testing.T) {
	e := startEmulator(t)
	g := gatewayOf(t, e)
	id, _ := e.AddMachine("node-a")
	e.InjectFault(emucore.Fault{Service: "compute", Status: http.StatusTooManyRequests, RetryAfter: time.Second, Count: 1})
	start := time.Now()
	in, err := g.Instance(t.Context(), id)
	require.NoError(t, err, "the call is retried after the 429")
	assert.Equal(t, "node-a", in.DisplayName)
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "not before Retry-After")
	var throttled, ok int
	for _, c := range e.Calls() {
		switch c.Code {
		case http.StatusTooManyRequests:
			throttled += c.Count
		case http.StatusOK:
			ok += c.Count
		}
	}
	assert.Equal(t, 1, throttled)
	assert.Equal(t, 1, ok, "the retry passed the emulator's signature check")
}

// TestAListingBeyondTheResponseLimitIsReadInSmallerPages: OCI lists load
// balancers whole, with every backend, so a page of 1,000 can be beyond
// the response limit (cloudapi.Config.MaxResponseBytes). The page is asked
// again with a quarter of the limit until it comes in, and the next
// listing asks that limit at once.
func TestAListingBeyondTheResponseLimitIsReadInSmallerPages(t *testing.T) {
	e := startEmulator(t)
	g := gatewayOf(t, e)
	f := e.Fixture()
	block, _ := pem.Decode([]byte(f.PrivateKeyPEM))
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	require.NoError(t, err)
	creds := APIKey{KeyID: f.TenancyID + "/" + f.UserID + "/" + f.Fingerprint, Key: key}
	g.http, err = cloudapi.NewClient(cloudapi.Config{Cloud: cloudName, AnswersJSON: true, MaxResponseBytes: 8 << 10},
		&signingTransport{base: http.DefaultTransport.(*http.Transport).Clone(), creds: creds, now: time.Now})
	require.NoError(t, err)
	g.pageBytes = 4 << 10
	for i := range 40 {
		e.AddMachine(fmt.Sprintf("big-%02d", i))
	}
	e.ResetCalls()
	all, err := g.Instances(t.Context(), InCompartment(f.CompartmentID))
	require.NoError(t, err)
	require.Len(t, all, 40, "every instance, once")
	assert.Equal(t, "big-39", all[39].DisplayName)
	limit := g.pageLimit(coreAPI+"/instances", nil)
	require.Less(t, limit, listLimit)

	e.ResetCalls()
	all, err = g.Instances(t.Context(), InCompartment(f.CompartmentID))
	require.NoError(t, err)
	require.Len(t, all, 40)
	reads, _ := ocitest.ReadsAndWrites(e)
	assert.Equal(t, (40+limit-1)/limit, reads, "the next listing asks %d a page at once", limit)
}

// A listing asks the first page its query says (a listing of load balancers
// asks lbFirstPage: their size is not known), then pages sized to pageBytes
// by the size of the items it read, and the next listing asks that at once.
func TestAListingSizesItsPagesByTheItemsItRead(t *testing.T) {
	e := startEmulator(t)
	g := gatewayOf(t, e)
	f := e.Fixture()
	for i := range 60 {
		e.AddMachine(fmt.Sprintf("sized-%02d", i))
	}
	one, err := list[Instance](t.Context(), g, "compute", g.ep.Core, coreAPI+"/instances", With(InCompartment(f.CompartmentID), "limit", "1"))
	require.NoError(t, err)
	require.Len(t, one, 60)
	item, err := json.Marshal(one[0])
	require.NoError(t, err)
	g.pageLimits.Clear()
	g.pageBytes = int64(12 * len(item))

	e.ResetCalls()
	all, err := list[Instance](t.Context(), g, "compute", g.ep.Core, coreAPI+"/instances", With(InCompartment(f.CompartmentID), "limit", "5"))
	require.NoError(t, err)
	require.Len(t, all, 60, "every instance, once")
	limit := g.pageLimit(coreAPI+"/instances", nil)
	assert.InDelta(t, 12, limit, 4, "pages of about pageBytes (the emulator's items are larger than the fields decoded)")
	reads, _ := ocitest.ReadsAndWrites(e)
	assert.Equal(t, 1+(55+limit-1)/limit, reads, "the first page of 5, then %d a page", limit)

	e.ResetCalls()
	_, err = list[Instance](t.Context(), g, "compute", g.ep.Core, coreAPI+"/instances", With(InCompartment(f.CompartmentID), "limit", "5"))
	require.NoError(t, err)
	reads, _ = ocitest.ReadsAndWrites(e)
	assert.Equal(t, (60+limit-1)/limit, reads, "the next listing asks %d a page at once", limit)
}
