package l4proxy

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"

	"github.com/go-logr/logr"
)

// Manager owns the listeners of all keys. It is safe for concurrent use; calls
// that change listeners are serialised.
type Manager struct {
	opts   Options // defaults applied
	log    logr.Logger
	health *http.Client

	mu       sync.Mutex
	closed   bool
	services map[string][]*listener // key → listeners in the order of the last Ensure
	owners   map[listenerID]string  // listener → key
}

// NewManager returns a Manager with no listeners.
func NewManager(opts Options) *Manager {
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.MaxUDPFlows <= 0 {
		opts.MaxUDPFlows = DefaultMaxUDPFlows
	}
	return &Manager{
		opts: opts,
		log:  opts.Logger,
		health: &http.Client{
			Transport: &http.Transport{
				Proxy:                  nil, // probes go straight to the node
				DialContext:            (&net.Dialer{}).DialContext,
				DisableKeepAlives:      true,
				DisableCompression:     true,
				MaxResponseHeaderBytes: 16 << 10,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		services: make(map[string][]*listener),
		owners:   make(map[listenerID]string),
	}
}

// Ensure makes the listeners of key (a Service UID) exactly specs: it binds new
// listeners, updates existing ones (same protocol and address) in place —
// backends, source ranges, health check and UDP idle timeout — without
// re-binding or dropping established connections, and closes the listeners that
// are no longer listed. An empty specs removes the key.
//
// Ensure is all-or-nothing: if a spec is invalid (ErrInvalidSpec) or a new
// listener cannot be bound (*BindError, matching ErrAddressInUse when the
// address is taken by another process or another key), the listeners bound by
// this call are closed, the previous state is kept and the error is returned.
// New listeners are bound before removed ones are closed, so replacing a
// listener by one with a conflicting address (e.g. 0.0.0.0:80 by 10.0.0.1:80)
// fails; remove the old one first.
func (m *Manager) Ensure(key string, specs []ListenerSpec) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidSpec)
	}
	wanted := make([]spec, 0, len(specs))
	seen := make(map[listenerID]struct{}, len(specs))
	for _, s := range specs {
		n, err := normalize(s)
		if err != nil {
			return err
		}
		if _, dup := seen[n.id]; dup {
			return fmt.Errorf("%w: %s listed more than once", ErrInvalidSpec, n.id)
		}
		seen[n.id] = struct{}{}
		wanted = append(wanted, n)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	current := make(map[listenerID]*listener, len(m.services[key]))
	for _, l := range m.services[key] {
		current[l.id] = l
	}

	// Bind everything new first; roll back on the first failure.
	fresh := make(map[listenerID]*listener)
	for i := range wanted {
		s := &wanted[i]
		if _, ok := current[s.id]; ok {
			continue
		}
		var l *listener
		var err error
		if owner, taken := m.owners[s.id]; taken {
			err = &BindError{Protocol: s.id.protocol, Address: s.id.addr,
				Err: fmt.Errorf("%w by service %q", ErrAddressInUse, owner)}
		} else {
			l, err = m.bind(key, s)
		}
		if err != nil {
			for _, b := range fresh {
				b.unbind()
			}
			m.log.V(2).Info("Ensure failed; previous listeners kept", "service", key, "err", err.Error())
			return err
		}
		fresh[s.id] = l
	}

	// Commit: nothing below can fail.
	next := make([]*listener, 0, len(wanted))
	for i := range wanted {
		s := &wanted[i]
		if l, ok := current[s.id]; ok {
			l.update(s)
			next = append(next, l)
			continue
		}
		l := fresh[s.id]
		l.start(s)
		m.owners[s.id] = key
		next = append(next, l)
	}
	for _, l := range m.services[key] {
		if _, keep := seen[l.id]; !keep {
			m.closeListener(l)
		}
	}
	if len(next) == 0 {
		delete(m.services, key)
	} else {
		m.services[key] = next
	}
	return nil
}

// Delete closes all listeners of key, ending their connections and flows. It is
// a no-op for an unknown key.
func (m *Manager) Delete(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.services[key] {
		m.closeListener(l)
	}
	delete(m.services, key)
}

// Keys returns the keys that have listeners, sorted.
func (m *Manager) Keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(m.services))
	for k := range m.services {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Status returns the state of key's listeners in the order of the last Ensure,
// or nil for an unknown key.
func (m *Manager) Status(key string) []ListenerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls := m.services[key]
	if len(ls) == 0 {
		return nil
	}
	out := make([]ListenerStatus, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.status())
	}
	return out
}

// Close closes every listener and waits for all goroutines of the Manager to
// end. It is idempotent; Ensure fails with ErrClosed afterwards.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	for _, key := range slices.Sorted(maps.Keys(m.services)) {
		for _, l := range m.services[key] {
			m.closeListener(l)
		}
	}
	clear(m.services)
	m.health.CloseIdleConnections()
	m.log.V(2).Info("L4 proxy closed")
}

// closeListener stops l and forgets its address. m.mu must be held.
func (m *Manager) closeListener(l *listener) {
	l.close()
	delete(m.owners, l.id)
}
