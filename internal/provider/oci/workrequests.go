package oci

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// workRequests are the work requests this process started, by Service, and
// how long OCI takes to finish them.
type workRequests struct {
	mu      sync.Mutex
	pending map[types.UID]pendingWR
	took    time.Duration // a moving average of how long one took
	// sent are, by Service, the backend sets whose backends a members
	// update sent, each with the members' fingerprint (UpdateMembers).
	sent map[types.UID]map[string]string
}

// whatCreate is the work of a load balancer's creation.
const whatCreate = "being created"

type pendingWR struct {
	kind    string // of the load balancer
	id      string // "" while the creation is being asked for (Create)
	what    string
	members bool // a change of members alone (UpdateMembers)
	started time.Time
	err     error // the creation's refusal, for the next look to tell
}

func newWorkRequests() *workRequests {
	return &workRequests{pending: map[types.UID]pendingWR{}, sent: map[types.UID]map[string]string{}}
}

// start records a work request of the whole cycle: what members updates
// sent before is no longer known to stand (startMembers).
func (w *workRequests) start(svc *v1.Service, kind, id, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending[svc.UID] = pendingWR{kind: kind, id: id, what: what, started: time.Now()}
	delete(w.sent, svc.UID)
}

// asked records how the asking for a creation went: its work request, or
// the error, which the Service's next look reports.
func (w *workRequests) asked(svc *v1.Service, id string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[svc.UID]
	if !ok || p.id != "" {
		return
	}
	p.id, p.err, p.started = id, err, time.Now()
	w.pending[svc.UID] = p
}

func (w *workRequests) get(svc *v1.Service) (pendingWR, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[svc.UID]
	return p, ok
}

// done forgets the Service's work request, which took took (0: unknown).
func (w *workRequests) done(svc *v1.Service, took time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, svc.UID)
	if took > 0 {
		if w.took == 0 {
			w.took = took
		} else {
			w.took = (3*w.took + took) / 4
		}
	}
}

// retryAfter is how long the Service's work request should still take.
func (w *workRequests) retryAfter(svc *v1.Service) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[svc.UID]
	if !ok || w.took == 0 {
		return 0
	}
	left := time.Until(p.started.Add(w.took))
	return min(max(left, 250*time.Millisecond), 10*time.Second)
}

// took is how long a finished work request took (0: unknown).
func took(wr ociapi.WorkRequest) time.Duration {
	if wr.TimeFinished == nil {
		return 0
	}
	return wr.TimeFinished.Sub(wr.TimeAccepted)
}

// settle reads how the Service's work request p of a kind stands: busy
// while OCI works on it; else it is forgotten, its time learnt (one that
// failed is logged: the next step tries again).
func (st *steps) settle(ctx context.Context, svc *v1.Service, kind string, p pendingWR) (busy bool, wr ociapi.WorkRequest, err error) {
	wr, err = st.api.WorkRequest(ctx, kind, p.id)
	switch {
	case errors.Is(err, outcome.ErrNotFound):
		st.wrs.done(svc, 0)
		return false, wr, nil
	case err != nil:
		return false, wr, err
	case wr.LifecycleState == "ACCEPTED" || wr.LifecycleState == "IN_PROGRESS":
		return true, wr, nil
	}
	st.wrs.done(svc, took(wr))
	if wr.LifecycleState == "FAILED" {
		klog.FromContext(ctx).Info("A load balancer's work request failed; the next step tries again", "service", klog.KObj(svc),
			"loadBalancer", wr.LoadBalancerID, "workRequest", wr.ID, "type", wr.Type, "message", wr.Message)
	}
	return false, wr, nil
}
