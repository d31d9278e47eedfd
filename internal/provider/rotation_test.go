package provider

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// rotationBed asks a Rotation for n objects a pass, as a drift check does,
// and keeps when each was read.
type rotationBed struct {
	t        *testing.T
	r        *Rotation[int]
	n        int
	lastRead map[string]int // the pass of each object's last read
	asked    map[string]int // the pass each was first asked for
}

// pass runs pass p: its reads, and how many objects were not read yet.
func (b *rotationBed) pass(p int) (reads, later int) {
	b.r.Pass()
	for i := range b.n {
		id := fmt.Sprintf("obj-%04d", i)
		if _, ok := b.asked[id]; !ok {
			b.asked[id] = p
		}
		v, err := b.r.Get(context.Background(), id, func(context.Context, string) (int, error) {
			reads++
			b.lastRead[id] = p
			return p, nil
		})
		if errors.Is(err, lbcycle.ErrLater) {
			_, read := b.lastRead[id]
			require.False(b.t, read, "%s was read: it is answered as read", id)
			later++
			continue
		}
		require.NoError(b.t, err)
		assert.Equal(b.t, b.lastRead[id], v, "as last read")
	}
	return reads, later
}

// unreadFor is the most passes an object has gone unread by pass p (since
// it was first asked for, when never read).
func (b *rotationBed) unreadFor(p int) (string, int) {
	worst, most := "", -1
	for id, first := range b.asked {
		at, ok := b.lastRead[id]
		if !ok {
			at = first
		}
		if p-at > most {
			worst, most = id, p-at
		}
	}
	return worst, most
}

func newRotationBed(t *testing.T, r *Rotation[int], n int) *rotationBed {
	return &rotationBed{t: t, r: r, n: n, lastRead: map[string]int{}, asked: map[string]int{}}
}

// Objects new at once are read PerPass a pass, those waiting first (the
// rest are "later": their load balancer's check waits); then each again
// within ceil(objects/PerPass) passes; a stale one first in line.
func TestARotationReadsEachObjectInItsTurnOnABudget(t *testing.T) {
	const n, perPass = 45, 20
	b := newRotationBed(t, &Rotation[int]{PerPass: perPass}, n)
	gap := (n + perPass - 1) / perPass
	for p := range 4 * gap {
		reads, later := b.pass(p)
		assert.LessOrEqual(t, reads, perPass, "pass %d", p)
		if p >= gap {
			assert.Zero(t, later, "pass %d: every object was read once", p)
		}
		id, passes := b.unreadFor(p)
		assert.LessOrEqual(t, passes, gap, "%s unread for %d passes (pass %d)", id, passes, p)
	}
	b.r.Stale("obj-0000")
	before := b.lastRead["obj-0000"]
	b.pass(4 * gap)
	assert.Equal(t, 4*gap, b.lastRead["obj-0000"], "a stale one is read at the next pass (was %d)", before)

	small := newRotationBed(t, &Rotation[int]{PerPass: perPass}, 5)
	reads, later := small.pass(0)
	assert.Equal(t, []int{5, 0}, []int{reads, later}, "below PerPass every object is read at once")
}

// With Within, however many objects there are, each is read within Within
// at the pace of the passes (2,000 objects, a pass every 3 minutes: each
// within an hour, 100 a pass), and below that number PerPass a pass. 2,000
// new at once are read within the hour at that pace, not in one pass.
func TestARotationWithinAnHourReadsEachObjectWithinTheHour(t *testing.T) {
	for _, n := range []int{45, 2000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			const period = 3 * time.Minute
			now := time.Unix(0, 0)
			b := newRotationBed(t, &Rotation[int]{PerPass: 20, Within: time.Hour, Now: func() time.Time { return now }}, n)
			most := 0
			within := int(time.Hour / period)
			for p := range 3 * within {
				reads, _ := b.pass(p)
				most = max(most, reads)
				id, passes := b.unreadFor(p)
				require.LessOrEqual(t, passes, within, "object %s unread for %d passes (pass %d)", id, passes, p)
				now = now.Add(period)
			}
			assert.Equal(t, max(20, n*int(period)/int(time.Hour)), most, "reads a pass")
		})
	}
}
