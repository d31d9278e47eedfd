package provider

import (
	"context"
	"fmt"
	"testing"

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
