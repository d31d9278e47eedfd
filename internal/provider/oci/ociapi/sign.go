package ociapi

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// OCI authenticates every request by an HTTP signature (draft-cavage-http-
// signatures-08, RSA-SHA256) over a fixed list of headers, as documented in
// https://docs.oracle.com/en-us/iaas/Content/API/Concepts/signingrequests.htm
// and as oci-go-sdk's common/http_signer.go does it: always date,
// (request-target) and host; for a request with a body (POST, PUT, PATCH)
// also content-length, content-type and x-content-sha256. A test signs the
// same request with the SDK and compares the two headers byte for byte.

// Credentials are what a request is signed with: keyId is
// "<tenancy>/<user>/<fingerprint>" for a user's API key, "ST$<token>" for a
// session token (instance principal).
type Credentials interface {
	SigningKey() (keyID string, key *rsa.PrivateKey, err error)
}

// APIKey is a user's API key.
type APIKey struct {
	KeyID string
	Key   *rsa.PrivateKey
}

// SigningKey is the key and its keyId.
func (k APIKey) SigningKey() (string, *rsa.PrivateKey, error) { return k.KeyID, k.Key, nil }

// RotatingKey is the API key in use, replaced when the config's changes.
type RotatingKey struct{ key atomic.Pointer[APIKey] }

// SigningKey is the key in use and its keyId.
func (r *RotatingKey) SigningKey() (string, *rsa.PrivateKey, error) {
	k := r.key.Load()
	return k.KeyID, k.Key, nil
}

// Set makes k the key in use; it says whether k is another key.
func (r *RotatingKey) Set(k APIKey) bool {
	old := r.key.Swap(&k)
	return old == nil || old.KeyID != k.KeyID || !old.Key.Equal(k.Key)
}

// signerKey holds, in a request's context, the credentials that sign it in
// place of the transport's own.
type signerKey struct{}

// signingTransport signs each request it sends, anew for every attempt of a
// retry (the date is part of the signature and OCI refuses one more than 5
// minutes off).
type signingTransport struct {
	base  http.RoundTripper
	creds Credentials
	now   func() time.Time
}

// RoundTrip signs a copy of req and sends it.
func (t *signingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = readBody(req)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request's body to sign it: %w", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	creds := t.creds
	if c, ok := req.Context().Value(signerKey{}).(Credentials); ok {
		creds = c // a Service's workload (client.go, the provider's workloads.go)
	}
	keyID, key, err := creds.SigningKey()
	if err != nil {
		return nil, err
	}
	if err := sign(r, body, keyID, key, t.now()); err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		// A session token OCI no longer takes: the next call gets another.
		if s, ok := creds.(interface{ forget(keyID string) }); ok {
			s.forget(keyID)
		}
	}
	return resp, err
}

// readBody reads req's body whole, in one allocation when its length is
// known (a body of 5,000 backends is half a megabyte).
func readBody(req *http.Request) ([]byte, error) {
	if req.ContentLength <= 0 {
		return io.ReadAll(req.Body)
	}
	body := make([]byte, req.ContentLength)
	_, err := io.ReadFull(req.Body, body)
	return body, err
}

// hasSignedBody says whether a method's body is signed.
func hasSignedBody(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// sign sets the headers of r's signature at now. body is r's body.
func sign(r *http.Request, body []byte, keyID string, key *rsa.PrivateKey, now time.Time) error {
	if key == nil {
		return errors.New("no signing key")
	}
	r.Header.Set("Date", now.UTC().Format(http.TimeFormat))
	names := []string{"date", "(request-target)", "host"}
	if hasSignedBody(r.Method) {
		sum := sha256.Sum256(body)
		r.Header.Set("X-Content-Sha256", base64.StdEncoding.EncodeToString(sum[:]))
		if r.Header.Get("Content-Type") == "" {
			r.Header.Set("Content-Type", "application/json")
		}
		r.ContentLength = int64(len(body))
		names = append(names, "content-length", "content-type", "x-content-sha256")
	}
	lines := make([]string, len(names))
	for i, n := range names {
		lines[i] = n + ": " + signedValue(r, n)
	}
	digest := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, digest[:])
	if err != nil {
		return fmt.Errorf("signing the request: %w", err)
	}
	r.Header.Set("Authorization", fmt.Sprintf(`Signature version="1",headers="%s",keyId="%s",algorithm="rsa-sha256",signature="%s"`,
		strings.Join(names, " "), keyID, base64.StdEncoding.EncodeToString(sig)))
	return nil
}

// signedValue is the value of a signed header of r, as the server sees it.
func signedValue(r *http.Request, name string) string {
	switch name {
	case "(request-target)":
		return strings.ToLower(r.Method) + " " + r.URL.RequestURI()
	case "host":
		if r.URL.Host != "" {
			return r.URL.Host
		}
		return r.Host
	case "content-length":
		return strconv.FormatInt(r.ContentLength, 10)
	}
	return r.Header.Get(name)
}
