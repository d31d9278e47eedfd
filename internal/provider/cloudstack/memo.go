package cloudstack

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// memo is a note per Service kept by this process ("" is none).
type memo struct {
	mu sync.Mutex
	m  map[types.UID]string
}

func (m *memo) get(uid types.UID) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[uid]
}

// set notes v for the Service; "" forgets it.
func (m *memo) set(uid types.UID, v string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v == "" {
		delete(m.m, uid)
		return
	}
	if m.m == nil {
		m.m = map[types.UID]string{}
	}
	m.m[uid] = v
}
