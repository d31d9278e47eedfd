package lbcycle

import (
	"context"
	"errors"
	"fmt"
	"regexp"
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
// The cycle remembers each load balancer's objects as the drift passes
// after a walk see them; later, any difference (an object deleted, changed,
// or added beside them) is drift, and the Service is walked, which repairs it;
// the objects are then remembered anew. What the first pass after a walk
// sees is taken as it is only when it is what was remembered before the walk
// (the walk changed nothing); else the Service is walked again, quietly,
// and the next pass must see the same: an object changed behind the walk's
// back before the first pass (another cluster's CCM removing a rule just
// after ours was added) is repaired, not remembered as normal. A load
// balancer not walked since the
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

// What the next drift pass adopts of a load balancer's objects as they are
// then: all of them (a walk converged it, or is converging it: its own
// changes are not drift), or its members alone (the Nodes changed; anything
// else that differs is still drift).
const (
	adoptMembers = 1
	adoptAll     = 2 // more than adoptMembers: it includes them
)

// MemberPrefix begins the key of a member (a backend) of a load balancer in
// Objects: the one kind a change of Nodes alone changes.
const MemberPrefix = "member/"

// ErrLater is what an Inventory's Objects says when it cannot say them this
// pass: the reads it may make are spent (a cloud that reads some objects one
// at a time, on a budget). The load balancer is checked on a later pass; no
// verdict now.
var ErrLater = errors.New("not read yet: this pass's reads are spent")

// objectsOf are the objects of the Service's load balancer as the cycle
// keeps them: many members as one key a pool (CompactMembers).
func objectsOf[L any](ctx context.Context, inv Inventory[L], svc *v1.Service, lb LB[L]) ([]string, error) {
	objects, err := inv.Objects(ctx, svc, lb)
	return CompactMembers(objects), err
}

// walkedInventory says the cycle converged (or is converging) the load
// balancer id: the next drift pass adopts its objects as they are then.
func (c *Cycle[S, L]) walkedInventory(id string) { c.adopt(id, adoptAll) }

// adopt marks what the next drift pass adopts of the load balancer id.
func (c *Cycle[S, L]) adopt(id string, what int) {
	if id == "" {
		return
	}
	c.mu.Lock()
	c.verified[id] = max(c.verified[id], what)
	c.mu.Unlock()
}

// forgetInventory drops what is remembered of the load balancer id (c.mu
// held).
func (c *Cycle[S, L]) forgetInventory(id string) {
	delete(c.inventory, id)
	delete(c.verified, id)
	delete(c.checking, id)
}

// postWalk is what a pass after a walk saw of a load balancer, while a
// quiet walk checks it, and how many such walks there were.
type postWalk struct {
	objects []string
	walks   int
}

// postWalkChecks bounds the quiet walks after a walk: objects that change
// at every pass are then remembered as they are (and the hourly full walk
// looks again).
const postWalkChecks = 3

// postpone keeps the load balancer id's post-walk check for the next pass
// (this one re-verified enough).
func (c *Cycle[S, L]) postpone(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.checking[id]; ok {
		c.verified[id] = adoptAll
	}
}

// inventoryDrift compares the objects of the load balancer id with what was
// remembered of it: "" when the same (or now adopted after the cycle's own
// change), else what differs.
func (c *Cycle[S, L]) inventoryDrift(id string, objects []string) string {
	objects = slices.Sorted(slices.Values(objects))
	c.mu.Lock()
	defer c.mu.Unlock()
	what := c.verified[id]
	delete(c.verified, id)
	was, ok := c.inventory[id]
	switch {
	case what == adoptAll:
		return c.afterWalk(id, objects, was, ok)
	case !ok:
		return Reverifying + fmt.Sprintf("load balancer %s has not been walked since this process started", id)
	case what == adoptMembers:
		isMember := func(k string) bool { return strings.HasPrefix(k, MemberPrefix) }
		others := slices.DeleteFunc(slices.Clone(objects), isMember)
		if why := describeChange(slices.DeleteFunc(slices.Clone(was), isMember), others); why != "" {
			return why
		}
		if why := membersChanged(was, objects); why != "" {
			return why
		}
		c.inventory[id] = objects
		return ""
	}
	return describeChange(was, objects)
}

// withChange is the drift reason why (the cloud's own check's) and what
// changed of the objects of lb since they were remembered, if anything did:
// the objects that tell the repair's kinds.
func (c *Cycle[S, L]) withChange(ctx context.Context, inv Inventory[L], svc *v1.Service, lb LB[L], why string) (string, error) {
	objects, err := objectsOf(ctx, inv, svc, lb)
	if errors.Is(err, ErrLater) {
		return why, nil
	}
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	was, ok := c.inventory[lb.ID]
	c.mu.Unlock()
	if !ok {
		return why, nil
	}
	if changed := describeChange(was, slices.Sorted(slices.Values(objects))); changed != "" {
		why += "; " + changed
	}
	return why, nil
}

// membersChanged says what changed of the members that were there before
// and still are: a change of Nodes adds and removes members, it changes
// none that stays.
func membersChanged(was, now []string) string {
	before := map[string]string{}
	for _, k := range was {
		if strings.HasPrefix(k, MemberPrefix) {
			before[identity(k)] = k
		}
	}
	var gone, changed []string
	for _, k := range now {
		if w, ok := before[identity(k)]; ok && w != k && strings.HasPrefix(k, MemberPrefix) {
			gone, changed = append(gone, w), append(changed, k)
		}
	}
	return describeChange(gone, changed)
}

// identity is what an object is known by in its key: the key's first word
// and what it is part of, after its last " of " (a member is a member of a
// pool); the rest is what is converged of it (a backend's weight, say).
func identity(k string) string {
	first, _, _ := strings.Cut(k, " ")
	if i := strings.LastIndex(k, " of "); i >= 0 {
		return first + k[i:]
	}
	return first
}

// afterWalk remembers what a pass after a walk sees of the load balancer id
// when it is what the pass before saw (before the walk, or before a quiet
// walk that checked it); else it asks for a quiet walk (c.mu held). What a
// quiet walk changed (the objects before it against those after) was a
// repair no drift pass told of: the reason says it (QuietRepair).
func (c *Cycle[S, L]) afterWalk(id string, objects, was []string, remembered bool) string {
	check, checking := c.checking[id]
	ref, haveRef := was, remembered
	if checking {
		ref, haveRef = check.objects, true
	}
	changed := ""
	if haveRef {
		changed = describeChange(ref, objects)
	}
	if (haveRef && changed == "") || check.walks >= postWalkChecks {
		c.inventory[id] = objects
		delete(c.checking, id)
		return ""
	}
	c.checking[id] = postWalk{objects: objects, walks: check.walks + 1}
	why := Reverifying + postWalkCheck + fmt.Sprintf("load balancer %s left", id)
	if checking && changed != "" {
		why += quietRepair + changed
	}
	return why
}

// quietWalk remembers the objects of the load balancer id before the quiet
// walk that re-verifies it after a start, so that what the walk changes is
// told (afterWalk).
func (c *Cycle[S, L]) quietWalk(id string, objects []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.checking[id]; !ok {
		c.checking[id] = postWalk{objects: slices.Sorted(slices.Values(objects))}
	}
}

// postWalkCheck begins (after Reverifying) the reason of a quiet walk that
// checks what a walk left; quietRepair, in it, what the quiet walk before
// it changed.
const (
	postWalkCheck = "checking what the walk of "
	quietRepair   = "; the walk changed "
)

// IsPostWalkCheck says whether a drift reason asks for the quiet walk that
// checks what a walk left (afterWalk).
func IsPostWalkCheck(why string) bool { return strings.HasPrefix(why, Reverifying+postWalkCheck) }

// QuietRepair is what a quiet walk (after a start, or checking what a walk
// left) changed, as the drift pass after it saw it: a repair no drift pass
// told of, to be told like any other; false when it changed nothing.
func QuietRepair(why string) (string, bool) {
	if !IsPostWalkCheck(why) {
		return "", false
	}
	_, what, ok := strings.Cut(why, quietRepair)
	return what, ok
}

// describeChange says what of was is changed in now (an object of the same
// identity, each field that changed with the value it had), what is gone
// from now and what is new in it (counted: two alike are two), at most
// three of each; "" when they are the same.
func describeChange(was, now []string) string {
	gone, added := minus(was, now), minus(now, was)
	changed, gone, added := paired(gone, added)
	var parts []string
	if len(changed) > 0 {
		parts = append(parts, firstFewOf(changed, "; "))
	}
	if len(gone) > 0 {
		parts = append(parts, "gone: "+firstFew(gone))
	}
	if len(added) > 0 {
		parts = append(parts, "new: "+firstFew(added))
	}
	return strings.Join(parts, "; ")
}

// paired takes out of gone and added each key whose identity is once in
// each, then each key whose kind is once in each (an object the API
// replaces to change it), and says how it changed (changeOf).
func paired(gone, added []string) (changed, goneLeft, addedLeft []string) {
	changed, gone, added = pairBy(identity, gone, added)
	more, gone, added := pairBy(kindOf, gone, added)
	return append(changed, more...), gone, added
}

// pairBy pairs the keys of gone and added whose key by is once in each.
func pairBy(by func(string) string, gone, added []string) (changed, goneLeft, addedLeft []string) {
	count := map[string][2]int{}
	for _, k := range gone {
		c := count[by(k)]
		c[0]++
		count[by(k)] = c
	}
	for _, k := range added {
		c := count[by(k)]
		c[1]++
		count[by(k)] = c
	}
	was := map[string]string{}
	for _, k := range gone {
		if count[by(k)] == [2]int{1, 1} {
			was[by(k)] = k
			continue
		}
		goneLeft = append(goneLeft, k)
	}
	for _, k := range added {
		if w, ok := was[by(k)]; ok {
			changed = append(changed, changeOf(w, k))
			continue
		}
		addedLeft = append(addedLeft, k)
	}
	return changed, goneLeft, addedLeft
}

// kindOf is the kind of object of a key: before its "/"; each member is
// its own (another member is another backend, not a member changed).
func kindOf(k string) string {
	if strings.HasPrefix(k, MemberPrefix) {
		return k
	}
	kind, _, _ := strings.Cut(k, "/")
	return kind
}

// changeOf says how an object changed from key was to key now: its
// identity, then each field that differs, by name, with the value it had:
// "monitor/m1: delay 17 (was 5)". A key's fields are either "name value"
// parts between ", " or words (a "name=value" word, or a value after the
// word that names it). Keys of another shape are said whole.
func changeOf(was, now string) string {
	wasID, wasRest, _ := strings.Cut(was, " ")
	nowID, nowRest, _ := strings.Cut(now, " ")
	id := "changed " + identity(now)
	if identity(was) != identity(now) {
		id = "replaced " + wasID + " by " + nowID
	}
	sep := " "
	if strings.Contains(nowRest, ", ") {
		sep = ", "
	}
	a, b := strings.Split(wasRest, sep), strings.Split(nowRest, sep)
	if len(a) != len(b) {
		return fmt.Sprintf("%s: %s (was %s)", id, nowRest, wasRest)
	}
	var parts []string
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		name, v, old := fieldChange(a, b, i, sep)
		p := orNone(v) + " (was " + orNone(old) + ")"
		if name != "" {
			p = name + " " + p
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return id
	}
	return id + ": " + strings.Join(parts, ", ")
}

// fieldChange is the name, new and old value of the field at i of the
// key's fields a (was) and b (now), which differ there.
func fieldChange(a, b []string, i int, sep string) (name, v, old string) {
	if sep == ", " {
		// "health check port 10256" against "health check port 10257":
		// the words they share first name the field.
		wa, wb := strings.Fields(a[i]), strings.Fields(b[i])
		n := 0
		for n < len(wa) && n < len(wb) && wa[n] == wb[n] {
			n++
		}
		return strings.Join(wb[:n], " "), strings.Join(wb[n:], " "), strings.Join(wa[n:], " ")
	}
	if name, v, ok := strings.Cut(b[i], "="); ok {
		_, old, _ := strings.Cut(a[i], "=")
		return name, v, old
	}
	if i > 0 && a[i-1] == b[i-1] && fieldName.MatchString(b[i-1]) {
		return b[i-1], b[i], a[i]
	}
	return "", b[i], a[i]
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// fieldName is a word of a key that names the value after it.
var fieldName = regexp.MustCompile(`^[A-Za-z_]+$`)

// DriftKinds are the kinds of object a drift reason names (the word before
// the "/" of each key it names: listener, member, security-rule), for the
// repairs' metric; "certificate" for a renewed certificate, "load-balancer"
// when it names none.
func DriftKinds(why string) []string {
	var kinds []string
	for _, m := range kindOfKey.FindAllStringSubmatch(why, -1) {
		if !slices.Contains(kinds, m[1]) {
			kinds = append(kinds, m[1])
		}
	}
	switch {
	case len(kinds) > 0:
		slices.Sort(kinds)
	case strings.Contains(why, "certificate") || strings.Contains(why, "TLS Secret"):
		kinds = []string{"certificate"}
	default:
		kinds = []string{"load-balancer"}
	}
	return kinds
}

// kindOfKey finds the kind of each key describeChange names: a word of
// small letters and dashes, then "/", where a key starts (never in a
// value: a path, a CIDR, a namespace/name).
var kindOfKey = regexp.MustCompile(`(?:^|changed |replaced | by |gone: |new: |, |; )([a-z][a-z-]{1,30})/[^ /]`)

// minus is a without b, each key of b taking one of a.
func minus(a, b []string) []string {
	left := map[string]int{}
	for _, k := range b {
		left[k]++
	}
	var out []string
	for _, k := range a {
		if left[k] > 0 {
			left[k]--
			continue
		}
		out = append(out, k)
	}
	return out
}

func firstFew(keys []string) string { return firstFewOf(keys, ", ") }

// firstFewOf is the first three of items, joined by sep, and how many more.
func firstFewOf(items []string, sep string) string {
	if len(items) > 3 {
		return strings.Join(items[:3], sep) + fmt.Sprintf(" and %d more", len(items)-3)
	}
	return strings.Join(items, sep)
}
