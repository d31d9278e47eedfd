package openstack

import (
	"errors"
	"sort"
)

// errBadMarker is returned by store.page for a marker that never existed.
var errBadMarker = errors.New("marker not found")

// store keeps objects by id and in creation order, for paging with markers.
// Removed ids are remembered, so that a marker that was deleted between two
// page requests still works (as it does in the real services, where deleted
// rows stay in the database).
type store[T any] struct {
	byID  map[string]*entry[T]
	order []*entry[T] // ascending seq
	gone  map[string]uint64
	seq   uint64
}

type entry[T any] struct {
	id  string
	seq uint64
	v   T
}

func newStore[T any]() *store[T] {
	return &store[T]{byID: map[string]*entry[T]{}, gone: map[string]uint64{}}
}

func (s *store[T]) add(id string, v T) {
	s.seq++
	en := &entry[T]{id: id, seq: s.seq, v: v}
	s.byID[id] = en
	s.order = append(s.order, en)
}

func (s *store[T]) get(id string) (T, bool) {
	en, ok := s.byID[id]
	if !ok {
		var zero T
		return zero, false
	}
	return en.v, true
}

func (s *store[T]) remove(id string) bool {
	en, ok := s.byID[id]
	if !ok {
		return false
	}
	delete(s.byID, id)
	s.gone[id] = en.seq
	i := sort.Search(len(s.order), func(i int) bool { return s.order[i].seq >= en.seq })
	if i < len(s.order) && s.order[i] == en {
		copy(s.order[i:], s.order[i+1:])
		s.order[len(s.order)-1] = nil
		s.order = s.order[:len(s.order)-1]
	}
	return true
}

func (s *store[T]) len() int { return len(s.order) }

// all returns the objects in creation order.
func (s *store[T]) all() []T {
	out := make([]T, len(s.order))
	for i, en := range s.order {
		out[i] = en.v
	}
	return out
}

// page returns up to limit objects accepted by keep, following marker in
// creation order (or in reverse creation order), and whether more accepted
// objects follow. limit <= 0 means no limit.
func (s *store[T]) page(marker string, limit int, reverse bool, keep func(T) bool) (items []T, more bool, err error) {
	start, step := 0, 1
	if reverse {
		start, step = len(s.order)-1, -1
	}
	if marker != "" {
		var mseq uint64
		if en, ok := s.byID[marker]; ok {
			mseq = en.seq
		} else if sq, ok := s.gone[marker]; ok {
			mseq = sq
		} else {
			return nil, false, errBadMarker
		}
		// first index with seq > mseq
		i := sort.Search(len(s.order), func(i int) bool { return s.order[i].seq > mseq })
		if reverse {
			// last index with seq < mseq
			i = sort.Search(len(s.order), func(i int) bool { return s.order[i].seq >= mseq }) - 1
		}
		start = i
	}
	for i := start; i >= 0 && i < len(s.order); i += step {
		v := s.order[i].v
		if keep != nil && !keep(v) {
			continue
		}
		if limit > 0 && len(items) == limit {
			return items, true, nil
		}
		items = append(items, v)
	}
	return items, false, nil
}
