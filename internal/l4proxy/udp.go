package l4proxy

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// maxDatagram is the largest UDP payload (IPv4: 65507, IPv6 without jumbograms:
// 65527), rounded up.
const maxDatagram = 64 << 10

var datagramBuffers = sync.Pool{New: func() any { b := make([]byte, maxDatagram); return &b }}

// clockBase anchors monotonic timestamps stored as durations.
var clockBase = time.Now()

func monoNow() time.Duration { return time.Since(clockBase) }

// udpFlow relays the datagrams of one client address through its own connected
// socket to one backend.
type udpFlow struct {
	client  netip.AddrPort
	backend *backend
	conn    *net.UDPConn
	last    atomic.Int64 // monoNow of the last datagram in either direction
	ended   atomic.Bool
	in, out atomic.Uint64
}

func (f *udpFlow) touch() { f.last.Store(int64(monoNow())) }

// readLoop reads client datagrams from the listening socket until it is closed.
func (l *listener) readLoop() {
	bp := datagramBuffers.Get().(*[]byte)
	defer datagramBuffers.Put(bp)
	buf := *bp
	var bo backoff
	for {
		n, client, err := l.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if !bo.failed(l, err, "Reading a datagram") {
				return
			}
			continue
		}
		bo.reset()
		l.forward(buf[:n], client)
	}
}

// forward sends one client datagram to the client's flow, opening it if needed.
func (l *listener) forward(p []byte, client netip.AddrPort) {
	if !l.allows(client.Addr()) {
		l.stats.rejected.Add(1)
		l.log.V(5).Info("Datagram dropped by source ranges", "client", client.String())
		return
	}
	// Two attempts: the flow may end (idle, backend refused) between the lookup
	// and the write, and the datagram should then open a new one.
	for attempt := 0; attempt < 2; attempt++ {
		f := l.flowFor(client)
		if f == nil {
			return
		}
		_, err := f.conn.Write(p)
		if err == nil {
			f.touch()
			f.in.Add(uint64(len(p)))
			l.stats.bytesIn.Add(uint64(len(p)))
			return
		}
		// Typically ECONNREFUSED, reported after an ICMP port unreachable: the
		// next datagram opens a new flow, possibly to another backend.
		l.endFlow(f, "forwarding failed: "+err.Error())
		if !errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// flowFor returns the live flow of client, opening one if there is none or if
// its backend was removed or became unhealthy. nil means the datagram is to be
// dropped (and has been counted). Only readLoop calls it, so flows of one client
// are never opened concurrently.
func (l *listener) flowFor(client netip.AddrPort) *udpFlow {
	l.mu.Lock()
	f, closing, count := l.flows[client], l.closing, len(l.flows)
	l.mu.Unlock()
	if closing {
		return nil
	}
	if f != nil {
		if !f.backend.removed.Load() && f.backend.healthy.Load() {
			return f
		}
		l.endFlow(f, "backend removed or unhealthy")
		count--
	}
	if count >= l.m.opts.MaxUDPFlows {
		l.stats.overflow.Add(1)
		if l.tableFull.CompareAndSwap(false, true) {
			l.log.V(2).Info("UDP flow table full; dropping datagrams that would open new flows",
				"maxFlows", l.m.opts.MaxUDPFlows)
		}
		l.log.V(5).Info("Datagram dropped: flow table full", "client", client.String())
		return nil
	}
	for b := range l.candidates() {
		conn, err := net.DialUDP(network("udp", b.Addr), nil, net.UDPAddrFromAddrPort(b.Addr))
		if err != nil {
			l.log.V(4).Info("Opening a socket to backend failed; trying the next", "client", client.String(),
				"backend", b.Name, "err", err.Error())
			continue
		}
		nf := &udpFlow{client: client, backend: b, conn: conn}
		nf.touch()
		l.mu.Lock()
		if l.closing {
			l.mu.Unlock()
			_ = conn.Close()
			return nil
		}
		l.flows[client] = nf
		l.mu.Unlock()
		l.tableFull.Store(false)
		l.stats.accepted.Add(1)
		l.stats.active.Add(1)
		l.wg.Go(func() { l.replyLoop(nf) })
		l.log.V(4).Info("UDP flow opened", "client", client.String(), "backend", b.Name)
		return nf
	}
	l.stats.noBackend.Add(1)
	l.log.V(5).Info("Datagram dropped: no backend available", "client", client.String())
	return nil
}

// replyLoop relays the backend's datagrams of f to its client from the listening
// socket, and ends f once it has been idle for the listener's UDP idle timeout.
func (l *listener) replyLoop(f *udpFlow) {
	bp := datagramBuffers.Get().(*[]byte)
	defer datagramBuffers.Put(bp)
	buf := *bp
	for {
		idle := l.cfg.Load().udpIdle
		_ = f.conn.SetReadDeadline(clockBase.Add(time.Duration(f.last.Load()) + idle))
		n, err := f.conn.Read(buf)
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				if monoNow()-time.Duration(f.last.Load()) >= idle {
					l.endFlow(f, "idle")
					return
				}
				continue // the client sent something meanwhile
			case errors.Is(err, net.ErrClosed):
				l.endFlow(f, "closed")
			case errors.Is(err, syscall.ECONNREFUSED):
				l.endFlow(f, "backend refused")
			default:
				l.endFlow(f, "reading from backend failed: "+err.Error())
			}
			return
		}
		f.touch()
		if _, err := l.udp.WriteToUDPAddrPort(buf[:n], f.client); err != nil {
			if errors.Is(err, net.ErrClosed) {
				l.endFlow(f, "listener closed")
				return
			}
			l.log.V(5).Info("Replying to client failed", "client", f.client.String(), "err", err.Error())
			continue
		}
		f.out.Add(uint64(n))
		l.stats.bytesOut.Add(uint64(n))
	}
}

// endFlow forgets f and closes its socket, which ends its replyLoop. It is
// idempotent.
func (l *listener) endFlow(f *udpFlow, reason string) {
	if !f.ended.CompareAndSwap(false, true) {
		return
	}
	l.mu.Lock()
	if l.flows[f.client] == f {
		delete(l.flows, f.client)
	}
	l.mu.Unlock()
	_ = f.conn.Close()
	l.stats.active.Add(-1)
	l.log.V(4).Info("UDP flow ended", "client", f.client.String(), "backend", f.backend.Name, "reason", reason,
		"bytesIn", f.in.Load(), "bytesOut", f.out.Load())
}
