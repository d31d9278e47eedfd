package ociapi

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Instance principals (useInstancePrincipals): the CCM calls as the instance
// it runs on, which a dynamic group and its policies give rights, as
// oci-go-sdk's common/auth does and the documentation describes
// (https://docs.oracle.com/en-us/iaas/Content/Identity/Tasks/callingservicesfrominstances.htm):
// the instance metadata service (IMDSv2, "Authorization: Bearer Oracle")
// gives the instance's leaf certificate, its key and the intermediate
// certificate; the federation endpoint (POST /v1/x509, signed with the
// leaf's key as <tenancy>/fed-x509-sha256/<fingerprint>) trades them and a
// session public key of ours for a session token (a JWT); requests are then
// signed with the session key as ST$<token>, renewed as session.go says
// (the certificate, which the instance renews, read anew).

const defaultMetadataURL = "http://169.254.169.254/opc/v2"

// InstancePrincipal is the instance the CCM runs on, as a principal: its
// metadata service and the federation endpoint of its region.
type InstancePrincipal struct {
	metadata, auth string
	http           *http.Client
	now            func() time.Time
}

// Principal is where the CCM's session tokens come from: the region, and
// the endpoints the config sets in place of the region's (each "" for the
// default): the instance metadata service, the federation endpoint, OKE's
// workload identity endpoint.
type Principal struct {
	Region, Metadata, Auth, WorkloadIdentity string
}

// NewInstancePrincipal is the instance principal of pr: the metadata
// service and the federation endpoint of the region, unless pr's
// endpoints or oci-go-sdk's environment variables say otherwise.
func NewInstancePrincipal(pr Principal) *InstancePrincipal {
	p := &InstancePrincipal{metadata: defaultMetadataURL, auth: "https://auth." + RegionName(pr.Region) + ".oraclecloud.com",
		http: &http.Client{Timeout: principalTimeout}, now: time.Now}
	if v := os.Getenv("OCI_METADATA_BASE_URL"); v != "" {
		p.metadata = v
	}
	if v := os.Getenv("OCI_SDK_AUTH_CLIENT_REGION_URL"); v != "" {
		p.auth = v
	}
	if pr.Metadata != "" {
		p.metadata = pr.Metadata
	}
	if pr.Auth != "" {
		p.auth = pr.Auth
	}
	p.metadata, p.auth = strings.TrimRight(p.metadata, "/"), strings.TrimRight(p.auth, "/")
	return p
}

// Sessions are the instance principal's credentials.
func (p *InstancePrincipal) Sessions() *SessionCache {
	return &SessionCache{what: "instance principal", renew: p.exchange, now: p.now}
}

// InstanceMetadata is what the CCM reads of its instance.
type InstanceMetadata struct {
	ID                  string `json:"id"`
	CompartmentID       string `json:"compartmentId"`
	CanonicalRegionName string `json:"canonicalRegionName"`
}

// Instance reads the instance's metadata.
func (p *InstancePrincipal) Instance(ctx context.Context) (InstanceMetadata, error) {
	var md InstanceMetadata
	data, err := p.get(ctx, "/instance/")
	if err == nil {
		err = json.Unmarshal(data, &md)
	}
	return md, err
}

// get reads path of the metadata service.
func (p *InstancePrincipal) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metadata+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer Oracle")
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the instance metadata (%s): %w", p.metadata+path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("the instance metadata service answered %s to %s", resp.Status, p.metadata+path)
	}
	return data, err
}

// exchange gets a session token for a new session key.
func (p *InstancePrincipal) exchange(ctx context.Context) (session, error) {
	var pems [3][]byte
	for i, path := range []string{"/identity/cert.pem", "/identity/key.pem", "/identity/intermediate.pem"} {
		var err error
		if pems[i], err = p.get(ctx, path); err != nil {
			return session{}, err
		}
	}
	leaf, err := parseCertificate(pems[0])
	if err != nil {
		return session{}, fmt.Errorf("the instance's certificate: %w", err)
	}
	leafKey, err := parseRSAKey(pems[1])
	if err != nil {
		return session{}, fmt.Errorf("the instance's key: %w", err)
	}
	intermediate, err := parseCertificate(pems[2])
	if err != nil {
		return session{}, fmt.Errorf("the intermediate certificate: %w", err)
	}
	tenancy := ""
	for _, ou := range leaf.Subject.OrganizationalUnit {
		if t, ok := strings.CutPrefix(ou, "opc-tenant:"); ok {
			tenancy = t
		}
	}
	if tenancy == "" {
		return session{}, errors.New("the instance's certificate names no tenancy (opc-tenant:)")
	}
	key, pub, err := sessionKey()
	if err != nil {
		return session{}, err
	}
	body, err := json.Marshal(map[string]any{"certificate": base64.StdEncoding.EncodeToString(leaf.Raw),
		"publicKey": base64.StdEncoding.EncodeToString(pub), "intermediateCertificates": []string{base64.StdEncoding.EncodeToString(intermediate.Raw)},
		"fingerprintAlgorithm": "SHA256"})
	if err != nil {
		return session{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.auth+"/v1/x509", bytes.NewReader(body))
	if err != nil {
		return session{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256(leaf.Raw)
	hexes := make([]string, len(sum))
	for i, b := range sum {
		hexes[i] = fmt.Sprintf("%02x", b)
	}
	if err := sign(req, body, tenancy+"/fed-x509-sha256/"+strings.Join(hexes, ":"), leafKey, p.now()); err != nil {
		return session{}, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return session{}, fmt.Errorf("asking the federation endpoint for a token: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return session{}, answerError(resp, http.MethodPost, "/v1/x509")
	}
	var out struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return session{}, errors.New("the federation endpoint's answer is not JSON")
	}
	iat, exp, err := tokenTimes(out.Token)
	if err != nil {
		return session{}, fmt.Errorf("the federation endpoint's token: %w", err)
	}
	return session{token: out.Token, key: key, iat: iat, exp: exp}, nil
}

func parseCertificate(data []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("not PEM")
	}
	return x509.ParseCertificate(b.Bytes)
}

func parseRSAKey(data []byte) (*rsa.PrivateKey, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("not PEM")
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an RSA key")
	}
	return rk, nil
}
