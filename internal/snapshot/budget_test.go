package snapshot

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
)

// pagedCloud answers a listing in pages: one GET each, through a cloudapi
// client, on loopback. It counts the GETs.
type pagedCloud struct {
	pages  atomic.Int32
	served atomic.Int64
	client *http.Client
	url    string
}

func newPagedCloud(t *testing.T, pages int) *pagedCloud {
	c := &pagedCloud{}
	c.pages.Store(int32(pages))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c.served.Add(1)
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	client, err := cloudapi.NewClient(cloudapi.Config{Cloud: "test", ReadQPS: math.Inf(1)}, nil)
	require.NoError(t, err)
	c.client, c.url = client, srv.URL
	return c
}

func (c *pagedCloud) list(ctx context.Context) ([]inst, error) {
	for range c.pages.Load() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.client.Do(req)
		if err != nil {
			return nil, err
		}
		_ = resp.Body.Close()
	}
	return []inst{{"a", "node-a"}}, nil
}

// The status pass asks for every Node's machine every 5 minutes, a hit
// served from a listing at most a minute old. With a budget, a listing of
// few pages is still made at every pass; one of many pages is made less
// often, so the calls an hour stay within the budget at any size, and a miss
// (a new Node) still lists at once.
func TestABudgetHoldsTheCallsAnHourWhateverTheListingsPages(t *testing.T) {
	for _, tc := range []struct {
		pages        int
		perHour      int64 // the calls of the status passes' refreshes an hour
		oldestServed time.Duration
	}{
		{pages: 1, perHour: 12, oldestServed: 0},
		{pages: 7, perHour: 84, oldestServed: 0},                 // OCI, up to 1,000 instances
		{pages: 22, perHour: 88, oldestServed: 10 * time.Minute}, // OCI at 5,000: every 15 minutes
		{pages: 40, perHour: 93, oldestServed: 20 * time.Minute}, // every 25 minutes: 14 listings in 6 hours
	} {
		cloud := newPagedCloud(t, tc.pages)
		now := time.Unix(0, 0)
		s := New("test", time.Minute, 10*time.Second, cloud.list, func(i inst) []string { return []string{i.id} }).WithBudget(96)
		s.now = func() time.Time { return now }
		_, _, err := s.Get(t.Context(), "a")
		require.NoError(t, err)
		var oldest time.Duration
		const hours = 6
		cloud.served.Store(0)
		for range hours * 12 {
			now = now.Add(5 * time.Minute)
			_, found, err := s.Get(t.Context(), "a")
			require.NoError(t, err)
			require.True(t, found)
			s.mu.Lock()
			oldest = max(oldest, now.Sub(s.fetched))
			s.mu.Unlock()
		}
		assert.Equal(t, tc.perHour, cloud.served.Load()/hours, "%d pages: calls an hour", tc.pages)
		assert.LessOrEqual(t, cloud.served.Load()/hours, int64(96), "%d pages: within the budget", tc.pages)
		assert.Equal(t, tc.oldestServed, oldest, "%d pages: the oldest listing a pass was served from", tc.pages)

		before := cloud.served.Load()
		now = now.Add(time.Minute)
		_, found, err := s.Get(t.Context(), "new")
		require.NoError(t, err)
		assert.False(t, found)
		assert.Equal(t, before+int64(tc.pages), cloud.served.Load(), "%d pages: a miss lists at once", tc.pages)
	}
}

// A listing the budget pays at every status pass is as fresh as any caller
// asks: the lifecycle controller's questions (every few seconds, a minute old
// at most) find a machine gone within the minute, as without a budget.
func TestASmallListingIsAsFreshAsAsked(t *testing.T) {
	cloud := newPagedCloud(t, 8)
	now := time.Unix(0, 0)
	s := New("test", time.Minute, 10*time.Second, cloud.list, func(i inst) []string { return []string{i.id} }).WithBudget(96)
	s.now = func() time.Time { return now }
	for range 60 {
		now = now.Add(5 * time.Second)
		_, _, err := s.Get(t.Context(), "a")
		require.NoError(t, err)
	}
	assert.Equal(t, int64(5*8), cloud.served.Load(), "a listing a minute for 5 minutes")
}

// Without a budget a hit is served from a listing at most maxAge old, as
// before: every pass lists.
func TestWithoutABudgetEveryPassLists(t *testing.T) {
	cloud := newPagedCloud(t, 22)
	now := time.Unix(0, 0)
	s := New("test", time.Minute, 10*time.Second, cloud.list, func(i inst) []string { return []string{i.id} })
	s.now = func() time.Time { return now }
	for range 12 {
		now = now.Add(5 * time.Minute)
		_, _, err := s.Get(t.Context(), "a")
		require.NoError(t, err)
	}
	assert.Equal(t, int64(12*22), cloud.served.Load())
}
