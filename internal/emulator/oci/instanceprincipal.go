package oci

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Instance principals (Options.InstancePrincipals): the emulator is also the
// instance metadata service of one instance, the CCM's host, and the
// federation endpoint that trades its identity for a session token, as
// oci-go-sdk's common/auth (instance_principal_key_provider.go,
// federation_client.go) and the documentation
// (https://docs.oracle.com/en-us/iaas/Content/Identity/Tasks/callingservicesfrominstances.htm)
// describe them:
//
//   - GET /opc/v2/instance/ (the instance's JSON), /opc/v2/instance/region,
//     /opc/v2/identity/cert.pem, key.pem and intermediate.pem, each with
//     "Authorization: Bearer Oracle" (IMDSv2; 401 without), plain HTTP and
//     unsigned: a client reaches them at <URL>/opc/v2 (oci-go-sdk:
//     OCI_METADATA_BASE_URL).
//   - POST /v1/x509 (oci-go-sdk: OCI_SDK_AUTH_CLIENT_REGION_URL=<URL>, or
//     auth.<region>.oraclecloud.com through the emulator as a proxy): the
//     leaf certificate (issued by the emulator's CA, its subject naming the
//     instance, compartment and tenancy as opc-instance:, opc-compartment:,
//     opc-tenant:), the intermediate, and a session public key, signed with
//     the leaf's key as keyId <tenancy>/fed-x509-sha256/<fingerprint> over
//     date, (request-target) and the body headers; the answer {"token": JWT}
//     whose exp is Options.SessionLifetime (20 minutes) on.
//   - Requests signed with keyId "ST$<token>" by the session key are the
//     instance's (a dynamic group with every right); an expired or unknown
//     token: 401.
//
// Not emulated: the token's signature (opaque to clients), certificate
// rotation.

// defaultSessionLifetime is how long a session token lasts unless
// Options.SessionLifetime says otherwise.
const defaultSessionLifetime = 20 * time.Minute

type session struct {
	key *rsa.PublicKey
	exp time.Time
	// principal names the session's principal (principals.go).
	principal string
}

// hostIdentity is the CCM host's leaf certificate and key (PEM).
type hostIdentity struct {
	instanceID      string
	certPEM, keyPEM []byte
	intermediatePEM []byte
	certFingerprint string
}

// seedHost makes the CCM's host instance and its identity. Call before
// serving.
func (e *Emulator) seedHost() error {
	id, _ := e.AddMachine("ccm-host")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	f := e.fx
	subject := pkix.Name{CommonName: id, OrganizationalUnit: []string{"opc-certtype:instance", "opc-instance:" + id,
		"opc-compartment:" + f.CompartmentID, "opc-tenant:" + f.TenancyID}}
	der, err := e.ca.Sign(&x509.Certificate{Subject: subject, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, &key.PublicKey)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(der)
	e.host = &hostIdentity{instanceID: id,
		certPEM:         pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:          pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		intermediatePEM: e.ca.PEM(), certFingerprint: colonHex(sum[:])}
	e.fx.HostInstanceID = id
	return nil
}

func colonHex(b []byte) string {
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = fmt.Sprintf("%02x", x)
	}
	return strings.Join(parts, ":")
}

// serveMetadata answers the instance metadata service's paths.
func (e *Emulator) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if e.host == nil {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer Oracle" {
		http.Error(w, "missing the header Authorization: Bearer Oracle", http.StatusUnauthorized)
		return
	}
	switch strings.TrimPrefix(r.URL.Path, "/opc/v2") {
	case "/instance/region":
		_, _ = w.Write([]byte("iad"))
	case "/instance", "/instance/":
		core.WriteJSON(w, http.StatusOK, map[string]any{"id": e.host.instanceID, "compartmentId": e.fx.CompartmentID,
			"tenantId": e.fx.TenancyID, "region": "iad", "canonicalRegionName": e.opts.Region, "displayName": "ccm-host"})
	case "/identity/cert.pem":
		_, _ = w.Write(e.host.certPEM)
	case "/identity/key.pem":
		_, _ = w.Write(e.host.keyPEM)
	case "/identity/intermediate.pem":
		_, _ = w.Write(e.host.intermediatePEM)
	default:
		http.NotFound(w, r)
	}
}

// federate answers POST /v1/x509: a session token for a session key, to the
// holder of the host's leaf certificate.
func (e *Emulator) federate(w http.ResponseWriter, r *http.Request) {
	fail := func(msg string) { writeError(w, http.StatusUnauthorized, "NotAuthenticated", msg) }
	if e.host == nil {
		fail("Instance principals are not enabled.")
		return
	}
	params, ok := parseSignature(r.Header.Get("Authorization"))
	if !ok {
		fail(notAuthenticated)
		return
	}
	tenancy, fp, _ := strings.Cut(params["keyId"], "/fed-x509-sha256/")
	if tenancy != e.fx.TenancyID || fp != e.host.certFingerprint {
		fail("The key is not the leaf certificate of an instance of the tenancy.")
		return
	}
	block, _ := pem.Decode(e.host.certPEM)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil || e.ca.Verify(leaf) != nil {
		fail(notAuthenticated)
		return
	}
	body, ok := e.verifySigned(r, params, leaf.PublicKey.(*rsa.PublicKey), []string{"date", "(request-target)"})
	if !ok {
		fail(notAuthenticated)
		return
	}
	var d struct {
		Certificate string `json:"certificate"`
		PublicKey   string `json:"publicKey"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "The body is not a federation request.")
		return
	}
	if cert, err := base64.StdEncoding.DecodeString(d.Certificate); err != nil || string(cert) != string(leaf.Raw) {
		fail("The certificate is not the one of the signing key.")
		return
	}
	der, err := base64.StdEncoding.DecodeString(d.PublicKey)
	var pub any
	if err == nil {
		pub, err = x509.ParsePKIXPublicKey(der)
	}
	sessionKey, isRSA := pub.(*rsa.PublicKey)
	if err != nil || !isRSA {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "publicKey is not an RSA public key (base64 DER).")
		return
	}
	exp := e.opts.Clock().Add(e.opts.SessionLifetime)
	token := jwt(map[string]any{"alg": "RS256", "typ": "JWT"}, map[string]any{"sub": e.host.instanceID, "tenant": e.fx.TenancyID,
		"ptype": "instance", "iss": "authService.oracle.com", "exp": exp.Unix(), "iat": e.opts.Clock().Unix(),
		"jti": fmt.Sprintf("emulator-%d", exp.UnixNano())})
	e.mu.Lock()
	e.sessions[token] = session{key: sessionKey, exp: exp, principal: "instance:" + e.host.instanceID}
	e.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, map[string]string{"token": token})
}

// jwt is a token of header and payload; its signature is the emulator's own
// (clients read a token, never check it).
func jwt(header, payload map[string]any) string {
	part := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	unsigned := part(header) + "." + part(payload)
	sum := sha256.Sum256([]byte(unsigned))
	sig, _ := asn1.Marshal(sum[:])
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// sessionUser is the principal of a session token (an instance's, or a
// workload's: workloadidentity.go), or nil for an unknown or expired one.
func (e *Emulator) sessionUser(token string) *user {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.sessions[token]
	if !ok || !e.opts.Clock().Before(s.exp) {
		return nil
	}
	rights := map[string]bool{}
	for _, r := range allRights {
		rights[r] = true
	}
	return &user{key: s.key, rights: rights, principal: s.principal}
}
