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
		addr, err := netip.ParseAddr(lb.IPAddresses[0].IPAddress)
		if err != nil {
			continue
		}
		for _, l := range lb.Listeners {
			bs := lb.BackendSets[l.DefaultBackendSetName]
			if bs == nil {
				continue
			}
			spec := l4proxy.ListenerSpec{Protocol: l4proxy.TCP, Address: netip.AddrPortFrom(addr, uint16(l.Port))}
			for _, b := range bs.Backends {
				if a, err := netip.ParseAddr(b.IPAddress); err == nil && !b.Offline {
					spec.Backends = append(spec.Backends, l4proxy.Backend{Name: b.Name, Addr: netip.AddrPortFrom(a, uint16(b.Port))})
				}
			}
			if hc := bs.HealthChecker; hc != nil && hc.Protocol == "HTTP" {
				spec.HealthCheck = l4proxy.HealthCheck{HTTPPort: hc.Port, HTTPPath: hc.URLPath,
					Interval: time.Duration(hc.IntervalInMillis) * time.Millisecond, Timeout: time.Duration(hc.TimeoutInMillis) * time.Millisecond,
					HealthyThreshold: 1, UnhealthyThreshold: hc.Retries}
			}
			if c := l.ConnectionConfiguration; c != nil && c.BackendTCPProxyProtocolVersion != nil {
				spec.ProxyProtocol = *c.BackendTCPProxyProtocolVersion
			}
			out[lb.ID] = append(out[lb.ID], spec)
		}
	}
	for _, n := range e.nlbs.All() {
		if n.LifecycleState != NLBActive || len(n.IPAddresses) == 0 {
			continue
		}
		addr, err := netip.ParseAddr(n.IPAddresses[0].IPAddress)
		if err != nil {
			continue
		}
		for _, l := range n.Listeners {
			bs := n.BackendSets[l.DefaultBackendSetName]
			if bs == nil || l.Port == 0 {
				continue
			}
			var backends []l4proxy.Backend
			for _, b := range bs.Backends {
				if a, err := netip.ParseAddr(b.IPAddress); err == nil && !b.IsOffline {
					backends = append(backends, l4proxy.Backend{Name: b.Name, Addr: netip.AddrPortFrom(a, uint16(b.Port))})
				}
			}
			var check l4proxy.HealthCheck
			if hc := bs.HealthChecker; hc != nil && hc.Protocol == "HTTP" {
				check = l4proxy.HealthCheck{HTTPPort: hc.Port, HTTPPath: hc.URLPath,
					Interval: time.Duration(hc.IntervalInMillis) * time.Millisecond, Timeout: time.Duration(hc.TimeoutInMillis) * time.Millisecond,
					HealthyThreshold: 1, UnhealthyThreshold: hc.Retries}
			}
			for _, proto := range []l4proxy.Protocol{l4proxy.TCP, l4proxy.UDP} {
				if !overlap(l.Protocol, string(proto)) {
					continue
				}
				spec := l4proxy.ListenerSpec{Protocol: proto, Address: netip.AddrPortFrom(addr, uint16(l.Port)), Backends: backends, HealthCheck: check}
				if proto == l4proxy.TCP && l.IsPPv2Enabled {
					spec.ProxyProtocol = 2
				}
				out[n.ID] = append(out[n.ID], spec)
			}
		}
	}
	return out
}

// DataPlaneErrors are the load balancers the data plane could not serve, with why.
func (e *Emulator) DataPlaneErrors() map[string]string { return e.dataPlane.Errors() }
