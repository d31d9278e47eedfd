package openstack

import (
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"time"
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
	members  map[string]memoMembers
	monitors map[string]memoMonitor
}

type memoMembers struct {
	ids  digest // of the member ids the pool's listing named, sorted
	keys digest // of the members as memberKeys says them
	at   time.Time
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

type memoMonitor struct {
	monitor lbMonitor
	at      time.Time
}

func newTreeMemo() *treeMemo {
	return &treeMemo{now: time.Now, members: map[string]memoMembers{}, monitors: map[string]memoMonitor{}}
}

// prune drops what is too old to use (with the lock held), so the memory
// holds only the pools and monitors of the last few minutes' passes.
func (m *treeMemo) prune(now time.Time) {
	for id, e := range m.members {
		if now.Sub(e.at) > treeMemoMaxAge {
			delete(m.members, id)
		}
	}
	for id, e := range m.monitors {
		if now.Sub(e.at) > treeMemoMaxAge {
			delete(m.monitors, id)
		}
	}
}

// treeReads are one pass's reads of members and health monitors: from the
// memory when it may (memo set), noting that it did (used).
type treeReads struct {
	api   gatewayAPI
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
func (r *treeReads) membersAre(ctx context.Context, pool lbPool, want []string) (bool, error) {
	ids := make([]string, 0, len(pool.Members))
	for _, m := range pool.Members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	idsDigest := digestOf(ids)
	if r.memo != nil && !r.fresh {
		r.memo.mu.Lock()
		e, ok := r.memo.members[pool.ID]
		r.memo.mu.Unlock()
		if ok && e.ids == idsDigest && r.memo.now().Sub(e.at) <= treeMemoMaxAge {
			same := e.keys == digestOf(want)
			r.used = r.used || same // "differs" from memory costs at most a write
			return same, nil
		}
	}
	var have []string
	if len(ids) > 0 { // the pool names its members: a new one has none to list
		members, err := r.api.listMembers(ctx, pool.ID)
		if err != nil {
			return false, err
		}
		have = memberKeys(members)
	}
	r.remember(func(m *treeMemo, now time.Time) {
		m.members[pool.ID] = memoMembers{ids: idsDigest, keys: digestOf(have), at: now}
	})
	return slices.Equal(have, want), nil
}

// monitor is the health monitor id, from memory if it was read recently.
func (r *treeReads) monitor(ctx context.Context, id string) (lbMonitor, error) {
	if r.memo != nil && !r.fresh {
		r.memo.mu.Lock()
		e, ok := r.memo.monitors[id]
		r.memo.mu.Unlock()
		if ok && r.memo.now().Sub(e.at) <= treeMemoMaxAge {
			r.used = true
			return e.monitor, nil
		}
	}
	m, err := r.api.getMonitor(ctx, id)
	if err != nil {
		return lbMonitor{}, err
	}
	r.remember(func(tm *treeMemo, now time.Time) { tm.monitors[id] = memoMonitor{monitor: m, at: now} })
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
