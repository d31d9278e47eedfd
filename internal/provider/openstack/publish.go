package openstack

import (
	"context"
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Publishing a load balancer: the floating IP on its VIP (given back by an
// internal Service), and the Service's status.

// Publish attaches the floating IP (an internal Service gives its own back) and
// says the status.
func (st *steps) Publish(ctx context.Context, svc *v1.Service, spec lbSpec, lb octaviaLB) (*v1.LoadBalancerStatus, string, error) {
	err := st.api.Session(ctx, osapi.Neutron)
	if err != nil {
		return nil, "", err
	}
	addr := lb.Obj.VipAddress
	switch {
	case spec.noFloatingIP() && !lb.Shared:
		// A Service made internal gives its floating IP back.
		if err := st.releaseFloatingIP(ctx, svc, &lb.Obj, spec.keepFIP, false); err != nil {
			return nil, "", err
		}
	case spec.noFloatingIP():
	case lb.Shared:
		// The owner gives a shared load balancer its address (one that is
		// internal has none): a sharer never does.
		fip, err := st.vipFloatingIP(ctx, &lb.Obj)
		if err != nil {
			return nil, "", err
		}
		if fip == nil {
			return nil, "", outcome.Refuse(reasonSharingRefused, "Load balancer %s has no floating IP: only the Service it was made for gives it one", lb.ID)
		}
		addr = fip.FloatingIP
	default:
		if addr, err = st.ensureFloatingIP(ctx, svc, &lb.Obj, spec); err != nil {
			return nil, "", err
		}
	}
	return st.statusFor(spec, addr, lb.Obj.VipAddress, spec.otherVIP(&lb.Obj, addr)), addr, nil
}

// Published answers from the shared listing of floating IPs: the address must
// be the recorded one, on the VIP's port (an internal Service must have none).
func (st *steps) Published(ctx context.Context, _ *v1.Service, spec lbSpec, rec lbcycle.Record, lb octaviaLB) (*v1.LoadBalancerStatus, bool, error) {
	addr := lb.Obj.VipAddress
	fip, hasFIP, err := st.index.fips.Get(ctx, "port/"+lb.Obj.VipPortID)
	switch {
	case err != nil:
		return nil, false, err
	case spec.noFloatingIP() && hasFIP:
		return nil, false, nil // to be given back
	case !spec.noFloatingIP():
		if !hasFIP || (spec.floatingIP != "" && spec.floatingIP != fip.FloatingIP) {
			return nil, false, nil
		}
		addr = fip.FloatingIP
	}
	if rec.Address != addr {
		return nil, false, nil
	}
	return st.statusFor(spec, addr, lb.Obj.VipAddress, spec.otherVIP(&lb.Obj, addr)), true, nil
}

// statusFor: the hostname when one is asked for (the address is then in the
// load-balancer-address annotation), else the address, then the VIP unless only
// the public address is to be published. PROXY protocol makes ipMode Proxy, so
// kube-proxy sends in-cluster traffic through the load balancer too.
func (st *steps) statusFor(s lbSpec, addr, vip string, more ...string) *v1.LoadBalancerStatus {
	hostname := s.hostname
	if hostname == "" && s.proxy != annotation.ProxyProtocolNone && st.cfg.LoadBalancer.EnableIngressHostname {
		suffix := st.cfg.LoadBalancer.IngressHostnameSuffix
		if suffix == "" {
			suffix = "nip.io"
		}
		hostname = addr + "." + suffix
	}
	if hostname != "" {
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: hostname}}}
	}
	mode := v1.LoadBalancerIPModeVIP
	if s.proxy != annotation.ProxyProtocolNone {
		mode = v1.LoadBalancerIPModeProxy
	}
	out := &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: addr, IPMode: &mode}}}
	for _, m := range more { // a dual-stack load balancer's other family
		if m != "" && m != addr {
			out.Ingress = append(out.Ingress, v1.LoadBalancerIngress{IP: m, IPMode: &mode})
		}
	}
	if !s.onlyPublic && vip != "" && vip != addr && !slices.Contains(more, vip) {
		out.Ingress = append(out.Ingress, v1.LoadBalancerIngress{IP: vip, IPMode: &mode})
	}
	return out
}

// noFloatingIP: the load balancer's address is its VIP (internal, or IPv6
// with no IPv4 VIP: Neutron's floating IPs are IPv4).
func (s *lbSpec) noFloatingIP() bool {
	return s.internal || s.family == v1.IPv6Protocol && s.secondFamily != v1.IPv4Protocol
}

// otherVIP is, on a dual-stack load balancer, its VIP of the family addr is
// not of: the second address of its status.
func (s *lbSpec) otherVIP(lb *osapi.LoadBalancer, addr string) string {
	if s.secondFamily == "" {
		return ""
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return ""
	}
	vips := []string{lb.VipAddress}
	for _, av := range lb.AdditionalVips {
		vips = append(vips, av.IPAddress)
	}
	for _, v := range vips {
		if b, err := netip.ParseAddr(v); err == nil && b.Is6() != a.Is6() {
			return v
		}
	}
	return ""
}
