package provider

import (
	"context"
	"sync"
)

// PassMemo is what one pass (a drift check's) read of objects, by id: each
// read once a pass and shared by every Service that needs it, where a cloud
// lists an object's parts one object at a time (a security list, an ACL
// list's items). Forget begins the next pass; a read begun before Forget is
// not kept, so a pass never sees what the one before read.
type PassMemo[T any] struct {
	mu   sync.Mutex
	read map[string]T
	gen  int // counts Forget
}

// Get is id as this pass read it, read now (by read) if not yet.
func (p *PassMemo[T]) Get(ctx context.Context, id string, read func(context.Context) (T, error)) (T, error) {
	p.mu.Lock()
	v, ok := p.read[id]
	gen := p.gen
	p.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := read(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen == gen {
		if p.read == nil {
			p.read = map[string]T{}
		}
		p.read[id] = v
	}
	return v, nil
}

// Known is id as this pass read it, if it did.
func (p *PassMemo[T]) Known(id string) (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.read[id]
	return v, ok
}

// Forget begins the next pass: every object is read again.
func (p *PassMemo[T]) Forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read = nil
	p.gen++
}
