package l4proxy

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// tcpConn is one proxied connection. backend is set once dialled, under
// listener.mu.
type tcpConn struct {
	client  *net.TCPConn
	backend *net.TCPConn
}

// abort resets both sides.
func (c *tcpConn) abort() {
	reset(c.client)
	if c.backend != nil {
		reset(c.backend)
	}
}

// reset closes c with an RST instead of a FIN.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

// acceptLoop accepts connections until the listener is closed.
func (l *listener) acceptLoop() {
	var bo backoff
	for {
		c, err := l.tcp.AcceptTCP()
		if err != nil {
			if !bo.failed(l, err, "Accepting a connection") {
				return
			}
			continue
		}
		bo.reset()
		client := addrPortOf(c.RemoteAddr())
		if !l.allows(client.Addr()) {
			l.stats.rejected.Add(1)
			l.log.V(4).Info("Connection rejected by source ranges", "client", client.String())
			reset(c)
			continue
		}
		l.stats.accepted.Add(1)
		l.wg.Go(func() { l.serveTCP(c, client) })
	}
}

// serveTCP connects an accepted client to a backend and copies both ways.
func (l *listener) serveTCP(client *net.TCPConn, clientAddr netip.AddrPort) {
	pc := &tcpConn{client: client}
	if !l.track(pc) {
		reset(client)
		return
	}
	defer l.untrack(pc)
	l.stats.active.Add(1)
	defer l.stats.active.Add(-1)

	b, upstream := l.dialBackend(clientAddr)
	if upstream == nil {
		if l.ctx.Err() == nil {
			l.stats.noBackend.Add(1)
			l.log.V(4).Info("No backend available; connection reset", "client", clientAddr.String())
		}
		reset(client)
		return
	}
	if !l.attach(pc, upstream) {
		reset(upstream)
		reset(client)
		return
	}
	if v := l.cfg.Load().proxyProtocol; v != 0 {
		dst, _ := netip.ParseAddrPort(client.LocalAddr().String())
		_ = upstream.SetWriteDeadline(time.Now().Add(l.m.opts.DialTimeout))
		if _, err := upstream.Write(proxyHeader(v, clientAddr, dst)); err != nil {
			l.log.V(4).Info("Writing the PROXY header failed; connection reset", "client", clientAddr.String(), "backend", b.Name, "err", err)
			reset(upstream)
			reset(client)
			return
		}
		_ = upstream.SetWriteDeadline(time.Time{})
	}
	l.log.V(4).Info("Connection proxied", "client", clientAddr.String(), "backend", b.Name)
	start := time.Now()
	in, out := pipe(client, upstream, &l.stats.bytesIn, &l.stats.bytesOut)
	l.log.V(4).Info("Connection closed", "client", clientAddr.String(), "backend", b.Name,
		"bytesIn", in, "bytesOut", out, "duration", time.Since(start).String())
}

// dialBackend connects to the first candidate that answers, trying each at most
// once.
func (l *listener) dialBackend(client netip.AddrPort) (*backend, *net.TCPConn) {
	d := net.Dialer{Timeout: l.m.opts.DialTimeout}
	for b := range l.candidates() {
		c, err := d.DialContext(l.ctx, "tcp", b.Addr.String())
		if err == nil {
			return b, c.(*net.TCPConn)
		}
		if l.ctx.Err() != nil {
			return nil, nil
		}
		l.log.V(4).Info("Dialling backend failed; trying the next", "client", client.String(),
			"backend", b.Name, "err", err.Error())
	}
	return nil, nil
}

// track registers c so that close can end it; false if the listener is closing.
func (l *listener) track(c *tcpConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *listener) untrack(c *tcpConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, c)
}

// attach records the backend connection of c; false if the listener is closing.
func (l *listener) attach(c *tcpConn, upstream *net.TCPConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	c.backend = upstream
	return true
}

// pipe copies client→upstream and upstream→client until both directions have
// ended, then closes both. An EOF is propagated as a half-close (CloseWrite), so
// request/response protocols that shut down their write side work; any other
// error resets both connections.
func pipe(client, upstream *net.TCPConn, inCounter, outCounter *atomic.Uint64) (in, out uint64) {
	var wg sync.WaitGroup
	wg.Go(func() { in = copyHalf(upstream, client, inCounter) })
	out = copyHalf(client, upstream, outCounter)
	wg.Wait()
	_ = client.Close()
	_ = upstream.Close()
	return in, out
}

const copyBufferSize = 32 << 10

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// copyHalf copies src to dst, adding to counter as it goes so that long-lived
// connections show up in the counters.
func copyHalf(dst, src *net.TCPConn, counter *atomic.Uint64) uint64 {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	var total uint64
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			w, werr := dst.Write(buf[:n])
			total += uint64(w)
			counter.Add(uint64(w))
			if werr != nil {
				reset(src)
				reset(dst)
				return total
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				_ = dst.CloseWrite()
				return total
			}
			reset(src)
			reset(dst)
			return total
		}
	}
}
