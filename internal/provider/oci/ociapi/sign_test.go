package ociapi

import (
	"bytes"
	"crypto/rsa"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sdkKey is a key as oci-go-sdk's signer takes it.
type sdkKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k sdkKey) PrivateRSAKey() (*rsa.PrivateKey, error) { return k.key, nil }
func (k sdkKey) KeyID() (string, error)                  { return k.id, nil }

// Our signature of a request is the SDK's, byte for byte (RSA PKCS#1 v1.5
// signatures are deterministic), for requests with and without a body.
func TestRequestsAreSignedAsTheSDKSignsThem(t *testing.T) {
	const keyID = tenancy + "/" + user + "/aa:bb"
	at := time.Date(2026, 11, 25, 13, 51, 0, 0, time.UTC)
	for _, tt := range []struct {
		method, url, body string
	}{
		{http.MethodGet, "https://iaas.us-ashburn-1.oraclecloud.com/20160918/instances?compartmentId=" + compartment + "&page=2", ""},
		{http.MethodDelete, "https://iaas.us-ashburn-1.oraclecloud.com/20170115/loadBalancers/ocid1.loadbalancer.oc1.iad.x", ""},
		{http.MethodPost, "https://iaas.us-ashburn-1.oraclecloud.com/20170115/loadBalancers", `{"displayName":"a","shapeName":"flexible"}`},
		{http.MethodPut, "https://127.0.0.1:8443/20160918/securityLists/ocid1.securitylist.oc1.iad.x", `{"ingressSecurityRules":[]}`},
		{http.MethodPost, "https://network-load-balancer-api.us-ashburn-1.oci.oraclecloud.com/20200501/networkLoadBalancers", ""},
	} {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			build := func() *http.Request {
				var body io.Reader
				if tt.body != "" {
					body = bytes.NewReader([]byte(tt.body))
				}
				r, err := http.NewRequest(tt.method, tt.url, body)
				require.NoError(t, err)
				r.Header.Set("Date", at.Format(http.TimeFormat))
				if hasSignedBody(tt.method) {
					r.Header.Set("Content-Type", "application/json")
				}
				return r
			}
			theirs := build()
			require.NoError(t, common.DefaultRequestSigner(sdkKey{keyID, testKey}).Sign(theirs))
			ours := build()
			require.NoError(t, sign(ours, []byte(tt.body), keyID, testKey, at))
			assert.Equal(t, theirs.Header.Get("Authorization"), ours.Header.Get("Authorization"))
			assert.Equal(t, theirs.Header.Get("X-Content-Sha256"), ours.Header.Get("X-Content-Sha256"))
		})
	}
}

// Every attempt is signed anew: a retried request carries the date of its
// attempt, and the body reaches the server whole.
func TestTheTransportSignsEachAttempt(t *testing.T) {
	var seen []*http.Request
	var bodies []string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		seen, bodies = append(seen, r), append(bodies, string(b))
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})
	now := time.Date(2026, 11, 25, 13, 51, 0, 0, time.UTC)
	tr := &signingTransport{base: base, creds: APIKey{KeyID: "k", Key: testKey}, now: func() time.Time { return now }}
	for range 2 {
		r, err := http.NewRequest(http.MethodPut, "https://iaas.example/20160918/securityLists/x", bytes.NewReader([]byte(`{"a":1}`)))
		require.NoError(t, err)
		_, err = tr.RoundTrip(r)
		require.NoError(t, err)
		assert.Empty(t, r.Header.Get("Authorization"), "the caller's request is left as it was")
		now = now.Add(time.Minute)
	}
	require.Len(t, seen, 2)
	assert.NotEqual(t, seen[0].Header.Get("Date"), seen[1].Header.Get("Date"))
	assert.NotEqual(t, seen[0].Header.Get("Authorization"), seen[1].Header.Get("Authorization"))
	assert.Equal(t, []string{`{"a":1}`, `{"a":1}`}, bodies)
	assert.Equal(t, int64(7), seen[0].ContentLength)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
