package lbcycle

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Inventory is a cloud whose drift check sees every object a Service's load
// balancer owns (listeners, pools, members, health monitors, addresses,
// security rules): Objects names them from shared listings (a cost flat in
// the number of Services), each by a key that changes when the object does:
// its id and what of it is converged (a port, a source range, a member's
// address). Some of what a key holds may belong to others (a rule beside
// ours): the cycle compares, it never decides what is whose.
//
// The cycle remembers each load balancer's objects as the first drift pass
// after a walk sees them; later, any difference (an object deleted, changed,
// or added beside them) is drift, and the Service is walked, which repairs it;
// the objects are then remembered anew. A load balancer not walked since the
// process started is walked too, quietly (Reverifying: no Event, no
// condition, no repair counted), at most ReverifyPerPass a pass: a restart
// re-verifies every load balancer within a few passes, with reads only when
// nothing changed.
type Inventory[L any] interface {
	Objects(ctx context.Context, svc *v1.Service, lb LB[L]) ([]string, error)
}

// DriftListener is a cloud told of each Service the drift check found
// drifted, before its walk: what the cloud keeps of the Service's recent
// convergence (a memo that spares a read) must not spare the repair.
type DriftListener interface {
	Drifting(svc *v1.Service)
}

// Reverifying begins the reason of a load balancer walked because this
// process has not walked it yet: not drift, nothing to tell anyone.
const Reverifying = "re-verifying: "

// ReverifyPerPass bounds the load balancers re-verified in one drift pass,
// so that a restart with many Services spreads its reads.
const ReverifyPerPass = 100

// IsReverifying says whether a drift reason is a re-verification.
func IsReverifying(why string) bool { return strings.HasPrefix(why, Reverifying) }

// walked says a walk of the load balancer id converged it: the next drift
// pass remembers its objects as they are then.
func (c *Cycle[S, L]) walkedInventory(id string) {
	c.mu.Lock()
	c.verified[id] = true
	c.mu.Unlock()
}

// forgetInventory drops what is remembered of the load balancer id (c.mu
// held).
func (c *Cycle[S, L]) forgetInventory(id string) {
	delete(c.inventory, id)
	delete(c.verified, id)
}

// inventoryDrift compares the objects of the load balancer id with what was
// remembered of it: "" when the same (or now remembered after a walk), else
// what differs.
func (c *Cycle[S, L]) inventoryDrift(id string, objects []string) string {
	objects = slices.Sorted(slices.Values(objects))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.verified[id] {
		delete(c.verified, id)
		c.inventory[id] = objects
		return ""
	}
	was, ok := c.inventory[id]
	if !ok {
		return Reverifying + fmt.Sprintf("load balancer %s has not been walked since this process started", id)
	}
	return describeChange(was, objects)
}

// describeChange says what of was is gone from now and what is new in it,
// at most three of each; "" when they are the same.
func describeChange(was, now []string) string {
	gone := slices.DeleteFunc(slices.Clone(was), func(k string) bool { _, in := slices.BinarySearch(now, k); return in })
	added := slices.DeleteFunc(slices.Clone(now), func(k string) bool { _, in := slices.BinarySearch(was, k); return in })
	var parts []string
	if len(gone) > 0 {
		parts = append(parts, "gone or changed: "+firstFew(gone))
	}
	if len(added) > 0 {
		parts = append(parts, "new: "+firstFew(added))
	}
	return strings.Join(parts, "; ")
}

func firstFew(keys []string) string {
	if len(keys) > 3 {
		return strings.Join(keys[:3], ", ") + fmt.Sprintf(" and %d more", len(keys)-3)
	}
	return strings.Join(keys, ", ")
}
