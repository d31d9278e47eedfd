package core

import (
	"cmp"
	"errors"
	"slices"
	"sort"
)

// ErrBadMarker is returned by Store.Page for a marker that never existed.
var ErrBadMarker = errors.New("marker not found")

// Store keeps a cloud's objects of one kind by id and in creation order, for
// paging after a marker: OpenStack's limit and marker, or the opaque page
// tokens of clouds that hand out the last id seen (OCI's opc-next-page).
// Removed ids are remembered, so that a marker that was deleted between two
// page requests still works (as it does in the real services, where deleted
// rows stay in the database). Every operation costs O(log n) or less but a
// listing, which costs what it walks (PageOf walks a parent's children
// alone): the bench holds millions of members. It is not safe for
// concurrent use: the emulator's own lock guards it.
type Store[T any] struct {
	byID map[string]*entry[T]
	// order is ascending seq; removed entries stay in it until they are more
	// than half of it (then it is compacted), so a removal costs no copy.
	order   []*entry[T]
	removed int
	gone    map[string]uint64
	seq     uint64
}

type entry[T any] struct {
	id      string
	seq     uint64
	v       T
	removed bool
}

// NewStore returns an empty Store.
func NewStore[T any]() *Store[T] {
	return &Store[T]{byID: map[string]*entry[T]{}, gone: map[string]uint64{}}
}

// Add adds v under id, last in the order.
func (s *Store[T]) Add(id string, v T) {
	s.seq++
	en := &entry[T]{id: id, seq: s.seq, v: v}
	s.byID[id] = en
	s.order = append(s.order, en)
}

// Get is the object of id.
func (s *Store[T]) Get(id string) (T, bool) {
	en, ok := s.byID[id]
	if !ok {
		var zero T
		return zero, false
	}
	return en.v, true
}

// At is the object of id, the zero value (nil, for pointers) when there is
// none.
func (s *Store[T]) At(id string) T {
	v, _ := s.Get(id)
	return v
}

// Remove removes the object of id; false when there was none.
func (s *Store[T]) Remove(id string) bool {
	en, ok := s.byID[id]
	if !ok {
		return false
	}
	delete(s.byID, id)
	s.gone[id] = en.seq
	var zero T
	en.removed, en.v = true, zero
	s.removed++
	if s.removed > len(s.order)/2 {
		s.order = slices.DeleteFunc(s.order, func(en *entry[T]) bool { return en.removed })
		s.removed = 0
	}
	return true
}

// Len is the number of objects.
func (s *Store[T]) Len() int { return len(s.byID) }

// All returns the objects in creation order.
func (s *Store[T]) All() []T {
	out := make([]T, 0, len(s.byID))
	for _, en := range s.order {
		if !en.removed {
			out = append(out, en.v)
		}
	}
	return out
}

// Page returns up to limit objects accepted by keep (nil: all), following
// marker in creation order (or in reverse creation order), and whether more
// accepted objects follow. limit <= 0 means no limit.
func (s *Store[T]) Page(marker string, limit int, reverse bool, keep func(T) bool) (items []T, more bool, err error) {
	return s.page(s.order, marker, limit, reverse, keep)
}

// PageOf is Page over the objects of ids alone (a parent's children, which
// it names by id), in creation order: a listing filtered by the parent
// without a walk of every object of the kind.
func (s *Store[T]) PageOf(ids []string, marker string, limit int, keep func(T) bool) (items []T, more bool, err error) {
	within := make([]*entry[T], 0, len(ids))
	for _, id := range ids {
		if en, ok := s.byID[id]; ok {
			within = append(within, en)
		}
	}
	slices.SortFunc(within, func(a, b *entry[T]) int { return cmp.Compare(a.seq, b.seq) })
	return s.page(within, marker, limit, false, keep)
}

// page is Page over order, a slice of entries in ascending seq.
func (s *Store[T]) page(order []*entry[T], marker string, limit int, reverse bool, keep func(T) bool) (items []T, more bool, err error) {
	start, step := 0, 1
	if reverse {
		start, step = len(order)-1, -1
	}
	if marker != "" {
		var mseq uint64
		if en, ok := s.byID[marker]; ok {
			mseq = en.seq
		} else if sq, ok := s.gone[marker]; ok {
			mseq = sq
		} else {
			return nil, false, ErrBadMarker
		}
		// first index with seq > mseq
		i := sort.Search(len(order), func(i int) bool { return order[i].seq > mseq })
		if reverse {
			// last index with seq < mseq
			i = sort.Search(len(order), func(i int) bool { return order[i].seq >= mseq }) - 1
		}
		start = i
	}
	for i := start; i >= 0 && i < len(order); i += step {
		if order[i].removed {
			continue
		}
		v := order[i].v
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

// Lookup returns the objects of ids that exist, in the order of ids: the
// children a parent object names by id.
func (s *Store[T]) Lookup(ids []string) []T {
	out := make([]T, 0, len(ids))
	for _, id := range ids {
		if en, ok := s.byID[id]; ok {
			out = append(out, en.v)
		}
	}
	return out
}
