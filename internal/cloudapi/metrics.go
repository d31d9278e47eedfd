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
	requestsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "requests_total",
		Help:           "Number of cloud API HTTP requests, one per attempt, by HTTP status code (\"error\" for transport errors).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cloud", "service", "operation", "code"})

	requestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "request_duration_seconds",
		Help:           "Duration of single cloud API HTTP request attempts until response headers or error, in seconds.",
		Buckets:        metrics.ExponentialBucketsRange(0.005, 60, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"cloud", "service", "operation"})

	retriesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "retries_total",
		Help:           "Number of cloud API HTTP requests retried, by reason (HTTP status code, \"network\" or \"timeout\").",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cloud", "service", "operation", "reason"})

	throttledTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "throttled_total",
		Help:           "Number of cloud API HTTP requests delayed by the client-side rate limiter, by token bucket (read or write).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cloud", "bucket"})

	serverThrottledTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "server_throttled_total",
		Help:           "Number of cloud API HTTP responses with status 429 Too Many Requests.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cloud", "service", "operation"})

	registerOnce sync.Once
)

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
