package cloudstack

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/l4proxy"
)

// The data plane (Options.ServeTraffic): every public address serves its
// Active load balancer rules on address:publicport, forwarding to the rule's
// machines at privateport, as the virtual router's HAProxy does. What reaches
// a rule is what the router lets in: on an isolated network only the sources
// of the firewall rules that open the port (none: nothing), on a VPC tier
// those of the Allow Ingress ACL items, each narrowed to the rule's own
// cidrlist. Every address, public and machine, must be loopback.
//
// A tcp-proxy rule sends each connection a PROXY protocol v1 header (the
// router's HAProxy "send-proxy"). A rule's health-check policy probes its
// members by HTTP (pingpath on the private port); without one, by TCP
// connect. Not emulated: Deny ACL items.

func (e *Emulator) dataPlaneSpecs() map[string][]l4proxy.ListenerSpec {
	e.lock()
	defer e.mu.Unlock()
	out := map[string][]l4proxy.ListenerSpec{}
	for _, r := range e.rules.All() {
		ip := e.ips.At(r.publicIPID)
		if r.state != "Active" || ip == nil || ip.state != "Allocated" {
			continue
		}
		addr, err := netip.ParseAddr(ip.address)
		if err != nil {
			continue
		}
		proto := l4proxy.Protocol(strings.ToUpper(l4(r.protocol)))
		var backends []l4proxy.Backend
		for _, id := range r.members {
			v := e.vms.At(id)
			if v == nil || v.expunged || v.state != StateRunning {
				continue
			}
			if a, err := netip.ParseAddr(v.ip); err == nil {
				backends = append(backends, l4proxy.Backend{Name: v.name, Addr: netip.AddrPortFrom(a, uint16(r.privatePort))})
			}
		}
		ranges := narrow(e.opened(ip.id, l4(r.protocol), r.publicPort), prefixes(r.cidrs))
		spec := l4proxy.ListenerSpec{Protocol: proto, Address: netip.AddrPortFrom(addr, uint16(r.publicPort)),
			Backends: backends, SourceRanges: ranges}
		if h := e.healthCheckOf(r.id); h != nil && proto == l4proxy.TCP {
			spec.HealthCheck = l4proxy.HealthCheck{HTTPPort: r.privatePort, HTTPPath: h.pingPath,
				Interval: time.Duration(h.interval) * time.Second, Timeout: time.Duration(h.responseTime) * time.Second,
				HealthyThreshold: h.healthy, UnhealthyThreshold: h.unhealthy}
		}
		if r.protocol == "tcp-proxy" {
			spec.ProxyProtocol = 1 // the virtual router's HAProxy: send-proxy
		}
		out[ip.id] = append(out[ip.id], spec)
	}
	for id, specs := range out {
		if slices.ContainsFunc(specs, func(s l4proxy.ListenerSpec) bool { return len(s.SourceRanges) == 0 }) {
			// A listener nothing may reach is not served at all.
			out[id] = slices.DeleteFunc(specs, func(s l4proxy.ListenerSpec) bool { return len(s.SourceRanges) == 0 })
			if len(out[id]) == 0 {
				delete(out, id)
			}
		}
	}
	return out
}

// opened are the sources the router lets in to ipID's port.
func (e *Emulator) opened(ipID, proto string, port int) []netip.Prefix {
	var cidrs []string
	if e.opts.VPC {
		for _, a := range e.acl {
			if a.trafficType == "Ingress" && a.action == "Allow" && (a.protocol == proto || a.protocol == "all") && a.start <= port && port <= a.end {
				cidrs = append(cidrs, a.cidrs...)
			}
		}
	} else {
		for _, f := range e.firewall {
			if f.ipID == ipID && (f.protocol == proto || f.protocol == "all") && f.start <= port && port <= f.end {
				cidrs = append(cidrs, f.cidrs...)
			}
		}
	}
	return prefixes(cidrs)
}

func prefixes(cidrs []string) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// narrow is the part of allowed that the rule's own list admits (all of it
// when the rule has none).
func narrow(allowed, rule []netip.Prefix) []netip.Prefix {
	if len(rule) == 0 {
		return allowed
	}
	var out []netip.Prefix
	for _, a := range allowed {
		for _, r := range rule {
			switch {
			case a.Bits() >= r.Bits() && r.Contains(a.Addr()):
				out = append(out, a)
			case r.Bits() > a.Bits() && a.Contains(r.Addr()):
				out = append(out, r)
			}
		}
	}
	return out
}

// DataPlaneErrors are the addresses the data plane could not serve, with why.
func (e *Emulator) DataPlaneErrors() map[string]string { return e.dataPlane.Errors() }
