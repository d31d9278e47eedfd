package servicecontroller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The unconverged gauge is the wait of the Service that has waited longest,
// from when it stopped being ready, through progressing and failed passes.
func TestUnconvergedIsTheLongestWait(t *testing.T) {
	u := unconverged{since: map[*serviceState]time.Time{}}
	a, b := &serviceState{}, &serviceState{}
	assert.Zero(t, u.oldest())
	u.set(a, false)
	u.since[a] = time.Now().Add(-time.Minute)
	u.set(a, false) // failed after progressing: still waiting since then
	u.set(b, false)
	assert.InDelta(t, 60, u.oldest(), 5)
	u.set(a, true)
	assert.Less(t, u.oldest(), 5.0, "b's wait alone")
	u.set(b, true)
	assert.Zero(t, u.oldest())
}
