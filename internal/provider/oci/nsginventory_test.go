package oci

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The drift check reads NSGs' rules on a budget: every NSG the first time,
// then at most nsgReadsPerPass a pass, each again within
// ceil(NSGs/nsgReadsPerPass) passes; one this CCM wrote is read at the next
// pass whatever the budget.
func TestNSGRulesAreReadOnABudgetEachInItsTurn(t *testing.T) {
	e := startEmulator(t)
	c := cloudOn(t, e.CloudConfig()+"rateLimiter:\n  disableRateLimiter: true\n")
	f := e.Fixture()
	const n = 45
	var ids []string
	for range n {
		g, err := c.gw.createNSG(t.Context(), f.CompartmentID, f.VCNID, "g", nil)
		require.NoError(t, err)
		ids = append(ids, g.ID)
	}
	reads := func() (k int) {
		for _, call := range e.Calls() {
			if call.Method == http.MethodGet && strings.HasSuffix(call.Route, "/securityRules") {
				k += call.Count
			}
		}
		return k
	}
	lastRead := map[string]int{}
	pass := func(p int) int {
		before := reads()
		c.nsgPass.forget()
		for _, id := range ids {
			r0 := reads()
			_, err := c.nsgPass.rules(t.Context(), c.gw, id)
			require.NoError(t, err)
			if reads() > r0 {
				lastRead[id] = p
			}
		}
		return reads() - before
	}
	assert.Equal(t, n, pass(0), "each NSG read the first time")
	gap := (n + nsgReadsPerPass - 1) / nsgReadsPerPass
	for p := 1; p <= 4*gap; p++ {
		assert.LessOrEqual(t, pass(p), nsgReadsPerPass, "pass %d", p)
		for _, id := range ids {
			assert.LessOrEqual(t, p-lastRead[id], gap, "NSG %s read within %d passes", id, gap)
		}
	}
	c.nsgPass.stale(ids[0])
	c.nsgPass.forget()
	r0 := reads()
	_, err := c.nsgPass.rules(t.Context(), c.gw, ids[0])
	require.NoError(t, err)
	assert.Equal(t, r0+1, reads(), "a stale NSG is read at the next pass")
}
