package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// What the security groups need across Services: each Service's last
// convergence and placement, and the port writer that batches every
// Service's changes to a port into one write.

// sgManager keeps what the security groups need across Services: the
// project's subnets (their CIDRs are what the rules open) and the port writer.
type sgManager struct {
	api        osapi.API
	mu         sync.Mutex
	subnets    []string // the CIDRs of the project's subnets
	subnetsAt  time.Time
	pending    map[string]*portChange // port ID → the changes waiting for its next write
	flushing   *time.Timer            // the next write of the pending changes
	flushDelay time.Duration
	flushTurn  cloudapi.Turn               // one flush at a time: a port is never written twice at once
	ports      map[string]osapi.PortGroups // each port as last read or written
	byServer   map[string]string           // a member server's ID → its member port's ID
	// unmanagedChecked: the Services already looked at for a group left from
	// when groups were managed.
	unmanagedChecked sync.Map
	runs             map[types.UID]*sgRun // the last convergence of each Service's group
	placements       map[types.UID]sgPlacement
}

// groupsFor are the groups of every Service converged in this process whose
// members a Node with these labels is among (a Node is a member of each
// Service whose selector takes it).
func (m *sgManager) groupsFor(set labels.Set) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, p := range m.placements {
		if p.selector == nil || p.selector.Matches(set) {
			out = append(out, p.group)
		}
	}
	return out
}

func (m *sgManager) place(uid types.UID, p sgPlacement) {
	m.mu.Lock()
	m.placements[uid] = p
	m.mu.Unlock()
}

func (m *sgManager) placement(uid types.UID) (sgPlacement, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.placements[uid]
	return p, ok
}

// learn remembers member ports as read (a newer revision wins).
func (m *sgManager) learn(server string, p osapi.PortView) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ports) > maxKnownPorts {
		clear(m.ports)
		clear(m.byServer)
	}
	if k, ok := m.ports[p.ID]; !ok || p.Revision > k.Revision {
		m.ports[p.ID] = osapi.PortGroups{ID: p.ID, Groups: slices.Clone(p.SecurityGroups), Revision: p.Revision}
	}
	m.byServer[server] = p.ID
}

// holds says whether the server's member port is known to hold the group.
func (m *sgManager) holds(server, group string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.byServer[server]
	return ok && slices.Contains(m.ports[id].Groups, group)
}

// sgRun is one convergence of a Service's group.
type sgRun struct {
	fingerprint string
	done        chan struct{}
	err         error
	at          time.Time // when it ended
}

// sgFresh: a group converged this long ago to the same fingerprint is not
// looked at again (the pass right after the creation that converged it).
const sgFresh = time.Minute

// start converges a Service's group in the background (with the load
// balancer's creation); converged waits for it.
func (m *sgManager) start(uid types.UID, fp string, f func(context.Context) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.runs[uid]; r != nil && r.fingerprint == fp && r.at.IsZero() {
		return // under way
	}
	r := &sgRun{fingerprint: fp, done: make(chan struct{})}
	m.runs[uid] = r
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		m.finish(r, f(ctx))
	}()
}

func (m *sgManager) finish(r *sgRun, err error) {
	m.mu.Lock()
	r.err, r.at = err, time.Now()
	m.mu.Unlock()
	close(r.done)
}

// converged makes sure the Service's group is converged to fp: a run under
// way is waited for, one that ended well less than sgFresh ago is enough, and
// otherwise f runs now.
func (m *sgManager) converged(ctx context.Context, uid types.UID, fp string, f func(context.Context) error) error {
	m.mu.Lock()
	r := m.runs[uid]
	m.mu.Unlock()
	if r != nil && r.fingerprint == fp {
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		m.mu.Lock()
		err, at := r.err, r.at
		m.mu.Unlock()
		if err == nil && time.Since(at) < sgFresh {
			return nil
		}
	}
	r = &sgRun{fingerprint: fp, done: make(chan struct{})}
	m.mu.Lock()
	m.runs[uid] = r
	m.mu.Unlock()
	err := f(ctx)
	m.finish(r, err)
	return err
}

// expire makes the next convergence of the Service's group run, however
// recently the last one ended (something changed it behind our back).
func (m *sgManager) expire(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.runs[uid]; r != nil && !r.at.IsZero() {
		r.at = time.Unix(0, 0) // long ago: not fresh, not under way
	}
}

// forget drops what is known of a deleted Service's group, once a
// convergence under way (which could create it) has ended.
func (m *sgManager) forget(ctx context.Context, uid types.UID) error {
	m.mu.Lock()
	r := m.runs[uid]
	delete(m.runs, uid)
	delete(m.placements, uid)
	m.mu.Unlock()
	m.unmanagedChecked.Delete(uid)
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// portChange is what Services want of one port's security groups.
type portChange struct {
	add, remove map[string]bool
	known       osapi.PortGroups
	done        chan struct{}
	err         error
}

func newSGManager(api osapi.API) *sgManager {
	return &sgManager{api: api, pending: map[string]*portChange{}, flushTurn: cloudapi.NewTurn(), flushDelay: portWriteWindow, runs: map[types.UID]*sgRun{}, ports: map[string]osapi.PortGroups{}, byServer: map[string]string{}, placements: map[types.UID]sgPlacement{}}
}

// request asks for groupID on (add) or off the port, in the port's next
// write, which is at most flushDelay away; the change's done closes when it is
// written.
// others are groups of other Services that go on with an addition, unless
// their own Service asks them off.
func (m *sgManager) request(p osapi.PortView, groupID string, add bool, others ...string) *portChange {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.flushing == nil {
		m.flushing = time.AfterFunc(m.flushDelay, func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			m.flushNow(ctx)
		})
	}
	ch, ok := m.pending[p.ID]
	if !ok {
		ch = &portChange{add: map[string]bool{}, remove: map[string]bool{}, done: make(chan struct{})}
		m.pending[p.ID] = ch
	}
	if ch.known.ID == "" || p.Revision > ch.known.Revision {
		ch.known = osapi.PortGroups{ID: p.ID, Groups: slices.Clone(p.SecurityGroups), Revision: p.Revision}
	}
	if k, ok := m.ports[p.ID]; ok && k.Revision > ch.known.Revision {
		ch.known = k // written since the caller read it
	}
	if add {
		ch.add[groupID], ch.remove[groupID] = true, false
		for _, g := range others {
			if !ch.remove[g] {
				ch.add[g] = true
			}
		}
	} else {
		ch.remove[groupID], ch.add[groupID] = true, false
	}
	return ch
}

// flushNow writes each port's pending changes, one write a port: the port's
// groups as last known, with the changes, under If-Match on its revision; a
// stale revision reads the port again and retries.
func (m *sgManager) flushNow(ctx context.Context) {
	done, err := m.flushTurn.Take(ctx, "another flush")
	if err != nil {
		// Another flush holds the turn: what is pending now is the next
		// one's (the timer set by the request that made it pending).
		return
	}
	defer done()
	m.mu.Lock()
	batch := m.pending
	m.pending = map[string]*portChange{}
	if m.flushing != nil {
		m.flushing.Stop()
		m.flushing = nil
	}
	m.mu.Unlock()
	// Each port is written once, up to portWriters at a time.
	sem := make(chan struct{}, portWriters)
	var wg sync.WaitGroup
	for _, ch := range batch {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var known osapi.PortGroups
			known, ch.err = m.writePortGroups(ctx, ch)
			if known.ID != "" {
				m.mu.Lock()
				if len(m.ports) > maxKnownPorts {
					clear(m.ports)
				}
				m.ports[known.ID] = known
				m.mu.Unlock()
			}
			close(ch.done)
		})
	}
	wg.Wait()
}

// writePortGroups writes the port's groups with the change, and returns the
// port as it then is (no id when unknown).
func (m *sgManager) writePortGroups(ctx context.Context, ch *portChange) (osapi.PortGroups, error) {
	known := ch.known
	for try := 0; ; try++ {
		want := slices.DeleteFunc(slices.Clone(known.Groups), func(g string) bool { return ch.remove[g] })
		for g, add := range ch.add {
			if add && !slices.Contains(want, g) {
				want = append(want, g)
			}
		}
		slices.Sort(want)
		have := slices.Sorted(slices.Values(known.Groups))
		if slices.Equal(want, have) {
			return known, nil
		}
		rev := known.Revision
		written, err := m.api.SetPortGroups(ctx, known.ID, want, rev)
		switch {
		case err == nil:
			return written, nil
		case errors.Is(err, outcome.ErrNotFound):
			return osapi.PortGroups{}, nil // the port went with its server
		case !osapi.StaleRevision(err) || try+1 >= portWriteTries:
			return osapi.PortGroups{}, fmt.Errorf("writing the security groups of port %s: %w", known.ID, err)
		}
		// Changed by someone else since it was read: read it again.
		got, err := m.api.ListPortViews(ctx, url.Values{"id": {known.ID}})
		if err != nil {
			return osapi.PortGroups{}, err
		}
		if len(got) == 0 {
			return osapi.PortGroups{}, nil
		}
		known = osapi.PortGroups{ID: got[0].ID, Groups: got[0].SecurityGroups, Revision: got[0].Revision}
	}
}
