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
	t.Run("GetWithin serves an older list to a caller that can wait", func(t *testing.T) {
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
	})
	t.Run("misses refresh at most once per minMiss", func(t *testing.T) {
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
	})
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
