package l4proxy

import (
	"context"
	"errors"
	"iter"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// listener is one bound VIP:port with its backends, probers and connections or
// flows. Its lifecycle, driven by the Manager under Manager.mu, is
// bind → start → update* → close, or bind → unbind on a failed Ensure.
type listener struct {
	id  listenerID
	key string
	m   *Manager
	log logr.Logger

	ctx    context.Context // cancelled by close; parent of dials and probers
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of the listener

	cfg      atomic.Pointer[runtimeConfig]
	backends atomic.Pointer[[]*backend] // in spec order; replaced, never mutated
	cursor   atomic.Uint32              // round-robin position in backends
	stats    counters

	// Guarded by Manager.mu (update and close are only called under it).
	last  spec
	byKey map[Backend]*backend
	probe probeConfig

	tcp       *net.TCPListener // TCP listeners
	udp       *net.UDPConn     // UDP listeners
	tableFull atomic.Bool      // UDP flow table full; logged once per episode

	mu      sync.Mutex // guards the fields below
	closing bool
	conns   map[*tcpConn]struct{}       // TCP
	flows   map[netip.AddrPort]*udpFlow // UDP
}

// counters are the atomic counterparts of Counters.
type counters struct {
	accepted, rejected, noBackend, overflow, bytesIn, bytesOut atomic.Uint64
	active                                                     atomic.Int64
}

// backend is the state of one Backend within one listener.
type backend struct {
	Backend
	healthy atomic.Bool
	removed atomic.Bool // no longer in the listener's spec

	// Guarded by Manager.mu.
	stopProbe context.CancelFunc
	probeDone chan struct{}
}

// bind creates the socket of s. No goroutine is started until start.
func (m *Manager) bind(key string, s *spec) (*listener, error) {
	l := &listener{
		id:  s.id,
		key: key,
		m:   m,
		log: m.log.WithValues("service", key, "protocol", s.id.protocol, "address", s.id.addr.String()),
	}
	var err error
	switch s.id.protocol {
	case TCP:
		l.tcp, err = net.ListenTCP(network("tcp", s.id.addr), net.TCPAddrFromAddrPort(s.id.addr))
		l.conns = make(map[*tcpConn]struct{})
	case UDP:
		l.udp, err = net.ListenUDP(network("udp", s.id.addr), net.UDPAddrFromAddrPort(s.id.addr))
		l.flows = make(map[netip.AddrPort]*udpFlow)
	}
	if err != nil {
		return nil, &BindError{Protocol: s.id.protocol, Address: s.id.addr, Err: err}
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// network returns the address-family specific network name for addr, so that
// an IPv6 listener does not also accept IPv4 and vice versa.
func network(proto string, addr netip.AddrPort) string {
	if addr.Addr().Is4() {
		return proto + "4"
	}
	return proto + "6"
}

// unbind closes the socket of a listener that was never started.
func (l *listener) unbind() {
	l.cancel()
	l.closeSockets()
}

// closeSockets closes the listening sockets.
func (l *listener) closeSockets() {
	if l.tcp != nil {
		_ = l.tcp.Close()
	}
	if l.udp != nil {
		_ = l.udp.Close()
	}
}

// start applies s and starts serving.
func (l *listener) start(s *spec) {
	l.apply(s)
	switch l.id.protocol {
	case TCP:
		l.wg.Go(l.acceptLoop)
	case UDP:
		l.wg.Go(l.readLoop)
	}
	l.log.V(2).Info("Listener started", "backends", len(s.backends), "sourceRanges", len(s.cfg.sourceRanges))
}

// update applies s in place.
func (l *listener) update(s *spec) {
	if l.last.equal(s) {
		return
	}
	l.apply(s)
	l.log.V(2).Info("Listener updated", "backends", len(s.backends), "sourceRanges", len(s.cfg.sourceRanges))
}

// apply makes the listener's configuration, backends and probers match s.
// Backends present before and after keep their state (health and counters);
// probers are restarted only for new backends or when the health check changed.
func (l *listener) apply(s *spec) {
	l.last = *s
	cfg := s.cfg
	l.cfg.Store(&cfg)

	restart := s.probe != l.probe
	next := make(map[Backend]*backend, len(s.backends))
	list := make([]*backend, 0, len(s.backends))
	for _, nb := range s.backends {
		b, ok := l.byKey[nb]
		switch {
		case !ok:
			b = &backend{Backend: nb}
			b.healthy.Store(true)
			l.startProber(b, s.probe)
		case restart:
			l.stopProber(b)
			if s.probe.mode == probeNone {
				b.healthy.Store(true)
			}
			l.startProber(b, s.probe)
		}
		next[nb] = b
		list = append(list, b)
	}
	for k, b := range l.byKey {
		if _, keep := next[k]; !keep {
			b.removed.Store(true)
			l.stopProber(b)
		}
	}
	l.byKey, l.probe = next, s.probe
	l.backends.Store(&list)
}

// close stops the listener: the socket, every connection or flow, every prober;
// it returns when all goroutines have ended.
func (l *listener) close() {
	l.cancel()
	l.closeSockets()
	l.mu.Lock()
	l.closing = true
	conns, flows := l.conns, l.flows
	l.conns, l.flows = nil, nil
	l.mu.Unlock()
	for c := range conns {
		c.abort()
	}
	for _, f := range flows {
		l.endFlow(f, "listener closed")
	}
	l.wg.Wait()
	for _, b := range l.byKey {
		b.removed.Store(true)
	}
	l.log.V(2).Info("Listener stopped", "accepted", l.stats.accepted.Load(), "rejected", l.stats.rejected.Load(),
		"noBackend", l.stats.noBackend.Load(), "bytesIn", l.stats.bytesIn.Load(), "bytesOut", l.stats.bytesOut.Load())
}

func (l *listener) status() ListenerStatus {
	st := ListenerStatus{
		Protocol: l.id.protocol,
		Address:  l.id.addr,
		Counters: Counters{
			Accepted:  l.stats.accepted.Load(),
			Rejected:  l.stats.rejected.Load(),
			NoBackend: l.stats.noBackend.Load(),
			Overflow:  l.stats.overflow.Load(),
			BytesIn:   l.stats.bytesIn.Load(),
			BytesOut:  l.stats.bytesOut.Load(),
			Active:    l.stats.active.Load(),
		},
	}
	for _, b := range *l.backends.Load() {
		st.Backends = append(st.Backends, BackendStatus{Name: b.Name, Addr: b.Addr, Healthy: b.healthy.Load()})
	}
	return st
}

// candidates yields the backends that may receive a new connection or flow, in
// round-robin order starting after the last one chosen. Each backend is yielded
// at most once; the backend a consumer stops at becomes the last one chosen.
// Eligibility and health are evaluated lazily, so a consumer that takes the
// first candidate asks Options.Eligible about as few backends as possible.
func (l *listener) candidates() iter.Seq[*backend] {
	return func(yield func(*backend) bool) {
		list := *l.backends.Load()
		n := uint32(len(list))
		if n == 0 {
			return
		}
		start := l.cursor.Load() % n
		for i := range n {
			j := (start + i) % n
			b := list[j]
			if !b.healthy.Load() || !l.eligible(b.Name) {
				continue
			}
			l.cursor.Store(j + 1)
			if !yield(b) {
				return
			}
		}
	}
}

func (l *listener) eligible(name string) bool {
	return l.m.opts.Eligible == nil || l.m.opts.Eligible(name)
}

// allows reports whether a client may use the listener.
func (l *listener) allows(client netip.Addr) bool {
	return l.cfg.Load().allows(client)
}

// backoff is the delay after failing accepts or reads, so that a persistent
// error (e.g. EMFILE) does not make the loop spin.
type backoff struct{ d time.Duration }

// wait sleeps for the next delay (5ms doubling up to 1s); false if ctx ended.
func (b *backoff) wait(ctx context.Context) bool {
	b.d = min(max(2*b.d, 5*time.Millisecond), time.Second)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (b *backoff) reset() { b.d = 0 }

// failed handles an error of the listening socket's loop (doing what): false
// when the loop is to end (the listener closed), else true once backed off.
func (b *backoff) failed(l *listener, err error, doing string) bool {
	if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
		return false
	}
	l.log.Error(err, doing+" failed; backing off")
	return b.wait(l.ctx)
}

// addrPortOf returns the address of a TCP or UDP net.Addr.
func addrPortOf(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.AddrPort()
	case *net.UDPAddr:
		return a.AddrPort()
	}
	return netip.AddrPort{}
}
