package oci

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// OKE workload identity (Options.WorkloadIdentity): the emulator is also the
// cluster's workload identity endpoint (OKE's "proxymux", which OKE serves on
// the Kubernetes API's address, port 12250, and oci-go-sdk reaches at
// https://<KUBERNETES_SERVICE_HOST>:12250), here an HTTPS listener of its own
// with a certificate from the emulator's CA (WorkloadIdentityURL; a client
// trusts CA(), as a pod trusts the cluster's ca.crt). It trades a pod's
// Kubernetes ServiceAccount token and a session public key for a resource
// principal session token (RPST), as oci-go-sdk's common/auth shows it
// (federation_client_oke_workload_identity.go, resource_principal_key_provider.go):
//
//   - POST /resourcePrincipalSessionTokens with "Authorization: Bearer
//     <ServiceAccount token>" and the JSON body {"podKey": "<PEM public
//     key>"} (PKIX, "PUBLIC KEY", an RSA key).
//   - The answer, 200: a JSON string, no newline after it, holding the
//     base64 (standard, padded) of {"token": "ST$<RPST>"}. The SDK drops the
//     body's first and last bytes (the quotes), decodes the rest, and drops
//     the token's first three bytes (ST$): any other shape breaks it.
//   - The RPST: a JWT whose exp is Options.SessionLifetime on, with the
//     claims the SDK reads (res_tenant for TenancyOCID, res_compartment) and
//     those OCI policies name a workload by (ptype workload, the
//     ServiceAccount's namespace and name).
//   - Requests signed with keyId "ST$<RPST>" by the session key are the
//     workload's (every right) until the RPST expires; then 401.
//
// Refusals: no bearer token, or one the cluster did not issue
// (ServiceAccountToken) or that has expired: 401 NotAuthenticated, as an
// endpoint that authenticates Kubernetes tokens answers (the SDK names no
// code but 403, which it reads as "not an enhanced cluster": a test injects
// it as a fault of service "workloadidentity"); no podKey, or not a PEM RSA
// public key: 400 InvalidParameter. The exchange is served on that listener
// alone: the API's listener answers it as any unsigned request (401).
//
// Not emulated: the RPST's signature (opaque to clients), TokenReview's
// audiences, the cluster OCID claim.

// sessionTokensPath is the workload identity endpoint's one path.
const sessionTokensPath = "/resourcePrincipalSessionTokens"

// workloadEndpoint is the workload identity endpoint's state.
type workloadEndpoint struct {
	sideEndpoint
	tokens map[string]serviceAccount // the ServiceAccount tokens issued, by token
}

// serviceAccount is a ServiceAccount token's subject and expiry.
type serviceAccount struct {
	namespace, name string
	exp             time.Time
}

// viaWorkloadEndpoint marks a request that came through the workload
// identity endpoint's listener.
type viaWorkloadEndpointKey struct{}

func viaWorkloadEndpoint(r *http.Request) bool {
	return r.Context().Value(viaWorkloadEndpointKey{}) != nil
}

// startWorkloadEndpoint serves the workload identity endpoint on another
// port of apiAddr's IP.
func (e *Emulator) startWorkloadEndpoint(apiAddr string) error {
	return e.workload.serve(e, "workload identity endpoint", apiAddr, sessionTokensPath, false, viaWorkloadEndpointKey{}, func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", "The workload identity endpoint serves "+sessionTokensPath+" alone.")
	})
}

// WorkloadIdentityURL is the workload identity endpoint's base URL,
// "https://127.0.0.1:PORT", once started with WorkloadIdentity; "" otherwise.
// Its certificate is from the CA of CA().
func (e *Emulator) WorkloadIdentityURL() string {
	return e.workload.URL()
}

// ServiceAccountToken is a token of the ServiceAccount namespace/name that
// the cluster issued (what the kubelet projects into a pod), valid for ttl
// from now by the emulator's clock: the workload identity endpoint takes it
// until it expires.
func (e *Emulator) ServiceAccountToken(namespace, name string, ttl time.Duration) string {
	now := e.opts.Clock()
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	uid := fmt.Sprintf("emulator-sa-%x", nonce) // another cluster's tokens are others
	issuer := "https://kubernetes.default.svc.cluster.local"
	token := jwt(map[string]any{"alg": "RS256", "kid": "emulator"}, map[string]any{
		"iss": issuer, "aud": []string{issuer}, "sub": "system:serviceaccount:" + namespace + ":" + name,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(ttl).Unix(), "jti": uid,
		"kubernetes.io": map[string]any{"namespace": namespace, "serviceaccount": map[string]string{"name": name, "uid": uid}},
	})
	e.workload.mu.Lock()
	e.workload.tokens[token] = serviceAccount{namespace: namespace, name: name, exp: now.Add(ttl)}
	e.workload.mu.Unlock()
	return token
}

// issueWorkloadSession answers POST /resourcePrincipalSessionTokens: an RPST
// for the session key of the body, to the bearer of a ServiceAccount token.
func (e *Emulator) issueWorkloadSession(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The session tokens are asked for with POST.")
		return
	}
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	e.workload.mu.Lock()
	sa, known := e.workload.tokens[bearer]
	e.workload.mu.Unlock()
	if !ok || !known || !e.opts.Clock().Before(sa.exp) {
		writeError(w, http.StatusUnauthorized, "NotAuthenticated", "The ServiceAccount token is missing, expired or not issued by the cluster.")
		return
	}
	var d struct {
		PodKey string `json:"podKey"`
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err == nil {
		err = json.Unmarshal(data, &d)
	}
	key, keyErr := podKey(d.PodKey)
	if err != nil || keyErr != nil {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "podKey must be an RSA public key in PEM (PUBLIC KEY).")
		return
	}
	now := e.opts.Clock()
	exp := now.Add(e.opts.SessionLifetime)
	rpst := jwt(map[string]any{"alg": "RS256", "typ": "JWT"}, map[string]any{"sub": "system:serviceaccount:" + sa.namespace + ":" + sa.name,
		"ptype": "workload", "res_tenant": e.fx.TenancyID, "res_compartment": e.fx.CompartmentID,
		"namespace": sa.namespace, "service_account": sa.name, "iss": "authService.oracle.com",
		"iat": now.Unix(), "exp": exp.Unix(), "jti": fmt.Sprintf("emulator-%d", now.UnixNano())})
	e.mu.Lock()
	e.sessions[rpst] = session{key: key, exp: exp, principal: WorkloadPrincipal(sa.namespace, sa.name)}
	e.mu.Unlock()
	inner, _ := json.Marshal(map[string]string{"token": "ST$" + rpst})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`"` + base64.StdEncoding.EncodeToString(inner) + `"`))
}

// podKey is the RSA public key of a PEM "PUBLIC KEY" block.
func podKey(s string) (*rsa.PublicKey, error) {
	b, _ := pem.Decode([]byte(s))
	if b == nil || b.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("not a PEM public key")
	}
	return rsaPublicKey(b.Bytes)
}
