package oci

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

	"github.com/overcast-ccm/overcast/internal/doctor"
	emucore "github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
)

// domainEmulator is an emulator that is an identity domain too (and, with
// instance, the CCM's host's metadata service and federation endpoint), its
// session tokens lasting lifetime (0: 20 minutes), on clock (nil: now).
func domainEmulator(t *testing.T, clock *testClock, lifetime time.Duration, instance bool) *emulator.Emulator {
	t.Helper()
	opts := emulator.Options{IdentityDomain: true, InstancePrincipals: instance, SessionLifetime: lifetime}
	if clock != nil {
		opts.Clock = clock.Now
	}
	e, err := emulator.New(opts)
	return coretest.Serve(t, e, err)
}

// domainPod is a pod set up as oci-cloud-controller-manager's self-managed
// workload identity wants it on e: the ServiceAccount token in a file, the
// OCI_WORKLOAD_IDENTITY_* environment naming e's identity domain and its
// application, e's CA trusted (OCI_DEFAULT_CERTS_PATH). token writes
// another token to the file, as the kubelet rotates it.
type domainPod struct {
	t                 *testing.T
	tokenPath, caPath string
	secret            string
}

func domainPodOn(t *testing.T, e *emulator.Emulator, ttl time.Duration) *domainPod {
	t.Helper()
	dir := t.TempDir()
	p := &domainPod{t: t, tokenPath: filepath.Join(dir, "token"), caPath: filepath.Join(dir, "ca.pem")}
	require.NoError(t, os.WriteFile(p.caPath, e.CA(), 0o600))
	p.token(e.ServiceAccountToken("kube-system", "oci-cloud-controller-manager", ttl))
	for _, name := range domainEnv {
		t.Setenv(name, "")
	}
	for _, name := range []string{envTokenPath, envCAPath, "OCI_RESOURCE_PRINCIPAL_REGION", "KUBERNETES_SERVICE_HOST"} {
		t.Setenv(name, "")
	}
	id, secret := e.IdentityDomainClient()
	p.secret = secret
	for name, v := range map[string]string{envDomainURL: e.IdentityDomainURL(), envDomainResourceType: "k8sworkload",
		envDomainClientID: id, envDomainClientSecret: secret, envDomainTokenPath: p.tokenPath, envCABundle: p.caPath} {
		t.Setenv(name, v)
	}
	return p
}

func (p *domainPod) token(token string) {
	require.NoError(p.t, os.WriteFile(p.tokenPath, []byte(token), 0o600))
}

// peerWorkloadConfig is the peer's cloud-provider.yaml for its self-managed
// workload identity (its manifests/provider-config-workload-identity-example.yaml,
// with e's OCIDs), and Overcast's endpoints key for e's API.
func peerWorkloadConfig(e *emulator.Emulator) string {
	f := e.Fixture()
	return fmt.Sprintf("auth:\n  region: us-ashburn-1\nuseWorkloadIdentity: true\ncompartment: %s\nvcn: %s\nloadBalancer:\n  subnet1: %s\n  securityListManagementMode: All\nendpoints:\n  api: %s\n",
		f.CompartmentID, f.VCNID, f.SubnetID, e.URL())
}

// exchangeOn is the self-managed workload identity of e's pod on clock, its
// sessions, and a gateway signing with them; attempts are 10 ms apart.
func exchangeOn(t *testing.T, e *emulator.Emulator, clock *testClock) (*tokenExchange, *sessionCache, *gateway) {
	t.Helper()
	cfg, err := Read(strings.NewReader(peerWorkloadConfig(e)))
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	x, err := newTokenExchange(cfg.principal())
	require.NoError(t, err)
	x.now, x.backoff = clock.Now, 10*time.Millisecond
	s := x.sessions()
	g, err := newGateway(Endpoints{Core: e.URL(), Identity: e.URL()}, s, Limits{}, clock.Now)
	require.NoError(t, err)
	return x, s, g
}

// callsOf counts the calls of service on e, by status.
func callsOf(e *emulator.Emulator, service string) map[int]int {
	out := map[int]int{}
	for _, c := range e.Calls() {
		if c.Service == service {
			out[c.Code] += c.Count
		}
	}
	return out
}

// The peer's config and environment, unchanged: the CCM trades its
// ServiceAccount token at the identity domain once, then signs every request
// with the session token; OKE's endpoint is not asked.
func TestSelfManagedWorkloadIdentityCallsAsTheServiceAccount(t *testing.T) {
	e := domainEmulator(t, nil, 0, false)
	domainPodOn(t, e, time.Hour)
	c := cloudOn(t, peerWorkloadConfig(e))
	id, _ := e.AddMachine("node-a")
	for range 2 {
		md, err := c.InstanceMetadata(t.Context(), nodeNamed("node-a", ""))
		require.NoError(t, err)
		assert.Equal(t, ProviderIDPrefix+id, md.ProviderID)
	}
	keyID, _, err := c.sessions.signingKey()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(keyID, "ST$ey"))
	assert.Equal(t, selfManagedWhat, c.sessions.what)
	assert.Equal(t, map[int]int{200: 1}, callsOf(e, "identitydomain"), "one exchange for every call")
	assert.Empty(t, callsOf(e, "workloadidentity"))
}

// The session token is renewed before it expires (half-way through one of
// 4 minutes), and the ServiceAccount token is read anew for each exchange:
// the kubelet's rotation is picked up.
func TestSelfManagedWorkloadIdentityRenewsAndReadsTheRotatedToken(t *testing.T) {
	clock := newTestClock()
	e := domainEmulator(t, clock, 4*time.Minute, false)
	p := domainPodOn(t, e, 10*time.Minute)
	_, s, g := exchangeOn(t, e, clock)
	call, key, second := renewedHalfWay(t, e, clock, s, g)
	assert.Equal(t, map[int]int{200: 2}, callsOf(e, "identitydomain"))

	// The ServiceAccount token expires (the file not rotated): refused
	// before asking, saying so, once the session token is gone too.
	clock.Add(8 * time.Minute)
	_, _, err := s.signingKey()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ServiceAccount token in "+p.tokenPath+" expired")
	assert.Equal(t, map[int]int{200: 2}, callsOf(e, "identitydomain"), "not asked")

	// The kubelet rotates it: the next exchange reads the new one.
	p.token(e.ServiceAccountToken("kube-system", "oci-cloud-controller-manager", time.Hour))
	clock.Add(renewRetry)
	assert.NotEqual(t, second, key())
	call()
	assert.Equal(t, map[int]int{200: 3}, callsOf(e, "identitydomain"))

	// A session token OCI refuses is dropped: the next call gets another.
	third := key()
	s.forget(third)
	assert.NotEqual(t, third, key())
}

// A refusal says the domain, the status and the likely cause, never a token
// or the secret; what may pass is tried again, a bounded number of times.
func TestSelfManagedWorkloadIdentityRefusalsSayWhyWithoutSecrets(t *testing.T) {
	clock := newTestClock()
	e := domainEmulator(t, clock, 0, false)
	p := domainPodOn(t, e, time.Hour)
	x, _, _ := exchangeOn(t, e, clock)
	host := strings.TrimPrefix(e.IdentityDomainURL(), "https://")
	fails := func(wants ...string) {
		t.Helper()
		_, err := x.exchange(t.Context())
		require.Error(t, err)
		for _, want := range wants {
			assert.Contains(t, err.Error(), want)
		}
		token, _ := os.ReadFile(p.tokenPath)
		for _, secret := range []string{string(token), p.secret, x.clientSecret, strings.TrimPrefix(p.secret, "idcscs-")} {
			assert.NotContains(t, err.Error(), secret)
		}
		assert.NotContains(t, err.Error(), "ey", "no JWT")
	}

	x.clientSecret = p.secret + "0"
	fails("identity domain "+host+" answered 401 Unauthorized", envDomainClientID+" and "+envDomainClientSecret, "it said: invalid_client")
	x.clientSecret = p.secret

	other := domainEmulator(t, nil, 0, false)
	p.token(other.ServiceAccountToken("kube-system", "oci-cloud-controller-manager", time.Hour))
	fails("answered 400 Bad Request", "ServiceAccount token in "+p.tokenPath+" or a field", "identity propagation trust", "it said: invalid_request")
	p.token(e.ServiceAccountToken("kube-system", "oci-cloud-controller-manager", time.Hour))

	e.InjectFault(emucore.Fault{Service: "identitydomain", Status: http.StatusServiceUnavailable})
	fails("answered 503 Service Unavailable", "unavailable (tried 3 times)")
	assert.Equal(t, map[int]int{503: 3, 400: 1, 401: 1}, callsOf(e, "identitydomain"), "three attempts, no more; a 4xx once")
	e.ClearFaults()
	e.ResetCalls()
	e.InjectFault(emucore.Fault{Service: "identitydomain", Status: http.StatusTooManyRequests, Count: 2})
	_, err := x.exchange(t.Context())
	require.NoError(t, err, "the third attempt")
	assert.Equal(t, map[int]int{429: 2, 200: 1}, callsOf(e, "identitydomain"))

	// Another CA than the domain's; no domain at all; a server that is not one.
	require.NoError(t, os.WriteFile(p.caPath, other.CA(), 0o600))
	fails("certificate of the identity domain " + host + " is not of " + envCABundle + "'s (" + p.caPath + ")")
	require.NoError(t, os.WriteFile(p.caPath, e.CA(), 0o600))
	x.tokenURL, x.host = "https://127.0.0.1:1"+domainTokenPath, "127.0.0.1:1"
	fails("no answer from the identity domain 127.0.0.1:1", envDomainURL)
	x.tokenURL = e.IdentityDomainURL() + "/nothing"
	fails("answered 404 Not Found", envDomainURL+" must be the identity domain's URL")
}

// The environment's problems are errors at start, all at once, each naming
// its variable, never a secret's value.
func TestSelfManagedWorkloadIdentityConfigErrorsNameTheVariable(t *testing.T) {
	e := domainEmulator(t, nil, 0, false)
	p := domainPodOn(t, e, time.Hour)
	cfg, err := Read(strings.NewReader(peerWorkloadConfig(e)))
	require.NoError(t, err)
	start := func() string {
		t.Helper()
		_, err := New(cfg)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), p.secret)
		return err.Error()
	}
	t.Setenv(envDomainResourceType, "")
	t.Setenv(envDomainClientID, "")
	msg := start()
	for _, want := range []string{"useWorkloadIdentity: " + envDomainResourceType + " is not set", "useWorkloadIdentity: " + envDomainClientID + " is not set"} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, envDomainClientSecret+" is not set")
	t.Setenv(envDomainResourceType, "k8sworkload")
	t.Setenv(envDomainClientSecret, "")
	t.Setenv(envDomainClientID, "x")
	assert.Contains(t, start(), envDomainClientSecret+" is not set")
	t.Setenv(envDomainClientSecret, p.secret)

	for raw, want := range map[string]string{
		"idcs-x.identity.oraclecloud.com":                 "not the identity domain's URL",
		"http://idcs-x.identity.oraclecloud.com":          "plain http is allowed to a loopback address only",
		"https://admin:" + p.secret + "@idcs-x":           "holds a user or password",
		"https://idcs-x.identity.oraclecloud.com/ui/v1":   "has a path",
		"https://idcs-x.identity.oraclecloud.com/?tenant": "has a query",
	} {
		t.Setenv(envDomainURL, raw)
		assert.Contains(t, start(), "useWorkloadIdentity: "+envDomainURL+": "+want, raw)
	}
	for _, c := range []struct{ raw, want string }{
		{"https://idcs-x.identity.oraclecloud.com:443", "https://idcs-x.identity.oraclecloud.com:443/oauth2/v1/token"},
		{"https://idcs-x.identity.oraclecloud.com/", "https://idcs-x.identity.oraclecloud.com/oauth2/v1/token"},
		{" https://idcs-x.identity.oraclecloud.com/oauth2/v1/token\n", "https://idcs-x.identity.oraclecloud.com/oauth2/v1/token"}, // trimmed, as the peer trims
	} {
		t.Setenv(envDomainURL, c.raw)
		x, err := newTokenExchange(cfg.principal())
		require.NoError(t, err, c.raw)
		assert.Equal(t, c.want, x.tokenURL, "as oci-go-sdk builds it")
	}
	t.Setenv(envDomainURL, e.IdentityDomainURL())

	t.Setenv(envDomainTokenPath, filepath.Join(t.TempDir(), "none"))
	assert.Contains(t, start(), "useWorkloadIdentity: the ServiceAccount token ("+filepath.Join(filepath.Dir(os.Getenv(envDomainTokenPath)), "none")+", or "+envDomainTokenPath+")")
	t.Setenv(envDomainTokenPath, p.tokenPath)
	t.Setenv(envCABundle, filepath.Join(t.TempDir(), "none"))
	assert.Contains(t, start(), "reading the CA bundle ("+envCABundle+")")
	t.Setenv(envCABundle, p.caPath)

	// The peer's variables without the domain's URL: not OKE's form silently.
	for _, name := range domainEnv {
		t.Setenv(name, "")
	}
	t.Setenv(envDomainTokenPath, p.tokenPath)
	assert.Contains(t, start(), "useWorkloadIdentity: "+envDomainTokenPath+" is set but "+envDomainURL+" is not")
	t.Setenv(envDomainTokenPath, "")
	assert.Contains(t, start(), "KUBERNETES_SERVICE_HOST is not set", "OKE's form")
}

// With OCI_WORKLOAD_IDENTITY_USE_INSTANCE_PRINCIPAL_FOR_TOKEN_EXCHANGE=true
// the exchange is signed by the instance principal, no client credentials.
func TestSelfManagedWorkloadIdentityThroughTheInstancePrincipal(t *testing.T) {
	e := domainEmulator(t, nil, 0, true)
	domainPodOn(t, e, time.Hour)
	t.Setenv(envDomainClientID, "")
	t.Setenv(envDomainClientSecret, "")
	t.Setenv(envDomainViaInstance, "True")
	c := cloudOn(t, peerWorkloadConfig(e)+fmt.Sprintf("  metadata: %s/opc/v2\n  auth: %s\n", e.URL(), e.URL()))
	id, _ := e.AddMachine("node-a")
	md, err := c.InstanceMetadata(t.Context(), nodeNamed("node-a", ""))
	require.NoError(t, err)
	assert.Equal(t, ProviderIDPrefix+id, md.ProviderID)
	assert.Equal(t, map[int]int{200: 1}, callsOf(e, "identitydomain"))
	keyID, _, err := c.sessions.signingKey()
	require.NoError(t, err)
	assert.Equal(t, selfManagedWhat, c.sessions.what)
	assert.True(t, strings.HasPrefix(keyID, "ST$ey"))
}

// The doctor says who the CCM calls as, and what to check when the domain
// gives no session token.
func TestDoctorOnSelfManagedWorkloadIdentity(t *testing.T) {
	e := domainEmulator(t, nil, 0, false)
	p := domainPodOn(t, e, time.Hour)
	got := byCheck(cloudOn(t, peerWorkloadConfig(e)).Diagnose(t.Context()))
	assert.Equal(t, doctor.OK, got["oci: API key"].Status)
	assert.Contains(t, got["oci: API key"].Detail, "accepted the signature of the self-managed workload identity")

	t.Setenv(envDomainClientSecret, base64.StdEncoding.EncodeToString([]byte(p.secret)))
	results := cloudOn(t, peerWorkloadConfig(e)).Diagnose(t.Context())
	require.Len(t, results, 1)
	assert.Equal(t, doctor.Fail, results[0].Status)
	assert.Contains(t, results[0].Detail, "self-managed workload identity: the identity domain")
	assert.Contains(t, results[0].Detail, "answered 401 Unauthorized")
	assert.Contains(t, results[0].Fix, "no session token from the identity domain")
	assert.NotContains(t, results[0].Detail+results[0].Fix, p.secret)
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
			e := domainEmulator(t, nil, 0, viaInstance)
			p := domainPodOn(t, e, time.Hour)
			srv, caPath, got := recorder(t)
			t.Setenv(envDomainURL, srv.URL)
			t.Setenv(envCABundle, caPath)
			t.Setenv(envDomainRPSTExp, "60")
			t.Setenv(envDomainPublicKey, "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA")
			t.Setenv("OCI_SDK_AUTH_CLIENT_CIRCUIT_BREAKER_ENABLED", "false")
			conf := peerWorkloadConfig(e)
			if viaInstance {
				t.Setenv(envDomainClientID, "")
				t.Setenv(envDomainClientSecret, "")
				t.Setenv(envDomainViaInstance, "true")
				t.Setenv("OCI_METADATA_BASE_URL", e.URL()+"/opc/v2")
				t.Setenv("OCI_SDK_AUTH_CLIENT_REGION_URL", e.URL())
				conf += fmt.Sprintf("  metadata: %s/opc/v2\n  auth: %s\n", e.URL(), e.URL())
			}
			theirs, ours := sdkAndOurExchange(t, conf, p, got)
			compareExchanges(t, theirs, ours, p, viaInstance)
		})
	}
}

// sdkAndOurExchange has the SDK's provider, as the peer builds it from the
// environment, and ours, from conf and the environment, make one exchange
// each; it returns what each sent.
func sdkAndOurExchange(t *testing.T, conf string, p *domainPod, got func() []recorded) (theirs, ours recorded) {
	t.Helper()
	b := auth.TokenExchangeBuilder{DomainUrl: os.Getenv(envDomainURL), Region: "us-ashburn-1", RequestedTokenType: tokenTypeRPST,
		ResType: os.Getenv(envDomainResourceType), SubjectTokenType: "jwt", RpstExp: os.Getenv(envDomainRPSTExp),
		PublicKey: os.Getenv(envDomainPublicKey), ClientId: os.Getenv(envDomainClientID), ClientSecret: os.Getenv(envDomainClientSecret)}
	if os.Getenv(envDomainViaInstance) == "true" {
		ip, err := auth.InstancePrincipalConfigurationProvider()
		require.NoError(t, err)
		b.InstancePrincipalProvider = ip
	}
	sdk, err := auth.TokenExchangeConfigurationProviderFromIssuer(fileIssuer(p.tokenPath), b)
	require.NoError(t, err)
	_, err = sdk.KeyID()
	require.Error(t, err, "the recorder answers 418")

	cfg, err := Read(strings.NewReader(conf))
	require.NoError(t, err)
	x, err := newTokenExchange(cfg.principal())
	require.NoError(t, err)
	_, err = x.exchange(t.Context())
	require.ErrorContains(t, err, "answered 418")
	all := got()
	require.Len(t, all, 2, "one request each")
	return all[0], all[1]
}

// compareExchanges holds ours to theirs.
func compareExchanges(t *testing.T, theirs, ours recorded, p *domainPod, signed bool) {
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
	token, err := os.ReadFile(p.tokenPath)
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
