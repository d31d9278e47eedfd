package provider

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestALostCreateIsWaitedForThroughItsWindowOnly(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	u := &Unanswered{Window: time.Minute, Now: func() time.Time { return now }}
	_, waiting := u.Waiting("uid-1")
	assert.False(t, waiting, "nothing lost")

	u.Lost("uid-1")
	now = now.Add(20 * time.Second)
	u.Lost("uid-1") // a second loss does not restart the window
	since, waiting := u.Waiting("uid-1")
	assert.True(t, waiting)
	assert.Equal(t, 20*time.Second, since)

	now = now.Add(40 * time.Second)
	_, waiting = u.Waiting("uid-1")
	assert.False(t, waiting, "the window is over: create again")
	_, waiting = u.Waiting("uid-1")
	assert.False(t, waiting, "and forgotten")

	u.Lost("uid-2")
	u.Found("uid-2")
	_, waiting = u.Waiting("uid-2")
	assert.False(t, waiting, "found")
}
