package provider

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// Rotation is what a drift check reads of objects a cloud lists one at a
// time (an OCI NSG's rules, a CloudStack rule's machines), on a budget: a
// pass (Pass) reads PerPass of them, those read longest ago, so each is read
// again within ceil(objects / PerPass) passes (every pass up to PerPass of
// them); one never read, or made Stale (this CCM wrote it), is read at once.
// Otherwise Get answers it as last read. With Within, a pass reads more when
// there are so many objects that PerPass a pass would leave one unread
// longer than Within: as many as the time since the pass before is of
// Within, so each is read within Within whatever their number. The cost is
// then the objects' number once per Within (2,000 rules in an hour: 2,000
// reads an hour, 100 a 3-minute pass), and a pass's is flat below that.
type Rotation[T any] struct {
	PerPass int
	Within  time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu   sync.Mutex
	pass int
	last time.Time // when the pass before started
	seen map[string]rotated[T]
	due  map[string]bool
}

type rotated[T any] struct {
	v     T
	read  int // the pass that read it
	asked int // the last pass that asked for it
}

// Pass starts a drift pass: the objects read longest ago are due. An object
// no one asked for in the last two passes is forgotten.
func (r *Rotation[T]) Pass() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pass++
	type aged struct {
		id   string
		read int
	}
	all := make([]aged, 0, len(r.seen))
	for id, s := range r.seen {
		if s.asked < r.pass-2 {
			delete(r.seen, id)
			continue
		}
		all = append(all, aged{id, s.read})
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Or(cmp.Compare(a.read, b.read), strings.Compare(a.id, b.id)) })
	r.due = map[string]bool{}
	for _, a := range all[:min(len(all), r.budget(len(all)))] {
		r.due[a.id] = true
	}
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

// Stale makes the next Get of each id read it, whatever its turn.
func (r *Rotation[T]) Stale(ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		delete(r.seen, id)
	}
}

// Get is object id: read by read when never read, stale or due this pass;
// else as last read.
func (r *Rotation[T]) Get(ctx context.Context, id string, read func(context.Context, string) (T, error)) (T, error) {
	r.mu.Lock()
	if r.seen == nil {
		r.seen = map[string]rotated[T]{}
	}
	last, known := r.seen[id]
	due := !known || (r.due[id] && last.read < r.pass)
	if known {
		last.asked = r.pass
		r.seen[id] = last
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
	r.seen[id] = rotated[T]{v: v, read: r.pass, asked: r.pass}
	r.mu.Unlock()
	return v, nil
}
