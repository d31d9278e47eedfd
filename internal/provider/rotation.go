package provider

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// Rotation is what a drift check reads of objects a cloud lists one at a
// time (an OCI NSG's rules, a CloudStack rule's machines), on a budget: a
// pass (Pass) reads PerPass of them, those read longest ago, so each is read
// again within ceil(objects / PerPass) passes (every pass up to PerPass of
// them). One never read, or made Stale (this CCM wrote it), is read at once
// while the pass has reads to spare; beyond, it waits for the next passes,
// first in line (Get says lbcycle.ErrLater, and the load balancer's check
// waits too). Otherwise Get answers it as last read. With Within, a pass
// reads more when there are so many objects that PerPass a pass would leave
// one unread longer than Within: as many as the time since the pass before
// is of Within, so each is read within Within whatever their number. The
// cost is then the objects' number once per Within (2,000 rules in an hour:
// 2,000 reads an hour, 100 a 3-minute pass), and a pass's is flat below
// that, 2,000 objects new at once included.
type Rotation[T any] struct {
	PerPass int
	Within  time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	pass  int
	last  time.Time // when the pass before started
	seen  map[string]rotated[T]
	due   map[string]bool
	wait  map[string]waiting // asked for, never read: next in line
	spare int                // reads this pass may still make of objects not due
}

type rotated[T any] struct {
	v     T
	read  int // the pass that read it
	asked int // the last pass that asked for it
}

type waiting struct{ since, asked int }

// Pass starts a drift pass: the objects waiting to be read first, then
// those read longest ago, are due. An object no one asked for in the last
// two passes is forgotten.
func (r *Rotation[T]) Pass() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pass++
	type aged struct {
		id   string
		read int
	}
	all := make([]aged, 0, len(r.seen)+len(r.wait))
	for id, w := range r.wait {
		if w.asked < r.pass-2 {
			delete(r.wait, id)
			continue
		}
		all = append(all, aged{id, w.since - r.pass}) // before any read
	}
	for id, s := range r.seen {
		if s.asked < r.pass-2 {
			delete(r.seen, id)
			continue
		}
		all = append(all, aged{id, s.read})
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Or(cmp.Compare(a.read, b.read), strings.Compare(a.id, b.id)) })
	b := r.budget(len(all))
	r.due = map[string]bool{}
	for _, a := range all[:min(len(all), b)] {
		r.due[a.id] = true
	}
	r.spare = max(0, b-len(all))
}

// WatchedWithin is how long an object a drift check reads on a rotation
// may go unread, whatever the number of objects: a change behind the CCM's
// back is repaired within it.
const WatchedWithin = time.Hour

// budget is how many of n objects this pass reads (r.mu held): PerPass,
// or with Within, enough that at this pace each is read within Within
// (the pace measured from the pass before).
func (r *Rotation[T]) budget(n int) int {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	last := r.last
	r.last = now
	if r.Within <= 0 || last.IsZero() || !now.After(last) {
		return r.PerPass
	}
	need := (int64(n)*int64(now.Sub(last)) + int64(r.Within) - 1) / int64(r.Within)
	return max(r.PerPass, int(need))
}

// Stale makes each id read again, first in line: by the next Get while the
// pass has reads to spare, else at the next pass.
func (r *Rotation[T]) Stale(ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wait == nil {
		r.wait = map[string]waiting{}
	}
	for _, id := range ids {
		if _, ok := r.seen[id]; ok {
			delete(r.seen, id)
			r.wait[id] = waiting{since: r.pass, asked: r.pass}
		}
	}
}

// Get is object id: read by read when due this pass, or never read (or
// stale) and the pass has a read to spare; else as last read, or
// lbcycle.ErrLater when it never was (it is first in line next pass).
func (r *Rotation[T]) Get(ctx context.Context, id string, read func(context.Context, string) (T, error)) (T, error) {
	r.mu.Lock()
	if r.seen == nil {
		r.seen, r.wait = map[string]rotated[T]{}, map[string]waiting{}
	}
	last, known := r.seen[id]
	var due bool
	switch {
	case known:
		due = r.due[id] && last.read < r.pass
		last.asked = r.pass
		r.seen[id] = last
	case r.due[id] || r.pass == 0: // its turn, or no pass yet: no budget
		due = true
	case r.spare > 0:
		r.spare--
		due = true
	default:
		w, ok := r.wait[id]
		if !ok {
			w.since = r.pass
		}
		w.asked = r.pass
		r.wait[id] = w
		r.mu.Unlock()
		var zero T
		return zero, lbcycle.ErrLater
	}
	r.mu.Unlock()
	if !due {
		return last.v, nil
	}
	v, err := read(ctx, id)
	if err != nil {
		return v, err
	}
	r.mu.Lock()
	delete(r.wait, id)
	r.seen[id] = rotated[T]{v: v, read: r.pass, asked: r.pass}
	r.mu.Unlock()
	return v, nil
}
