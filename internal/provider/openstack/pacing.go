package openstack

import (
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// When to look again at a Service whose pass just changed its load balancer.
// Octavia takes one change at a time, so a Service built one change a pass
// waits for each: a look every pendingRetry wastes up to that much a change
// (72 changes for 24 ports in serial mode). Instead the next look is due when
// Octavia's changes have lately taken to finish (learnt from the looks
// themselves); a look that finds the load balancer still busy is followed by
// another after a quarter of the time waited so far, so a late change costs
// few looks and is seen within a quarter of its time.

var _ lbcycle.Pacer = steps{}

const (
	// paceMin and paceMax bound how soon a look follows a change.
	paceMin = 250 * time.Millisecond
	paceMax = pendingRetry
	// paceMargin is added to the time a change is expected to take.
	paceMargin = 100 * time.Millisecond
	// paceForget: a change not looked at for this long is forgotten.
	paceForget = 10 * time.Minute
)

// pacer learns how long Octavia takes to finish a change, and says when to
// look at each Service whose change is under way.
type pacer struct {
	mu   sync.Mutex
	now  func() time.Time
	took time.Duration // a change's usual time, learnt (pendingRetry at first)
	m    map[types.UID]change
}

// change is a Service's change under way: when it was made, and when a look
// last found the load balancer still busy with it (zero: none has).
type change struct{ at, busy time.Time }

func newPacer() *pacer {
	return &pacer{now: time.Now, took: pendingRetry, m: map[types.UID]change{}}
}

// changed notes that a pass of the Service changed its load balancer now.
func (p *pacer) changed(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for k, c := range p.m {
		if now.Sub(c.at) > paceForget {
			delete(p.m, k)
		}
	}
	p.m[uid] = change{at: now}
}

// looked notes what a look at the Service found its load balancer doing. The
// first look that finds a change done teaches how long it took: the time since
// the change if an earlier look found it busy (so it ended between the two),
// else three quarters of it (it may have ended long before: the next changes
// are looked at a little sooner, until a look is early), each weighed half.
func (p *pacer) looked(uid types.UID, status string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.m[uid]
	if !ok {
		return
	}
	now := p.now()
	if strings.HasPrefix(status, "PENDING_") {
		c.busy = now
		p.m[uid] = c
		return
	}
	delete(p.m, uid)
	sample := now.Sub(c.at)
	if c.busy.IsZero() {
		sample = sample * 3 / 4
	}
	p.took = min(max((p.took+sample)/2, paceMin), 10*paceMax)
}

// after is how soon to look at the Service again (0: it has no change under
// way; the cycle's own retry then).
func (p *pacer) after(uid types.UID) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.m[uid]
	if !ok {
		return 0
	}
	now := p.now()
	if c.busy.IsZero() {
		return min(max(c.at.Add(p.took+paceMargin).Sub(now), paceMin), 10*paceMax)
	}
	return min(max(now.Sub(c.at)/4, paceMin), paceMax)
}

// RetryAfter is when the Service's change under way should be done.
func (s steps) RetryAfter(svc *v1.Service) time.Duration { return s.pace.after(svc.UID) }
