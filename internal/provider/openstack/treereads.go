package openstack

import (
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Reading a load balancer's members and health monitors across the passes
// that build it. Octavia lists members pool by pool and has no listing of
// health monitors by load balancer, so a pass that read them all would cost
// a call per pool, and a Service built one change a pass (serial mode: 3 or
// 4 changes a port) O(ports²) calls. Instead a pass reads a pool's members
// or a monitor only when it has not read them in the last treeMemoMaxAge,
// or when they may have changed since:
//   - members are remembered with the ids the pool's listing named (a
//     member's address and port are fixed for its id: Octavia cannot change
//     them), so a member added or removed is read anew; both as digests, so
//     that the memory of 2,000 pools of 5,000 members stays small;
//   - what the CCM writes is forgotten, and read again by the next pass.
//
// A pass that would end with nothing to change after taking anything from
// memory is made again from fresh reads: the verdict "as the Service asks"
// is never given from memory, only the choice of the next change.

// treeMemoMaxAge bounds how old a remembered read may be: longer than the
// passes of one build are apart (seconds), shorter than a drift period.
const treeMemoMaxAge = 2 * time.Minute

// treeMemo holds the members and health monitors recent passes read, by
// pool and monitor id.
type treeMemo struct {
	mu       sync.Mutex
	now      func() time.Time
	pruned   time.Time // when what was too old was last dropped
	members  map[string]memoEntry[memberDigests]
	monitors map[string]memoEntry[osapi.Monitor]
}

// memoEntry is what a pass read, and when.
type memoEntry[T any] struct {
	v  T
	at time.Time
}

// memberDigests are a pool's members as a pass read them.
type memberDigests struct {
	ids  digest // of the member ids the pool's listing named, sorted
	keys digest // of the members as memberKeys says them
}

// digest stands for a sorted list of strings.
type digest [sha256.Size]byte

func digestOf(sorted []string) digest {
	h := sha256.New()
	for _, s := range sorted {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var d digest
	h.Sum(d[:0])
	return d
}

func newTreeMemo() *treeMemo {
	return &treeMemo{now: time.Now, members: map[string]memoEntry[memberDigests]{}, monitors: map[string]memoEntry[osapi.Monitor]{}}
}

// prune drops what is too old to use (with the lock held), at most once in
// treeMemoMaxAge, so the memory holds only the last few minutes' pools and
// monitors and a pass does not walk all of it.
func (m *treeMemo) prune(now time.Time) {
	if now.Sub(m.pruned) < treeMemoMaxAge {
		return
	}
	m.pruned = now
	pruneOlder(m.members, now)
	pruneOlder(m.monitors, now)
}

func pruneOlder[T any](m map[string]memoEntry[T], now time.Time) {
	for id, e := range m {
		if now.Sub(e.at) > treeMemoMaxAge {
			delete(m, id)
		}
	}
}

// recall is what the memory holds of id in m, if it may be used: the pass
// is not a fresh one and the read is recent enough.
func recall[T any](r *treeReads, m func(*treeMemo) map[string]memoEntry[T], id string) (T, bool) {
	var zero T
	if r.memo == nil || r.fresh {
		return zero, false
	}
	r.memo.mu.Lock()
	defer r.memo.mu.Unlock()
	e, ok := m(r.memo)[id]
	if !ok || r.memo.now().Sub(e.at) > treeMemoMaxAge {
		return zero, false
	}
	return e.v, true
}

func memberMemo(m *treeMemo) map[string]memoEntry[memberDigests]  { return m.members }
func monitorMemo(m *treeMemo) map[string]memoEntry[osapi.Monitor] { return m.monitors }

// treeReads are one pass's reads of members and health monitors: from the
// memory when it may (memo set), noting that it did (used).
type treeReads struct {
	api   osapi.API
	memo  *treeMemo // nil: every read goes to Octavia
	fresh bool      // read everything from Octavia (and remember it)
	used  bool
}

// again is the same pass made anew from fresh reads.
func (r *treeReads) again() *treeReads {
	return &treeReads{api: r.api, memo: r.memo, fresh: true}
}

// membersAre says whether the pool's members are want (as memberKeys says
// them, sorted): from memory if they were read recently and the pool still
// names the same ones.
func (r *treeReads) membersAre(ctx context.Context, pool osapi.Pool, want []string) (bool, error) {
	ids := make([]string, 0, len(pool.Members))
	for _, m := range pool.Members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	idsDigest := digestOf(ids)
	if e, ok := recall(r, memberMemo, pool.ID); ok && e.ids == idsDigest {
		same := e.keys == digestOf(want)
		r.used = r.used || same // "differs" from memory costs at most a write
		return same, nil
	}
	if len(ids) != len(want) {
		// The pool's listing names more or fewer members than the Service
		// asks (Octavia keeps one member an address and port): they differ,
		// and the batch update that follows says them all. A Node that
		// joins costs each pool its write alone, not a listing of 5,000
		// members in pages of 1,000 first.
		return false, nil
	}
	var have []string
	if len(ids) > 0 { // the pool names its members: a new one has none to list
		members, err := r.api.ListMembers(ctx, pool.ID)
		if err != nil {
			return false, err
		}
		have = memberKeys(members)
	}
	r.remember(func(m *treeMemo, now time.Time) {
		m.members[pool.ID] = memoEntry[memberDigests]{v: memberDigests{ids: idsDigest, keys: digestOf(have)}, at: now}
	})
	return slices.Equal(have, want), nil
}

// monitor is the health monitor id, from memory if it was read recently.
func (r *treeReads) monitor(ctx context.Context, id string) (osapi.Monitor, error) {
	if m, ok := recall(r, monitorMemo, id); ok {
		r.used = true
		return m, nil
	}
	m, err := r.api.GetMonitor(ctx, id)
	if err != nil {
		return osapi.Monitor{}, err
	}
	r.remember(func(tm *treeMemo, now time.Time) { tm.monitors[id] = memoEntry[osapi.Monitor]{v: m, at: now} })
	return m, nil
}

// wrote forgets a pool's members or a monitor the CCM changed.
func (r *treeReads) wrote(poolID, monitorID string) {
	r.remember(func(m *treeMemo, _ time.Time) {
		delete(m.members, poolID)
		delete(m.monitors, monitorID)
	})
}

func (r *treeReads) remember(f func(*treeMemo, time.Time)) {
	if r.memo == nil {
		return
	}
	r.memo.mu.Lock()
	defer r.memo.mu.Unlock()
	now := r.memo.now()
	r.memo.prune(now)
	f(r.memo, now)
}
