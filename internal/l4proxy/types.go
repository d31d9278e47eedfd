package l4proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// Protocol is the transport protocol of a listener.
type Protocol string

const (
	// TCP listeners accept connections and splice each to one backend connection.
	TCP Protocol = "TCP"
	// UDP listeners track flows (one per client address) and relay datagrams
	// between the client and one backend per flow.
	UDP Protocol = "UDP"
)

// Defaults applied when the corresponding field is zero.
const (
	// DefaultHealthCheckInterval is the default of HealthCheck.Interval.
	DefaultHealthCheckInterval = 2 * time.Second
	// DefaultHealthCheckTimeout is the default of HealthCheck.Timeout.
	DefaultHealthCheckTimeout = time.Second
	// DefaultHealthyThreshold is the default of HealthCheck.HealthyThreshold.
	DefaultHealthyThreshold = 1
	// DefaultUnhealthyThreshold is the default of HealthCheck.UnhealthyThreshold.
	DefaultUnhealthyThreshold = 2
	// DefaultHealthCheckPath is the default of HealthCheck.HTTPPath. kube-proxy's
	// health-check node port answers on any path.
	DefaultHealthCheckPath = "/healthz"
	// DefaultUDPIdleTimeout is the default of ListenerSpec.UDPIdleTimeout.
	DefaultUDPIdleTimeout = 60 * time.Second
	// DefaultDialTimeout is the default of Options.DialTimeout.
	DefaultDialTimeout = 5 * time.Second
	// DefaultMaxUDPFlows is the default of Options.MaxUDPFlows.
	DefaultMaxUDPFlows = 4096
)

// Backend is one node that may receive traffic: Name is the Kubernetes Node
// name (the argument of Options.Eligible), Addr its InternalIP:NodePort.
type Backend struct {
	Name string
	Addr netip.AddrPort
}

// HealthCheck configures how the backends of a listener are judged healthy.
//
//   - HTTPPort != 0: GET http://<backend IP>:<HTTPPort><HTTPPath> must answer 200
//     within Timeout. This is kube-proxy's healthCheckNodePort for
//     externalTrafficPolicy: Local, which answers 503 when the node has no local
//     endpoints; any status other than 200 (redirects are not followed) counts
//     as a failure.
//   - Otherwise, for TCP listeners: a TCP connect to Backend.Addr must succeed
//     within Timeout.
//   - Otherwise (UDP without HTTPPort): no probe; backends are always healthy.
//
// A backend becomes unhealthy after UnhealthyThreshold consecutive failures and
// healthy again after HealthyThreshold consecutive successes. New backends start
// healthy (optimistic) until probes say otherwise. Zero fields take the Default*
// values; negative ones are invalid.
type HealthCheck struct {
	// HTTPPort, if not zero, selects the HTTP probe against this port of the
	// backend's IP.
	HTTPPort int
	// HTTPPath is the request path (and optional query) of the HTTP probe;
	// DefaultHealthCheckPath when empty. It must begin with "/".
	HTTPPath string
	// Interval is the pause between the end of a probe and the start of the next.
	Interval time.Duration
	// Timeout bounds each probe.
	Timeout time.Duration
	// HealthyThreshold is the number of consecutive successes that make an
	// unhealthy backend healthy.
	HealthyThreshold int
	// UnhealthyThreshold is the number of consecutive failures that make a
	// healthy backend unhealthy.
	UnhealthyThreshold int
}

// ListenerSpec is the desired state of one listener. A listener is identified by
// Protocol and Address; every other field can change in place.
type ListenerSpec struct {
	// Protocol is TCP or UDP.
	Protocol Protocol
	// Address is the VIP:port to bind. The port must not be zero. IPv4-mapped
	// IPv6 addresses are normalised to IPv4.
	Address netip.AddrPort
	// Backends receive the traffic. Duplicates are ignored; an empty list makes
	// the listener reset every connection and drop every datagram.
	Backends []Backend
	// SourceRanges, if not empty, restricts clients to those whose IP lies in
	// one of the prefixes. TCP connections from other clients are reset, UDP
	// datagrams dropped. The check applies to new connections and, for UDP, to
	// every datagram.
	SourceRanges []netip.Prefix
	// HealthCheck configures the backend probes.
	HealthCheck HealthCheck
	// UDPIdleTimeout ends a UDP flow after this long without traffic in either
	// direction; DefaultUDPIdleTimeout when zero. Ignored for TCP.
	UDPIdleTimeout time.Duration
	// ProxyProtocol sends each TCP backend connection a PROXY protocol header
	// first, with the client's address and the listener's: 1 for version 1
	// (text), 2 for version 2 (binary); 0 for none. TCP only.
	ProxyProtocol int
}

// Options configure a Manager.
type Options struct {
	// Logger receives the Manager's logs. The zero value discards them.
	Logger logr.Logger
	// Eligible, if set, is asked on every new TCP connection and UDP flow
	// whether a backend may receive traffic (the CCM answers from Node
	// readiness and exclusion labels). It must be safe for concurrent use, fast
	// (UDP listeners ask from their receive loop) and must not call the Manager.
	// nil means every backend is eligible.
	Eligible func(backendName string) bool
	// DialTimeout bounds each connection attempt to a TCP backend;
	// DefaultDialTimeout when zero.
	DialTimeout time.Duration
	// MaxUDPFlows bounds the number of concurrent flows of each UDP listener;
	// DefaultMaxUDPFlows when zero. Datagrams that would open a flow beyond it
	// are dropped and counted as Overflow. Each flow holds one socket, one
	// goroutine and a 64 KiB receive buffer.
	MaxUDPFlows int
}

// ListenerStatus is the observed state of one listener.
type ListenerStatus struct {
	// Protocol is the listener's protocol.
	Protocol Protocol
	// Address is the bound VIP:port (normalised, see ListenerSpec.Address).
	Address netip.AddrPort
	// Backends are the listener's backends in the order of the last Ensure.
	Backends []BackendStatus
	// Counters are the listener's traffic counters since it was bound.
	Counters Counters
}

// BackendStatus is the health of one backend of a listener.
type BackendStatus struct {
	// Name is the backend's (node's) name.
	Name string
	// Addr is the backend's address.
	Addr netip.AddrPort
	// Healthy is the backend's health as judged by its prober. It does not
	// include Options.Eligible.
	Healthy bool
}

// Counters are the cumulative traffic counters of one listener. For TCP a unit
// is a connection, for UDP a flow (or, for Rejected, NoBackend and Overflow, a
// datagram).
type Counters struct {
	// Accepted counts connections or flows admitted by the source ranges.
	Accepted uint64
	// Rejected counts connections reset or datagrams dropped because the
	// client was outside the source ranges.
	Rejected uint64
	// NoBackend counts connections reset or datagrams dropped because no
	// eligible, healthy and reachable backend was available.
	NoBackend uint64
	// Overflow counts UDP datagrams dropped because the flow table was full.
	Overflow uint64
	// BytesIn counts payload bytes forwarded from clients to backends.
	BytesIn uint64
	// BytesOut counts payload bytes forwarded from backends to clients.
	BytesOut uint64
	// Active is the number of open connections or flows.
	Active int64
}

var (
	// ErrAddressInUse is wrapped by errors of Ensure when a listener's address
	// is already bound, by another process or another key of the Manager.
	ErrAddressInUse = errors.New("address already in use")
	// ErrAddressNotAvailable is wrapped by errors of Ensure when a listener's
	// IP is not assigned to this host.
	ErrAddressNotAvailable = errors.New("address not available on this host")
	// ErrInvalidSpec is wrapped by errors of Ensure when a ListenerSpec (or the
	// key) is invalid.
	ErrInvalidSpec = errors.New("invalid listener spec")
	// ErrClosed is returned by Ensure after Close.
	ErrClosed = errors.New("l4proxy: manager closed")
)

// BindError is the error of Ensure when a listener cannot be bound. It names the
// protocol and address, and matches ErrAddressInUse or ErrAddressNotAvailable
// with errors.Is when that is the cause.
type BindError struct {
	// Protocol is the listener's protocol.
	Protocol Protocol
	// Address is the listener's address.
	Address netip.AddrPort
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *BindError) Error() string {
	return fmt.Sprintf("l4proxy: binding %s %s: %v", e.Protocol, e.Address, e.Err)
}

// Unwrap returns the cause and, when the cause is a bind errno that has one, the
// matching sentinel error.
func (e *BindError) Unwrap() []error {
	errs := []error{e.Err}
	switch {
	case errors.Is(e.Err, syscall.EADDRINUSE) && !errors.Is(e.Err, ErrAddressInUse):
		errs = append(errs, ErrAddressInUse)
	case errors.Is(e.Err, syscall.EADDRNOTAVAIL) && !errors.Is(e.Err, ErrAddressNotAvailable):
		errs = append(errs, ErrAddressNotAvailable)
	}
	return errs
}

// listenerID identifies a listener within a Manager.
type listenerID struct {
	protocol Protocol
	addr     netip.AddrPort
}

func (id listenerID) String() string { return string(id.protocol) + " " + id.addr.String() }

// probeMode is the kind of health probe.
type probeMode uint8

const (
	probeNone probeMode = iota
	probeTCP
	probeHTTP
)

// probeConfig is a HealthCheck with defaults applied. It is comparable: a change
// restarts the probers.
type probeConfig struct {
	mode               probeMode
	port               uint16
	path               string
	interval, timeout  time.Duration
	healthyThreshold   int
	unhealthyThreshold int
}

// runtimeConfig is the part of a spec that the data path reads on every
// connection or datagram; it is swapped atomically.
type runtimeConfig struct {
	sourceRanges  []netip.Prefix
	udpIdle       time.Duration
	proxyProtocol int
}

// allows reports whether a client IP may use the listener.
func (c *runtimeConfig) allows(ip netip.Addr) bool {
	if len(c.sourceRanges) == 0 {
		return true
	}
	ip = ip.Unmap().WithZone("")
	for _, p := range c.sourceRanges {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// spec is a validated, normalised ListenerSpec.
type spec struct {
	id       listenerID
	backends []Backend
	cfg      runtimeConfig
	probe    probeConfig
}

func (s *spec) equal(o *spec) bool {
	return s.id == o.id && s.probe == o.probe && s.cfg.udpIdle == o.cfg.udpIdle && s.cfg.proxyProtocol == o.cfg.proxyProtocol &&
		slices.Equal(s.backends, o.backends) && slices.Equal(s.cfg.sourceRanges, o.cfg.sourceRanges)
}

// normalize validates s and applies defaults.
func normalize(s ListenerSpec) (spec, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %s: %s", ErrInvalidSpec, s.Protocol, s.Address, fmt.Sprintf(format, args...))
	}
	if s.Protocol != TCP && s.Protocol != UDP {
		return spec{}, invalid("unknown protocol %q", string(s.Protocol))
	}
	if !s.Address.IsValid() || s.Address.Port() == 0 {
		return spec{}, invalid("address needs an IP and a non-zero port")
	}
	out := spec{id: listenerID{s.Protocol, unmap(s.Address)}}
	var err error
	if out.backends, err = normalBackends(s.Backends, invalid); err != nil {
		return spec{}, err
	}
	if out.cfg, err = normalRuntime(s, invalid); err != nil {
		return spec{}, err
	}
	if out.probe, err = normalProbe(s.Protocol, s.HealthCheck, invalid); err != nil {
		return spec{}, err
	}
	return out, nil
}

// normalBackends are the backends with IPv4-mapped addresses unmapped and
// repeats dropped.
func normalBackends(in []Backend, invalid func(string, ...any) error) ([]Backend, error) {
	seen := make(map[Backend]struct{}, len(in))
	out := make([]Backend, 0, len(in))
	for _, b := range in {
		if !b.Addr.IsValid() || b.Addr.Port() == 0 || b.Addr.Addr().IsUnspecified() {
			return nil, invalid("backend %q has invalid address %s", b.Name, b.Addr)
		}
		b.Addr = unmap(b.Addr)
		if _, dup := seen[b]; dup {
			continue
		}
		seen[b] = struct{}{}
		out = append(out, b)
	}
	return out, nil
}

// normalRuntime is the listener's source ranges (masked, IPv4-mapped ones
// unmapped), PROXY protocol and UDP idle timeout.
func normalRuntime(s ListenerSpec, invalid func(string, ...any) error) (runtimeConfig, error) {
	var cfg runtimeConfig
	for _, p := range s.SourceRanges {
		if !p.IsValid() {
			return cfg, invalid("invalid source range %s", p)
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		cfg.sourceRanges = append(cfg.sourceRanges, p.Masked())
	}
	switch {
	case s.ProxyProtocol < 0 || s.ProxyProtocol > 2:
		return cfg, invalid("PROXY protocol version %d: want 1 or 2 (0 for none)", s.ProxyProtocol)
	case s.ProxyProtocol != 0 && s.Protocol != TCP:
		return cfg, invalid("the PROXY protocol is for TCP listeners")
	}
	cfg.proxyProtocol = s.ProxyProtocol
	cfg.udpIdle = s.UDPIdleTimeout
	switch {
	case s.UDPIdleTimeout < 0:
		return cfg, invalid("negative UDP idle timeout")
	case s.UDPIdleTimeout == 0:
		cfg.udpIdle = DefaultUDPIdleTimeout
	}
	return cfg, nil
}

// normalProbe is how the backends are probed: HTTP when the health check
// names a port, else TCP for a TCP listener, else not at all.
func normalProbe(protocol Protocol, hc HealthCheck, invalid func(string, ...any) error) (probeConfig, error) {
	if hc.HTTPPort < 0 || hc.HTTPPort > 65535 {
		return probeConfig{}, invalid("health-check port %d out of range", hc.HTTPPort)
	}
	if hc.Interval < 0 || hc.Timeout < 0 || hc.HealthyThreshold < 0 || hc.UnhealthyThreshold < 0 {
		return probeConfig{}, invalid("negative health-check interval, timeout or threshold")
	}
	pc := probeConfig{
		interval:           or(hc.Interval, DefaultHealthCheckInterval),
		timeout:            or(hc.Timeout, DefaultHealthCheckTimeout),
		healthyThreshold:   or(hc.HealthyThreshold, DefaultHealthyThreshold),
		unhealthyThreshold: or(hc.UnhealthyThreshold, DefaultUnhealthyThreshold),
	}
	switch {
	case hc.HTTPPort != 0:
		pc.mode = probeHTTP
		pc.port = uint16(hc.HTTPPort)
		pc.path = or(hc.HTTPPath, DefaultHealthCheckPath)
		if !strings.HasPrefix(pc.path, "/") || strings.ContainsAny(pc.path, " \r\n#") {
			return probeConfig{}, invalid("health-check path %q must begin with / and contain no spaces or fragment", pc.path)
		}
	case protocol == TCP:
		pc.mode = probeTCP
	default:
		// UDP without an HTTP port: nothing to probe, and nothing else matters.
		pc = probeConfig{mode: probeNone}
	}
	return pc, nil
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
