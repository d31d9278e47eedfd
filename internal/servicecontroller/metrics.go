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

	driftRepairs = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "overcast",
		Subsystem: "service",
		Name:      "load_balancer_drift_repairs_total",
		Help: "Load balancers found changed behind the controller's back (deleted, in error, not as converged) and repaired, " +
			"by cloud and by the kind of object changed (listener, member, monitor, security-rule...; load-balancer when the load balancer itself).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cloud", "kind"})

	unconvergedSeconds = metrics.NewGaugeFunc(&metrics.GaugeOpts{
		Namespace:      "overcast",
		Subsystem:      "service",
		Name:           "load_balancer_unconverged_seconds",
		Help:           "How long the Service that has waited longest for its load balancer (its passes progressing or failed since) has waited, in seconds; 0 when every one is ready.",
		StabilityLevel: metrics.ALPHA,
	}, waiting.oldest)

	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(syncsTotal, syncDuration, loadBalancers, driftRepairs)
		legacyregistry.RawMustRegister(unconvergedSeconds)
	})
}

// waiting are the Services whose load balancer is not ready, with the time
// each stopped being ready (of every controller of the process).
var waiting = unconverged{since: map[*serviceState]time.Time{}}

type unconverged struct {
	mu    sync.Mutex
	since map[*serviceState]time.Time
}

func (u *unconverged) set(st *serviceState, ready bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, was := u.since[st]; ready {
		delete(u.since, st)
	} else if !was {
		u.since[st] = time.Now()
	}
}

// oldest is how long the longest waiting one has waited, in seconds.
func (u *unconverged) oldest() float64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	var oldest time.Duration
	for _, t := range u.since {
		oldest = max(oldest, time.Since(t))
	}
	return oldest.Seconds()
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
	waiting.set(st, p == phaseNone || p == phaseReady)
	st.phase = p
}
