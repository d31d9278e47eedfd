package servicecontroller

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/overcast-ccm/overcast/internal/outcome"
)

var (
	syncsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "overcast",
		Subsystem:      "service",
		Name:           "load_balancer_syncs_total",
		Help:           "Passes of the service controller over a Service, by operation (ensure, delete) and result: done, progressing (the cloud is working), problem (a person must act), error.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation", "result"})

	syncDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "overcast",
		Subsystem:      "service",
		Name:           "load_balancer_sync_duration_seconds",
		Help:           "Duration of one pass of the service controller over a Service, in seconds.",
		Buckets:        metrics.ExponentialBucketsRange(0.001, 60, 14),
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})

	loadBalancers = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      "overcast",
		Subsystem:      "service",
		Name:           "load_balancers",
		Help:           "Services with a load balancer, by the phase of their last pass: ready, progressing, failed.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"phase"})

	driftRepairs = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "overcast",
		Subsystem:      "service",
		Name:           "load_balancer_drift_repairs_total",
		Help:           "Load balancers found changed behind the controller's back (deleted, in error, not as converged) and requeued for repair.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(syncsTotal, syncDuration, loadBalancers, driftRepairs)
	})
}

func observeSync(op string, after time.Duration, err error, took time.Duration) {
	result := "done"
	switch {
	case err != nil:
		result = "error"
		if _, ok := outcome.AsProblem(err); ok {
			result = "problem"
		}
	case after > 0:
		result = "progressing"
	}
	syncsTotal.WithLabelValues(op, result).Inc()
	syncDuration.WithLabelValues(op).Observe(took.Seconds())
}

// phase is where a Service's load balancer is, for the load_balancers gauge.
type phase string

const (
	phaseNone        phase = ""
	phaseReady       phase = "ready"
	phaseProgressing phase = "progressing"
	phaseFailed      phase = "failed"
)

// setPhase moves the Service between the gauge's phases. The caller holds the
// controller's lock.
func (st *serviceState) setPhase(p phase) {
	if st.phase == p {
		return
	}
	if st.phase != phaseNone {
		loadBalancers.WithLabelValues(string(st.phase)).Dec()
	}
	if p != phaseNone {
		loadBalancers.WithLabelValues(string(p)).Inc()
	}
	st.phase = p
}
