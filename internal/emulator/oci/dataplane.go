package oci

import (
	"net/netip"
	"time"

	"github.com/overcast-ccm/overcast/internal/l4proxy"
)

// The data plane (Options.ServeTraffic): every ACTIVE load balancer serves
// its listeners on its address, forwarding to its backend sets' backends, as
// OCI's load balancers do: a health checker of protocol HTTP probes each
// backend's address at its port and path, TCP by connect; a listener's
// backendTcpProxyProtocolVersion sends each connection a PROXY protocol
// header. Every ACTIVE network load balancer serves its listeners the same
// way, TCP, UDP or both (TCP_AND_UDP, ANY), a PPv2 header on TCP connections
// when isPpv2Enabled. Every address, public and machine, must be loopback.
// Not emulated: security lists and NSGs (every source reaches a listener),
// HTTP listeners (served as TCP), preserving the client's address
// (isPreserveSource: backends see the proxy's).

func (e *Emulator) dataPlaneSpecs() map[string][]l4proxy.ListenerSpec {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.jobs.Settle(e.opts.Clock())
	out := map[string][]l4proxy.ListenerSpec{}
	for _, lb := range e.lbs.All() {
		if lb.LifecycleState != LBActive || len(lb.IPAddresses) == 0 {
			continue
		}
		for _, l := range lb.Listeners {
			bs := lb.BackendSets[l.DefaultBackendSetName]
			if bs == nil {
				continue
			}
			var backends []served
			for _, b := range bs.Backends {
				backends = append(backends, served{b.Name, b.IPAddress, b.Port, b.Offline})
			}
			proxy := 0
			if c := l.ConnectionConfiguration; c != nil && c.BackendTCPProxyProtocolVersion != nil {
				proxy = *c.BackendTCPProxyProtocolVersion
			}
			var hc healthChecker
			if bs.HealthChecker != nil {
				hc = *bs.HealthChecker
			}
			out[lb.ID] = appendSpecs(out[lb.ID], lb.IPAddresses[0].IPAddress, l.Port, "TCP", backends, hc, proxy) // IPv4: an ipMode IPV6 one's IPv6 address is its second
		}
	}
	for _, n := range e.nlbs.All() {
		if n.LifecycleState != NLBActive || len(n.IPAddresses) == 0 {
			continue
		}
		for _, l := range n.Listeners {
			bs := n.BackendSets[l.DefaultBackendSetName]
			if bs == nil || l.Port == 0 || versionOr(l.IPVersion) != IPv4 {
				continue // IPv6 listeners are not served (ipv6.go)
			}
			var backends []served
			for _, b := range bs.Backends {
				backends = append(backends, served{b.Name, b.IPAddress, b.Port, b.IsOffline})
			}
			proxy := 0
			if l.IsPPv2Enabled {
				proxy = 2
			}
			var hc healthChecker
			if c := bs.HealthChecker; c != nil {
				hc = healthChecker{Protocol: c.Protocol, URLPath: c.URLPath, Port: c.Port, Retries: c.Retries,
					TimeoutInMillis: c.TimeoutInMillis, IntervalInMillis: c.IntervalInMillis}
			}
			out[n.ID] = appendSpecs(out[n.ID], n.IPAddresses[0].IPAddress, l.Port, l.Protocol, backends, hc, proxy) // its IPv4 addresses come first (ipv6.go)
		}
	}
	return out
}

// served is a backend as the data plane serves it.
type served struct {
	name, ip string
	port     int
	offline  bool
}

// appendSpecs adds to specs a listener on ip:port for each transport of
// protocol (TCP, UDP, TCP_AND_UDP, ANY), toward backends checked as hc
// says (HTTP; TCP by connect otherwise), with a PROXY protocol header of
// version proxy on TCP (0: none).
func appendSpecs(specs []l4proxy.ListenerSpec, ip string, port int, protocol string, backends []served, hc healthChecker, proxy int) []l4proxy.ListenerSpec {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return specs
	}
	var bs []l4proxy.Backend
	for _, b := range backends {
		if a, err := netip.ParseAddr(b.ip); err == nil && !b.offline {
			bs = append(bs, l4proxy.Backend{Name: b.name, Addr: netip.AddrPortFrom(a, uint16(b.port))})
		}
	}
	var check l4proxy.HealthCheck
	if hc.Protocol == "HTTP" {
		check = l4proxy.HealthCheck{HTTPPort: hc.Port, HTTPPath: hc.URLPath,
			Interval: time.Duration(hc.IntervalInMillis) * time.Millisecond, Timeout: time.Duration(hc.TimeoutInMillis) * time.Millisecond,
			HealthyThreshold: 1, UnhealthyThreshold: hc.Retries}
	}
	for _, proto := range []l4proxy.Protocol{l4proxy.TCP, l4proxy.UDP} {
		if !overlap(protocol, string(proto)) {
			continue
		}
		spec := l4proxy.ListenerSpec{Protocol: proto, Address: netip.AddrPortFrom(addr, uint16(port)), Backends: bs, HealthCheck: check}
		if proto == l4proxy.TCP {
			spec.ProxyProtocol = proxy
		}
		specs = append(specs, spec)
	}
	return specs
}

// DataPlaneErrors are the load balancers the data plane could not serve, with why.
func (e *Emulator) DataPlaneErrors() map[string]string { return e.dataPlane.Errors() }
