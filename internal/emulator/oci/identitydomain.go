package oci

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// An OCI IAM identity domain (Options.IdentityDomain): the emulator is also
// the OAuth token endpoint of an identity domain, on an HTTPS listener of its
// own (IdentityDomainURL, its certificate from CA()), serving the token
// exchange with which oci-cloud-controller-manager's self-managed workload
// identity trades the pod's Kubernetes ServiceAccount token for a session
// token. Held to what oci-go-sdk's TokenExchangeConfigurationProvider sends
// and reads (common/auth: workload_identity_federation.go, and
// tokenExchangeFederationClient in federation_client.go; a test drives it),
// to Oracle's documentation of the endpoint
// (https://docs.oracle.com/en/cloud/paas/iam-domains-rest-api/op-oauth2-v1-token-post.html:
// Basic client credentials, or an OCI request signature) and of the JWT
// exchange (https://docs.oracle.com/en-us/iaas/Content/Identity/api-getstarted/json_web_token_exchange.htm),
// and, for the refusals, to RFC 6749 §5.2 and RFC 8693 §2.2.2:
//
//   - POST /oauth2/v1/token, a form (application/x-www-form-urlencoded),
//     authenticated by "Authorization: Basic base64(<client id>:<client
//     secret>)" of the domain's confidential application
//     (IdentityDomainClient), or signed as OCI signs requests by a principal
//     the emulator knows (an instance principal's session: the SDK's
//     InstancePrincipalProvider form, oci-cloud-controller-manager's
//     OCI_WORKLOAD_IDENTITY_USE_INSTANCE_PRINCIPAL_FOR_TOKEN_EXCHANGE).
//   - The form: grant_type urn:ietf:params:oauth:grant-type:token-exchange;
//     requested_token_type urn:oci:token-type:oci-rpst (a resource principal
//     session token; res_type is then required, rpst_exp optional) or
//     urn:oci:token-type:oci-upst (a user principal one); subject_token_type
//     jwt; subject_token a ServiceAccount token the cluster issued
//     (ServiceAccountToken), unexpired: the domain trusts the cluster's
//     issuer, as an identity propagation trust makes a real one; public_key
//     the standard base64 of the DER (PKIX) of an RSA public key, the
//     session key.
//   - The answer, 200: {"token": "<JWT>"}, its exp Options.SessionLifetime
//     on, with the claims the SDK reads (tenant for TenancyOCID, sub for
//     UserOCID). Requests signed with keyId "ST$<JWT>" by the session key are
//     the workload's (every right) until exp; then 401.
//
// Refusals, in RFC 6749 §5.2's body {"error", "error_description"}: no
// credentials, wrong ones, or a bad signature: 401 invalid_client, with
// WWW-Authenticate (RFC 6749 §5.2 requires it after an Authorization
// header); another grant type: 400 unsupported_grant_type; a field missing,
// of an unknown value or repeated, a public key that is not an RSA key's,
// another media type: 400 invalid_request; a subject token the domain does
// not trust or that has expired: 400 invalid_request (RFC 8693 §2.2.2 names
// that code for an invalid subject token). Faults injected for service
// "identitydomain" answer instead of the exchange.
//
// Guessed, not public: the real domain's error_description texts, whether it
// takes subject token types other than jwt (the emulator also takes RFC
// 8693's urn:ietf:params:oauth:token-type:jwt), the token's other claims.
// Not emulated: rpst_exp (its unit is not documented), the token's signature
// (opaque to clients), the trust's claim mappings and impersonated service
// user.

// domainTokenPath is the identity domain's token endpoint.
const domainTokenPath = "/oauth2/v1/token"

// The values of the exchange's form the emulator takes.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeRPST      = "urn:oci:token-type:oci-rpst"
	tokenTypeUPST      = "urn:oci:token-type:oci-upst"
)

// identityDomain is the identity domain's state.
type identityDomain struct {
	sideEndpoint
	// clientID and clientSecret are its confidential application's.
	clientID, clientSecret string
}

// viaIdentityDomainKey marks a request that came through the identity
// domain's listener.
type viaIdentityDomainKey struct{}

func viaIdentityDomain(r *http.Request) bool {
	return r.Context().Value(viaIdentityDomainKey{}) != nil
}

// newDomainClient makes the domain's application: an id of 32 hex digits and
// a secret of the form "idcscs-…", as the console shows them.
func newDomainClient() (id, secret string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b[:16]), "idcscs-" + hex.EncodeToString(b[16:])
}

// startIdentityDomain serves the identity domain on another port of apiAddr's IP.
func (e *Emulator) startIdentityDomain(apiAddr string) error {
	// HTTP/1.1 alone: oci-go-sdk v65.110.0 cancels the exchange's context
	// before it reads the answer's body (federation_client.go,
	// newTokenExchangeToken), which HTTP/2 loses about one time in five
	// here (tlsserve.go). Whether a real domain speaks HTTP/2 is not known.
	return e.domain.serve(e, "identity domain", apiAddr, domainTokenPath, true, viaIdentityDomainKey{}, func(w http.ResponseWriter, _ *http.Request) {
		writeOAuthError(w, http.StatusNotFound, "not_found", "The emulated identity domain serves "+domainTokenPath+" alone.")
	})
}

// IdentityDomainURL is the identity domain's URL, "https://127.0.0.1:PORT"
// (what OCI_WORKLOAD_IDENTITY_DOMAIN_URL names), once started with
// IdentityDomain; "" otherwise. Its certificate is from the CA of CA().
func (e *Emulator) IdentityDomainURL() string {
	return e.domain.URL()
}

// IdentityDomainClient is the client id and secret of the identity domain's
// confidential application, allowed the token exchange.
func (e *Emulator) IdentityDomainClient() (id, secret string) {
	return e.domain.clientID, e.domain.clientSecret
}

// oauthError is RFC 6749 §5.2's error body.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

func writeOAuthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Cache-Control", "no-store")
	core.WriteJSON(w, status, oauthError{Error: code, Description: description})
}

// exchangeRequest is what a token exchange asks for.
type exchangeRequest struct {
	requested, resType string
	sa                 serviceAccount
	key                *rsa.PublicKey
}

// issueDomainToken answers POST /oauth2/v1/token: a session token for the
// form's public key, to the bearer of a ServiceAccount token the cluster
// issued, asked by the domain's application or a known principal.
func (e *Emulator) issueDomainToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeOAuthError(w, http.StatusMethodNotAllowed, "invalid_request", "The token endpoint takes POST.")
		return
	}
	if !e.domainClientAuthenticated(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="identity domain"`)
		writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "Client authentication failed.")
		return
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "The request must be a form (application/x-www-form-urlencoded).")
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "The request's body could not be read.")
		return
	}
	form, err := url.ParseQuery(string(data))
	if err != nil {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "The request's body is not a form.")
		return
	}
	x, status, code, msg := e.readExchange(form)
	if status != 0 {
		writeOAuthError(w, status, code, msg)
		return
	}
	e.answerExchange(w, x)
}

// domainClientAuthenticated says whether r is the domain's application (Basic
// credentials) or signed by a principal the emulator knows.
func (e *Emulator) domainClientAuthenticated(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if strings.HasPrefix(h, "Signature ") {
		u, _ := e.authenticate(r)
		return u != nil
	}
	id, secret, ok := r.BasicAuth()
	return ok && subtle.ConstantTimeCompare([]byte(id), []byte(e.domain.clientID)) == 1 &&
		subtle.ConstantTimeCompare([]byte(secret), []byte(e.domain.clientSecret)) == 1
}

// readExchange checks the exchange's form: what it asks for, or the
// refusal's status, code and description.
func (e *Emulator) readExchange(form url.Values) (exchangeRequest, int, string, string) {
	var x exchangeRequest
	for k, v := range form {
		if len(v) != 1 {
			return x, http.StatusBadRequest, "invalid_request", "The parameter " + k + " is repeated."
		}
	}
	for _, k := range []string{"grant_type", "requested_token_type", "subject_token", "subject_token_type", "public_key"} {
		if form.Get(k) == "" {
			return x, http.StatusBadRequest, "invalid_request", "The parameter " + k + " is missing."
		}
	}
	if form.Get("grant_type") != grantTokenExchange {
		return x, http.StatusBadRequest, "unsupported_grant_type", "The grant type is not supported by this endpoint."
	}
	switch x.requested = form.Get("requested_token_type"); x.requested {
	case tokenTypeRPST:
		if x.resType = form.Get("res_type"); x.resType == "" {
			return x, http.StatusBadRequest, "invalid_request", "The parameter res_type is required for " + tokenTypeRPST + "."
		}
	case tokenTypeUPST:
	default:
		return x, http.StatusBadRequest, "invalid_request", "The requested token type is not supported."
	}
	if t := form.Get("subject_token_type"); t != "jwt" && t != "urn:ietf:params:oauth:token-type:jwt" {
		return x, http.StatusBadRequest, "invalid_request", "The subject token type is not supported."
	}
	var err error
	if x.key, err = publicKeyDER(form.Get("public_key")); err != nil {
		return x, http.StatusBadRequest, "invalid_request", "The public key is not the base64 of an RSA public key (DER)."
	}
	e.workload.mu.Lock()
	sa, known := e.workload.tokens[form.Get("subject_token")]
	e.workload.mu.Unlock()
	if !known || !e.opts.Clock().Before(sa.exp) {
		return x, http.StatusBadRequest, "invalid_request", "The subject token is not valid: expired, or not of a trusted issuer."
	}
	x.sa = sa
	return x, 0, "", ""
}

// answerExchange issues the session token x asks for and answers it.
func (e *Emulator) answerExchange(w http.ResponseWriter, x exchangeRequest) {
	now := e.opts.Clock()
	exp := now.Add(e.opts.SessionLifetime)
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce) // two tokens of one instant are two
	subject := "system:serviceaccount:" + x.sa.namespace + ":" + x.sa.name
	claims := map[string]any{"sub": subject, "tenant": e.fx.TenancyID, "iss": e.IdentityDomainURL(),
		"iat": now.Unix(), "exp": exp.Unix(), "jti": fmt.Sprintf("emulator-domain-%x", nonce)}
	if x.requested == tokenTypeRPST {
		claims["ptype"], claims["res_type"], claims["res_tenant"] = "resource", x.resType, e.fx.TenancyID
	} else {
		claims["ptype"] = "user"
	}
	token := jwt(map[string]any{"alg": "RS256", "typ": "JWT"}, claims)
	e.mu.Lock()
	e.sessions[token] = session{key: x.key, exp: exp, principal: fmt.Sprintf("%s:%s", claims["ptype"], subject)}
	e.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	core.WriteJSON(w, http.StatusOK, map[string]string{"token": token})
}

// publicKeyDER is the RSA public key of the standard base64 of its DER (PKIX).
func publicKeyDER(s string) (*rsa.PublicKey, error) {
	der, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	return rsaPublicKey(der)
}

// rsaPublicKey is the RSA public key of its DER (PKIX).
func rsaPublicKey(der []byte) (*rsa.PublicKey, error) {
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, err
	}
	key, ok := pub.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("not an RSA key")
	}
	return key, nil
}
