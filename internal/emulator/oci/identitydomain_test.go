package oci

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/common/auth"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sdkTrusts makes oci-go-sdk's clients made from now on trust e's CA alone
// (its OCI_DEFAULT_CERTS_PATH), as a pod is given the CA of a private
// endpoint; and turns its circuit breakers off.
func sdkTrusts(t *testing.T, e *Emulator) {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, e.CA(), 0o600))
	t.Setenv("OCI_DEFAULT_CERTS_PATH", ca)
	t.Setenv("OCI_SDK_AUTH_CLIENT_CIRCUIT_BREAKER_ENABLED", "false")
	t.Setenv("OCI_SDK_DEFAULT_CIRCUITBREAKER_ENABLED", "false")
}

// serviceAccountIssuer is a TokenIssuer of the cluster's ServiceAccount
// tokens, as oci-cloud-controller-manager's (it reads the projected file).
type serviceAccountIssuer struct{ e *Emulator }

func (i serviceAccountIssuer) GetToken() (string, error) {
	return i.e.ServiceAccountToken("kube-system", "oci-cloud-controller-manager", time.Hour), nil
}

// signsAsTheTenancy checks that p took the session token out of the
// exchange's answer and reads the tenancy out of it (its tenant claim).
func signsAsTheTenancy(t *testing.T, e *Emulator, p common.ConfigurationProvider) {
	t.Helper()
	keyID, err := p.KeyID()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(keyID, "ST$ey"), "the SDK took the token out of the answer")
	tenancy, err := p.TenancyOCID()
	require.NoError(t, err)
	assert.Equal(t, e.fx.TenancyID, tenancy, "the tenant claim")
}

// callsWith makes a request with the SDK's compute client signed by p, and
// checks that the emulator takes the signature.
func callsWith(t *testing.T, e *Emulator, p common.ConfigurationProvider) {
	t.Helper()
	c, err := core.NewComputeClientWithConfigurationProvider(p)
	require.NoError(t, err)
	c.Host = e.URL()
	id, _ := e.AddMachine("node-a")
	got, err := c.GetInstance(t.Context(), core.GetInstanceRequest{InstanceId: common.String(id)})
	require.NoError(t, err, "a request signed with the session token (an RPST) and the session key")
	assert.Equal(t, "node-a", *got.DisplayName)
}

// oci-go-sdk's own TokenExchangeConfigurationProvider, configured as
// oci-cloud-controller-manager configures it for its self-managed workload
// identity, trades a ServiceAccount token at the emulator's identity domain
// and calls with the session token: the request, the answer's shape and the
// token's claims are the SDK's. Both token types, with the domain's client
// credentials.
func TestTheSDKExchangesAServiceAccountTokenAtTheIdentityDomain(t *testing.T) {
	for _, requested := range []string{tokenTypeRPST, tokenTypeUPST} {
		t.Run(requested, func(t *testing.T) {
			e := started(t, Options{IdentityDomain: true})
			sdkTrusts(t, e)
			id, secret := e.IdentityDomainClient()
			p, err := auth.TokenExchangeConfigurationProviderFromIssuer(serviceAccountIssuer{e}, auth.TokenExchangeBuilder{
				DomainUrl: e.IdentityDomainURL(), ClientId: id, ClientSecret: secret, Region: "us-ashburn-1",
				RequestedTokenType: requested, ResType: "k8sworkload", SubjectTokenType: "jwt"})
			require.NoError(t, err)
			signsAsTheTenancy(t, e, p)
			user, err := p.UserOCID()
			require.NoError(t, err)
			assert.Equal(t, "system:serviceaccount:kube-system:oci-cloud-controller-manager", user)
			callsWith(t, e, p)
			assert.Equal(t, 1, e.callsOf("identitydomain"), "one exchange")
		})
	}
}

// The SDK's other form (oci-cloud-controller-manager's
// OCI_WORKLOAD_IDENTITY_USE_INSTANCE_PRINCIPAL_FOR_TOKEN_EXCHANGE): no
// client credentials, the exchange signed by the instance principal.
func TestTheSDKExchangesSignedByTheInstancePrincipal(t *testing.T) {
	e := started(t, Options{IdentityDomain: true, InstancePrincipals: true})
	sdkTrusts(t, e)
	t.Setenv("OCI_METADATA_BASE_URL", e.URL()+"/opc/v2")
	t.Setenv("OCI_SDK_AUTH_CLIENT_REGION_URL", e.URL())
	ip, err := auth.InstancePrincipalConfigurationProvider()
	require.NoError(t, err)
	p, err := auth.TokenExchangeConfigurationProviderFromIssuer(serviceAccountIssuer{e}, auth.TokenExchangeBuilder{
		DomainUrl: e.IdentityDomainURL(), Region: "us-ashburn-1", RequestedTokenType: tokenTypeRPST,
		ResType: "k8sworkload", SubjectTokenType: "jwt", InstancePrincipalProvider: ip})
	require.NoError(t, err)
	callsWith(t, e, p)
	assert.Equal(t, 1, e.callsOf("identitydomain"), "one exchange")
}

// domainExchange posts form to the token endpoint at u with the
// Authorization header authz; it returns the status, the OAuth error code
// and the WWW-Authenticate header.
func domainExchange(t *testing.T, e *Emulator, method, u, authz, contentType string, form url.Values) (int, string, string) {
	t.Helper()
	status, data, header := sideCall(t, e, method, u, authz, contentType, form.Encode())
	var b struct{ Error, Code string }
	_ = json.Unmarshal(data, &b)
	return status, b.Error + b.Code, header.Get("WWW-Authenticate")
}

// exchangeForm is a good exchange's form for subject.
func exchangeForm(t *testing.T, subject string) url.Values {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	return url.Values{"grant_type": {grantTokenExchange}, "requested_token_type": {tokenTypeRPST}, "res_type": {"k8sworkload"},
		"subject_token_type": {"jwt"}, "subject_token": {subject}, "public_key": {base64.StdEncoding.EncodeToString(der)}}
}

// with is form with key set to v ("" deletes it).
func with(form url.Values, key, v string) url.Values {
	out := url.Values{}
	for k, vs := range form {
		out[k] = vs
	}
	if v == "" {
		out.Del(key)
	} else {
		out.Set(key, v)
	}
	return out
}

// The identity domain refuses what the real one refuses, with the statuses
// and the error codes of RFC 6749 §5.2 and RFC 8693 §2.2.2.
func TestTheIdentityDomainRefusesWhatTheRealOneRefuses(t *testing.T) {
	clock := &clock{now: time.Now()}
	e := started(t, Options{IdentityDomain: true, Clock: clock.Now})
	tokenURL := e.IdentityDomainURL() + domainTokenPath
	id, secret := e.IdentityDomainClient()
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))
	good := exchangeForm(t, e.ServiceAccountToken("kube-system", "overcast-ccm", time.Hour))
	const formType = "application/x-www-form-urlencoded"

	status, code, _ := domainExchange(t, e, http.MethodPost, tokenURL, basic, formType, good)
	require.Equal(t, http.StatusOK, status, code)

	other := started(t, Options{IdentityDomain: true})
	for _, c := range []struct {
		name, authz, contentType string
		form                     url.Values
		status                   int
		code                     string
	}{
		{"no credentials", "", formType, good, 401, "invalid_client"},
		{"a wrong secret", "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret+"x")), formType, good, 401, "invalid_client"},
		{"an unsigned signature", `Signature version="1",keyId="x",algorithm="rsa-sha256",headers="date",signature="AA=="`, formType, good, 401, "invalid_client"},
		{"JSON", basic, "application/json", good, 400, "invalid_request"},
		{"another grant", basic, formType, with(good, "grant_type", "client_credentials"), 400, "unsupported_grant_type"},
		{"no grant", basic, formType, with(good, "grant_type", ""), 400, "invalid_request"},
		{"an RPST without res_type", basic, formType, with(good, "res_type", ""), 400, "invalid_request"},
		{"another token type", basic, formType, with(good, "requested_token_type", "urn:ietf:params:oauth:token-type:access_token"), 400, "invalid_request"},
		{"another subject type", basic, formType, with(good, "subject_token_type", "saml2"), 400, "invalid_request"},
		{"no public key", basic, formType, with(good, "public_key", ""), 400, "invalid_request"},
		{"a PEM public key", basic, formType, with(good, "public_key", "-----BEGIN PUBLIC KEY-----"), 400, "invalid_request"},
		{"no subject token", basic, formType, with(good, "subject_token", ""), 400, "invalid_request"},
		{"another cluster's token", basic, formType, with(good, "subject_token", other.ServiceAccountToken("kube-system", "overcast-ccm", time.Hour)), 400, "invalid_request"},
	} {
		status, code, challenge := domainExchange(t, e, http.MethodPost, tokenURL, c.authz, c.contentType, c.form)
		assert.Equal(t, c.status, status, c.name)
		assert.Equal(t, c.code, code, c.name)
		if status == http.StatusUnauthorized {
			assert.NotEmpty(t, challenge, "%s: WWW-Authenticate", c.name)
		}
	}
	status, _, _ = domainExchange(t, e, http.MethodGet, tokenURL, basic, formType, good)
	assert.Equal(t, http.StatusMethodNotAllowed, status)

	short := exchangeForm(t, e.ServiceAccountToken("kube-system", "overcast-ccm", time.Minute))
	clock.now = clock.now.Add(2 * time.Minute)
	status, code, _ = domainExchange(t, e, http.MethodPost, tokenURL, basic, formType, short)
	assert.Equal(t, http.StatusBadRequest, status, "an expired ServiceAccount token")
	assert.Equal(t, "invalid_request", code)

	// The exchange is the identity domain's listener's alone.
	status, code, _ = domainExchange(t, e, http.MethodPost, e.URL()+domainTokenPath, basic, formType, good)
	assert.Equal(t, http.StatusUnauthorized, status, "the API's listener: an unsigned request")
	assert.Equal(t, "NotAuthenticated", code)
	status, _, _ = domainExchange(t, e, http.MethodPost, e.IdentityDomainURL()+"/20160918/instances", basic, formType, good)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, 16, e.callsOf("identitydomain"), "every exchange counted, on that listener alone")
}
