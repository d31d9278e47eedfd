package openstack

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/l4proxy"
)

// The data plane: with Options.ServeTraffic, every load balancer that is not
// being created or deleted serves its TCP and UDP listeners on its VIP and on
// the floating IP attached to its VIP port, forwarding to the members of each
// listener's default pool (internal/l4proxy), as an amphora would. Source
// ranges (allowed_cidrs) are enforced; a pool's health monitor picks the probe
// (HTTP on the members' monitor port and url_path, else a TCP connect). So a
// CCM on the emulator can be tested by traffic, and `overcast dev --cloud
// openstack` answers through its load balancer. Addresses must be loopback
// (127.0.0.0/8): nothing else is ever bound.

var loopback = core.Loopback

// checkServeTraffic refuses ServeTraffic unless every address the emulator
// hands out (VIPs from the private subnet, floating IPs from the public one)
// is a loopback address.
func checkServeTraffic(o Options) error {
	if !o.ServeTraffic {
		return nil
	}
	return core.CheckLoopback(map[string]string{"PrivateCIDR": o.PrivateCIDR, "PublicCIDR": o.PublicCIDR})
}

// DataPlaneErrors are the load balancers the data plane could not serve, with
// why (an address taken, for example).
func (e *Emulator) DataPlaneErrors() map[string]string { return e.dataPlane.Errors() }

// dataPlaneSpecs is what every serving load balancer should serve.
func (e *Emulator) dataPlaneSpecs() map[string][]l4proxy.ListenerSpec {
	e.lock()
	defer e.mu.Unlock()
	out := map[string][]l4proxy.ListenerSpec{}
	for _, lb := range e.lbs.All() {
		if lb.Prov == provPendingCreate || lb.Prov == provPendingDelete || !lb.AdminStateUp {
			continue
		}
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(lb.VipAddress); err == nil && loopback.Contains(a) {
			addrs = append(addrs, a)
		}
		if fid, ok := e.fipByPort[lb.VipPortID]; ok {
			if f, ok := e.fips.Get(fid); ok {
				if a, err := netip.ParseAddr(f.FloatingIPAddress); err == nil && loopback.Contains(a) {
					addrs = append(addrs, a)
				}
			}
		}
		var specs []l4proxy.ListenerSpec
		for _, lid := range lb.Listeners {
			l, ok := e.listeners.Get(lid)
			if !ok || !l.AdminStateUp || l.Prov == provPendingDelete {
				continue
			}
			proto := l4proxy.Protocol(l.Protocol)
			if l.Protocol == "HTTP" {
				proto = l4proxy.TCP // served at L4
			}
			if proto != l4proxy.TCP && proto != l4proxy.UDP {
				continue
			}
			backends, hc := e.poolBackends(l.DefaultPoolID)
			proxyProtocol := 0
			if pool, ok := e.pools.Get(l.DefaultPoolID); ok && proto == l4proxy.TCP {
				switch pool.Protocol {
				case "PROXY":
					proxyProtocol = 1
				case "PROXYV2":
					proxyProtocol = 2
				}
			}
			var ranges []netip.Prefix
			for _, c := range l.AllowedCIDRs {
				if p, err := netip.ParsePrefix(c); err == nil {
					ranges = append(ranges, p)
				}
			}
			for _, a := range addrs {
				specs = append(specs, l4proxy.ListenerSpec{Protocol: proto, Address: netip.AddrPortFrom(a, uint16(l.ProtocolPort)),
					Backends: backends, SourceRanges: ranges, HealthCheck: hc, ProxyProtocol: proxyProtocol})
			}
		}
		if len(specs) > 0 {
			out[lb.ID] = specs
		}
	}
	return out
}

// poolBackends are the pool's members (admin state up) and the probe its
// health monitor asks for.
func (e *Emulator) poolBackends(poolID string) ([]l4proxy.Backend, l4proxy.HealthCheck) {
	p, ok := e.pools.Get(poolID)
	if !ok {
		return nil, l4proxy.HealthCheck{}
	}
	var hc l4proxy.HealthCheck
	h, monitored := e.monitors.Get(p.MonitorID)
	if monitored {
		hc.Interval = time.Duration(h.Delay) * time.Second
		hc.Timeout = time.Duration(h.Timeout) * time.Second
		hc.HealthyThreshold = max(h.MaxRetries, 1)
		hc.UnhealthyThreshold = max(h.MaxRetDown, 1)
		if strings.HasPrefix(h.Type, "HTTP") {
			hc.HTTPPath = h.URLPath
		}
	}
	var out []l4proxy.Backend
	for _, mid := range p.Members {
		m, ok := e.members.Get(mid)
		if !ok || !m.AdminStateUp || m.Prov == provPendingDelete {
			continue
		}
		a, err := netip.ParseAddr(m.Address)
		if err != nil {
			continue
		}
		if monitored && strings.HasPrefix(h.Type, "HTTP") {
			hc.HTTPPort = m.ProtocolPort
			if m.MonitorPort != nil {
				hc.HTTPPort = *m.MonitorPort
			}
		}
		out = append(out, l4proxy.Backend{Name: m.ID, Addr: netip.AddrPortFrom(a, uint16(m.ProtocolPort))})
	}
	slices.SortFunc(out, func(a, b l4proxy.Backend) int { return strings.Compare(a.Name, b.Name) })
	return out, hc
}
