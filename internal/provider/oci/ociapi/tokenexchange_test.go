package ociapi

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	emucore "github.com/overcast-ccm/overcast/internal/emulator/core"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/emulator/oci/ocitest"
)

// exchangeOn is the self-managed workload identity of e's pod on clock, its
// sessions, and a gateway signing with them; attempts are 10 ms apart.
func exchangeOn(t *testing.T, e *emulator.Emulator, clock *clocktesting.FakeClock) (*tokenExchange, *SessionCache, *Client) {
	t.Helper()
	x, err := newTokenExchange(Principal{Region: "us-ashburn-1"})
	require.NoError(t, err)
	x.now, x.backoff = clock.Now, 10*time.Millisecond
	s := x.Sessions()
	g, err := New(Endpoints{Core: e.URL(), Identity: e.URL()}, s, Limits{}, clock.Now)
	require.NoError(t, err)
	return x, s, g
}

// The session token is renewed before it expires (half-way through one of
// 4 minutes), and the ServiceAccount token is read anew for each exchange:
// the kubelet's rotation is picked up.
func TestSelfManagedWorkloadIdentityRenewsAndReadsTheRotatedToken(t *testing.T) {
	clock := newTestClock()
	e := ocitest.DomainEmulator(t, clock.Now, 4*time.Minute, false)
	p := ocitest.DomainPodOn(t, e, 10*time.Minute)
	_, s, g := exchangeOn(t, e, clock)
	call, key, second := renewedHalfWay(t, e, clock, s, g)
	assert.Equal(t, map[int]int{200: 2}, ocitest.CallsOf(e, "identitydomain"))

	// The ServiceAccount token expires (the file not rotated): refused
	// before asking, saying so, once the session token is gone too.
	clock.Step(8 * time.Minute)
	_, _, err := s.SigningKey()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ServiceAccount token in "+p.TokenPath+" expired")
	assert.Equal(t, map[int]int{200: 2}, ocitest.CallsOf(e, "identitydomain"), "not asked")

	// The kubelet rotates it: the next exchange reads the new one.
	p.Token(e.ServiceAccountToken("kube-system", "oci-cloud-controller-manager", time.Hour))
	clock.Step(renewRetry)
	assert.NotEqual(t, second, key())
	call()
	assert.Equal(t, map[int]int{200: 3}, ocitest.CallsOf(e, "identitydomain"))

	// A session token OCI refuses is dropped: the next call gets another.
	third := key()
	s.forget(third)
	assert.NotEqual(t, third, key())
}

// A refusal says the domain, the status and the likely cause, never a token
// or the secret; what may pass is tried again, a bounded number of times.
func TestSelfManagedWorkloadIdentityRefusalsSayWhyWithoutSecrets(t *testing.T) {
	clock := newTestClock()
	e := ocitest.DomainEmulator(t, clock.Now, 0, false)
	p := ocitest.DomainPodOn(t, e, time.Hour)
	x, _, _ := exchangeOn(t, e, clock)
	host := strings.TrimPrefix(e.IdentityDomainURL(), "https://")
	fails := func(wants ...string) {
		t.Helper()
		_, err := x.exchange(t.Context())
		require.Error(t, err)
		for _, want := range wants {
			assert.Contains(t, err.Error(), want)
		}
		token, _ := os.ReadFile(p.TokenPath)
		for _, secret := range []string{string(token), p.Secret, x.clientSecret, strings.TrimPrefix(p.Secret, "idcscs-")} {
			assert.NotContains(t, err.Error(), secret)
		}
		assert.NotContains(t, err.Error(), "ey", "no JWT")
	}

	x.clientSecret = p.Secret + "0"
	fails("identity domain "+host+" answered 401 Unauthorized", EnvDomainClientID+" and "+EnvDomainClientSecret, "it said: invalid_client")
	x.clientSecret = p.Secret

	other := ocitest.DomainEmulator(t, nil, 0, false)
	p.Token(other.ServiceAccountToken("kube-system", "oci-cloud-controller-manager", time.Hour))
	fails("answered 400 Bad Request", "ServiceAccount token in "+p.TokenPath+" or a field", "identity propagation trust", "it said: invalid_request")
	p.Token(e.ServiceAccountToken("kube-system", "oci-cloud-controller-manager", time.Hour))

	e.InjectFault(emucore.Fault{Service: "identitydomain", Status: http.StatusServiceUnavailable})
	fails("answered 503 Service Unavailable", "unavailable (tried 3 times)")
	assert.Equal(t, map[int]int{503: 3, 400: 1, 401: 1}, ocitest.CallsOf(e, "identitydomain"), "three attempts, no more; a 4xx once")
	e.ClearFaults()
	e.ResetCalls()
	e.InjectFault(emucore.Fault{Service: "identitydomain", Status: http.StatusTooManyRequests, Count: 2})
	_, err := x.exchange(t.Context())
	require.NoError(t, err, "the third attempt")
	assert.Equal(t, map[int]int{429: 2, 200: 1}, ocitest.CallsOf(e, "identitydomain"))

	// Another CA than the domain's; no domain at all; a server that is not one.
	require.NoError(t, os.WriteFile(p.CAPath, other.CA(), 0o600))
	fails("certificate of the identity domain " + host + " is not of " + EnvCABundle + "'s (" + p.CAPath + ")")
	require.NoError(t, os.WriteFile(p.CAPath, e.CA(), 0o600))
	x.tokenURL, x.host = "https://127.0.0.1:1"+domainTokenPath, "127.0.0.1:1"
	fails("no answer from the identity domain 127.0.0.1:1", EnvDomainURL)
	x.tokenURL = e.IdentityDomainURL() + "/nothing"
	fails("answered 404 Not Found", EnvDomainURL+" must be the identity domain's URL")
}

// fileIssuer is oci-cloud-controller-manager's TokenIssuer: the
// ServiceAccount token file, trimmed, read for every exchange.
type fileIssuer string

func (f fileIssuer) GetToken() (string, error) {
	data, err := os.ReadFile(string(f))
	return strings.TrimSpace(string(data)), err
}

// recorder is an HTTPS server that records each request and answers 418;
// its CA is in the file caPath.
func recorder(t *testing.T) (srv *httptest.Server, caPath string, got func() []recorded) {
	t.Helper()
	var mu sync.Mutex
	var all []recorded
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		all = append(all, recorded{r.Method, r.URL.Path, r.Header.Clone(), body})
		mu.Unlock()
		http.Error(w, "recorded", http.StatusTeapot)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caPath = filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	return srv, caPath, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(all)
	}
}

// Our exchange is oci-go-sdk's TokenExchangeConfigurationProvider's, built
// from the environment as oci-cloud-controller-manager builds it: the same
// method, path and headers, the same form byte for byte but for the session
// key (the base64 of the DER of an RSA key of 3072 bits in both, neither
// OCI_WORKLOAD_IDENTITY_PUBLIC_KEY); with the instance principal, the same
// signed headers.
func TestTheTokenExchangeIsTheSDKs(t *testing.T) {
	for _, viaInstance := range []bool{false, true} {
		t.Run(fmt.Sprintf("instance principal %v", viaInstance), func(t *testing.T) {
			e := ocitest.DomainEmulator(t, nil, 0, viaInstance)
			p := ocitest.DomainPodOn(t, e, time.Hour)
			srv, caPath, got := recorder(t)
			t.Setenv(EnvDomainURL, srv.URL)
			t.Setenv(EnvCABundle, caPath)
			t.Setenv(EnvDomainRPSTExp, "60")
			t.Setenv(EnvDomainPublicKey, "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA")
			t.Setenv("OCI_SDK_AUTH_CLIENT_CIRCUIT_BREAKER_ENABLED", "false")
			pr := Principal{Region: "us-ashburn-1"}
			if viaInstance {
				t.Setenv(EnvDomainClientID, "")
				t.Setenv(EnvDomainClientSecret, "")
				t.Setenv(EnvDomainViaInstance, "true")
				t.Setenv("OCI_METADATA_BASE_URL", e.URL()+"/opc/v2")
				t.Setenv("OCI_SDK_AUTH_CLIENT_REGION_URL", e.URL())
				pr.Metadata, pr.Auth = e.URL()+"/opc/v2", e.URL()
			}
			theirs, ours := sdkAndOurExchange(t, pr, p, got)
			compareExchanges(t, theirs, ours, p, viaInstance)
		})
	}
}

// sdkAndOurExchange has the SDK's provider, as the peer builds it from the
// environment, and ours, from pr and the environment, make one exchange
// each; it returns what each sent.
func sdkAndOurExchange(t *testing.T, pr Principal, p *ocitest.Pod, got func() []recorded) (theirs, ours recorded) {
	t.Helper()
	b := auth.TokenExchangeBuilder{DomainUrl: os.Getenv(EnvDomainURL), Region: "us-ashburn-1", RequestedTokenType: tokenTypeRPST,
		ResType: os.Getenv(EnvDomainResourceType), SubjectTokenType: "jwt", RpstExp: os.Getenv(EnvDomainRPSTExp),
		PublicKey: os.Getenv(EnvDomainPublicKey), ClientId: os.Getenv(EnvDomainClientID), ClientSecret: os.Getenv(EnvDomainClientSecret)}
	if os.Getenv(EnvDomainViaInstance) == "true" {
		ip, err := auth.InstancePrincipalConfigurationProvider()
		require.NoError(t, err)
		b.InstancePrincipalProvider = ip
	}
	sdk, err := auth.TokenExchangeConfigurationProviderFromIssuer(fileIssuer(p.TokenPath), b)
	require.NoError(t, err)
	_, err = sdk.KeyID()
	require.Error(t, err, "the recorder answers 418")

	x, err := newTokenExchange(pr)
	require.NoError(t, err)
	_, err = x.exchange(t.Context())
	require.ErrorContains(t, err, "answered 418")
	all := got()
	require.Len(t, all, 2, "one request each")
	return all[0], all[1]
}

// compareExchanges holds ours to theirs.
func compareExchanges(t *testing.T, theirs, ours recorded, p *ocitest.Pod, signed bool) {
	t.Helper()
	assert.Equal(t, http.MethodPost, theirs.method)
	assert.Equal(t, theirs.method, ours.method)
	assert.Equal(t, domainTokenPath, theirs.path)
	assert.Equal(t, theirs.path, ours.path)
	assert.Equal(t, slices.Sorted(maps.Keys(theirs.header)), slices.Sorted(maps.Keys(ours.header)))
	for _, h := range []string{"Content-Type", "Accept-Encoding"} {
		assert.Equal(t, theirs.header.Get(h), ours.header.Get(h), h)
	}
	for _, r := range []recorded{theirs, ours} {
		_, err := http.ParseTime(r.header.Get("Date"))
		require.NoError(t, err)
	}
	if signed {
		param := regexp.MustCompile(`headers="([^"]*)",`)
		assert.Equal(t, param.FindStringSubmatch(theirs.header.Get("Authorization")), param.FindStringSubmatch(ours.header.Get("Authorization")))
		assert.True(t, strings.Contains(ours.header.Get("Authorization"), `keyId="ST$ey`), "the instance's session token")
	} else {
		assert.Equal(t, theirs.header.Get("Authorization"), ours.header.Get("Authorization"))
		assert.True(t, strings.HasPrefix(ours.header.Get("Authorization"), "Basic "))
	}
	token, err := os.ReadFile(p.TokenPath)
	require.NoError(t, err)
	keyless := func(body []byte) string {
		form, err := url.ParseQuery(string(body))
		require.NoError(t, err)
		der, err := base64.StdEncoding.DecodeString(form.Get("public_key"))
		require.NoError(t, err)
		pub, err := x509.ParsePKIXPublicKey(der)
		require.NoError(t, err)
		assert.Equal(t, domainKeyBits, pub.(*rsa.PublicKey).N.BitLen())
		assert.Equal(t, string(token), form.Get("subject_token"))
		return strings.Replace(string(body), url.QueryEscape(form.Get("public_key")), "KEY", 1)
	}
	theirBody, ourBody := keyless(theirs.body), keyless(ours.body)
	assert.Equal(t, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&public_key=KEY&requested_token_type=urn%3Aoci%3Atoken-type%3Aoci-rpst&res_type=k8sworkload&rpst_exp=60&subject_token="+string(token)+"&subject_token_type=jwt", theirBody)
	assert.Equal(t, theirBody, ourBody)
}

// The identity domain's token endpoint is built from its URL as oci-go-sdk
// builds it.
func TestTheDomainsTokenURLIsTheSDKs(t *testing.T) {
	e := ocitest.DomainEmulator(t, nil, 0, false)
	ocitest.DomainPodOn(t, e, time.Hour)
	for _, c := range []struct{ raw, want string }{
		{"https://idcs-x.identity.oraclecloud.com:443", "https://idcs-x.identity.oraclecloud.com:443/oauth2/v1/token"},
		{"https://idcs-x.identity.oraclecloud.com/", "https://idcs-x.identity.oraclecloud.com/oauth2/v1/token"},
		{" https://idcs-x.identity.oraclecloud.com/oauth2/v1/token\n", "https://idcs-x.identity.oraclecloud.com/oauth2/v1/token"}, // trimmed, as the peer trims
	} {
		t.Setenv(EnvDomainURL, c.raw)
		x, err := newTokenExchange(Principal{Region: "us-ashburn-1"})
		require.NoError(t, err, c.raw)
		assert.Equal(t, c.want, x.tokenURL, "as oci-go-sdk builds it")
	}
}
