package providertest

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// Drift is a provider on its emulator (or a real cloud), for RunDrift.
type Drift struct {
	// Ensure converges the Service's load balancer (every pass until done)
	// and says its address; Drifted is the cycle's drift check of it.
	Ensure  func(t *testing.T) string
	Drifted func(t *testing.T) string
	// Objects are the keys of the drift check's listing of the Service's
	// load balancer (lbcycle.Inventory), "<kind>/<id> …".
	Objects func(t *testing.T) []string
	// Restart makes Drifted and Ensure those of a new process.
	Restart func(t *testing.T)
	// OutOfBand is what someone else does to an object of each kind: its
	// removal and its change (a stray beside it where it cannot be
	// changed), given its key.
	OutOfBand map[string][2]func(ctx context.Context, key string) error
	// Kinds are the kinds Objects must list (at least).
	Kinds []string
}

// RunDrift takes every kind of object the drift check lists (its own list,
// not this one: a kind without an entry in OutOfBand fails, named), removes
// one and changes one behind the provider's back, and expects the next drift
// pass to see it, the walk it causes to repair it (the same address, as many
// objects of each kind as before: nothing lost, nothing left over), and the
// repair to be the new normal. First, a restart re-verifies every load
// balancer once. Objects must be as before but for the ids of the objects
// the repair made anew.
func RunDrift(t *testing.T, d Drift) {
	addr := d.Ensure(t)
	if why := d.settled(t); why != "" {
		t.Fatalf("a load balancer this process walked drifted at once: %s", why)
	}
	d.Restart(t)
	if why := d.Drifted(t); !strings.Contains(why, "not been walked since this process started") {
		t.Fatalf("after a restart the load balancer is not re-verified: %q", why)
	}
	d.Ensure(t)
	if why := d.settled(t); why != "" {
		t.Fatalf("drifted after the walk: %s", why)
	}
	want, wantShape := kinds(d.Objects(t)), shape(d.Objects(t))
	for _, k := range d.Kinds {
		if want[k] == 0 {
			t.Fatalf("the drift check lists no %s: %v", k, d.Objects(t))
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(want)) {
		acts, ok := d.OutOfBand[kind]
		if !ok {
			t.Fatalf("the drift check lists %ss: add what someone does to one to OutOfBand", kind)
		}
		for i, how := range []string{"removed", "changed"} {
			t.Run(kind+"/"+how, func(t *testing.T) {
				key := first(d.Objects(t), kind)
				if err := poll(time.Minute, func() error { return acts[i](t.Context(), key) }); err != nil {
					t.Fatalf("%s %s: %v", how, key, err)
				}
				var why string
				if err := poll(2*time.Minute, func() error {
					if why = d.Drifted(t); why == "" {
						return fmt.Errorf("no drift seen")
					}
					return nil
				}); err != nil {
					t.Fatalf("%s %s behind the provider's back: %v", how, key, err)
				}
				t.Logf("drift: %s", why)
				if got := d.Ensure(t); got != addr {
					t.Errorf("the address moved from %s to %s", addr, got)
				}
				if why := d.settled(t); why != "" {
					t.Errorf("still drifted after the walk: %s", why)
				}
				if got := kinds(d.Objects(t)); !maps.Equal(got, want) {
					t.Errorf("objects of each kind after the repair: %v, want %v", got, want)
				}
				if got := shape(d.Objects(t)); !maps.Equal(got, wantShape) {
					t.Errorf("after the repair the objects are not as before (ids aside):\n got %v\nwant %v", got, wantShape)
				}
			})
		}
	}
}

// settled is the drift check after a walk: a pass that asks for a quiet
// walk to check what the walk left (lbcycle's post-walk check) gets it, at
// most twice; then what the check says ("" when settled).
func (d Drift) settled(t *testing.T) string {
	t.Helper()
	why := d.Drifted(t)
	for range 2 {
		if !lbcycle.IsPostWalkCheck(why) {
			break
		}
		d.Ensure(t)
		why = d.Drifted(t)
	}
	return why
}

// Kind and ID of an object key "<kind>/<id> …".
func Kind(key string) string { k, _, _ := strings.Cut(key, "/"); return k }

// ID of an object key.
func ID(key string) string {
	_, rest, _ := strings.Cut(key, "/")
	id, _, _ := strings.Cut(rest, " ")
	return id
}

// ids are what a repair may change of a key: the ids of recreated objects
// (UUIDs, OCIDs); ownIDs the short ids some objects have of their own (an
// OCI NSG rule's, six hex digits), after their kind.
var (
	ids    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|ocid1\.[a-z0-9.]+`)
	ownIDs = regexp.MustCompile(`^([a-z-]+/)[0-9A-F]{6} `)
)

// shape is keys with their ids left out, counted.
func shape(keys []string) map[string]int {
	out := map[string]int{}
	for _, k := range keys {
		out[ownIDs.ReplaceAllString(ids.ReplaceAllString(k, "<id>"), "${1}<id> ")]++
	}
	return out
}

func kinds(keys []string) map[string]int {
	out := map[string]int{}
	for _, k := range keys {
		out[Kind(k)]++
	}
	return out
}

// first is the first key of kind that is the provider's own doing (not a
// group's default egress rule).
func first(keys []string, kind string) string {
	for _, k := range keys {
		if Kind(k) == kind && !strings.Contains(k, " egress ") && !strings.Contains(k, "/egress:") {
			return k
		}
	}
	for _, k := range keys {
		if Kind(k) == kind {
			return k
		}
	}
	return ""
}

func poll(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Inventoried is a cloud's cycle steps as a drift test reads them.
type Inventoried[L any] interface {
	Listed(ctx context.Context, svc *v1.Service) (lbcycle.LB[L], bool, error)
	Objects(ctx context.Context, svc *v1.Service, lb lbcycle.LB[L]) ([]string, error)
}

// ObjectsOf are the objects the drift check lists of svc's load balancer,
// which must be listed.
func ObjectsOf[L any](t *testing.T, steps Inventoried[L], svc *v1.Service) []string {
	t.Helper()
	lb, found, err := steps.Listed(t.Context(), svc)
	if err != nil || !found {
		t.Fatalf("the load balancer of %s is not listed: %v", svc.Name, err)
	}
	keys, err := steps.Objects(t.Context(), svc, lb)
	if err != nil {
		t.Fatalf("listing the objects of %s: %v", svc.Name, err)
	}
	return keys
}

// RepairTold checks what the repair of a field changed behind the
// provider's back tells (the drift reason why, which the service controller
// puts in its RepairingLoadBalancer Event, and counts in the drift-repair
// metric by the kinds it names): named (the field by its name), with the
// value it had (or the object as it was, where the API makes another one
// for another value), and the kind of object. A named ending in "/" is a
// kind of object whose key is its identity alone (a member).
func RepairTold(t *testing.T, why, kind, named string) {
	t.Helper()
	event := "Repairing load balancer: " + why
	says := strings.Contains(event, named+" ") || strings.Contains(event, named+"=") || strings.HasSuffix(named, "/") && strings.Contains(event, named)
	if !says || !strings.Contains(event, "(was ") && !strings.Contains(event, "gone: ") {
		t.Errorf("the Event of the repair of %s %s does not say it with the value it had: %q", kind, named, event)
	}
	if kinds := lbcycle.DriftKinds(why); !slices.Contains(kinds, kind) {
		t.Errorf("the repair of %s %s is counted as %v, not as %s", kind, named, kinds, kind)
	}
}
