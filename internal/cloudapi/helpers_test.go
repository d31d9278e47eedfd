package cloudapi

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// cloudSeq makes every test's "cloud" label unique, so that tests (also with
// -count=N and in parallel) never read each other's metrics.
var cloudSeq atomic.Int64

func uniqueCloud(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("%s#%d", t.Name(), cloudSeq.Add(1))
}

// testConfig returns a valid Config with fast backoffs for tests.
func testConfig(t *testing.T) Config {
	t.Helper()
	return Config{
		Cloud:       uniqueCloud(t),
		ReadQPS:     1000,
		ReadBurst:   1000,
		WriteQPS:    1000,
		WriteBurst:  1000,
		BaseBackoff: time.Millisecond,
		MaxBackoff:  5 * time.Millisecond,
		Timeout:     10 * time.Second,
	}
}

// newTestTransport returns NewTransport(cfg, base) as *transport.
func newTestTransport(t *testing.T, cfg Config, base http.RoundTripper) *transport {
	t.Helper()
	rt, err := NewTransport(cfg, base)
	require.NoError(t, err)
	tr, ok := rt.(*transport)
	require.True(t, ok)
	return tr
}

// step is what a scriptedServer does for one request.
type step struct {
	status     int
	retryAfter string
	hijack     bool // close the connection without answering
	block      bool // wait until the client gives up (at most 5s)
}

// scriptedServer answers the n-th request with steps[n-1], and the last step
// once the script is exhausted. Response bodies are "attempt N".
type scriptedServer struct {
	*httptest.Server
	mu       sync.Mutex
	attempts int
	bodies   []string
	headers  []http.Header
}

func newScriptedServer(t *testing.T, steps ...step) *scriptedServer {
	t.Helper()
	s := &scriptedServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.attempts++
		n := s.attempts
		s.bodies = append(s.bodies, string(body))
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()

		st := steps[min(n, len(steps))-1]
		switch {
		case st.hijack:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		case st.block:
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		if st.retryAfter != "" {
			w.Header().Set("Retry-After", st.retryAfter)
		}
		w.WriteHeader(st.status)
		_, _ = fmt.Fprintf(w, "attempt %d", n)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scriptedServer) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

func (s *scriptedServer) Bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// okResponse is a 200 response to req with an empty body.
func okResponse(req *http.Request) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK,
		Status:     "200 OK",
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{},
		Body:    io.NopCloser(strings.NewReader("")),
		Request: req,
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// readBody reads and closes resp's body.
func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer func() { require.NoError(t, resp.Body.Close()) }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// counterValue returns the value of vec's series with label values lvs.
func counterValue(t *testing.T, vec *metrics.CounterVec, lvs ...string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(vec.WithLabelValues(lvs...))
	require.NoError(t, err)
	return v
}
