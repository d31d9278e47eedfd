package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every object is read the first time, then at most PerPass a pass, each
// again within ceil(objects/PerPass) passes; a stale one at the next pass.
func TestARotationReadsEachObjectInItsTurnOnABudget(t *testing.T) {
	const n, perPass = 45, 20
	r := &Rotation[int]{PerPass: perPass}
	reads, lastRead := 0, map[string]int{}
	pass := func(p int) int {
		before := reads
		r.Pass()
		for i := range n {
			id := fmt.Sprintf("obj-%02d", i)
			v, err := r.Get(context.Background(), id, func(context.Context, string) (int, error) {
				reads++
				lastRead[id] = p
				return p, nil
			})
			require.NoError(t, err)
			assert.Equal(t, lastRead[id], v, "as last read")
		}
		return reads - before
	}
	assert.Equal(t, n, pass(0), "each read the first time")
	gap := (n + perPass - 1) / perPass
	for p := 1; p <= 4*gap; p++ {
		assert.LessOrEqual(t, pass(p), perPass, "pass %d", p)
		for i := range n {
			id := fmt.Sprintf("obj-%02d", i)
			assert.LessOrEqual(t, p-lastRead[id], gap, "%s read within %d passes", id, gap)
		}
	}
	r.Stale("obj-00")
	r.Pass()
	before := reads
	_, err := r.Get(context.Background(), "obj-00", func(context.Context, string) (int, error) { reads++; return 0, nil })
	require.NoError(t, err)
	assert.Equal(t, before+1, reads, "a stale one is read at the next pass")
}

// With Within, however many objects there are, each is read within Within
// at the pace of the passes (2,000 objects, a pass every 3 minutes: each
// within an hour, 100 a pass), and below that number PerPass a pass.
func TestARotationWithinAnHourReadsEachObjectWithinTheHour(t *testing.T) {
	for _, n := range []int{45, 2000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			const period = 3 * time.Minute
			now := time.Unix(0, 0)
			r := &Rotation[int]{PerPass: 20, Within: time.Hour, Now: func() time.Time { return now }}
			lastRead, most := map[string]time.Time{}, 0
			for p := range 60 {
				r.Pass()
				reads := 0
				for i := range n {
					id := fmt.Sprint(i)
					_, err := r.Get(context.Background(), id, func(context.Context, string) (int, error) {
						reads++
						lastRead[id] = now
						return 0, nil
					})
					require.NoError(t, err)
				}
				if p > 0 {
					most = max(most, reads)
				}
				for id, at := range lastRead {
					require.LessOrEqual(t, now.Sub(at), time.Hour, "object %s unread for %s (pass %d)", id, now.Sub(at), p)
				}
				now = now.Add(period)
			}
			assert.Equal(t, max(20, n*int(period)/int(time.Hour)), most, "reads a pass")
		})
	}
}
