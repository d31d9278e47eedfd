package provider

import (
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// MemberSets are the sets of members the Services' specs lately held, by
// their members' fingerprint: a few (every Service on the same Nodes shares
// one), so that the set a load balancer was converged to before a Node
// change is known after it, without reading the cloud. It is this process's
// memory: a new leader knows none, and reads.
type MemberSets struct {
	mu    sync.Mutex
	sets  map[string][]string
	order []string // oldest first
}

// memberSetsKept bounds the sets kept: a Node change makes one more.
const memberSetsKept = 16

// Note keeps members (sorted) as the set of fingerprint fp.
func (m *MemberSets) Note(fp string, members []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sets[fp]; ok {
		return
	}
	if m.sets == nil {
		m.sets = map[string][]string{}
	}
	if len(m.order) == memberSetsKept {
		delete(m.sets, m.order[0])
		m.order = m.order[1:]
	}
	m.sets[fp] = slices.Clone(members)
	m.order = append(m.order, fp)
}

// Get is the set of fingerprint fp, nil when it is not kept. The set is
// shared: never written.
func (m *MemberSets) Get(fp string) *[]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	set, ok := m.sets[fp]
	if !ok {
		return nil
	}
	return &set
}

// Records is what knows each Service's record (a load-balancer cycle).
type Records interface {
	RecordOf(svc *v1.Service) (lbcycle.Record, bool)
}

// Last is the set the Service's load balancer was last converged to, by its
// record, when it is kept; nil otherwise.
func (m *MemberSets) Last(records Records, svc *v1.Service) *[]string {
	rec, ok := records.RecordOf(svc)
	if !ok {
		return nil
	}
	return m.Get(rec.Members)
}

// OneAdded is the one member want has beyond last, when that is all that
// differs (both sorted).
func OneAdded(last, want []string) (string, bool) {
	if len(want) != len(last)+1 {
		return "", false
	}
	i := 0
	for i < len(last) && last[i] == want[i] {
		i++
	}
	if !slices.Equal(last[i:], want[i+1:]) {
		return "", false
	}
	return want[i], true
}
