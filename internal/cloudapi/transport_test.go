package cloudapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTripRetriesByMethodAndStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		method       string
		maxRetries   int
		steps        []step
		wantAttempts int
		wantStatus   int
	}{
		{name: "a GET is retried on 503 and then succeeds", method: http.MethodGet,
			steps: []step{{status: 503}, {status: 200}}, wantAttempts: 2, wantStatus: 200},
		{name: "a GET is retried on 502, 504 and 429", method: http.MethodGet,
			steps: []step{{status: 502}, {status: 504}, {status: 429}, {status: 200}}, wantAttempts: 4, wantStatus: 200},
		{name: "a GET gives up after MaxRetries and returns the last response", method: http.MethodGet, maxRetries: 2,
			steps: []step{{status: 503}}, wantAttempts: 3, wantStatus: 503},
		{name: "a GET is not retried on 500", method: http.MethodGet,
			steps: []step{{status: 500}, {status: 200}}, wantAttempts: 1, wantStatus: 500},
		{name: "a GET is not retried on 404", method: http.MethodGet,
			steps: []step{{status: 404}, {status: 200}}, wantAttempts: 1, wantStatus: 404},
		{name: "a GET is sent once with NoRetries", method: http.MethodGet, maxRetries: NoRetries,
			steps: []step{{status: 503}, {status: 200}}, wantAttempts: 1, wantStatus: 503},
		{name: "a HEAD is retried on 503", method: http.MethodHead,
			steps: []step{{status: 503}, {status: 200}}, wantAttempts: 2, wantStatus: 200},
		{name: "a PUT is retried on 502", method: http.MethodPut,
			steps: []step{{status: 502}, {status: 200}}, wantAttempts: 2, wantStatus: 200},
		{name: "a DELETE is retried on 504", method: http.MethodDelete,
			steps: []step{{status: 504}, {status: 204}}, wantAttempts: 2, wantStatus: 204},
		{name: "a POST is not retried on 500", method: http.MethodPost,
			steps: []step{{status: 500}, {status: 200}}, wantAttempts: 1, wantStatus: 500},
		{name: "a POST is retried on 429", method: http.MethodPost,
			steps: []step{{status: 429}, {status: 201}}, wantAttempts: 2, wantStatus: 201},
		{name: "a POST is not retried on 503 without Retry-After", method: http.MethodPost,
			steps: []step{{status: 503}, {status: 201}}, wantAttempts: 1, wantStatus: 503},
		{name: "a POST is retried on 503 with Retry-After", method: http.MethodPost,
			steps: []step{{status: 503, retryAfter: "0"}, {status: 201}}, wantAttempts: 2, wantStatus: 201},
		{name: "a POST is not retried on 502", method: http.MethodPost,
			steps: []step{{status: 502}, {status: 201}}, wantAttempts: 1, wantStatus: 502},
		{name: "a PATCH is not retried on 504", method: http.MethodPatch,
			steps: []step{{status: 504}, {status: 200}}, wantAttempts: 1, wantStatus: 504},
		{name: "a PATCH is retried on 429", method: http.MethodPatch,
			steps: []step{{status: 429}, {status: 200}}, wantAttempts: 2, wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newScriptedServer(t, tt.steps...)
			cfg := testConfig(t)
			cfg.MaxRetries = tt.maxRetries
			client, err := NewClient(cfg, srv.Client().Transport)
			require.NoError(t, err)

			var body io.Reader
			if tt.method == http.MethodPost || tt.method == http.MethodPut || tt.method == http.MethodPatch {
				body = strings.NewReader(`{"k":"v"}`)
			}
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+"/v2.1/servers", body)
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)

			assert.Equal(t, tt.wantStatus, resp.StatusCode)
			assert.Equal(t, tt.wantAttempts, srv.Attempts())
			got := readBody(t, resp)
			if tt.method != http.MethodHead && tt.wantStatus != http.StatusNoContent {
				assert.Equal(t, fmt.Sprintf("attempt %d", tt.wantAttempts), got, "the last response is returned, body intact")
			}
			retries := 0.0
			for _, reason := range []string{"429", "502", "503", "504"} {
				retries += counterValue(t, retriesTotal, cfg.Cloud, "servers", tt.method+" /v2.1/servers", reason)
			}
			assert.InDelta(t, float64(tt.wantAttempts-1), retries, 0)
		})
	}
}

func TestRoundTripHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		retryAfter    func() string
		maxRetryAfter time.Duration
		minElapsed    time.Duration
	}{
		{name: "delta seconds are waited for",
			retryAfter: func() string { return "1" }, minElapsed: 990 * time.Millisecond},
		{name: "an HTTP-date is waited for",
			// Truncated to the second, so between 1s and 2s from now.
			retryAfter: func() string { return time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat) },
			minElapsed: 900 * time.Millisecond},
		{name: "a long Retry-After is capped at MaxRetryAfter",
			retryAfter: func() string { return "3600" }, maxRetryAfter: 50 * time.Millisecond, minElapsed: 50 * time.Millisecond},
		{name: "an HTTP-date in the past means no wait",
			retryAfter: func() string { return "Mon, 02 Jan 2006 15:04:05 GMT" }, minElapsed: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newScriptedServer(t, step{status: 503, retryAfter: tt.retryAfter()}, step{status: 200})
			cfg := testConfig(t)
			cfg.MaxRetryAfter = tt.maxRetryAfter
			tr := newTestTransport(t, cfg, srv.Client().Transport)
			tr.jitter = func(time.Duration) time.Duration { panic("backoff used despite Retry-After") }

			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v3/auth/tokens", nil)
			require.NoError(t, err)
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			elapsed := time.Since(start)
			require.NoError(t, err)
			assert.Equal(t, "attempt 2", readBody(t, resp))
			assert.GreaterOrEqual(t, elapsed, tt.minElapsed)
			assert.Less(t, elapsed, 10*time.Second)
		})
	}
}

func TestRoundTripStopsAtTheContextDeadline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		steps   []step
		backoff time.Duration
	}{
		{name: "a Retry-After past the deadline returns the last response at once",
			steps: []step{{status: 503, retryAfter: "30"}, {status: 200}}, backoff: time.Millisecond},
		{name: "a backoff past the deadline returns the last response at once",
			steps: []step{{status: 503}, {status: 200}}, backoff: 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newScriptedServer(t, tt.steps...)
			cfg := testConfig(t)
			cfg.BaseBackoff, cfg.MaxBackoff = tt.backoff, tt.backoff
			tr := newTestTransport(t, cfg, srv.Client().Transport)
			tr.jitter = func(d time.Duration) time.Duration { return d }

			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v2.0/ports", nil)
			require.NoError(t, err)
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			assert.Equal(t, "attempt 1", readBody(t, resp))
			assert.Equal(t, 1, srv.Attempts())
		})
	}

	t.Run("cancelling the context during a backoff returns the context error", func(t *testing.T) {
		t.Parallel()
		srv := newScriptedServer(t, step{status: 503})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := srv.Client().Transport.RoundTrip(r)
			time.AfterFunc(50*time.Millisecond, cancel) // during the backoff
			return resp, err
		})
		cfg := testConfig(t)
		cfg.BaseBackoff, cfg.MaxBackoff = 30*time.Second, 30*time.Second
		tr := newTestTransport(t, cfg, base)
		tr.jitter = func(d time.Duration) time.Duration { return d }

		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v2.0/ports", nil)
		require.NoError(t, err)
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		require.Error(t, err)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Less(t, time.Since(start), 10*time.Second)
		assert.Equal(t, 1, srv.Attempts())
	})

	t.Run("a request with a cancelled context is not sent", func(t *testing.T) {
		t.Parallel()
		srv := newScriptedServer(t, step{status: 200})
		tr := newTestTransport(t, testConfig(t), srv.Client().Transport)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v2.0/ports", nil)
		require.NoError(t, err)
		_, err = tr.RoundTrip(req)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, srv.Attempts())
	})
}

func TestRoundTripResendsTheBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		method string
		body   func() io.Reader
	}{
		{name: "a POST body from a strings.Reader is re-sent identically", method: http.MethodPost,
			body: func() io.Reader { return strings.NewReader(`{"server":{"name":"a"}}`) }},
		{name: "a PUT body from a bytes.Reader is re-sent identically", method: http.MethodPut,
			body: func() io.Reader { return bytes.NewReader(bytes.Repeat([]byte("x"), 100<<10)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newScriptedServer(t, step{status: 429}, step{status: 429}, step{status: 200})
			tr := newTestTransport(t, testConfig(t), srv.Client().Transport)
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+"/v2/lbaas/loadbalancers", tt.body())
			require.NoError(t, err)
			require.NotNil(t, req.GetBody)
			want, err := io.ReadAll(tt.body())
			require.NoError(t, err)

			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			_ = readBody(t, resp)
			bodies := srv.Bodies()
			require.Len(t, bodies, 3)
			for i, b := range bodies {
				assert.Equal(t, string(want), b, "body of attempt %d", i+1)
			}
		})
	}

	t.Run("a request whose body cannot be rewound is not retried", func(t *testing.T) {
		t.Parallel()
		srv := newScriptedServer(t, step{status: 429}, step{status: 200})
		tr := newTestTransport(t, testConfig(t), srv.Client().Transport)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/v2/lbaas/pools/1234567890",
			io.NopCloser(strings.NewReader("payload")))
		require.NoError(t, err)
		require.Nil(t, req.GetBody)
		req.ContentLength = int64(len("payload"))

		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		_ = readBody(t, resp)
		assert.Equal(t, []string{"payload"}, srv.Bodies())
	})
}

func TestRoundTripRetriesTransportErrors(t *testing.T) {
	t.Parallel()

	t.Run("a GET whose attempt times out is retried", aTimedOutGETIsRetried)
	t.Run("a POST whose attempt times out is not retried", aTimedOutPOSTIsNotRetried)
	t.Run("a GET is retried when the connection is closed without a response", aGETOnAClosedConnectionIsRetried)
	t.Run("a POST is not retried when the connection is closed after it was sent", aSentPOSTOnAClosedConnectionIsNotRetried)
	t.Run("a POST is retried when the connection is refused", aRefusedPOSTIsRetried)
	t.Run("a GET to a closed port gives up after MaxRetries with the dial error", aGETToAClosedPortGivesUp)
	t.Run("a TLS certificate error is not retried", aTLSCertificateErrorIsNotRetried)
}

// aTimedOutGETIsRetried: a GET whose attempt times out is retried.
func aTimedOutGETIsRetried(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, step{block: true}, step{status: 200})
	cfg := testConfig(t)
	cfg.Timeout = 200 * time.Millisecond
	tr := newTestTransport(t, cfg, srv.Client().Transport)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v2.1/servers/detail", nil)
	require.NoError(t, err)

	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, "attempt 2", readBody(t, resp))
	assert.InDelta(t, 1.0, counterValue(t, retriesTotal, cfg.Cloud, "servers", "GET /v2.1/servers/detail", "timeout"), 0)
	assert.InDelta(t, 1.0, counterValue(t, requestsTotal, cfg.Cloud, "servers", "GET /v2.1/servers/detail", "error"), 0)
}

// aTimedOutPOSTIsNotRetried: a POST whose attempt times out is not retried.
func aTimedOutPOSTIsNotRetried(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, step{block: true}, step{status: 200})
	cfg := testConfig(t)
	cfg.Timeout = 200 * time.Millisecond
	tr := newTestTransport(t, cfg, srv.Client().Transport)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v2.1/servers", strings.NewReader("{}"))
	require.NoError(t, err)

	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 1, srv.Attempts())
}

// aGETOnAClosedConnectionIsRetried: a GET is retried when the connection is closed without a response.
func aGETOnAClosedConnectionIsRetried(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, step{hijack: true}, step{status: 200})
	cfg := testConfig(t)
	tr := newTestTransport(t, cfg, srv.Client().Transport)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v2.0/networks", nil)
	require.NoError(t, err)

	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, "attempt 2", readBody(t, resp))
	assert.InDelta(t, 1.0, counterValue(t, retriesTotal, cfg.Cloud, "networks", "GET /v2.0/networks", "network"), 0)
}

// aSentPOSTOnAClosedConnectionIsNotRetried: a POST is not retried when the connection is closed after it was sent.
func aSentPOSTOnAClosedConnectionIsNotRetried(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, step{hijack: true}, step{status: 201})
	tr := newTestTransport(t, testConfig(t), srv.Client().Transport)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v2.0/networks", strings.NewReader("{}"))
	require.NoError(t, err)

	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	assert.Equal(t, 1, srv.Attempts())
}

// aRefusedPOSTIsRetried: a POST is retried when the connection is refused.
func aRefusedPOSTIsRetried(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, step{status: 201})
	refused := closedAddr(t)
	var calls atomic.Int32
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if calls.Add(1) == 1 {
			r = r.Clone(r.Context())
			r.URL.Host = refused
		}
		return srv.Client().Transport.RoundTrip(r)
	})
	cfg := testConfig(t)
	tr := newTestTransport(t, cfg, base)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v2.0/networks", strings.NewReader(`{"n":1}`))
	require.NoError(t, err)

	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	_ = readBody(t, resp)
	assert.Equal(t, int32(2), calls.Load())
	assert.Equal(t, []string{`{"n":1}`}, srv.Bodies())
	assert.InDelta(t, 1.0, counterValue(t, retriesTotal, cfg.Cloud, "networks", "POST /v2.0/networks", "network"), 0)
}

// aGETToAClosedPortGivesUp: a GET to a closed port gives up after MaxRetries with the dial error.
func aGETToAClosedPortGivesUp(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.MaxRetries = 3
	tr := newTestTransport(t, cfg, nil)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+closedAddr(t)+"/v2.0/networks", nil)
	require.NoError(t, err)

	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Contains(t, err.Error(), "attempt 4")
	assert.InDelta(t, 3.0, counterValue(t, retriesTotal, cfg.Cloud, "networks", "GET /v2.0/networks", "network"), 0)
	assert.InDelta(t, 4.0, counterValue(t, requestsTotal, cfg.Cloud, "networks", "GET /v2.0/networks", "error"), 0)
}

// aTLSCertificateErrorIsNotRetried: a TLS certificate error is not retried.
func aTLSCertificateErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	var calls atomic.Int32
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		return http.DefaultTransport.RoundTrip(r) // does not trust the test CA
	})
	tr := newTestTransport(t, testConfig(t), base)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v3/auth/tokens", nil)
	require.NoError(t, err)

	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	assert.Equal(t, int32(1), calls.Load())
}

func TestRoundTripResponseBodyIsReadableAfterReturn(t *testing.T) {
	t.Parallel()
	payload := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB, more than any buffer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // the body comes after RoundTrip has returned
		case <-time.After(100 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write(payload)
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(t)
	cfg.Timeout = 5 * time.Second
	tr := newTestTransport(t, cfg, srv.Client().Transport)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v1/objects", nil)
	require.NoError(t, err)

	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Same(t, req, resp.Request)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, payload, got)
	require.NoError(t, resp.Body.Close())
}

func TestRoundTripRateLimits(t *testing.T) {
	t.Parallel()

	t.Run("the request after the burst waits and is counted as throttled", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t)
		cfg.ReadQPS, cfg.ReadBurst = 4, 2
		cfg.WriteQPS, cfg.WriteBurst = 4, 1
		tr := newTestTransport(t, cfg, roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return okResponse(r), nil
		}))
		get := func() time.Duration {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://cloud.invalid/v2.1/servers", nil)
			require.NoError(t, err)
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			return time.Since(start)
		}
		get()
		get()
		assert.Zero(t, counterValue(t, throttledTotal, cfg.Cloud, "read"), "the burst is not throttled")
		assert.GreaterOrEqual(t, get(), 150*time.Millisecond, "the 3rd read waits about 1/ReadQPS")
		assert.InDelta(t, 1.0, counterValue(t, throttledTotal, cfg.Cloud, "read"), 0)

		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://cloud.invalid/v2.1/servers", strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Zero(t, counterValue(t, throttledTotal, cfg.Cloud, "write"), "writes have their own bucket")
	})

	t.Run("a rate limiter wait past the context deadline fails at once", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t)
		cfg.WriteQPS, cfg.WriteBurst = 0.01, 1
		var calls atomic.Int32
		tr := newTestTransport(t, cfg, roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return okResponse(r), nil
		}))
		for i := range 2 {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			req, err := http.NewRequestWithContext(ctx, http.MethodDelete, "http://cloud.invalid/v2.1/servers/42", nil)
			require.NoError(t, err)
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			cancel()
			if i == 0 {
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				continue
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Less(t, time.Since(start), 5*time.Second)
		}
		assert.Equal(t, int32(1), calls.Load())
		assert.InDelta(t, 1.0, counterValue(t, throttledTotal, cfg.Cloud, "write"), 0)
	})
}

func TestBackoffGrowsExponentiallyUpToMaxBackoff(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.BaseBackoff, cfg.MaxBackoff = time.Second, 8*time.Second
	tr := newTestTransport(t, cfg, nil)
	tr.jitter = func(d time.Duration) time.Duration { return d }
	var got []time.Duration
	for attempt := 1; attempt <= 6; attempt++ {
		got = append(got, tr.delay(nil, attempt))
	}
	assert.Equal(t, []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}, got)

	for range 100 {
		d := fullJitter(time.Second)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, time.Second)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		{name: "delta seconds", value: "7", want: 7 * time.Second, wantOK: true},
		{name: "zero seconds", value: "0", want: 0, wantOK: true},
		{name: "an HTTP-date in the future", value: "Sun, 01 Mar 2026 12:00:30 GMT", want: 30 * time.Second, wantOK: true},
		{name: "an HTTP-date in the past", value: "Sun, 01 Mar 2026 11:00:00 GMT", want: 0, wantOK: true},
		{name: "an absurd number of seconds", value: "99999999999999999999999", want: time.Duration(1<<63 - 1), wantOK: true},
		{name: "a missing header", value: "", wantOK: false},
		{name: "a negative number", value: "-5", wantOK: false},
		{name: "garbage", value: "soon", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseRetryAfter(tt.value, now)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNewTransportRejectsAnInvalidConfig(t *testing.T) {
	t.Parallel()
	_, err := NewTransport(Config{ReadQPS: -1}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Cloud")
	_, err = NewClient(Config{Cloud: "oci", Timeout: -time.Second}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Timeout")
}

// A body past MaxResponseBytes fails to read, whatever the server claims;
// one announced too large fails before it is read; one within it is whole.
func TestResponsesAreBounded(t *testing.T) {
	const max = 1 << 10
	for _, tc := range []struct {
		name      string
		size      int
		announce  bool
		wantError bool
	}{
		{"exactly the limit", max, false, false},
		{"one byte more, streamed", max + 1, false, true},
		{"endless, streamed", 64 * max, false, true},
		{"announced too large", 2 * max, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tc.announce {
					w.Header().Set("Content-Length", strconv.Itoa(tc.size))
				}
				chunk := strings.Repeat("x", 256)
				for sent := 0; sent < tc.size; sent += len(chunk) {
					_, _ = io.WriteString(w, chunk[:min(len(chunk), tc.size-sent)])
					if f, ok := w.(http.Flusher); ok && !tc.announce {
						f.Flush()
					}
				}
			}))
			defer srv.Close()
			c, err := NewClient(Config{Cloud: "test", MaxResponseBytes: max, MaxRetries: NoRetries}, http.DefaultTransport)
			require.NoError(t, err)
			resp, err := c.Get(srv.URL)
			if err == nil {
				var b []byte
				b, err = io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err == nil {
					assert.Len(t, b, tc.size)
				}
			}
			if tc.wantError {
				require.ErrorIs(t, err, ErrResponseTooLarge)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// A request the server answered 429 with Retry-After is held for every
// caller: the same request from another (two Services reading one shared
// list) waits it out too, not only the retry of the one answered.
func TestARetryAfterHoldsTheSameRequestOfEveryCaller(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, step{status: 429, retryAfter: "1"}, step{status: 200})
	tr := newTestTransport(t, testConfig(t), srv.Client().Transport)
	get := func(path string) (time.Time, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
		if err != nil {
			return time.Time{}, err
		}
		resp, err := tr.RoundTrip(req)
		if err == nil {
			drain(resp.Body)
		}
		return time.Now(), err
	}
	first := make(chan error, 1)
	start := time.Now()
	go func() { _, err := get("/securityLists/a"); first <- err }()
	// The first caller's 429 answered and its Retry-After held (not only
	// sent: on a loaded machine the second caller could come in between).
	require.Eventually(t, func() bool { tr.holds.mu.Lock(); defer tr.holds.mu.Unlock(); return len(tr.holds.until) == 1 }, 5*time.Second, time.Millisecond)
	at, err := get("/securityLists/a") // another caller, the same request
	require.NoError(t, err)
	assert.GreaterOrEqual(t, at.Sub(start), 950*time.Millisecond, "it waited out the Retry-After")
	require.NoError(t, <-first)
	other := time.Now()
	at, err = get("/securityLists/b") // another request: no hold
	require.NoError(t, err)
	assert.Less(t, at.Sub(other), 500*time.Millisecond)
}
