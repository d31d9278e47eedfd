package cloudapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An answer that is not the API's (a wrong path's 404, a portal's page, a
// proxy's 502) is an error that says the status, the host and what to
// check, and never shows the body; the API's own answers pass untouched.
func TestAnAnswerThatIsNotTheAPIsSaysStatusHostAndCause(t *testing.T) {
	const secretish = "Zq-page-text"
	for _, tt := range []struct {
		name, method, ctype, body string
		status                    int
		want                      []string // "" for an answer that passes
	}{
		{"a 404 with an empty body", "GET", "", "", 404, []string{"404 Not Found", "an empty body", "a wrong URL or path"}},
		{"a login page", "GET", "text/html; charset=utf-8", "<html>" + secretish, 200, []string{"200 OK", "an HTML page", "login portal"}},
		{"HTML without its type", "POST", "application/octet-stream", "\n <!DOCTYPE html>" + secretish, 200, []string{"an HTML page"}},
		{"a proxy's 502", "POST", "text/plain", "Bad Gateway " + secretish, 502, []string{"502 Bad Gateway", "not JSON (text/plain)", "a proxy or gateway"}},
		{"a 401 that is not JSON", "GET", "", secretish, 401, []string{"401 Unauthorized", "not JSON"}},
		{"the API's 404", "GET", "application/json", `{"itemNotFound": {}}`, 404, nil},
		{"the API's list", "GET", "application/json", `[]`, 200, nil},
		{"the API's empty 200", "DELETE", "", "", 200, nil},
		{"the API's 204", "DELETE", "", "", 204, nil},
		{"a HEAD's 404", "HEAD", "", "", 404, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.ctype != "" {
					w.Header().Set("Content-Type", tt.ctype)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			cfg := testConfig(t)
			cfg.MaxRetries, cfg.AnswersJSON, cfg.Endpoint = NoRetries, true, "[Global] api-url"
			client, err := NewClient(cfg, nil)
			require.NoError(t, err)
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+"/client/api?apiKey=k", nil)
			require.NoError(t, err)
			resp, err := client.Do(req)
			if tt.want == nil {
				require.NoError(t, err)
				assert.Equal(t, tt.body, readBody(t, resp), "the body is read whole")
				return
			}
			require.Error(t, err)
			msg := RedactError(err).Error()
			for _, w := range append(tt.want, strings.TrimPrefix(srv.URL, "http://"), "/client/api", "check [Global] api-url") {
				assert.Contains(t, msg, w)
			}
			assert.NotContains(t, msg, secretish[:6], "the body is never shown")
			_, ok := AsNotAPI(err)
			assert.True(t, ok)
		})
	}
	t.Run("an API not said to answer JSON gets its answers as they are", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) }))
		defer srv.Close()
		client, err := NewClient(testConfig(t), nil)
		require.NoError(t, err)
		resp, err := client.Get(srv.URL)
		require.NoError(t, err)
		assert.Equal(t, 404, resp.StatusCode)
		_ = resp.Body.Close()
	})
}
