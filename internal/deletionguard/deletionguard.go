// Package deletionguard is the vocabulary of the Node deletion guard: its
// options, when it holds, and the names a person sees (the Warning's reason,
// the annotation that lets one Node go). The guard itself runs in
// internal/provider; the doctor and the command line speak of it from here,
// below both, so that neither imports the providers.
package deletionguard

import (
	"math"
	"time"
)

// Options configure the guard of every cloud of a process (overcast-ccm's
// --node-deletion-guard-* flags).
type Options struct {
	// Share is the part of the cluster's Nodes whose machines may vanish at
	// once without holding their deletion (0.25); 1 or more turns the guard off.
	Share float64
	// Min is how many vanished machines are never held, whatever the share
	// (2): the Nodes of a small cluster are removed one or two at a time.
	Min int
	// Window is how long a hold lasts before the deletions go ahead (1h); 0
	// holds them until a person allows each Node.
	Window time.Duration
}

// Default is the guard's default configuration.
var Default = Options{Share: 0.25, Min: 2, Window: time.Hour}

// AllowAnnotation is the annotation that, set to "true" on a Node, lets its
// deletion go ahead while the guard holds the others.
const AllowAnnotation = "overcast.io/allow-deletion"

// ReasonHeld is the Warning of a hold.
const ReasonHeld = "NodeDeletionHeld"

// Limit is how many vanished machines are never held among total Nodes.
func (o Options) Limit(total int) int {
	return max(o.Min, int(math.Floor(o.Share*float64(total))))
}

// Holds says whether the guard holds the deletions when the machines of
// gone of total Nodes vanish at once.
func (o Options) Holds(gone, total int) bool {
	return o.Share < 1 && gone > o.Limit(total)
}
