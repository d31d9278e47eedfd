package openstack

import (
	"sync"
	"time"

	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// quotaRecheck is how long a met quota is believed without news: after it, one
// Service may try again (and, if the quota is still met, its load balancer
// waits for a floating IP as the first one's does).
const quotaRecheck = 10 * time.Minute

// quotaMemory remembers that the project's floating IP quota was met, learned
// from Neutron refusing one (409 OverQuota). While it holds, a new Service
// that would need a new floating IP is refused before its load balancer is
// created: a load balancer that could get no address would sit unused. It is
// forgotten when a floating IP is created (the quota has room again) or
// released by this CCM, and after quotaRecheck.
type quotaMemory struct {
	mu    sync.Mutex
	since time.Time
	msg   string
}

// met is Neutron's answer when the quota is known to be met.
func (q *quotaMemory) met() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.since.IsZero() || time.Since(q.since) > quotaRecheck {
		return "", false
	}
	return q.msg, true
}

// learn remembers the quota met when err says so; other errors are no news.
func (q *quotaMemory) learn(err error) {
	msg, ok := osapi.OverQuota(err)
	if !ok {
		return
	}
	q.mu.Lock()
	q.since, q.msg = time.Now(), msg
	q.mu.Unlock()
}

func (q *quotaMemory) forget() {
	q.mu.Lock()
	q.since, q.msg = time.Time{}, ""
	q.mu.Unlock()
}
