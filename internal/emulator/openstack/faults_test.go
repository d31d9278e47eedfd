package openstack

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const flavorRoute = "GET /compute/v2.1/flavors/{id}"

func TestFaultWithRetryAfter(t *testing.T) {
	ev := newEnv(t, Options{})
	ev.e.InjectFault(Fault{Service: "compute", Status: 503, RetryAfter: 1500 * time.Millisecond})
	_, err := flavors.Get(t.Context(), ev.compute, ev.fx.FlavorID).Extract()
	var ue gophercloud.ErrUnexpectedResponseCode
	require.True(t, errors.As(err, &ue))
	assert.Equal(t, 503, ue.Actual)
	assert.Equal(t, "2", ue.ResponseHeader.Get("Retry-After"))
	// Other services are untouched.
	_, err = networks.Get(t.Context(), ev.network, ev.fx.NetworkID).Extract()
	require.NoError(t, err)
	ev.e.ClearFaults()
	_, err = flavors.Get(t.Context(), ev.compute, ev.fx.FlavorID).Extract()
	require.NoError(t, err)
}

func TestFaultCountAndRoute(t *testing.T) {
	ev := newEnv(t, Options{})
	ev.e.InjectFault(Fault{Route: flavorRoute, Status: 500, Count: 2})
	for i, want := range []int{500, 500, 0, 0} {
		_, err := flavors.Get(t.Context(), ev.compute, ev.fx.FlavorID).Extract()
		assert.Equal(t, want, codeOf(err), "call %d", i)
	}
	assert.Equal(t, 2, callCount(ev.e, flavorRoute, 500))
	assert.Equal(t, 2, callCount(ev.e, flavorRoute, 200))
}

func TestFaultRateIsSeeded(t *testing.T) {
	run := func() []int {
		ev := newEnv(t, Options{Seed: 42})
		ev.e.InjectFault(Fault{Service: "compute", Method: "GET", Status: 500, Rate: 0.3})
		var codes []int
		for range 100 {
			_, err := flavors.Get(t.Context(), ev.compute, ev.fx.FlavorID).Extract()
			codes = append(codes, codeOf(err))
		}
		return codes
	}
	a, b := run(), run()
	assert.Equal(t, a, b, "the same seed fails the same calls")
	failed := 0
	for _, c := range a {
		if c == 500 {
			failed++
		}
	}
	assert.InDelta(t, 30, failed, 15)
}

func TestFaultOutageWindow(t *testing.T) {
	ev := newEnv(t, Options{})
	start := ev.clock.Now().Add(time.Minute)
	ev.e.InjectFault(Fault{Status: 503, From: start, Until: start.Add(time.Minute)})
	get := func() int {
		_, err := flavors.Get(t.Context(), ev.compute, ev.fx.FlavorID).Extract()
		return codeOf(err)
	}
	assert.Equal(t, 0, get(), "before the window")
	ev.clock.Step(90 * time.Second)
	assert.Equal(t, 503, get(), "inside the window")
	ev.clock.Step(time.Minute)
	assert.Equal(t, 0, get(), "after the window")
}

func TestFaultHangTimesOut(t *testing.T) {
	ev := newEnv(t, Options{})
	ev.e.InjectFault(Fault{Route: "GET /compute/v2.1/servers/detail", Hang: true})
	ev.pc.HTTPClient = http.Client{Timeout: 100 * time.Millisecond}
	startAt := time.Now()
	_, err := servers.List(ev.compute, nil).AllPages(t.Context())
	require.Error(t, err)
	assert.Less(t, time.Since(startAt), 5*time.Second)
	require.Eventually(t, func() bool { return callCount(ev.e, "GET /compute/v2.1/servers/detail", 0) == 1 },
		2*time.Second, 10*time.Millisecond, "a call that got no answer is counted with code 0")
}

func TestLatency(t *testing.T) {
	ev := newEnv(t, Options{})
	ev.e.SetLatency(50 * time.Millisecond)
	startAt := time.Now()
	_, err := flavors.Get(t.Context(), ev.compute, ev.fx.FlavorID).Extract()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(startAt), 50*time.Millisecond)
	// The control endpoints get none.
	startAt = time.Now()
	resp, err := http.Get(ev.e.URL() + "/_emulator/calls")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Less(t, time.Since(startAt), 50*time.Millisecond)
}

func TestCallsAndControlEndpoints(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	ev.e.ResetCalls()
	id, _ := ev.e.AddServer(ServerSpec{})
	_, err := servers.Get(ctx, ev.compute, id).Extract()
	require.NoError(t, err)
	_, err = servers.Get(ctx, ev.compute, "missing").Extract()
	require.Error(t, err)
	_, err = networks.Get(ctx, ev.network, ev.fx.NetworkID).Extract()
	require.NoError(t, err)
	want := []CallCount{
		{Service: "compute", Method: "GET", Route: "GET /compute/v2.1/servers/{id}", Code: 200, Count: 1},
		{Service: "compute", Method: "GET", Route: "GET /compute/v2.1/servers/{id}", Code: 404, Count: 1},
		{Service: "network", Method: "GET", Route: "GET /network/v2.0/networks/{id}", Code: 200, Count: 1},
	}
	assert.Equal(t, want, ev.e.Calls())

	post := func(path, body string) *http.Response {
		t.Helper()
		resp, err := http.Post(ev.e.URL()+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp
	}
	resp, err := http.Get(ev.e.URL() + "/_emulator/calls")
	require.NoError(t, err)
	var got []CallCount
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	_ = resp.Body.Close()
	assert.Equal(t, want, got, "control calls are not counted")

	assert.Equal(t, http.StatusCreated, post("/_emulator/faults", `{"Service":"network","Status":429,"RetryAfter":"3s","Count":1}`).StatusCode)
	assert.Equal(t, http.StatusBadRequest, post("/_emulator/faults", `{"Service":"dns","Status":500}`).StatusCode)
	_, err = networks.Get(ctx, ev.network, ev.fx.NetworkID).Extract()
	var ue gophercloud.ErrUnexpectedResponseCode
	require.True(t, errors.As(err, &ue))
	assert.Equal(t, 429, ue.Actual)
	assert.Equal(t, "3", ue.ResponseHeader.Get("Retry-After"))

	assert.Equal(t, http.StatusNoContent, post("/_emulator/latency?d=0s", "").StatusCode)
	assert.Equal(t, http.StatusBadRequest, post("/_emulator/provisioning-delay?d=soon", "").StatusCode)
	assert.Equal(t, http.StatusNoContent, post("/_emulator/calls/reset", "").StatusCode)
	assert.Empty(t, ev.e.Calls())

	req, _ := http.NewRequest(http.MethodDelete, ev.e.URL()+"/_emulator/faults", nil)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
}

func TestInjectFaultRejectsNonsense(t *testing.T) {
	e := New(Options{})
	assert.Panics(t, func() { e.InjectFault(Fault{Service: "dns", Status: 500}) })
	assert.Panics(t, func() { e.InjectFault(Fault{}) }, "neither a status nor a hang")
}
