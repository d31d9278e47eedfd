package cloudstack

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// memo is a note per Service kept by this process ("" is none).
type memo struct {
	m sync.Map // types.UID → string
}

func (m *memo) get(uid types.UID) string {
	v, _ := m.m.Load(uid)
	s, _ := v.(string)
	return s
}

// set notes v for the Service; "" forgets it.
func (m *memo) set(uid types.UID, v string) {
	if v == "" {
		m.m.Delete(uid)
		return
	}
	m.m.Store(uid, v)
}
