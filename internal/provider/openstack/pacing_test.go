package openstack

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

// The pacer learns how long Octavia's changes take from the looks that
// follow them: looks that come late (the change long done) bring the next
// ones sooner, a look that finds the change under way is followed by
// another after a quarter of the time waited, and the learnt time ends
// within a quarter of the true one.
func TestThePacerLearnsHowLongAChangeTakes(t *testing.T) {
	for _, octavia := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond, 2 * time.Second, 4 * time.Second, 9 * time.Second} {
		t.Run(octavia.String(), func(t *testing.T) {
			now := time.Unix(0, 0)
			p := newPacer()
			p.now = func() time.Time { return now }
			uid := types.UID("svc")
			waited, looks := time.Duration(0), 0
			for i := range 40 { // 40 changes, each looked at until done
				p.changed(uid)
				start := now
				for {
					d := p.after(uid)
					assert.GreaterOrEqual(t, d, paceMin)
					now = now.Add(d)
					looks++
					status := "ACTIVE"
					if now.Sub(start) < octavia {
						status = "PENDING_UPDATE"
					}
					p.looked(uid, status)
					if status == "ACTIVE" {
						break
					}
				}
				if i >= 20 { // once learnt
					waited += now.Sub(start) - octavia
				}
			}
			assert.InDelta(t, float64(octavia), float64(p.took), float64(octavia)/4+float64(paceMin), "learnt %s", p.took)
			assert.Zero(t, p.after(uid), "no change under way: the cycle's own retry")
			t.Logf("Octavia %s: learnt %s; %d looks for 40 changes, %s waited after each of the last 20 on average", octavia, p.took, looks, waited/20)
			assert.Less(t, waited/20, octavia/3+paceMin+paceMargin, "a change is seen soon after it is done")
			assert.Less(t, looks, 40*4, "a few looks a change")
		})
	}
}

// A change not looked at for long is forgotten.
func TestThePacerForgetsChangesNotLookedAt(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPacer()
	p.now = func() time.Time { return now }
	p.changed("a")
	now = now.Add(paceForget + time.Second)
	p.changed("b")
	assert.Zero(t, p.after("a"))
	assert.NotZero(t, p.after("b"))
}
