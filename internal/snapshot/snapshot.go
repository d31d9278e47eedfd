// Package snapshot serves per-Node instance look-ups from one list of all
// instances, refreshed at most once per interval and shared by every caller, so
// steady-state cloud API calls do not grow with the number of Nodes.
package snapshot

import (
	"context"
	"sync"
	"time"

	"github.com/overcast-ccm/overcast/internal/cloudapi"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	lookups = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "overcast_snapshot_lookups_total",
		Help:           "Instance look-ups served by the snapshot, by result (hit, miss).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cloud", "result"})
	refreshes = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "overcast_snapshot_refreshes_total",
		Help:           "Listings of instances, by kind (full, incremental) and result (ok, error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cloud", "kind", "result"})
	register sync.Once
)

// The ages every cloud's instance snapshot serves at: a lookup from a
// listing at most MaxAge old; the node lifecycle controller's questions
// (asked of every NotReady Node every few seconds) from one at most
// LifecycleMaxAge old unless the cloud's config says otherwise (LifecycleAge),
// so they are answered by the listings other callers make anyway; a miss (a
// new Node) lists again at most every MinMiss, so a burst of new Nodes costs
// one listing.
const (
	MaxAge          = 60 * time.Second
	LifecycleMaxAge = 5 * time.Minute
	MinMiss         = 10 * time.Second
)

// ReadBudget is the calls an hour the refreshes of each cloud's machine
// listing may make for hits (WithBudget): a listing of up to 8 calls (as many
// as a cloud needs for a thousand machines) is made as often as callers ask,
// at least at every 5-minute status pass of the node controller; a larger one
// every 37.5 s a call it costs (5,000 OCI instances, 22 calls: every 15
// minutes, 88 an hour).
const ReadBudget = 96

// LifecycleAge is a cloud's configured lifecycle max age, LifecycleMaxAge
// when it has none (0).
func LifecycleAge(configured time.Duration) time.Duration {
	if configured > 0 {
		return configured
	}
	return LifecycleMaxAge
}

// Snapshot is a cache of every instance, indexed by the keys Keys returns (e.g. ID
// and name). The first key is the instance's identity.
type Snapshot[T any] struct {
	cloud   string
	list    func(context.Context) ([]T, error)
	keys    func(T) []string
	maxAge  time.Duration // a hit is served from a list at most this old
	minMiss time.Duration // a miss refreshes only if the list is at least this old
	inc     *Incremental[T]
	now     func() time.Time

	mu       sync.Mutex
	all      map[string]T    // by identity
	items    map[string]T    // by every key no two instances share
	shared   map[string]bool // the keys two instances share
	fetched  time.Time       // last refresh, full or incremental
	listedAt time.Time       // last full listing
	mark     string          // where the next incremental listing starts
	call     *call           // the refresh in flight, shared by concurrent callers
	gen      uint64          // bumped by Invalidate and Reset: a listing begun before is not taken after
	budget   int             // calls an hour the refreshes of hits may make (0: no bound)
	cost     int64           // calls the last listing made (its pages)
	took     time.Duration   // how long the last listing took
}

// Incremental lets refreshes between full listings ask the cloud only for what
// changed, so a refresh costs one call however many instances there are (e.g.
// Nova's changes-since, which lists deleted servers too).
type Incremental[T any] struct {
	// Since lists every instance when mark is "", else the instances changed
	// since mark, gone ones included. next is where the listing after this one
	// starts: e.g. the cloud's own time when it answered, so that a quiet cloud
	// answers the next one with nothing. An empty next makes the next refresh a
	// full listing.
	Since func(ctx context.Context, mark string) (items []T, next string, err error)
	// Gone says an instance an incremental listing returned no longer exists.
	Gone func(T) bool
	// FullEvery is how often a full listing is made anyway: it drops what an
	// incremental listing cannot report (e.g. rows the cloud purged meanwhile).
	FullEvery time.Duration
}

type call struct {
	done chan struct{}
	err  error
	gen  uint64 // the snapshot's generation when it began
}

// New builds a snapshot. list returns every instance (all pages); keys returns
// the keys an instance is found by. A hit is served from a list at most maxAge
// old; a miss refreshes the list only when it is at least minMiss old, so a burst
// of new Nodes costs one listing, not one per Node.
func New[T any](cloud string, maxAge, minMiss time.Duration, list func(context.Context) ([]T, error), keys func(T) []string) *Snapshot[T] {
	register.Do(func() { legacyregistry.MustRegister(lookups, refreshes) })
	return &Snapshot[T]{cloud: cloud, list: list, keys: keys, maxAge: maxAge, minMiss: minMiss, now: time.Now}
}

// NewMachines builds a cloud's listing of every machine: hits at most MaxAge
// old, misses listing at most every MinMiss, refreshes within ReadBudget.
func NewMachines[T any](cloud string, list func(context.Context) ([]T, error), keys func(T) []string) *Snapshot[T] {
	return New(cloud, MaxAge, MinMiss, list, keys).WithBudget(ReadBudget)
}

// NewIncremental builds a snapshot whose refreshes between full listings ask
// inc.Since for the changes only.
func NewIncremental[T any](cloud string, maxAge, minMiss time.Duration, keys func(T) []string, inc Incremental[T]) *Snapshot[T] {
	s := New(cloud, maxAge, minMiss, nil, keys)
	s.inc = &inc
	return s
}

// WithBudget bounds the calls an hour that the refreshes a hit causes may
// make, perHour, whatever the listing's pages. A listing the budget pays at
// each of the node controller's passes (perHour ÷ 12 calls or fewer) is
// served as fresh as each caller asks, as without a budget; a larger one is
// served as old as its cost allows (its calls × 1 h ÷ perHour) when that is
// more than the age asked. So a cloud whose listings grow with the instances
// (a page per 1,000) is read as often as ever while they fit in a few pages,
// and as much an hour, not more, at 5,000: its answers are older instead.
// Misses (a new Node) and GetFresh are not held back. The calls are counted
// by cloudapi's transports.
func (s *Snapshot[T]) WithBudget(perHour int) *Snapshot[T] {
	s.budget = perHour
	return s
}

// hitAge is how old a listing may be to serve a hit asked with maxAge.
// Called with s.mu held.
func (s *Snapshot[T]) hitAge(maxAge time.Duration) time.Duration {
	if s.budget <= 0 || s.cost <= int64(s.budget/statusPassesAnHour) {
		return maxAge
	}
	return max(maxAge, time.Duration(s.cost)*time.Hour/time.Duration(s.budget))
}

// statusPassesAnHour are the node controller's address passes an hour (one
// every 5 minutes): a listing the budget pays at every pass is served as
// fresh as every caller asks, as without a budget.
const statusPassesAnHour = 12

// id is the instance's identity, its first key ("" for none).
func (s *Snapshot[T]) id(it T) string {
	if ks := s.keys(it); len(ks) > 0 {
		return ks[0]
	}
	return ""
}

// Get finds the instance under key. found is false when a fresh enough list has
// no such key; that is not proof the instance is gone (confirm with a direct GET
// before destroying anything). err means the list could not be fetched.
func (s *Snapshot[T]) Get(ctx context.Context, key string) (item T, found bool, err error) {
	return s.GetWithin(ctx, key, s.maxAge)
}

// GetWithin is Get with a caller's own bound on the age of a hit: a caller that
// asks often and can wait for news (e.g. about NotReady Nodes every few seconds)
// passes a longer one, so its questions are answered by the listings other
// callers make anyway instead of causing listings of their own. A miss still
// refreshes once the list is minMiss old.
func (s *Snapshot[T]) GetWithin(ctx context.Context, key string, maxAge time.Duration) (item T, found bool, err error) {
	s.mu.Lock()
	age := s.now().Sub(s.fetched)
	if s.items != nil && age < s.hitAge(maxAge) {
		if it, ok := s.items[key]; ok {
			s.mu.Unlock()
			lookups.WithLabelValues(s.cloud, "hit").Inc()
			return it, true, nil
		}
		if age < s.minMiss {
			s.mu.Unlock()
			lookups.WithLabelValues(s.cloud, "miss").Inc()
			return item, false, nil
		}
	}
	s.mu.Unlock()
	if err := s.refresh(ctx); err != nil {
		return item, false, err
	}
	s.mu.Lock()
	it, ok := s.items[key]
	s.mu.Unlock()
	result := "hit"
	if !ok {
		result = "miss"
	}
	lookups.WithLabelValues(s.cloud, result).Inc()
	return it, ok, nil
}

// GetFresh is Get from a listing at most maxAge old, hit or miss: for a
// caller waiting for something to appear or change, whose misses must not
// wait for minMiss. Callers at once share one listing.
func (s *Snapshot[T]) GetFresh(ctx context.Context, key string, maxAge time.Duration) (item T, found bool, err error) {
	s.mu.Lock()
	stale := s.items == nil || s.now().Sub(s.fetched) >= maxAge
	s.mu.Unlock()
	if stale {
		if err := s.refresh(ctx); err != nil {
			return item, false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[key]
	return it, ok, nil
}

// Took is how long the last listing took (0 before the first): a caller can
// ask no fresher listing than it can have.
func (s *Snapshot[T]) Took() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.took
}

// Shared says whether two instances of the last listing have key (so that a
// look-up of it missed): a caller that would act on a miss asks directly.
func (s *Snapshot[T]) Shared(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shared[key]
}

// All is every instance, from a listing at most the snapshot's maxAge old.
func (s *Snapshot[T]) All(ctx context.Context) ([]T, error) {
	return s.AllWithin(ctx, s.maxAge)
}

// AllWithin is All from a listing at most maxAge old: for a caller that can
// be served by the listings another makes anyway.
func (s *Snapshot[T]) AllWithin(ctx context.Context, maxAge time.Duration) ([]T, error) {
	s.mu.Lock()
	fresh := s.items != nil && s.now().Sub(s.fetched) < s.hitAge(maxAge)
	s.mu.Unlock()
	if !fresh {
		if err := s.refresh(ctx); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, 0, len(s.all))
	for _, it := range s.all {
		out = append(out, it)
	}
	return out, nil
}

// Invalidate makes the next Get list again (used when a caller knows the cloud
// changed, and by tests that must not wait maxAge).
// A listing in flight began before the change: it is neither joined nor kept.
func (s *Snapshot[T]) Invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetched = time.Time{}
	s.gen++
}

// Reset forgets the snapshot: the next Get lists in full, not the changes
// since the last listing. For when what the listing sees changed as a whole
// (other credentials, another project), which no change since would say.
func (s *Snapshot[T]) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetched, s.mark = time.Time{}, ""
	s.gen++
}

// Put records an instance learnt another way (a direct GET), until the next list.
func (s *Snapshot[T]) Put(item T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil {
		return
	}
	if id := s.id(item); id != "" {
		s.all[id] = item
		s.items, s.shared = s.index(s.all)
	}
}

// index maps every key to its instance, leaving out keys two instances share
// (e.g. two servers of one name), which it returns: a look-up of such a key
// is a miss, and the caller's direct path reports the ambiguity.
func (s *Snapshot[T]) index(all map[string]T) (map[string]T, map[string]bool) {
	idx := make(map[string]T, 2*len(all))
	owner := make(map[string]string, 2*len(all))
	shared := map[string]bool{}
	for id, it := range all {
		for _, k := range s.keys(it) {
			if k == "" {
				continue
			}
			if o, ok := owner[k]; ok && o != id {
				shared[k] = true
				continue
			}
			owner[k], idx[k] = id, it
		}
	}
	for k := range shared {
		delete(idx, k)
	}
	return idx, shared
}

// refresh lists every instance once for all concurrent callers. A listing in
// flight that began before an Invalidate may not show what changed: refresh
// waits for it to end and lists anew.
func (s *Snapshot[T]) refresh(ctx context.Context) error {
	s.mu.Lock()
	for s.call != nil {
		c := s.call
		current := c.gen == s.gen
		s.mu.Unlock()
		select {
		case <-c.done:
			if current {
				return c.err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
	}
	c := &call{done: make(chan struct{}), gen: s.gen}
	s.call = c
	incremental := s.inc != nil && s.items != nil && s.mark != "" && s.now().Sub(s.listedAt) < s.inc.FullEvery
	mark := s.mark
	s.mu.Unlock()

	// The listing outlives a cancelled caller (others may be waiting for
	// it), in a goroutine of its own: a caller whose context ends returns
	// then, even while the cloud does not answer.
	go s.list1(context.WithoutCancel(ctx), c, incremental, mark)
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listTimeout bounds one listing, all its pages: a cloud that pages without
// end (or never answers) fails the listing, and the next caller starts anew.
var listTimeout = 2 * time.Minute

// list1 makes one listing for refresh's call c and keeps what it brought.
func (s *Snapshot[T]) list1(lctx context.Context, c *call, incremental bool, mark string) {
	lctx, cancel := context.WithTimeout(lctx, listTimeout)
	defer cancel()
	kind := "full"
	if incremental {
		kind = "incremental"
	} else {
		mark = ""
	}
	var items []T
	var next string
	var err error
	lctx, calls := cloudapi.WithCallCount(lctx)
	began := time.Now()
	if s.inc != nil {
		items, next, err = s.inc.Since(lctx, mark)
	} else {
		items, err = s.list(lctx)
	}
	s.mu.Lock()
	if err == nil {
		now := s.now()
		if !incremental {
			s.all, s.listedAt = make(map[string]T, len(items)), now
		}
		for _, it := range items {
			id := s.id(it)
			switch {
			case id == "":
			case s.inc != nil && s.inc.Gone(it):
				delete(s.all, id)
			default:
				s.all[id] = it
			}
		}
		s.items, s.shared = s.index(s.all)
		// Invalidated while it ran, it answers the callers that joined it
		// but is not fresh: the next look lists again, from the mark before.
		if c.gen == s.gen {
			s.mark, s.cost, s.fetched = next, calls.Load(), now
			s.took = time.Since(began)
		}
		refreshes.WithLabelValues(s.cloud, kind, "ok").Inc()
	} else {
		refreshes.WithLabelValues(s.cloud, kind, "error").Inc()
	}
	s.call = nil
	s.mu.Unlock()
	c.err = err
	close(c.done)
}
