package oci

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oci-go-sdk's own OKE workload identity provider, pointed at the emulator
// by the environment it reads, gets a session token for the ServiceAccount
// token the cluster issued and calls with it: the exchange, the answer's
// shape and the RPST are the SDK's.
func TestTheSDKCallsAsAWorkload(t *testing.T) {
	e := started(t, Options{WorkloadIdentity: true})
	dir := t.TempDir()
	caPath, tokenPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(caPath, e.CA(), 0o600))
	require.NoError(t, os.WriteFile(tokenPath, []byte(e.ServiceAccountToken("kube-system", "overcast-ccm", time.Hour)), 0o600))
	t.Setenv("OCI_RESOURCE_PRINCIPAL_VERSION", "2.2")
	t.Setenv("OCI_RESOURCE_PRINCIPAL_REGION", "us-ashburn-1")
	t.Setenv("OCI_KUBERNETES_SERVICE_ACCOUNT_CERT_PATH", caPath)
	// The SDK builds https://<KUBERNETES_SERVICE_HOST>:12250/resourcePrincipalSessionTokens;
	// the emulator's endpoint is on a free port, so the host given names
	// that port and the path, and makes the SDK's ":12250/…" a fragment,
	// which is never sent.
	t.Setenv("KUBERNETES_SERVICE_HOST", strings.TrimPrefix(e.WorkloadIdentityURL(), "https://")+sessionTokensPath+"#")
	p, err := auth.OkeWorkloadIdentityConfigurationProviderWithServiceAccountTokenProvider(
		auth.NewDefaultServiceAccountTokenProvider().WithSaTokenPath(tokenPath))
	require.NoError(t, err)
	signsAsTheTenancy(t, e, p)
	compartment, err := p.GetClaim(auth.CompartmentOCIDClaimKey)
	require.NoError(t, err)
	assert.Equal(t, e.fx.CompartmentID, compartment)
	region, err := p.Region()
	require.NoError(t, err)
	assert.Equal(t, "us-ashburn-1", region)

	callsWith(t, e, p)
	assert.Equal(t, 1, e.callsOf("workloadidentity"), "one exchange")
}

// proxymuxClient is a client of the emulator's workload identity endpoint,
// trusting its CA, as a pod trusts the cluster's.
func proxymuxClient(e *Emulator) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: e.CAPool()}}}
}

// exchange asks the endpoint at url for a session token with bearer and
// body; it returns the status and the body.
func exchange(t *testing.T, e *Emulator, url, bearer, body string) (int, []byte) {
	t.Helper()
	authz := ""
	if bearer != "" {
		authz = "Bearer " + bearer
	}
	status, data, _ := sideCall(t, e, http.MethodPost, url, authz, "application/json", body)
	return status, data
}

// sideCall is the answer of one of e's side endpoints (an http: URL is
// called directly, an https: one through the emulator's CA and proxy): its
// status, body and header.
func sideCall(t *testing.T, e *Emulator, method, url, authz, contentType, body string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	req.Header.Set("Content-Type", contentType)
	client := proxymuxClient(e)
	if strings.HasPrefix(url, "http:") {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, data, resp.Header
}

func podKeyBody(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	b, err := json.Marshal(map[string]string{"podKey": string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))})
	require.NoError(t, err)
	return string(b)
}

// The endpoint refuses what the real one refuses, and answers exactly the
// shape the SDK reads: a quoted base64 string, nothing after it.
func TestTheWorkloadIdentityEndpointRefusesWhatTheRealOneRefuses(t *testing.T) {
	clock := &clock{now: time.Now()}
	e := started(t, Options{WorkloadIdentity: true, Clock: clock.Now, SessionLifetime: 10 * time.Minute})
	url := e.WorkloadIdentityURL() + sessionTokensPath
	good := e.ServiceAccountToken("kube-system", "overcast-ccm", time.Hour)
	short := e.ServiceAccountToken("kube-system", "overcast-ccm", time.Minute)
	body := podKeyBody(t)

	status, data := exchange(t, e, url, good, body)
	require.Equal(t, http.StatusOK, status, string(data))
	require.True(t, bytes.HasPrefix(data, []byte(`"`)) && bytes.HasSuffix(data, []byte(`"`)), "a JSON string, nothing after it")
	inner, err := base64.StdEncoding.DecodeString(string(data[1 : len(data)-1]))
	require.NoError(t, err)
	var tok struct{ Token string }
	require.NoError(t, json.Unmarshal(inner, &tok))
	require.True(t, strings.HasPrefix(tok.Token, "ST$"))
	assert.Len(t, strings.Split(tok.Token[3:], "."), 3, "a JWT")

	for _, c := range []struct {
		name, bearer, body string
		want               int
	}{
		{"no token", "", body, http.StatusUnauthorized},
		{"a token the cluster did not issue", good + "x", body, http.StatusUnauthorized},
		{"no podKey", good, `{}`, http.StatusBadRequest},
		{"not a public key", good, `{"podKey":"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}`, http.StatusBadRequest},
		{"not JSON", good, `podKey`, http.StatusBadRequest},
	} {
		status, data := exchange(t, e, url, c.bearer, c.body)
		assert.Equal(t, c.want, status, "%s: %s", c.name, data)
	}
	clock.now = clock.now.Add(2 * time.Minute)
	status, _ = exchange(t, e, url, short, body)
	assert.Equal(t, http.StatusUnauthorized, status, "an expired ServiceAccount token")

	// The exchange is the workload identity endpoint's alone.
	status, _ = exchange(t, e, e.URL()+sessionTokensPath, good, body)
	assert.Equal(t, http.StatusUnauthorized, status, "the API's listener: an unsigned request")
	status, _ = exchange(t, e, e.WorkloadIdentityURL()+"/20160918/instances", good, body)
	assert.Equal(t, http.StatusNotFound, status)
}

// callsOf is the number of calls of service answered so far.
func (e *Emulator) callsOf(service string) int {
	n := 0
	for _, c := range e.Calls() {
		if c.Service == service {
			n += c.Count
		}
	}
	return n
}
