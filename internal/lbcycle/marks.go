package lbcycle

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Marks are a value per Service (by UID) this process noted, such as the
// key a step was last done for, safe for concurrent use. The zero value is
// ready.
type Marks struct {
	mu sync.Mutex
	m  map[types.UID]string
}

// Is says whether the Service's mark is v.
func (k *Marks) Is(uid types.UID, v string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	have, ok := k.m[uid]
	return ok && have == v
}

// Of is the Service's mark, "" for none.
func (k *Marks) Of(uid types.UID) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[uid]
}

// Set marks the Service with v.
func (k *Marks) Set(uid types.UID, v string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[types.UID]string{}
	}
	k.m[uid] = v
}

// Forget drops the Service's mark.
func (k *Marks) Forget(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, uid)
}
