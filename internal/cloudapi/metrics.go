package cloudapi

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const (
	metricsNamespace = "overcast"
	metricsSubsystem = "cloud_api"
)

var (
	requestsTotal = metrics.NewCounterVec(opts("requests_total",
		"Number of cloud API HTTP requests, one per attempt, by HTTP status code (\"error\" for transport errors)."),
		[]string{"cloud", "service", "operation", "code"})

	requestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "request_duration_seconds",
		Help:           "Duration of single cloud API HTTP request attempts until response headers or error, in seconds.",
		Buckets:        metrics.ExponentialBucketsRange(0.005, 60, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"cloud", "service", "operation"})

	retriesTotal = metrics.NewCounterVec(opts("retries_total",
		"Number of cloud API HTTP requests retried, by reason (HTTP status code, \"network\" or \"timeout\")."),
		[]string{"cloud", "service", "operation", "reason"})

	throttledTotal = metrics.NewCounterVec(opts("throttled_total",
		"Number of cloud API HTTP requests delayed by the client-side rate limiter, by token bucket (read or write)."),
		[]string{"cloud", "bucket"})

	serverThrottledTotal = metrics.NewCounterVec(opts("server_throttled_total",
		"Number of cloud API HTTP responses with status 429 Too Many Requests."),
		[]string{"cloud", "service", "operation"})

	registerOnce sync.Once
)

// opts are the options of the counter overcast_cloud_api_<name>.
func opts(name, help string) *metrics.CounterOpts {
	return &metrics.CounterOpts{Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: name, Help: help, StabilityLevel: metrics.ALPHA}
}

// registerMetrics registers the package's metrics in the legacy registry; it is
// called by NewTransport and is idempotent.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(
			requestsTotal,
			requestDuration,
			retriesTotal,
			throttledTotal,
			serverThrottledTotal,
		)
	})
}
