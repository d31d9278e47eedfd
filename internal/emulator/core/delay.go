package core

import (
	"sync"
	"time"
)

// Delay is how long an emulator's asynchronous work takes (OCI's work
// requests, CloudStack's jobs): set by tests and by POST
// /_emulator/provisioning-delay while the emulator serves, read as each
// piece of work starts, so it has a lock of its own. The zero value is no
// delay.
type Delay struct {
	mu sync.Mutex
	d  time.Duration
}

// Set changes the delay of the work started from now.
func (d *Delay) Set(v time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.d = v
}

// Get is the delay.
func (d *Delay) Get() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.d
}
