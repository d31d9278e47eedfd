package core

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// started is a Server of a tiny API ("GET /things" answers "ok") on loopback.
func started(t *testing.T, opts Options) *Server {
	t.Helper()
	api := http.NewServeMux()
	api.HandleFunc("GET /things", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	opts.Services = []string{"things"}
	opts.WriteError = func(w http.ResponseWriter, _ *http.Request, service string, status int, msg string) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, service+": "+msg)
	}
	s := New(api, opts)
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func get(t *testing.T, ctx context.Context, url string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestCallsAreCountedByOperationAndCode(t *testing.T) {
	s := started(t, Options{})
	for range 2 {
		code, body, err := get(t, t.Context(), s.URL()+"/things")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok", body)
	}
	code, _, err := get(t, t.Context(), s.URL()+"/things/x")
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, []CallCount{
		{Service: "things", Method: "GET", Route: "GET /things", Code: 200, Count: 2},
		{Service: "things", Method: "GET", Route: "GET /things/x", Code: 404, Count: 1},
	}, s.Calls())
	_, _, err = get(t, t.Context(), s.URL()+"/_emulator/calls")
	require.NoError(t, err)
	assert.Len(t, s.Calls(), 2, "control calls are not counted")
	s.ResetCalls()
	assert.Empty(t, s.Calls())
}

func TestFaultsAnswerInTheCloudsShapeAndRunOut(t *testing.T) {
	s := started(t, Options{})
	s.InjectFault(Fault{Service: "things", Route: "GET /things", Status: 503, Count: 2, RetryAfter: 1500 * time.Millisecond})
	for range 2 {
		code, body, err := get(t, t.Context(), s.URL()+"/things")
		require.NoError(t, err)
		assert.Equal(t, 503, code)
		assert.Equal(t, "things: injected fault: 503 Service Unavailable", body)
	}
	code, _, err := get(t, t.Context(), s.URL()+"/things")
	require.NoError(t, err)
	assert.Equal(t, 200, code, "the fault ran out after its count")

	assert.Panics(t, func() { s.InjectFault(Fault{Service: "nothing", Status: 500}) }, "an unknown service is a test bug")
	resp, err := http.Post(s.URL()+"/_emulator/faults", "application/json", strings.NewReader(`{"Service":"nothing","Status":500}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "an invalid fault over HTTP is a 400, not a panic")
}

func TestAnOutageWindowFollowsTheEmulatorsClock(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	s := started(t, Options{Clock: func() time.Time { return now }})
	s.InjectFault(Fault{Status: 500, From: now.Add(time.Minute), Until: now.Add(2 * time.Minute)})
	code, _, _ := get(t, t.Context(), s.URL()+"/things")
	assert.Equal(t, 200, code, "before the window")
	now = now.Add(90 * time.Second)
	code, _, _ = get(t, t.Context(), s.URL()+"/things")
	assert.Equal(t, 500, code, "inside the window")
	now = now.Add(time.Minute)
	code, _, _ = get(t, t.Context(), s.URL()+"/things")
	assert.Equal(t, 200, code, "after the window")
}

func TestAHangingCallIsCountedWithoutAnAnswer(t *testing.T) {
	s := started(t, Options{})
	s.InjectFault(Fault{Hang: true})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, _, err := get(t, ctx, s.URL()+"/things")
	require.Error(t, err)
	require.Eventually(t, func() bool {
		c := s.Calls()
		return len(c) == 1 && c[0].Code == 0
	}, 5*time.Second, 10*time.Millisecond)
}

func TestLatencyIsAddedToAPICallsOnly(t *testing.T) {
	s := started(t, Options{Latency: 300 * time.Millisecond})
	start := time.Now()
	_, _, err := get(t, t.Context(), s.URL()+"/things")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	start = time.Now()
	_, _, err = get(t, t.Context(), s.URL()+"/_emulator/calls")
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 300*time.Millisecond, "control endpoints have no latency")
}

func TestAnEmulatorServesOnLoopbackOnly(t *testing.T) {
	s := New(http.NotFoundHandler(), Options{Name: "test emulator"})
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:8080", "localhost:0", ":0"} {
		err := s.Start(addr)
		require.Error(t, err, addr)
		assert.Contains(t, err.Error(), "test emulator")
	}
	require.NoError(t, s.Start("127.0.0.1:0"))
	require.NoError(t, s.Close())
}

func TestJobsTakeEffectWhenDueAndInOrder(t *testing.T) {
	j := NewJobs()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var ran []string
	a := j.Start("", now, 2*time.Second, func() (any, error) { ran = append(ran, "a"); return "ip-1", nil })
	b := j.Start("b", now, time.Second, func() (any, error) { ran = append(ran, "b"); return nil, errors.New("quota") })
	assert.Equal(t, "b", b)

	j.Settle(now.Add(500 * time.Millisecond))
	job, ok := j.Get(a)
	require.True(t, ok)
	assert.Equal(t, JobPending, job.Status)
	assert.Equal(t, 2, j.Pending())

	j.Settle(now.Add(2 * time.Second))
	assert.Equal(t, []string{"b", "a"}, ran, "in order of their due time")
	job, _ = j.Get(a)
	assert.Equal(t, JobSucceeded, job.Status)
	assert.Equal(t, "ip-1", job.Result)
	job, _ = j.Get(b)
	assert.Equal(t, JobFailed, job.Status)
	assert.EqualError(t, job.Err, "quota")

	j.Settle(now.Add(time.Hour))
	assert.Len(t, ran, 2, "a job runs once")
	_, ok = j.Get("nope")
	assert.False(t, ok)
}

func TestPaging(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e"}
	assert.Equal(t, []string{"a", "b"}, PageNumber(items, 1, 2))
	assert.Equal(t, []string{"e"}, PageNumber(items, 3, 2))
	assert.Empty(t, PageNumber(items, 4, 2))
	assert.Equal(t, items, PageNumber(items, 0, 0), "no paging asked: all")

	id := func(s string) string { return s }
	page, more, ok := PageAfter(items, id, "", 2)
	assert.Equal(t, []string{"a", "b"}, page)
	assert.True(t, more)
	assert.True(t, ok)
	page, more, ok = PageAfter(items, id, "c", 5)
	assert.Equal(t, []string{"d", "e"}, page)
	assert.False(t, more)
	assert.True(t, ok)
	_, _, ok = PageAfter(items, id, "zz", 2)
	assert.False(t, ok, "a marker that names nothing")
}
