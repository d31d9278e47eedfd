package cloudapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestACallMayTakeLongerThanTheConfiguredAttempt: a request made with
// WithAttemptTimeout waits for an answer slower than Config.Timeout; the
// same request without it times out, once (a POST is not retried).
func TestACallMayTakeLongerThanTheConfiguredAttempt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(t)
	cfg.Timeout = 100 * time.Millisecond
	client := &http.Client{Transport: newTestTransport(t, cfg, http.DefaultTransport)}
	post := func(req *http.Request) (*http.Response, error) {
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return resp, err
	}

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v2/lbaas/loadbalancers", http.NoBody)
	require.NoError(t, err)
	_, err = post(req)
	require.ErrorContains(t, err, "attempt timed out after 100ms")

	req, err = http.NewRequestWithContext(WithAttemptTimeout(t.Context(), 5*time.Second), http.MethodPost, srv.URL+"/v2/lbaas/loadbalancers", http.NoBody)
	require.NoError(t, err)
	resp, err := post(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}
