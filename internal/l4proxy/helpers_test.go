package l4proxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/l4proxy"
)

// Bounds of every wait in the tests.
const (
	waitFor   = 10 * time.Second // positive conditions
	tick      = 10 * time.Millisecond
	ioTimeout = 5 * time.Second        // deadline of every client and backend socket operation
	silence   = 300 * time.Millisecond // how long "no UDP reply" is awaited
)

// Short health checks so that transitions happen within milliseconds.
// The timeout is generous so that a loaded machine does not fail healthy
// backends; dead ones fail at once (connection refused, HTTP 503).
var fastHealth = l4proxy.HealthCheck{Interval: 20 * time.Millisecond, Timeout: 2 * time.Second}

var (
	loopbackSeq atomic.Uint32
	// loopbackNet differs between concurrently running test binaries.
	loopbackNet = byte(100 + os.Getpid()%100)
)

// uniqueLoopback returns an IPv4 loopback address no other test (and, in
// practice, no other process) uses, so that fixed ports on it are free.
func uniqueLoopback() netip.Addr {
	n := loopbackSeq.Add(1)
	return netip.AddrFrom4([4]byte{127, loopbackNet, byte(n / 250 % 256), byte(n%250 + 1)})
}

// freeAddr returns ip:port with a port that was just free for proto on ip.
func freeAddr(t *testing.T, proto l4proxy.Protocol, ip netip.Addr) netip.AddrPort {
	t.Helper()
	var a net.Addr
	switch proto {
	case l4proxy.TCP:
		ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
		require.NoError(t, err)
		a = ln.Addr()
		require.NoError(t, ln.Close())
	case l4proxy.UDP:
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
		require.NoError(t, err)
		a = c.LocalAddr()
		require.NoError(t, c.Close())
	}
	ap, err := netip.ParseAddrPort(a.String())
	require.NoError(t, err)
	return ap
}

// loopback returns the loopback address of family ("4" or "6") to bind
// backends to, skipping the test when the machine has no ::1.
func loopback(t *testing.T, family string) netip.Addr {
	t.Helper()
	if family == "4" {
		return uniqueLoopback()
	}
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	require.NoError(t, ln.Close())
	return netip.IPv6Loopback()
}

func newManager(t *testing.T, opts l4proxy.Options) *l4proxy.Manager {
	t.Helper()
	if opts.Logger.GetSink() == nil {
		opts.Logger = testr.NewWithOptions(t, testr.Options{Verbosity: 4})
	}
	m := l4proxy.NewManager(opts)
	t.Cleanup(m.Close)
	return m
}

// server is a test backend: a TCP server answering each line with
// "<name>:<line>" and closing on EOF, or a UDP server answering each datagram
// with "<name>:<datagram>".
type server struct {
	name  string
	proto l4proxy.Protocol
	addr  netip.AddrPort

	ln   *net.TCPListener
	pc   *net.UDPConn
	mu   sync.Mutex
	conn map[net.Conn]struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// startServer starts a backend on addr (port 0 picks one) and stops it at the
// end of the test.
func startServer(t *testing.T, name string, proto l4proxy.Protocol, addr netip.AddrPort) *server {
	t.Helper()
	s := &server{name: name, proto: proto, conn: make(map[net.Conn]struct{})}
	var err error
	switch proto {
	case l4proxy.TCP:
		s.ln, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(addr))
		require.NoError(t, err)
		s.addr = s.ln.Addr().(*net.TCPAddr).AddrPort()
		s.wg.Go(s.acceptLoop)
	case l4proxy.UDP:
		s.pc, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
		require.NoError(t, err)
		s.addr = s.pc.LocalAddr().(*net.UDPAddr).AddrPort()
		s.wg.Go(s.udpLoop)
	}
	t.Cleanup(s.stop)
	return s
}

func (s *server) backend() l4proxy.Backend { return l4proxy.Backend{Name: s.name, Addr: s.addr} }

func (s *server) acceptLoop() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed by stop
		}
		s.mu.Lock()
		s.conn[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.conn, c)
				s.mu.Unlock()
				_ = c.Close()
			}()
			_ = c.SetDeadline(time.Now().Add(waitFor))
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if _, err := io.WriteString(c, s.name+":"+line); err != nil {
					return
				}
			}
		})
	}
}

func (s *server) udpLoop() {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := s.pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			return // closed by stop
		}
		_, _ = s.pc.WriteToUDPAddrPort(append([]byte(s.name+":"), buf[:n]...), from)
	}
}

// stop closes the server and its connections and waits for its goroutines.
func (s *server) stop() {
	s.once.Do(func() {
		if s.ln != nil {
			_ = s.ln.Close()
		}
		if s.pc != nil {
			_ = s.pc.Close()
		}
		s.mu.Lock()
		for c := range s.conn {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
}

// healthServer is kube-proxy's health-check node port of one node: it answers
// GETs with the current code.
type healthServer struct {
	code  atomic.Int32
	paths sync.Map // path → true
}

func startHealthServer(t *testing.T, addr netip.AddrPort, code int) *healthServer {
	t.Helper()
	h := &healthServer{}
	h.code.Store(int32(code))
	ln, err := net.Listen("tcp", addr.String())
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.paths.Store(r.URL.Path, true)
		w.WriteHeader(int(h.code.Load()))
	}))
	require.NoError(t, srv.Listener.Close())
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return h
}

// roundTrip sends msg to the proxy at to, from the local IP from if valid, and
// returns the name of the backend that answered. TCP half-closes after the
// request and reads the response to EOF; UDP uses a new socket (a new flow) and
// waits up to wait for the answer.
func roundTrip(t *testing.T, proto l4proxy.Protocol, to netip.AddrPort, from netip.Addr, msg string, wait time.Duration) (string, error) {
	t.Helper()
	var resp string
	switch proto {
	case l4proxy.TCP:
		d := net.Dialer{Timeout: ioTimeout}
		if from.IsValid() {
			d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0))
		}
		c, err := d.DialContext(t.Context(), "tcp", to.String())
		if err != nil {
			return "", err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(wait))
		if _, err := io.WriteString(c, msg+"\n"); err != nil {
			return "", err
		}
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			return "", err
		}
		b, err := io.ReadAll(c)
		if err != nil {
			return "", err
		}
		resp = strings.TrimSuffix(string(b), "\n")
	case l4proxy.UDP:
		c, err := udpClient(t, to, from)
		if err != nil {
			return "", err
		}
		defer c.Close()
		if resp, err = udpAsk(c, msg, wait); err != nil {
			return "", err
		}
	}
	name, got, ok := strings.Cut(resp, ":")
	if !ok || got != msg {
		return "", errors.New("unexpected response " + resp)
	}
	return name, nil
}

func udpClient(t *testing.T, to netip.AddrPort, from netip.Addr) (*net.UDPConn, error) {
	t.Helper()
	var local *net.UDPAddr
	if from.IsValid() {
		local = net.UDPAddrFromAddrPort(netip.AddrPortFrom(from, 0))
	}
	return net.DialUDP("udp", local, net.UDPAddrFromAddrPort(to))
}

// udpAsk sends msg on c and returns the answer received within wait.
func udpAsk(c *net.UDPConn, msg string, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 64<<10)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// spread makes n round trips and counts the answering backends; every trip must
// succeed.
func spread(t *testing.T, proto l4proxy.Protocol, to netip.AddrPort, n int) map[string]int {
	t.Helper()
	got := make(map[string]int)
	for i := range n {
		name, err := roundTrip(t, proto, to, netip.Addr{}, "hello", ioTimeout)
		require.NoError(t, err, "round trip %d", i)
		got[name]++
	}
	return got
}

// lineConn is an interactive TCP client.
type lineConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialLine(t *testing.T, to netip.AddrPort) *lineConn {
	t.Helper()
	d := net.Dialer{Timeout: ioTimeout}
	c, err := d.DialContext(t.Context(), "tcp", to.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &lineConn{c: c, r: bufio.NewReader(c)}
}

// ask sends one line and returns the answer line without its newline.
func (lc *lineConn) ask(msg string) (string, error) {
	_ = lc.c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := io.WriteString(lc.c, msg+"\n"); err != nil {
		return "", err
	}
	line, err := lc.r.ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

func status(t *testing.T, m *l4proxy.Manager, key string) l4proxy.ListenerStatus {
	t.Helper()
	st := m.Status(key)
	require.Len(t, st, 1)
	return st[0]
}

// healthy reports the health of the named backend of key's only listener. It
// is used inside Eventually conditions, which run on another goroutine, so it
// must not call require.
func healthy(m *l4proxy.Manager, key, name string) bool {
	st := m.Status(key)
	if len(st) != 1 {
		return false
	}
	for _, b := range st[0].Backends {
		if b.Name == name {
			return b.Healthy
		}
	}
	return false
}

// counters returns the counters of key's only listener (zero if it has none);
// safe inside Eventually conditions.
func counters(m *l4proxy.Manager, key string) l4proxy.Counters {
	st := m.Status(key)
	if len(st) != 1 {
		return l4proxy.Counters{}
	}
	return st[0].Counters
}
