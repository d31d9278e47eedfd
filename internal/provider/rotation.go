package provider

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
)

// Rotation is what a drift check reads of objects a cloud lists one at a
// time (an OCI NSG's rules, a CloudStack rule's machines), on a budget: a
// pass (Pass) reads at most PerPass of them, those read longest ago, so each
// is read again within ceil(objects / PerPass) passes (every pass up to
// PerPass of them); one never read, or made Stale (this CCM wrote it), is
// read at once. Otherwise Get answers it as last read. The cost of a pass
// stays flat in the number of objects.
type Rotation[T any] struct {
	PerPass int

	mu   sync.Mutex
	pass int
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
	for _, a := range all[:min(len(all), r.PerPass)] {
		r.due[a.id] = true
	}
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
