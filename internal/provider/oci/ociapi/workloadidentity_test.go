package ociapi

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// newTestClock is a clock a test moves, shared by the emulator and the CCM.
func newTestClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(time.Now()) }

// workloadOn is the workload identity of e's pod on clock, its sessions,
// and a gateway signing with them; attempts are 10 ms apart.
func workloadOn(t *testing.T, e *emulator.Emulator, clock *clocktesting.FakeClock) (*WorkloadIdentity, *SessionCache, *Client) {
	t.Helper()
	w, err := newWorkloadIdentity(Principal{Region: "us-ashburn-1", WorkloadIdentity: e.WorkloadIdentityURL()})
	require.NoError(t, err)
	w.now, w.backoff = clock.Now, 10*time.Millisecond
	s := w.Sessions()
	g, err := New(Endpoints{Core: e.URL(), Identity: e.URL()}, s, Limits{}, clock.Now)
	require.NoError(t, err)
	return w, s, g
}

// The session token is renewed before it expires (half-way through one of
// 4 minutes), and the ServiceAccount token is read anew for each exchange:
// the kubelet's rotation is picked up.
func TestWorkloadIdentityRenewsBeforeExpiryAndReadsTheRotatedToken(t *testing.T) {
	clock := newTestClock()
	e := ocitest.WorkloadEmulator(t, clock.Now, 4*time.Minute)
	p := ocitest.PodOn(t, e, 10*time.Minute)
	_, s, g := workloadOn(t, e, clock)
	call, key, second := renewedHalfWay(t, e, clock, s, g)
	assert.Equal(t, map[int]int{200: 2}, ocitest.CallsOf(e, "workloadidentity"))

	// The ServiceAccount token expires (the file not rotated): refused
	// before asking, saying so, once the session token is gone too.
	clock.Step(8 * time.Minute)
	_, _, err := s.SigningKey()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ServiceAccount token in "+p.TokenPath+" expired")

	clock.Step(time.Second)
	_, _, again := s.SigningKey()
	assert.Equal(t, err, again, "not asked again before renewRetry")

	// The kubelet rotates it: the next exchange reads the new one.
	p.Token(e.ServiceAccountToken("kube-system", "overcast-ccm", time.Hour))
	clock.Step(renewRetry)
	assert.NotEqual(t, second, key())
	call()
	assert.Equal(t, map[int]int{200: 3}, ocitest.CallsOf(e, "workloadidentity"))
}

// A refusal says the endpoint, the status and the likely cause, never a
// token; what may pass is tried again, a bounded number of times; a
// renewal that fails while the token holds leaves it signing.
func TestWorkloadIdentityRefusalsSayWhyWithoutTheToken(t *testing.T) {
	clock := newTestClock()
	e := ocitest.WorkloadEmulator(t, clock.Now, 0)
	p := ocitest.PodOn(t, e, time.Hour)
	w, s, _ := workloadOn(t, e, clock)
	host := strings.TrimPrefix(e.WorkloadIdentityURL(), "https://")
	fails := func(wants ...string) {
		t.Helper()
		_, err := w.exchange(t.Context())
		require.Error(t, err)
		for _, want := range wants {
			assert.Contains(t, err.Error(), want)
		}
		token, _ := os.ReadFile(p.TokenPath)
		assert.NotContains(t, err.Error(), string(token))
		assert.NotContains(t, err.Error(), "ey", "no JWT")
	}

	other := ocitest.WorkloadEmulator(t, nil, 0)
	p.Token(other.ServiceAccountToken("kube-system", "overcast-ccm", time.Hour))
	fails("workload identity endpoint "+host+" answered 401 Unauthorized", "ServiceAccount token in "+p.TokenPath+" was refused", "not this cluster's", "opc-request-id ")
	p.Token(e.ServiceAccountToken("kube-system", "overcast-ccm", time.Hour))

	e.InjectFault(emucore.Fault{Service: "workloadidentity", Status: http.StatusForbidden, Count: 1})
	fails("answered 403 Forbidden", "OKE enhanced cluster")
	e.ResetCalls()
	e.InjectFault(emucore.Fault{Service: "workloadidentity", Status: http.StatusServiceUnavailable})
	fails("answered 503 Service Unavailable", "unavailable (tried 3 times)")
	assert.Equal(t, map[int]int{503: 3}, ocitest.CallsOf(e, "workloadidentity"), "three attempts, no more")
	e.ClearFaults()
	e.ResetCalls()
	e.InjectFault(emucore.Fault{Service: "workloadidentity", Status: http.StatusServiceUnavailable, Count: 2})
	_, err := w.exchange(t.Context())
	require.NoError(t, err, "the third attempt")
	assert.Equal(t, map[int]int{503: 2, 200: 1}, ocitest.CallsOf(e, "workloadidentity"))

	// Due for renewal but the endpoint is down: the token signs on until
	// it expires, then the failure is the request's.
	first, _, err := s.SigningKey()
	require.NoError(t, err)
	e.InjectFault(emucore.Fault{Service: "workloadidentity", Status: http.StatusServiceUnavailable})
	clock.Step(16 * time.Minute)
	again, _, err := s.SigningKey()
	require.NoError(t, err)
	assert.Equal(t, first, again)
	clock.Step(5 * time.Minute)
	_, _, err = s.SigningKey()
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "workload identity: the workload identity endpoint "+host+" answered 503"), err.Error())
	e.ClearFaults()

	// Another CA than the cluster's; no endpoint at all.
	require.NoError(t, os.WriteFile(p.CAPath, other.CA(), 0o600))
	fails("certificate of the workload identity endpoint " + host + " is not of the cluster's CA (" + p.CAPath)
	w.endpoint = "https://127.0.0.1:1"
	fails("no answer from the workload identity endpoint 127.0.0.1:1", "KUBERNETES_SERVICE_HOST")
}

// recorded is what an exchange sent.
type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

// Our exchange is oci-go-sdk's OkeWorkloadIdentityConfigurationProvider's:
// the same method, path and headers, the body the same bytes but for the
// session key (a PEM "PUBLIC KEY" of an RSA 2048 key, newline-terminated, in
// both), over TLS checked against the cluster's CA, through no proxy.
func TestTheExchangeIsTheSDKs(t *testing.T) {
	var mu sync.Mutex
	var got []recorded
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, recorded{r.Method, r.URL.Path, r.Header.Clone(), body})
		mu.Unlock()
		http.Error(w, "recorded", http.StatusTeapot)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	caPath, tokenPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	e := ocitest.WorkloadEmulator(t, nil, 0)
	saToken := e.ServiceAccountToken("kube-system", "overcast-ccm", time.Hour)
	require.NoError(t, os.WriteFile(tokenPath, []byte(saToken), 0o600))
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("OCI_RESOURCE_PRINCIPAL_VERSION", "2.2")
	t.Setenv("OCI_RESOURCE_PRINCIPAL_REGION", "us-ashburn-1")
	t.Setenv(EnvCAPath, caPath)
	t.Setenv(EnvTokenPath, tokenPath)
	// The SDK appends ":12250/resourcePrincipalSessionTokens" to the host:
	// given the server's port and the path, that becomes a fragment, never sent.
	t.Setenv("KUBERNETES_SERVICE_HOST", strings.TrimPrefix(srv.URL, "https://")+sessionTokenPath+"#")
	p, err := auth.OkeWorkloadIdentityConfigurationProviderWithServiceAccountTokenProvider(
		auth.NewDefaultServiceAccountTokenProvider().WithSaTokenPath(tokenPath))
	require.NoError(t, err)
	_, err = p.KeyID()
	require.Error(t, err, "the recorder answers 418")

	w := &WorkloadIdentity{endpoint: srv.URL, tokenPath: tokenPath, caPath: caPath, now: time.Now, backoff: time.Millisecond}
	_, err = w.exchange(t.Context())
	require.ErrorContains(t, err, "answered 418")
	require.Len(t, got, 2, "one request each")
	theirs, ours := got[0], got[1]

	assert.Equal(t, theirs.method, ours.method)
	assert.Equal(t, sessionTokenPath, theirs.path)
	assert.Equal(t, theirs.path, ours.path)
	assert.Equal(t, slices.Sorted(maps.Keys(theirs.header)), slices.Sorted(maps.Keys(ours.header)))
	for _, h := range []string{"Authorization", "Content-Type", "Content-Length", "User-Agent", "Accept-Encoding"} {
		assert.Equal(t, theirs.header.Get(h), ours.header.Get(h), h)
	}
	assert.Equal(t, "Bearer "+saToken, ours.header.Get("Authorization"))
	requestID := regexp.MustCompile(`^[0-9a-f]{32}/[0-9a-f]{32}/[0-9a-f]{32}$`)
	assert.Regexp(t, requestID, theirs.header.Get("Opc-Request-Id"))
	assert.Regexp(t, requestID, ours.header.Get("Opc-Request-Id"))

	keyless := func(body []byte) ([]byte, string) {
		var b map[string]string
		require.NoError(t, json.Unmarshal(body, &b))
		key := b["podKey"]
		return bytes.Replace(body, []byte(strconv.Quote(key)[1:len(strconv.Quote(key))-1]), []byte("KEY"), 1), key
	}
	theirBody, theirKey := keyless(theirs.body)
	ourBody, ourKey := keyless(ours.body)
	assert.Equal(t, `{"podKey":"KEY"}`, string(theirBody))
	assert.Equal(t, string(theirBody), string(ourBody))
	for _, k := range []string{theirKey, ourKey} {
		block, rest := pem.Decode([]byte(k))
		require.NotNil(t, block)
		assert.Equal(t, "PUBLIC KEY", block.Type)
		assert.Empty(t, rest)
		assert.True(t, strings.HasSuffix(k, "-----\n"))
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		require.NoError(t, err)
		assert.Equal(t, 2048, pub.(*rsa.PublicKey).N.BitLen())
	}
}

// renewedHalfWay: a session of 4 minutes signs a call, is kept a minute
// later and renewed past its half (2 minutes before it expires), and the
// renewed one signs a call. It gives the call, the signing key's reader and
// the renewed key.
func renewedHalfWay(t *testing.T, e *emulator.Emulator, clock *clocktesting.FakeClock, s *SessionCache, g *Client) (call func(), key func() string, second string) {
	t.Helper()
	call = func() {
		t.Helper()
		_, err := g.AvailabilityDomains(t.Context(), e.Fixture().CompartmentID)
		require.NoError(t, err)
	}
	key = func() string {
		t.Helper()
		k, _, err := s.SigningKey()
		require.NoError(t, err)
		return k
	}
	call()
	first := key()
	clock.Step(time.Minute)
	assert.Equal(t, first, key(), "not due yet")
	clock.Step(time.Minute + time.Second)
	second = key()
	assert.NotEqual(t, first, second, "renewed 2 minutes before it expires")
	call()
	return call, key, second
}

// OKE's workload identity endpoint is on KUBERNETES_SERVICE_HOST, port
// 12250, as oci-go-sdk builds it.
func TestTheWorkloadIdentityEndpointIsTheSDKs(t *testing.T) {
	e := ocitest.WorkloadEmulator(t, nil, 0)
	ocitest.PodOn(t, e, time.Hour)
	for host, want := range map[string]string{"10.96.0.1": "https://10.96.0.1:12250", "fd00::1": "https://[fd00::1]:12250"} {
		t.Setenv("KUBERNETES_SERVICE_HOST", host)
		w, err := newWorkloadIdentity(Principal{Region: "us-ashburn-1"})
		require.NoError(t, err)
		assert.Equal(t, want, w.endpoint, "as oci-go-sdk builds it")
	}
}
