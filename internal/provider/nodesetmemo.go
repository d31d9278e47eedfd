package provider

import (
	"sync"

	v1 "k8s.io/api/core/v1"
)

// NodeSetMemo keeps what a cloud made of a set of Nodes (its members), by
// a key (a Service's node selector). The service controller gives every
// pass one slice for one set of Nodes and never writes it, so that at
// 5,000 Nodes the members are made once for the 2,000 Services on them,
// not once a Service. Another slice is another set: what was kept for the
// last one is dropped.
type NodeSetMemo[T any] struct {
	mu    sync.Mutex
	nodes []*v1.Node
	kept  map[string]T
}

// nodeSetKeys bounds the keys kept for one set (each a node selector in use).
const nodeSetKeys = 64

// Get is what make makes of nodes under key: kept from the last call with
// the same slice, or made now. make's false keeps its value not (a member
// read from the cloud, which may change while the Nodes do not).
func (m *NodeSetMemo[T]) Get(nodes []*v1.Node, key string, make func() (T, bool)) T {
	m.mu.Lock()
	v, ok := m.kept[key]
	ok = ok && sameSlice(m.nodes, nodes)
	m.mu.Unlock()
	if ok {
		return v
	}
	v, keep := make()
	if !keep {
		return v
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kept == nil || !sameSlice(m.nodes, nodes) || len(m.kept) >= nodeSetKeys {
		m.nodes, m.kept = nodes, map[string]T{}
	}
	m.kept[key] = v
	return v
}

// sameSlice says whether a and b are one slice: kept by the memo, a's
// array cannot be another's.
func sameSlice(a, b []*v1.Node) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
