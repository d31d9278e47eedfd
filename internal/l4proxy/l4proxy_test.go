package l4proxy_test

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/l4proxy"
)

func TestProxiesTrafficRoundRobin(t *testing.T) {
	cases := []struct {
		name   string
		proto  l4proxy.Protocol
		family string
	}{
		{"TCP over IPv4 echoes through the proxy and alternates between both backends", l4proxy.TCP, "4"},
		{"TCP over IPv6 echoes through the proxy and alternates between both backends", l4proxy.TCP, "6"},
		{"UDP over IPv4 answers from the VIP and alternates new flows between both backends", l4proxy.UDP, "4"},
		{"UDP over IPv6 answers from the VIP and alternates new flows between both backends", l4proxy.UDP, "6"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ip := loopback(t, tc.family)
			a := startServer(t, "a", tc.proto, netip.AddrPortFrom(ip, 0))
			b := startServer(t, "b", tc.proto, netip.AddrPortFrom(ip, 0))
			vip := freeAddr(t, tc.proto, ip)
			m := newManager(t, l4proxy.Options{})

			require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{{
				Protocol: tc.proto, Address: vip, Backends: []l4proxy.Backend{a.backend(), b.backend()},
			}}))

			assert.Equal(t, map[string]int{"a": 2, "b": 2}, spread(t, tc.proto, vip, 4))
			st := status(t, m, "svc")
			assert.Equal(t, tc.proto, st.Protocol)
			assert.Equal(t, vip, st.Address)
			assert.Equal(t, []l4proxy.BackendStatus{
				{Name: "a", Addr: a.addr, Healthy: true}, {Name: "b", Addr: b.addr, Healthy: true},
			}, st.Backends)
			want := l4proxy.Counters{Accepted: 4, BytesIn: 4 * uint64(len("hello\n")), BytesOut: 4 * uint64(len("a:hello\n"))}
			if tc.proto == l4proxy.UDP {
				want.BytesIn, want.BytesOut = 4*uint64(len("hello")), 4*uint64(len("a:hello"))
				want.Active = 4 // the flows stay until they are idle
			}
			require.Eventually(t, func() bool { return counters(m, "svc") == want }, waitFor, tick,
				"counters %+v, want %+v", counters(m, "svc"), want)
			assert.Equal(t, []string{"svc"}, m.Keys())
		})
	}
}

func TestSourceRanges(t *testing.T) {
	inside, outside := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")
	cases := []struct {
		name   string
		proto  l4proxy.Protocol
		from   netip.Addr
		wantOK bool
	}{
		{"a TCP client inside the source ranges is proxied", l4proxy.TCP, inside, true},
		{"a TCP client outside the source ranges is reset", l4proxy.TCP, outside, false},
		{"UDP datagrams from inside the source ranges are proxied", l4proxy.UDP, inside, true},
		{"UDP datagrams from outside the source ranges are dropped", l4proxy.UDP, outside, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := startServer(t, "a", tc.proto, netip.MustParseAddrPort("127.0.0.1:0"))
			vip := freeAddr(t, tc.proto, uniqueLoopback())
			m := newManager(t, l4proxy.Options{})
			require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{{
				Protocol: tc.proto, Address: vip, Backends: []l4proxy.Backend{a.backend()},
				SourceRanges: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
			}}))

			wait := ioTimeout
			if !tc.wantOK {
				wait = silence
			}
			name, err := roundTrip(t, tc.proto, vip, tc.from, "hello", wait)
			if tc.wantOK {
				require.NoError(t, err)
				assert.Equal(t, "a", name)
				assert.Equal(t, uint64(1), counters(m, "svc").Accepted)
				assert.Zero(t, counters(m, "svc").Rejected)
				return
			}
			require.Error(t, err, "answered by %q", name)
			require.Eventually(t, func() bool { return counters(m, "svc").Rejected == 1 }, waitFor, tick)
			assert.Zero(t, counters(m, "svc").Accepted)
		})
	}
}

func TestDeadBackendIsSkippedAfterHealthChecks(t *testing.T) {
	cases := []struct {
		name      string
		unhealthy int
	}{
		{"a TCP backend that stops listening is marked unhealthy, skipped, and used again once it is back", 2},
		{"with an unhealthy threshold of one the first failed connect marks it unhealthy", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := startServer(t, "a", l4proxy.TCP, netip.AddrPortFrom(uniqueLoopback(), 0))
			b := startServer(t, "b", l4proxy.TCP, netip.AddrPortFrom(uniqueLoopback(), 0))
			vip := freeAddr(t, l4proxy.TCP, uniqueLoopback())
			m := newManager(t, l4proxy.Options{})
			hc := fastHealth
			hc.UnhealthyThreshold = tc.unhealthy
			require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{{
				Protocol: l4proxy.TCP, Address: vip, Backends: []l4proxy.Backend{a.backend(), b.backend()}, HealthCheck: hc,
			}}))
			assert.Equal(t, map[string]int{"a": 1, "b": 1}, spread(t, l4proxy.TCP, vip, 2))

			b.stop()
			require.Eventually(t, func() bool { return !healthy(m, "svc", "b") }, waitFor, tick, "b never became unhealthy")
			assert.True(t, healthy(m, "svc", "a"))
			assert.Equal(t, map[string]int{"a": 4}, spread(t, l4proxy.TCP, vip, 4))
			assert.Zero(t, counters(m, "svc").NoBackend)

			startServer(t, "b", l4proxy.TCP, b.addr) // same address: nobody else uses this loopback IP
			require.Eventually(t, func() bool { return healthy(m, "svc", "b") }, waitFor, tick, "b never recovered")
			assert.Equal(t, map[string]int{"a": 2, "b": 2}, spread(t, l4proxy.TCP, vip, 4))
		})
	}
}

func TestHTTPHealthCheckForExternalTrafficPolicyLocal(t *testing.T) {
	cases := []struct {
		name  string
		proto l4proxy.Protocol
	}{
		{"a node whose TCP health endpoint answers 503 gets no connections until it answers 200", l4proxy.TCP},
		{"a node whose UDP health endpoint answers 503 gets no flows until it answers 200", l4proxy.UDP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ipA, ipB := uniqueLoopback(), uniqueLoopback()
			healthPort := freeAddr(t, l4proxy.TCP, ipA).Port()
			hA := startHealthServer(t, netip.AddrPortFrom(ipA, healthPort), 200)
			hB := startHealthServer(t, netip.AddrPortFrom(ipB, healthPort), 503)
			a := startServer(t, "a", tc.proto, netip.AddrPortFrom(ipA, 0))
			b := startServer(t, "b", tc.proto, netip.AddrPortFrom(ipB, 0))
			vip := freeAddr(t, tc.proto, uniqueLoopback())
			m := newManager(t, l4proxy.Options{})
			hc := fastHealth
			hc.HTTPPort, hc.HTTPPath = int(healthPort), "/healthz"
			require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{{
				Protocol: tc.proto, Address: vip, Backends: []l4proxy.Backend{a.backend(), b.backend()}, HealthCheck: hc,
			}}))

			require.Eventually(t, func() bool { return !healthy(m, "svc", "b") }, waitFor, tick, "b never became unhealthy")
			assert.True(t, healthy(m, "svc", "a"))
			assert.Equal(t, map[string]int{"a": 4}, spread(t, tc.proto, vip, 4))
			_, probed := hA.paths.Load("/healthz")
			assert.True(t, probed, "health check path not requested")

			hB.code.Store(200)
			require.Eventually(t, func() bool { return healthy(m, "svc", "b") }, waitFor, tick, "b never became healthy")
			got := spread(t, tc.proto, vip, 4)
			assert.Positive(t, got["b"], "b got no traffic after recovering: %v", got)
		})
	}
}

func TestEligible(t *testing.T) {
	cases := []struct {
		name      string
		proto     l4proxy.Protocol
		eligible  []string
		want      map[string]int // nil: no backend available
		later     []string       // eligibility after the first round
		wantLater map[string]int
	}{
		{
			name:  "an ineligible backend gets no TCP connections, and gets them as soon as it becomes eligible",
			proto: l4proxy.TCP, eligible: []string{"a"}, want: map[string]int{"a": 4},
			later: []string{"a", "b"}, wantLater: map[string]int{"a": 2, "b": 2},
		},
		{
			name:  "an ineligible backend gets no UDP flows, and gets them as soon as it becomes eligible",
			proto: l4proxy.UDP, eligible: []string{"b"}, want: map[string]int{"b": 4},
			later: []string{"a", "b"}, wantLater: map[string]int{"a": 2, "b": 2},
		},
		{
			name:  "a TCP client is reset and counted when no backend is eligible",
			proto: l4proxy.TCP, eligible: nil, want: nil,
			later: []string{"a"}, wantLater: map[string]int{"a": 4},
		},
		{
			name:  "a UDP datagram is dropped and counted when no backend is eligible",
			proto: l4proxy.UDP, eligible: nil, want: nil,
			later: []string{"b"}, wantLater: map[string]int{"b": 4},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var allowed atomic.Pointer[[]string]
			allowed.Store(&tc.eligible)
			ip := uniqueLoopback()
			a := startServer(t, "a", tc.proto, netip.AddrPortFrom(ip, 0))
			b := startServer(t, "b", tc.proto, netip.AddrPortFrom(ip, 0))
			vip := freeAddr(t, tc.proto, ip)
			m := newManager(t, l4proxy.Options{Eligible: func(name string) bool {
				for _, n := range *allowed.Load() {
					if n == name {
						return true
					}
				}
				return false
			}})
			require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{{
				Protocol: tc.proto, Address: vip, Backends: []l4proxy.Backend{a.backend(), b.backend()},
			}}))

			if tc.want == nil {
				name, err := roundTrip(t, tc.proto, vip, netip.Addr{}, "hello", silence)
				require.Error(t, err, "answered by %q", name)
				require.Eventually(t, func() bool { return counters(m, "svc").NoBackend == 1 }, waitFor, tick)
				assert.Equal(t, []l4proxy.BackendStatus{
					{Name: "a", Addr: a.addr, Healthy: true}, {Name: "b", Addr: b.addr, Healthy: true},
				}, status(t, m, "svc").Backends, "eligibility is not health")
			} else {
				assert.Equal(t, tc.want, spread(t, tc.proto, vip, 4))
			}

			allowed.Store(&tc.later)
			assert.Equal(t, tc.wantLater, spread(t, tc.proto, vip, 4))
		})
	}
}

func TestEnsureUpdatesInPlace(t *testing.T) {
	t.Run("an open TCP connection survives a backend change that steers new connections elsewhere", func(t *testing.T) {
		ip := uniqueLoopback()
		a := startServer(t, "a", l4proxy.TCP, netip.AddrPortFrom(ip, 0))
		b := startServer(t, "b", l4proxy.TCP, netip.AddrPortFrom(ip, 0))
		vip := freeAddr(t, l4proxy.TCP, ip)
		m := newManager(t, l4proxy.Options{})
		spec := l4proxy.ListenerSpec{Protocol: l4proxy.TCP, Address: vip, Backends: []l4proxy.Backend{a.backend()}}
		require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{spec}))
		open := dialLine(t, vip)
		got, err := open.ask("one")
		require.NoError(t, err)
		require.Equal(t, "a:one", got)

		spec.Backends = []l4proxy.Backend{b.backend()}
		spec.SourceRanges = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		spec.HealthCheck = fastHealth
		require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{spec}))

		got, err = open.ask("two")
		require.NoError(t, err, "the open connection was dropped")
		assert.Equal(t, "a:two", got)
		assert.Equal(t, map[string]int{"b": 2}, spread(t, l4proxy.TCP, vip, 2))
		st := status(t, m, "svc")
		assert.Equal(t, []l4proxy.BackendStatus{{Name: "b", Addr: b.addr, Healthy: true}}, st.Backends)
		assert.Equal(t, uint64(3), st.Counters.Accepted, "counters restarted: the listener was re-bound")
		require.Eventually(t, func() bool { return counters(m, "svc").Active == 1 }, waitFor, tick)
	})

	t.Run("a UDP flow whose backend is removed moves to the new backend on the same listener", func(t *testing.T) {
		ip := uniqueLoopback()
		a := startServer(t, "a", l4proxy.UDP, netip.AddrPortFrom(ip, 0))
		b := startServer(t, "b", l4proxy.UDP, netip.AddrPortFrom(ip, 0))
		vip := freeAddr(t, l4proxy.UDP, ip)
		m := newManager(t, l4proxy.Options{})
		spec := l4proxy.ListenerSpec{Protocol: l4proxy.UDP, Address: vip, Backends: []l4proxy.Backend{a.backend()}}
		require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{spec}))
		c, err := udpClient(t, vip, netip.Addr{})
		require.NoError(t, err)
		defer c.Close()
		got, err := udpAsk(c, "one", ioTimeout)
		require.NoError(t, err)
		require.Equal(t, "a:one", got)

		spec.Backends = []l4proxy.Backend{b.backend()}
		require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{spec}))
		got, err = udpAsk(c, "two", ioTimeout)
		require.NoError(t, err)
		assert.Equal(t, "b:two", got)
		st := status(t, m, "svc")
		assert.Equal(t, uint64(2), st.Counters.Accepted, "counters restarted: the listener was re-bound")
		require.Eventually(t, func() bool { return counters(m, "svc").Active == 1 }, waitFor, tick)
	})

	t.Run("ensuring the same specs again changes nothing", func(t *testing.T) {
		a := startServer(t, "a", l4proxy.TCP, netip.MustParseAddrPort("127.0.0.1:0"))
		vip := freeAddr(t, l4proxy.TCP, uniqueLoopback())
		m := newManager(t, l4proxy.Options{})
		specs := []l4proxy.ListenerSpec{{Protocol: l4proxy.TCP, Address: vip, Backends: []l4proxy.Backend{a.backend()}}}
		require.NoError(t, m.Ensure("svc", specs))
		open := dialLine(t, vip)
		_, err := open.ask("one")
		require.NoError(t, err)
		require.NoError(t, m.Ensure("svc", specs))
		got, err := open.ask("two")
		require.NoError(t, err)
		assert.Equal(t, "a:two", got)
	})
}

func TestEnsureClosesUnlistedListeners(t *testing.T) {
	cases := []struct {
		name string
		next func(kept l4proxy.ListenerSpec) []l4proxy.ListenerSpec
	}{
		{"a listener left out of the specs is closed while the others keep their connections",
			func(kept l4proxy.ListenerSpec) []l4proxy.ListenerSpec { return []l4proxy.ListenerSpec{kept} }},
		{"ensuring no specs closes every listener and forgets the key",
			func(l4proxy.ListenerSpec) []l4proxy.ListenerSpec { return nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := startServer(t, "a", l4proxy.TCP, netip.MustParseAddrPort("127.0.0.1:0"))
			kept := l4proxy.ListenerSpec{Protocol: l4proxy.TCP, Address: freeAddr(t, l4proxy.TCP, uniqueLoopback()),
				Backends: []l4proxy.Backend{a.backend()}}
			dropped := l4proxy.ListenerSpec{Protocol: l4proxy.TCP, Address: freeAddr(t, l4proxy.TCP, uniqueLoopback()),
				Backends: []l4proxy.Backend{a.backend()}}
			m := newManager(t, l4proxy.Options{})
			require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{dropped, kept}))
			open := dialLine(t, kept.Address)
			_, err := open.ask("one")
			require.NoError(t, err)

			next := tc.next(kept)
			require.NoError(t, m.Ensure("svc", next))

			ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(dropped.Address))
			require.NoError(t, err, "the dropped listener is still bound")
			require.NoError(t, ln.Close())
			st := m.Status("svc")
			require.Len(t, st, len(next))
			if len(next) == 0 {
				assert.Empty(t, m.Keys())
				return
			}
			assert.Equal(t, kept.Address, st[0].Address)
			got, err := open.ask("two")
			require.NoError(t, err, "the kept listener's connection was dropped")
			assert.Equal(t, "a:two", got)
		})
	}
}

func TestEnsureAddressInUse(t *testing.T) {
	cases := []struct {
		name  string
		proto l4proxy.Protocol
		// hold takes addr away from the "svc" key.
		hold func(t *testing.T, m *l4proxy.Manager, addr netip.AddrPort)
	}{
		{"a TCP address bound by another process fails with ErrAddressInUse and keeps the previous listeners", l4proxy.TCP,
			func(t *testing.T, _ *l4proxy.Manager, addr netip.AddrPort) {
				ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(addr))
				require.NoError(t, err)
				t.Cleanup(func() { _ = ln.Close() })
			}},
		{"a UDP address bound by another process fails with ErrAddressInUse and keeps the previous listeners", l4proxy.UDP,
			func(t *testing.T, _ *l4proxy.Manager, addr netip.AddrPort) {
				c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
				require.NoError(t, err)
				t.Cleanup(func() { _ = c.Close() })
			}},
		{"an address held by another key of the same manager fails with ErrAddressInUse", l4proxy.TCP,
			func(t *testing.T, m *l4proxy.Manager, addr netip.AddrPort) {
				require.NoError(t, m.Ensure("other", []l4proxy.ListenerSpec{{Protocol: l4proxy.TCP, Address: addr}}))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := startServer(t, "a", tc.proto, netip.MustParseAddrPort("127.0.0.1:0"))
			// Distinct IPs: ports freed by freeAddr could otherwise coincide.
			kept := freeAddr(t, tc.proto, uniqueLoopback())
			added := freeAddr(t, tc.proto, uniqueLoopback())
			taken := freeAddr(t, tc.proto, uniqueLoopback())
			m := newManager(t, l4proxy.Options{})
			spec := func(addr netip.AddrPort) l4proxy.ListenerSpec {
				return l4proxy.ListenerSpec{Protocol: tc.proto, Address: addr, Backends: []l4proxy.Backend{a.backend()}}
			}
			require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{spec(kept)}))
			tc.hold(t, m, taken)

			err := m.Ensure("svc", []l4proxy.ListenerSpec{spec(kept), spec(added), spec(taken)})
			require.ErrorIs(t, err, l4proxy.ErrAddressInUse)
			var be *l4proxy.BindError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, tc.proto, be.Protocol)
			assert.Equal(t, taken, be.Address)
			assert.Contains(t, err.Error(), string(tc.proto)+" "+taken.String())

			st := m.Status("svc")
			require.Len(t, st, 1)
			assert.Equal(t, kept, st[0].Address)
			name, err := roundTrip(t, tc.proto, kept, netip.Addr{}, "hello", ioTimeout)
			require.NoError(t, err, "the previous listener stopped working")
			assert.Equal(t, "a", name)
			// The listener bound by the failed call was closed again.
			switch tc.proto {
			case l4proxy.TCP:
				ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(added))
				require.NoError(t, err, "the failed Ensure left %s bound", added)
				require.NoError(t, ln.Close())
			case l4proxy.UDP:
				c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(added))
				require.NoError(t, err, "the failed Ensure left %s bound", added)
				require.NoError(t, c.Close())
			}
		})
	}
}

func TestEnsureRejectsInvalidSpecs(t *testing.T) {
	vip := netip.MustParseAddrPort("127.0.0.1:8080") // never bound: every spec is invalid
	node := l4proxy.Backend{Name: "n", Addr: netip.MustParseAddrPort("127.0.0.1:30000")}
	cases := []struct {
		name  string
		key   string
		specs []l4proxy.ListenerSpec
	}{
		{"an empty key is invalid", "", nil},
		{"an unknown protocol is invalid", "svc", []l4proxy.ListenerSpec{{Protocol: "SCTP", Address: vip}}},
		{"an address without a port is invalid", "svc", []l4proxy.ListenerSpec{{Protocol: l4proxy.TCP, Address: netip.AddrPortFrom(vip.Addr(), 0)}}},
		{"a backend without a port is invalid", "svc", []l4proxy.ListenerSpec{{Protocol: l4proxy.TCP, Address: vip,
			Backends: []l4proxy.Backend{{Name: "n", Addr: netip.MustParseAddrPort("127.0.0.1:0")}}}}},
		{"the same listener twice is invalid", "svc", []l4proxy.ListenerSpec{
			{Protocol: l4proxy.TCP, Address: vip, Backends: []l4proxy.Backend{node}}, {Protocol: l4proxy.TCP, Address: vip}}},
		{"a negative health-check threshold is invalid", "svc", []l4proxy.ListenerSpec{{Protocol: l4proxy.TCP, Address: vip,
			HealthCheck: l4proxy.HealthCheck{UnhealthyThreshold: -1}}}},
		{"a health-check path without a leading slash is invalid", "svc", []l4proxy.ListenerSpec{{Protocol: l4proxy.UDP, Address: vip,
			HealthCheck: l4proxy.HealthCheck{HTTPPort: 10256, HTTPPath: "healthz"}}}},
		{"an invalid source range is invalid", "svc", []l4proxy.ListenerSpec{{Protocol: l4proxy.TCP, Address: vip,
			SourceRanges: []netip.Prefix{{}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, l4proxy.Options{})
			require.ErrorIs(t, m.Ensure(tc.key, tc.specs), l4proxy.ErrInvalidSpec)
			assert.Empty(t, m.Keys())
		})
	}
}

func TestDelete(t *testing.T) {
	cases := []struct {
		name  string
		proto l4proxy.Protocol
	}{
		{"Delete ends an active TCP connection and frees the address", l4proxy.TCP},
		{"Delete ends an active UDP flow and frees the address", l4proxy.UDP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ip := uniqueLoopback()
			a := startServer(t, "a", tc.proto, netip.AddrPortFrom(ip, 0))
			vip := freeAddr(t, tc.proto, ip)
			m := newManager(t, l4proxy.Options{})
			require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{{
				Protocol: tc.proto, Address: vip, Backends: []l4proxy.Backend{a.backend()},
			}}))
			require.NoError(t, m.Ensure("other", []l4proxy.ListenerSpec{{
				Protocol: tc.proto, Address: freeAddr(t, tc.proto, uniqueLoopback()), Backends: []l4proxy.Backend{a.backend()},
			}}))

			switch tc.proto {
			case l4proxy.TCP:
				open := dialLine(t, vip)
				_, err := open.ask("one")
				require.NoError(t, err)
				require.Equal(t, int64(1), counters(m, "svc").Active)
				m.Delete("svc")
				_ = open.c.SetReadDeadline(time.Now().Add(ioTimeout))
				_, err = open.r.ReadByte()
				require.Error(t, err)
				assert.False(t, errors.Is(err, os.ErrDeadlineExceeded), "connection still open after Delete")
				ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(vip))
				require.NoError(t, err, "address still bound after Delete")
				require.NoError(t, ln.Close())
			case l4proxy.UDP:
				_, err := roundTrip(t, tc.proto, vip, netip.Addr{}, "one", ioTimeout)
				require.NoError(t, err)
				require.Equal(t, int64(1), counters(m, "svc").Active)
				m.Delete("svc")
				c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(vip))
				require.NoError(t, err, "address still bound after Delete")
				require.NoError(t, c.Close())
			}
			assert.Nil(t, m.Status("svc"))
			assert.Equal(t, []string{"other"}, m.Keys())
			m.Delete("svc") // unknown keys are fine
		})
	}
}

func TestUDPFlowLifecycle(t *testing.T) {
	t.Run("an idle flow expires after the UDP idle timeout", func(t *testing.T) {
		a := startServer(t, "a", l4proxy.UDP, netip.MustParseAddrPort("127.0.0.1:0"))
		vip := freeAddr(t, l4proxy.UDP, uniqueLoopback())
		m := newManager(t, l4proxy.Options{})
		require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{{
			Protocol: l4proxy.UDP, Address: vip, Backends: []l4proxy.Backend{a.backend()}, UDPIdleTimeout: 100 * time.Millisecond,
		}}))
		c, err := udpClient(t, vip, netip.Addr{})
		require.NoError(t, err)
		defer c.Close()
		_, err = udpAsk(c, "one", ioTimeout)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return counters(m, "svc").Active == 0 }, waitFor, tick, "flow never expired")
		got, err := udpAsk(c, "two", ioTimeout)
		require.NoError(t, err, "the client could not start over")
		assert.Equal(t, "a:two", got)
		assert.Equal(t, uint64(2), counters(m, "svc").Accepted)
	})

	t.Run("the flow table is bounded and frees up when flows expire", func(t *testing.T) {
		a := startServer(t, "a", l4proxy.UDP, netip.MustParseAddrPort("127.0.0.1:0"))
		vip := freeAddr(t, l4proxy.UDP, uniqueLoopback())
		m := newManager(t, l4proxy.Options{MaxUDPFlows: 1})
		require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{{
			Protocol: l4proxy.UDP, Address: vip, Backends: []l4proxy.Backend{a.backend()}, UDPIdleTimeout: 2 * time.Second,
		}}))
		first, err := udpClient(t, vip, netip.Addr{})
		require.NoError(t, err)
		defer first.Close()
		_, err = udpAsk(first, "one", ioTimeout)
		require.NoError(t, err)

		second, err := udpClient(t, vip, netip.Addr{})
		require.NoError(t, err)
		defer second.Close()
		_, err = udpAsk(second, "two", silence)
		require.Error(t, err, "a second flow was opened")
		require.Eventually(t, func() bool { return counters(m, "svc").Overflow == 1 }, waitFor, tick)
		got, err := udpAsk(first, "three", ioTimeout)
		require.NoError(t, err, "the existing flow stopped working")
		assert.Equal(t, "a:three", got)

		require.Eventually(t, func() bool { return counters(m, "svc").Active == 0 }, waitFor, tick, "flow never expired")
		got, err = udpAsk(second, "four", ioTimeout)
		require.NoError(t, err)
		assert.Equal(t, "a:four", got)
	})
}

func TestCloseEndsEverythingAndLeaksNoGoroutines(t *testing.T) {
	t.Run("Close ends connections, flows and probers, is idempotent, and returns to the goroutine baseline", func(t *testing.T) {
		ipA := uniqueLoopback()
		healthPort := freeAddr(t, l4proxy.TCP, ipA).Port()
		startHealthServer(t, netip.AddrPortFrom(ipA, healthPort), 200)
		tcpA := startServer(t, "a", l4proxy.TCP, netip.AddrPortFrom(ipA, 0))
		udpA := startServer(t, "a", l4proxy.UDP, netip.AddrPortFrom(ipA, 0))
		tcpVIP, udpVIP := freeAddr(t, l4proxy.TCP, ipA), freeAddr(t, l4proxy.UDP, ipA)
		httpHC := fastHealth
		httpHC.HTTPPort = int(healthPort)
		baseline := runtime.NumGoroutine()

		m := l4proxy.NewManager(l4proxy.Options{Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 4})})
		require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{
			{Protocol: l4proxy.TCP, Address: tcpVIP, Backends: []l4proxy.Backend{tcpA.backend()}, HealthCheck: fastHealth},
			{Protocol: l4proxy.UDP, Address: udpVIP, Backends: []l4proxy.Backend{udpA.backend()}, HealthCheck: httpHC},
		}))
		open := dialLine(t, tcpVIP)
		_, err := open.ask("one")
		require.NoError(t, err)
		_, err = roundTrip(t, l4proxy.UDP, udpVIP, netip.Addr{}, "one", ioTimeout)
		require.NoError(t, err)
		assert.Greater(t, runtime.NumGoroutine(), baseline)

		m.Close()
		m.Close()

		_ = open.c.SetReadDeadline(time.Now().Add(ioTimeout))
		_, err = open.r.ReadByte()
		require.Error(t, err)
		assert.False(t, errors.Is(err, os.ErrDeadlineExceeded), "connection still open after Close")
		assert.Empty(t, m.Keys())
		assert.Nil(t, m.Status("svc"))
		require.ErrorIs(t, m.Ensure("svc", nil), l4proxy.ErrClosed)
		// Not require.Eventually: it runs the condition on a goroutine of its own.
		n := runtime.NumGoroutine()
		for deadline := time.Now().Add(waitFor); n > baseline && time.Now().Before(deadline); n = runtime.NumGoroutine() {
			time.Sleep(tick)
		}
		if !assert.LessOrEqual(t, n, baseline, "goroutines leaked") {
			buf := make([]byte, 1<<20)
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
		}
	})
}

func TestATCPBackendIsToldTheClientByThePROXYProtocol(t *testing.T) {
	b := startServer(t, "b", l4proxy.TCP, netip.AddrPortFrom(uniqueLoopback(), 0))
	m := newManager(t, l4proxy.Options{})
	vip := freeAddr(t, l4proxy.TCP, uniqueLoopback())
	require.NoError(t, m.Ensure("svc", []l4proxy.ListenerSpec{{Protocol: l4proxy.TCP, Address: vip,
		Backends: []l4proxy.Backend{b.backend()}, ProxyProtocol: 1}}))
	client := uniqueLoopback()
	d := net.Dialer{Timeout: ioTimeout, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(client, 0))}
	c, err := d.DialContext(t.Context(), "tcp", vip.String())
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = io.WriteString(c, "hello\n")
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	answer, err := io.ReadAll(c)
	require.NoError(t, err)
	got := strings.TrimSuffix(string(answer), "\n")
	// The backend answers each line: the first it reads is the header.
	assert.Regexp(t, `^b:PROXY TCP4 `+regexp.QuoteMeta(client.String())+` `+regexp.QuoteMeta(vip.Addr().String())+` \d+ `+strconv.Itoa(int(vip.Port()))+"\r\nb:hello$", got)

	for _, bad := range []l4proxy.ListenerSpec{
		{Protocol: l4proxy.UDP, Address: freeAddr(t, l4proxy.UDP, uniqueLoopback()), ProxyProtocol: 1},
		{Protocol: l4proxy.TCP, Address: freeAddr(t, l4proxy.TCP, uniqueLoopback()), ProxyProtocol: 3},
	} {
		assert.ErrorIs(t, m.Ensure("bad", []l4proxy.ListenerSpec{bad}), l4proxy.ErrInvalidSpec)
	}
}
