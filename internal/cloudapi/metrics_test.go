package cloudapi

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	const (
		service = "compute"
		op      = "GET /v2.1/servers/{id}"
	)
	srv := newScriptedServer(t, step{status: 429, retryAfter: "0"}, step{status: 503}, step{status: 200})
	cfg := testConfig(t)
	tr := newTestTransport(t, cfg, srv.Client().Transport)
	req, err := http.NewRequestWithContext(WithService(t.Context(), service), http.MethodGet,
		srv.URL+"/v2.1/servers/9f3c3b0e-5c55-4a0b-9f8e-2b0b5a8f7c11", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	_ = readBody(t, resp)

	// Two immediate writes through a bucket of burst 1 at 10 QPS: one throttled.
	lim := newTestTransport(t, Config{Cloud: cfg.Cloud, WriteQPS: 10, WriteBurst: 1, MaxRetries: NoRetries},
		roundTripFunc(func(r *http.Request) (*http.Response, error) { return okResponse(r), nil }))
	for range 2 {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, "http://cloud.invalid/v2.1/servers/42", nil)
		require.NoError(t, err)
		resp, err := lim.RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}

	t.Run("every attempt is counted by status code", func(t *testing.T) {
		for code, want := range map[string]float64{"429": 1, "503": 1, "200": 1, "error": 0} {
			assert.InDelta(t, want, counterValue(t, requestsTotal, cfg.Cloud, service, op, code), 0, "code %s", code)
		}
		count, err := testutil.GetHistogramMetricCount(requestDuration.WithLabelValues(cfg.Cloud, service, op))
		require.NoError(t, err)
		assert.Equal(t, uint64(3), count)
	})

	t.Run("retries are counted by reason", func(t *testing.T) {
		assert.InDelta(t, 1.0, counterValue(t, retriesTotal, cfg.Cloud, service, op, "429"), 0)
		assert.InDelta(t, 1.0, counterValue(t, retriesTotal, cfg.Cloud, service, op, "503"), 0)
	})

	t.Run("server and client-side throttling are counted", func(t *testing.T) {
		assert.InDelta(t, 1.0, counterValue(t, serverThrottledTotal, cfg.Cloud, service, op), 0)
		assert.InDelta(t, 1.0, counterValue(t, throttledTotal, cfg.Cloud, "write"), 0)
		assert.Zero(t, counterValue(t, throttledTotal, cfg.Cloud, "read"))
	})

	t.Run("the metrics are ALPHA and exposed by the legacy registry with their labels", func(t *testing.T) {
		theMetricsAreALPHAWithTheirLabels(t, cfg.Cloud)
	})
	t.Run("the metrics pass promlint", theMetricsPassPromlint)
}

// theMetricsAreALPHAWithTheirLabels: every metric family is ALPHA, exposed by
// the legacy registry with its labels, and has a series of the test's cloud.
func theMetricsAreALPHAWithTheirLabels(t *testing.T, testCloud string) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	want := map[string][]string{
		"overcast_cloud_api_requests_total":           {"cloud", "code", "operation", "service"},
		"overcast_cloud_api_request_duration_seconds": {"cloud", "operation", "service"},
		"overcast_cloud_api_retries_total":            {"cloud", "operation", "reason", "service"},
		"overcast_cloud_api_throttled_total":          {"bucket", "cloud"},
		"overcast_cloud_api_server_throttled_total":   {"cloud", "operation", "service"},
	}
	for _, mf := range families {
		labels, ok := want[mf.GetName()]
		if !ok {
			continue
		}
		delete(want, mf.GetName())
		assert.True(t, strings.HasPrefix(mf.GetHelp(), "[ALPHA]"), "%s help: %q", mf.GetName(), mf.GetHelp())
		found := false
		for _, m := range mf.GetMetric() {
			var names []string
			cloud := ""
			for _, lp := range m.GetLabel() {
				names = append(names, lp.GetName())
				if lp.GetName() == "cloud" {
					cloud = lp.GetValue()
				}
			}
			slices.Sort(names)
			assert.Equal(t, labels, names, mf.GetName())
			found = found || cloud == testCloud
		}
		assert.True(t, found, "%s has a series for this test's cloud", mf.GetName())
	}
	assert.Empty(t, want, "metric families missing from the legacy registry")
}

// theMetricsPassPromlint: the package's metric families pass promlint.
func theMetricsPassPromlint(t *testing.T) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	var text bytes.Buffer
	for _, mf := range families {
		if strings.HasPrefix(mf.GetName(), "overcast_cloud_api_") {
			_, err := testutil.MetricFamilyToText(&text, mf)
			require.NoError(t, err)
		}
	}
	problems, err := testutil.NewPromLinter(&text).Lint()
	require.NoError(t, err)
	assert.Empty(t, problems)
}
