package cloudapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// Secrets planted in requests; none may appear in errors, logs or labels.
const (
	secretToken     = "gAAAAABsecretKeystoneToken0123456789"
	secretBearer    = "eyJhbGciOiJSUzI1NiJ9.secretBearerPayload"
	secretAPIKey    = "secretCloudStackApiKey42"
	secretSignature = "c2VjcmV0U2lnbmF0dXJl+/3Q=" // needs escaping in a query
)

var plantedSecrets = []string{
	secretToken, secretBearer, secretAPIKey, secretSignature, url.QueryEscape(secretSignature),
	"gAAAAABsecret", "secretCloudStack", "c2VjcmV0U2lnbmF0dXJl",
}

// logBuffer collects log lines of every verbosity.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() klog.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.b.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
}

func assertNoSecret(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range plantedSecrets {
		assert.NotContains(t, s, secret, "%s leaks a secret", what)
	}
}

// callsThatMightLeak are TestSecretsNeverLeak's cases: the transport under
// the client (and the host it reaches), the attempt's timeout and the error
// expected, if any.
var callsThatMightLeak = []struct {
	name      string
	base      func(t *testing.T) (http.RoundTripper, string) // transport and host
	timeout   time.Duration
	wantIs    error
	wantError bool
}{
	{name: "a refused connection", wantError: true, wantIs: syscall.ECONNREFUSED,
		base: func(t *testing.T) (http.RoundTripper, string) { return nil, closedAddr(t) }},
	{name: "a base transport returning a *url.Error with the full URL", wantError: true,
		base: func(*testing.T) (http.RoundTripper, string) {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return nil, &url.Error{Op: "Get", URL: r.URL.String(), Err: syscall.ECONNRESET}
			}), "cloud.invalid"
		}, wantIs: syscall.ECONNRESET},
	{name: "a base transport wrapping a *url.Error in another error", wantError: true,
		base: func(*testing.T) (http.RoundTripper, string) {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return nil, fmt.Errorf("signing proxy: %w", &url.Error{Op: "Get", URL: r.URL.String(), Err: syscall.ECONNRESET})
			}), "cloud.invalid"
		}, wantIs: syscall.ECONNRESET},
	{name: "a base transport echoing the credentials", wantError: true,
		base: func(*testing.T) (http.RoundTripper, string) {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return nil, fmt.Errorf("token %s (%s) with key %s and signature %s rejected: %w",
					r.Header.Get("X-Auth-Token"), r.Header.Get("Authorization"),
					r.URL.Query().Get("apiKey"), r.URL.Query().Get("signature"), syscall.ECONNRESET)
			}), "cloud.invalid"
		}, wantIs: syscall.ECONNRESET},
	{name: "an attempt timeout", wantError: true, timeout: 100 * time.Millisecond,
		base: func(t *testing.T) (http.RoundTripper, string) {
			srv := newScriptedServer(t, step{block: true})
			return srv.Client().Transport, strings.TrimPrefix(srv.URL, "http://")
		}},
	{name: "a throttled response",
		base: func(t *testing.T) (http.RoundTripper, string) {
			srv := newScriptedServer(t, step{status: 429, retryAfter: "0"})
			return srv.Client().Transport, strings.TrimPrefix(srv.URL, "http://")
		}},
}

func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	for _, tt := range callsThatMightLeak {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base, host := tt.base(t)
			cfg := testConfig(t)
			cfg.MaxRetries = 1
			if tt.timeout != 0 {
				cfg.Timeout = tt.timeout
			}
			client, err := NewClient(cfg, base)
			require.NoError(t, err)
			var logs logBuffer
			ctx := klog.NewContext(t.Context(), logs.logger())

			query := url.Values{
				"command":   {"listVirtualMachines"},
				"apiKey":    {secretAPIKey},
				"signature": {secretSignature},
			}
			for _, viaClient := range []bool{false, true} {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/client/api?"+query.Encode(), nil)
				require.NoError(t, err)
				req.Header.Set("X-Auth-Token", secretToken)
				req.Header.Set("Authorization", "Bearer "+secretBearer)

				var resp *http.Response
				if viaClient {
					resp, err = client.Do(req)
					if err != nil {
						// *http.Client adds a *url.Error with the full URL;
						// RedactError is what providers must apply.
						assert.Contains(t, err.Error(), secretAPIKey, "http.Client's own error has the query")
						err = RedactError(err)
					}
				} else {
					resp, err = client.Transport.RoundTrip(req)
				}
				if !tt.wantError {
					require.NoError(t, err)
					_ = readBody(t, resp)
					continue
				}
				require.Error(t, err)
				t.Logf("error (via client: %v): %v", viaClient, err)
				assertNoSecret(t, "the error", err.Error())
				assertNoSecret(t, "the error (%+v)", fmt.Sprintf("%+v", err))
				assert.Contains(t, err.Error(), "/client/api", "the error still names the path")
				if tt.wantIs != nil {
					assert.ErrorIs(t, err, tt.wantIs)
				}
			}

			out := logs.String()
			assert.Contains(t, out, "Retrying cloud API request")
			assert.Contains(t, out, "listVirtualMachines")
			assertNoSecret(t, "the logs", out)
			assertNoSecretInMetricLabels(t)
		})
	}
}

// assertNoSecretInMetricLabels checks every label value of the package's metrics.
func assertNoSecretInMetricLabels(t *testing.T) {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if !strings.HasPrefix(mf.GetName(), "overcast_cloud_api_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				assertNoSecret(t, "label "+mf.GetName()+"{"+lp.GetName()+"}", lp.GetValue())
			}
		}
	}
}

func TestRedactError(t *testing.T) {
	t.Parallel()
	full := "https://user:hunter2hunter2@cloudstack.example/client/api?apiKey=" + secretAPIKey + "&signature=" + url.QueryEscape(secretSignature)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "nil stays nil", err: nil, want: ""},
		{name: "an error without URL is unchanged", err: errors.New("boom"), want: "boom"},
		{name: "a *url.Error loses user info, query and fragment",
			err:  &url.Error{Op: "Get", URL: full + "#frag", Err: errors.New("EOF")},
			want: `Get "https://cloudstack.example/client/api": EOF`},
		{name: "a nested *url.Error is scrubbed from the message",
			err:  fmt.Errorf("cloudstack: %w", &url.Error{Op: "Post", URL: full, Err: errors.New("EOF")}),
			want: `cloudstack: Post "https://cloudstack.example/client/api": EOF`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := RedactError(tt.err)
			if tt.err == nil {
				require.NoError(t, got)
				return
			}
			assert.Equal(t, tt.want, got.Error())
			assert.NotContains(t, got.Error(), "hunter2")
			var ue *url.Error
			assert.Equal(t, errors.As(tt.err, &ue), errors.As(got, &ue), "the *url.Error is still in the chain")
		})
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	u, err := url.Parse("https://admin:pw@keystone.example:5000/v3/auth/tokens?nocatalog=1#x")
	require.NoError(t, err)
	assert.Equal(t, "https://keystone.example:5000/v3/auth/tokens", RedactURL(u))
	assert.Empty(t, RedactURL(nil))
}
