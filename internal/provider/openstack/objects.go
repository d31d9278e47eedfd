package openstack

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// The Octavia objects a spec asks for: the listener, pool, members and
// health monitor of each port, named after the load balancer as
// cloud-provider-openstack names them. The types below are what the CCM
// reads of them and writes (osapi turns them into gophercloud's and
// back): the names are Octavia's, as gophercloud spells them.

// insertHeaders are the headers p's listener inserts (nil: none).
func (s lbSpec) insertHeaders(p v1.ServicePort) map[string]string {
	if s.xff && p.Protocol == v1.ProtocolTCP {
		return map[string]string{"X-Forwarded-For": "true"}
	}
	return nil
}

// objectName is the name of p's listener, pool and health monitor.
func objectName(s lbSpec, p v1.ServicePort) string {
	return fmt.Sprintf("%s_%s_%d", s.name, strings.ToLower(string(p.Protocol)), p.Port)
}

// listenerCIDRs are the listener's allowed_cidrs: the source ranges, else
// everyone of the VIP's family written out, as the peer writes it
// (GetLoadBalancerSourceRanges' default), so that neither CCM rewrites the
// other's listeners. A dual-stack load balancer's listeners get none (open
// to all): Octavia opens each VIP's port to every CIDR of the list, and
// refuses 0.0.0.0/0 for the IPv6 one ("Conflicting value ethertype IPv6 for
// CIDR 0.0.0.0/0", seen on the real OpenStack, where it left the load
// balancer undeletable).
func (s lbSpec) listenerCIDRs() []string {
	switch {
	case len(s.allowedCIDRs) > 0:
		return s.allowedCIDRs
	case s.secondFamily != "":
		return []string{}
	case s.family == v1.IPv6Protocol:
		return []string{"::/0"}
	}
	return []string{"0.0.0.0/0"}
}

// openToAll says whether allowed_cidrs let everyone in: none, or only the
// whole of a family.
func openToAll(cidrs []string) bool {
	for _, c := range cidrs {
		if c != "0.0.0.0/0" && c != "::/0" {
			return false
		}
	}
	return true
}

func listenerOpts(svc *v1.Service, s lbSpec, p v1.ServicePort) osapi.ListenerCreate {
	limit := s.connLimit
	opts := osapi.ListenerCreate{
		Name:         objectName(s, p),
		Protocol:     s.listenerProtocol(p),
		ProtocolPort: int(p.Port),
		AllowedCIDRs: s.listenerCIDRs(),
		ConnLimit:    &limit,
		// Its name too, as cloud-provider-openstack tags its listeners: either
		// CCM knows the other's.
		Tags: []string{tagService + string(svc.UID), s.name},
	}
	if p.Protocol == v1.ProtocolTCP {
		opts.TimeoutClientData = s.timeouts.clientData
		opts.TimeoutMemberConnect = s.timeouts.memberConnect
		opts.TimeoutMemberData = s.timeouts.memberData
		opts.TimeoutTCPInspect = s.timeouts.tcpInspect
	}
	opts.InsertHeaders = s.insertHeaders(p)
	if s.isTLS(p) {
		opts.DefaultTLSContainerRef = s.tls.ref
	}
	return opts
}

func poolOpts(s lbSpec, p v1.ServicePort) osapi.PoolCreate {
	return osapi.PoolCreate{
		Name:     objectName(s, p),
		Protocol: s.poolProtocol(p),
		LBMethod: s.method,
	}
}

func memberOpts(s lbSpec, p v1.ServicePort) []osapi.PoolMember {
	out := make([]osapi.PoolMember, 0, len(s.members))
	for _, m := range s.members {
		out = append(out, memberOpt(s, p, m))
	}
	return out
}

// memberOpt is the member of address in the pool of p.
func memberOpt(s lbSpec, p v1.ServicePort, address string) osapi.PoolMember {
	o := osapi.PoolMember{Address: address, ProtocolPort: int(p.NodePort), SubnetID: s.memberSubnetID}
	if s.monitor != nil && s.monitor.httpPort != 0 {
		port := s.monitor.httpPort
		o.MonitorPort = &port
	}
	return o
}

func monitorOpts(s lbSpec, p v1.ServicePort) osapi.MonitorCreate {
	m := s.monitor
	o := osapi.MonitorCreate{
		Name:           objectName(s, p),
		Type:           m.monitorType(p.Protocol),
		Delay:          m.delay,
		Timeout:        m.timeout,
		MaxRetries:     m.maxRetries,
		MaxRetriesDown: m.maxRetriesDown,
	}
	if o.Type == "HTTP" {
		o.HTTPMethod, o.URLPath, o.ExpectedCodes = "GET", "/healthz", "200"
	}
	return o
}

func (m *monitorSpec) monitorType(proto v1.Protocol) string {
	switch {
	case m.httpPort != 0:
		return "HTTP"
	case proto == v1.ProtocolUDP:
		return "UDP-CONNECT"
	case proto == v1.ProtocolSCTP:
		return "SCTP"
	}
	return "TCP"
}

// listenerProtocol is what the listener of p speaks.
func (s *lbSpec) listenerProtocol(p v1.ServicePort) string {
	if s.isTLS(p) {
		return "TERMINATED_HTTPS"
	}
	if s.xff && p.Protocol == v1.ProtocolTCP {
		return "HTTP"
	}
	return string(p.Protocol)
}

// poolProtocol is what the pool of p speaks to the Nodes.
func (s *lbSpec) poolProtocol(p v1.ServicePort) string {
	switch {
	case p.Protocol != v1.ProtocolTCP:
		return string(p.Protocol)
	case s.proxy == annotation.ProxyProtocolV1:
		return "PROXY"
	case s.proxy == annotation.ProxyProtocolV2:
		return "PROXYV2"
	case s.xff || s.isTLS(p):
		return "HTTP"
	}
	return "TCP"
}

func (s *lbSpec) listenerKey(p v1.ServicePort) string {
	return fmt.Sprintf("%s/%05d", s.listenerProtocol(p), p.Port)
}
