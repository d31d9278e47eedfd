package snapshot

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inst struct{ id, name string }

type fixture struct {
	mu    sync.Mutex
	now   time.Time
	items []inst
	err   error
	calls atomic.Int32
	gate  chan struct{}
}

func (f *fixture) list(context.Context) ([]inst, error) {
	f.calls.Add(1)
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]inst(nil), f.items...), f.err
}

func (f *fixture) snapshot() *Snapshot[inst] {
	s := New("test", time.Minute, 10*time.Second, f.list, func(i inst) []string { return []string{i.id, "name/" + i.name} })
	s.now = func() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
	return s
}

func (f *fixture) advance(d time.Duration) { f.mu.Lock(); f.now = f.now.Add(d); f.mu.Unlock() }

func TestSnapshot(t *testing.T) {
	t.Run("many look-ups within maxAge cost one listing", func(t *testing.T) {
		f := &fixture{now: time.Unix(0, 0), items: []inst{{"a", "node-a"}, {"b", "node-b"}}}
		s := f.snapshot()
		for range 1000 {
			_, found, err := s.Get(t.Context(), "a")
			require.NoError(t, err)
			require.True(t, found)
			_, found, _ = s.Get(t.Context(), "name/node-b")
			require.True(t, found)
		}
		assert.Equal(t, int32(1), f.calls.Load())
	})
	t.Run("a list older than maxAge is refreshed on the next look-up", func(t *testing.T) {
		f := &fixture{now: time.Unix(0, 0), items: []inst{{"a", "node-a"}}}
		s := f.snapshot()
		_, _, _ = s.Get(t.Context(), "a")
		f.advance(61 * time.Second)
		_, _, _ = s.Get(t.Context(), "a")
		assert.Equal(t, int32(2), f.calls.Load())
	})
	t.Run("GetWithin serves an older list to a caller that can wait", getWithinServesAnOlderList)
	t.Run("misses refresh at most once per minMiss", missesRefreshAtMostOncePerMinMiss)
	t.Run("an error is returned, never a miss", func(t *testing.T) {
		f := &fixture{now: time.Unix(0, 0), err: errors.New("503")}
		s := f.snapshot()
		_, found, err := s.Get(t.Context(), "a")
		require.Error(t, err)
		assert.False(t, found)
	})
	t.Run("concurrent callers share one listing", func(t *testing.T) {
		f := &fixture{now: time.Unix(0, 0), items: []inst{{"a", "node-a"}}, gate: make(chan struct{})}
		s := f.snapshot()
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, found, err := s.Get(context.Background(), "a")
				assert.NoError(t, err)
				assert.True(t, found)
			}()
		}
		time.Sleep(50 * time.Millisecond)
		close(f.gate)
		wg.Wait()
		assert.Equal(t, int32(1), f.calls.Load())
	})
	t.Run("Put makes a directly fetched instance visible until the next list", func(t *testing.T) {
		f := &fixture{now: time.Unix(0, 0), items: []inst{{"a", "node-a"}}}
		s := f.snapshot()
		_, _, _ = s.Get(t.Context(), "a")
		s.Put(inst{"c", "node-c"})
		_, found, _ := s.Get(t.Context(), "name/node-c")
		assert.True(t, found)
		assert.Equal(t, int32(1), f.calls.Load())
	})
}

// getWithinServesAnOlderList: GetWithin serves an older list to a caller that can wait.
func getWithinServesAnOlderList(t *testing.T) {
	f := &fixture{now: time.Unix(0, 0), items: []inst{{"a", "node-a"}}}
	s := f.snapshot()
	_, _, _ = s.Get(t.Context(), "a")
	f.advance(4 * time.Minute)
	_, found, err := s.GetWithin(t.Context(), "a", 5*time.Minute)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, int32(1), f.calls.Load(), "a 4-minute-old list is fine for a 5-minute bound")
	_, _, _ = s.Get(t.Context(), "a")
	assert.Equal(t, int32(2), f.calls.Load(), "but not for the snapshot's own bound")
	f.advance(6 * time.Minute)
	_, _, _ = s.GetWithin(t.Context(), "a", 5*time.Minute)
	assert.Equal(t, int32(3), f.calls.Load(), "older than the caller's bound: listed again")
	f.advance(20 * time.Second)
	_, found, _ = s.GetWithin(t.Context(), "gone", 5*time.Minute)
	assert.False(t, found)
	assert.Equal(t, int32(4), f.calls.Load(), "a miss still lists again once the list is minMiss old")
}

// missesRefreshAtMostOncePerMinMiss: misses refresh at most once per minMiss.
func missesRefreshAtMostOncePerMinMiss(t *testing.T) {
	f := &fixture{now: time.Unix(0, 0), items: []inst{{"a", "node-a"}}}
	s := f.snapshot()
	_, _, _ = s.Get(t.Context(), "a")
	for range 100 { // a burst of unknown Nodes
		_, found, err := s.Get(t.Context(), "new")
		require.NoError(t, err)
		assert.False(t, found)
	}
	assert.Equal(t, int32(1), f.calls.Load(), "within minMiss a miss does not list again")
	f.mu.Lock()
	f.items = append(f.items, inst{"new", "node-new"})
	f.mu.Unlock()
	f.advance(11 * time.Second)
	_, found, err := s.Get(t.Context(), "new")
	require.NoError(t, err)
	assert.True(t, found, "after minMiss a miss refreshes and finds the new instance")
	assert.Equal(t, int32(2), f.calls.Load())
}

func TestSharedKeys(t *testing.T) {
	f := &fixture{now: time.Unix(0, 0), items: []inst{{"a", "twin"}, {"b", "twin"}, {"c", "solo"}}}
	s := f.snapshot()
	for _, key := range []string{"a", "b", "c", "name/solo"} {
		_, found, err := s.Get(t.Context(), key)
		require.NoError(t, err)
		assert.True(t, found, key)
	}
	got, found, err := s.Get(t.Context(), "name/twin")
	require.NoError(t, err)
	assert.False(t, found, "a key two instances share is no answer: got %v", got)
	assert.True(t, s.Shared("name/twin"), "and it says why")
	assert.False(t, s.Shared("name/solo"))
	s.Put(inst{"b", "twin"})
	_, found, _ = s.Get(t.Context(), "name/twin")
	assert.False(t, found, "a direct GET of one twin does not make the name unique")
}

// deltaFixture is a cloud whose instances carry the time they last changed, and
// that can list the changes since a time, deleted instances included.
type deltaFixture struct {
	fixture
	changes []change // every change, in order
	since   atomic.Int32
	marks   []string
}

type change struct {
	inst
	at   time.Time
	gone bool
}

func (f *deltaFixture) set(i inst, gone bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes = append(f.changes, change{i, f.now, gone})
	f.items = f.items[:0:0]
	latest := map[string]change{}
	var order []string
	for _, c := range f.changes {
		if _, ok := latest[c.id]; !ok {
			order = append(order, c.id)
		}
		latest[c.id] = c
	}
	for _, id := range order {
		if c := latest[id]; !c.gone {
			f.items = append(f.items, c.inst)
		}
	}
}

// snapshot lists like Nova: every instance for no mark, else the changes
// since it, and the time the cloud answered as the next mark.
func (f *deltaFixture) snapshot() *Snapshot[change] {
	s := NewIncremental("test", time.Minute, 10*time.Second, func(c change) []string { return []string{c.id, "name/" + c.name} }, Incremental[change]{
		Since: func(_ context.Context, mark string) ([]change, string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			next := f.now.UTC().Format(time.RFC3339)
			if mark == "" {
				f.calls.Add(1)
			} else {
				f.since.Add(1)
			}
			if f.err != nil {
				return nil, "", f.err
			}
			if mark == "" {
				out := make([]change, 0, len(f.items))
				for _, i := range f.items {
					out = append(out, change{inst: i, at: f.now})
				}
				return out, next, nil
			}
			f.marks = append(f.marks, mark)
			t, err := time.Parse(time.RFC3339, mark)
			if err != nil {
				return nil, "", err
			}
			var out []change
			for _, c := range f.changes {
				if !c.at.Before(t) {
					out = append(out, c)
				}
			}
			return out, next, nil
		},
		Gone:      func(c change) bool { return c.gone },
		FullEvery: time.Hour,
	})
	s.now = func() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
	return s
}

// listedDelta is a cloud of one instance, "a", listed once in full.
func listedDelta(t *testing.T) (*deltaFixture, *Snapshot[change]) {
	t.Helper()
	f := &deltaFixture{fixture: fixture{now: time.Unix(1000, 0)}}
	f.set(inst{"a", "node-a"}, false)
	s := f.snapshot()
	_, found, err := s.Get(t.Context(), "a")
	require.NoError(t, err)
	require.True(t, found)
	return f, s
}

func TestIncremental(t *testing.T) {
	t.Run("refreshes between full listings ask only for changes", func(t *testing.T) {
		f := &deltaFixture{fixture: fixture{now: time.Unix(1000, 0)}}
		f.set(inst{"a", "node-a"}, false)
		f.set(inst{"b", "node-b"}, false)
		s := f.snapshot()
		_, found, err := s.Get(t.Context(), "a")
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, int32(1), f.calls.Load())

		f.advance(time.Minute)
		f.set(inst{"c", "node-c"}, false)
		f.set(inst{"a", "node-a2"}, false) // renamed
		f.set(inst{"b", "node-b"}, true)   // deleted
		f.advance(time.Second)
		_, found, err = s.Get(t.Context(), "c")
		require.NoError(t, err)
		assert.True(t, found, "a new instance arrives by the incremental listing")
		assert.Equal(t, int32(1), f.calls.Load(), "no full listing")
		assert.Equal(t, int32(1), f.since.Load())
		_, found, _ = s.Get(t.Context(), "name/node-a2")
		assert.True(t, found, "a changed instance is found by its new key")
		_, found, _ = s.Get(t.Context(), "name/node-a")
		assert.False(t, found, "and no longer by its old one")
		_, found, _ = s.Get(t.Context(), "b")
		assert.False(t, found, "a gone instance is dropped")
	})
	t.Run("each incremental listing starts where the last one left off", func(t *testing.T) {
		f, s := listedDelta(t)
		f.advance(2 * time.Minute)
		f.set(inst{"b", "node-b"}, false)
		_, _, _ = s.Get(t.Context(), "a")
		f.advance(2 * time.Minute)
		_, _, _ = s.Get(t.Context(), "a")
		assert.Equal(t, []string{"1970-01-01T00:16:40Z", "1970-01-01T00:18:40Z"}, f.marks,
			"the time the cloud answered the last listing, even when nothing changed")
	})
	t.Run("a full listing comes every FullEvery and replaces everything", func(t *testing.T) {
		f, s := listedDelta(t)
		for range 59 {
			f.advance(61 * time.Second)
			_, _, _ = s.Get(t.Context(), "a")
		}
		assert.Equal(t, int32(1), f.calls.Load(), "an hour of incremental refreshes")
		// A change the incremental listings never reported (purged by the
		// cloud): only a full listing can see it.
		f.mu.Lock()
		f.items = nil
		f.mu.Unlock()
		f.advance(61 * time.Second)
		_, found, err := s.Get(t.Context(), "a")
		require.NoError(t, err)
		assert.Equal(t, int32(2), f.calls.Load(), "then one full listing")
		assert.False(t, found)
	})
	t.Run("a failed incremental listing keeps what is known and is an error", func(t *testing.T) {
		f, s := listedDelta(t)
		f.advance(61 * time.Second)
		f.mu.Lock()
		f.err = errors.New("503")
		f.mu.Unlock()
		_, _, err := s.Get(t.Context(), "a")
		require.Error(t, err)
		f.mu.Lock()
		f.err = nil
		f.mu.Unlock()
		_, found, err := s.Get(t.Context(), "a")
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, int32(2), f.since.Load(), "the next look-up tries again")
	})
}

// A caller whose context ends returns then, while a listing the cloud does
// not answer goes on for the others; its result serves the next caller.
func TestACallerDoesNotWaitForAListingPastItsContext(t *testing.T) {
	release := make(chan struct{})
	s := New("test", time.Minute, 0, func(ctx context.Context) ([]string, error) {
		<-release
		return []string{"a"}, nil
	}, func(s string) []string { return []string{s} })
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := s.Get(ctx, "a")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second, "the caller returns at its deadline")
	waited := make(chan error, 1)
	go func() {
		_, found, err := s.Get(t.Context(), "a")
		if err == nil && !found {
			err = errors.New("not found")
		}
		waited <- err
	}()
	close(release)
	require.NoError(t, <-waited, "the listing went on, and answers who waits for it")
}

// A listing that never ends (a cloud paging without end) fails at
// listTimeout, and the next caller lists anew.
func TestAListingIsBoundedInTime(t *testing.T) {
	old := listTimeout
	listTimeout = 100 * time.Millisecond
	t.Cleanup(func() { listTimeout = old })
	var calls atomic.Int32
	s := New("test", time.Minute, 0, func(ctx context.Context) ([]string, error) {
		if calls.Add(1) == 1 {
			<-ctx.Done() // the first listing never ends by itself
			return nil, ctx.Err()
		}
		return []string{"a"}, nil
	}, func(s string) []string { return []string{s} })
	_, _, err := s.Get(t.Context(), "a")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, found, err := s.Get(t.Context(), "a")
	require.NoError(t, err)
	assert.True(t, found, "the next listing")
}

// A listing in flight when the snapshot is invalidated began before the
// change: a caller after the Invalidate does not take its answer but one of a
// listing begun after, and the stale answer is not kept as fresh.
func TestAListingBegunBeforeAnInvalidateIsNotTakenAfterIt(t *testing.T) {
	var mu sync.Mutex
	items := []inst{{"a", "node-a"}}
	var calls atomic.Int32
	gate := make(chan struct{})
	list := func(context.Context) ([]inst, error) {
		mu.Lock()
		seen := append([]inst(nil), items...) // what the cloud holds when asked
		mu.Unlock()
		if calls.Add(1) == 1 {
			<-gate
		}
		return seen, nil
	}
	s := New("test", time.Minute, 10*time.Second, list, func(i inst) []string { return []string{i.id} })
	first := make(chan bool)
	go func() {
		_, found, _ := s.Get(context.Background(), "a")
		first <- found
	}()
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	mu.Lock()
	items = append(items, inst{"b", "node-b"}) // b is made, then the snapshot told
	mu.Unlock()
	s.Invalidate()
	second := make(chan bool)
	go func() {
		_, found, _ := s.Get(context.Background(), "b")
		second <- found
	}()
	close(gate)
	assert.True(t, <-first, "the first caller takes its own listing's answer")
	assert.True(t, <-second, "the caller after the Invalidate sees b: a listing begun after it")
	assert.Equal(t, int32(2), calls.Load())
	_, found, err := s.Get(t.Context(), "b")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, int32(2), calls.Load(), "the fresh listing is kept")
}

// Took says how long the last listing took: 0 before the first, then at
// least the time the cloud took to answer it.
func TestTookIsTheLastListingsTime(t *testing.T) {
	s := New("test", time.Minute, 0, func(context.Context) ([]string, error) {
		time.Sleep(80 * time.Millisecond)
		return []string{"a"}, nil
	}, func(s string) []string { return []string{s} })
	assert.Zero(t, s.Took())
	_, found, err := s.GetFresh(t.Context(), "a", time.Millisecond)
	require.NoError(t, err)
	require.True(t, found)
	assert.GreaterOrEqual(t, s.Took(), 80*time.Millisecond)
	assert.Less(t, s.Took(), 10*time.Second)
}
