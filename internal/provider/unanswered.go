package provider

import (
	"fmt"
	"sync"
	"time"
)

// ReasonDeletingDuplicate is the Normal Event of a second object made for a
// Service (a create whose answer was lost, made again), deleted: the one
// the Service is served by is kept.
const ReasonDeletingDuplicate = "DeletingDuplicate"

// Unanswered remembers the creates whose answer was lost (a timeout, a
// connection cut: outcome.MayHaveActed), by what they create (a Service's
// UID): the object may yet appear, so for Window the next passes look for
// it by its marks rather than create it again. A create answered, or its
// object found, forgets it. What a restart forgets, or what appears after
// Window, leaves two objects with the same marks: the cloud's find resolves
// those (keeps one, deletes the others).
type Unanswered struct {
	// Window is how long after a lost answer its object may yet appear.
	Window time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu   sync.Mutex
	lost map[string]time.Time
}

func (u *Unanswered) now() time.Time {
	if u.Now != nil {
		return u.Now()
	}
	return time.Now()
}

// Lost records that the create of key got no answer.
func (u *Unanswered) Lost(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.lost == nil {
		u.lost = map[string]time.Time{}
	}
	if _, ok := u.lost[key]; !ok {
		u.lost[key] = u.now()
	}
}

// Waiting is how long ago the create of key lost its answer, while its object
// may yet appear; false when there is none to wait for (none lost, or its
// Window over: then it is forgotten, and the create may be made again).
func (u *Unanswered) Waiting(key string) (time.Duration, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, ok := u.lost[key]
	if !ok {
		return 0, false
	}
	since := u.now().Sub(at)
	if since >= u.Window {
		delete(u.lost, key)
		return 0, false
	}
	return since, true
}

// Awaiting is the progress of a pass while the create of key (of the
// object called name) lost its answer and its object may yet appear; ""
// when there is none to wait for.
func (u *Unanswered) Awaiting(key, name string) string {
	since, waiting := u.Waiting(key)
	if !waiting {
		return ""
	}
	return fmt.Sprintf("the create of %s got no answer %s ago: looking for it before creating another", name, since.Round(time.Second))
}

// Found forgets key: its object was found, or its create answered.
func (u *Unanswered) Found(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.lost, key)
}
