package local

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	servicehelpers "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/l4proxy"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// Labels and taints that keep a Node out of load balancer backends.
const (
	excludeLBLabel      = "node.kubernetes.io/exclude-from-external-load-balancers"
	toBeDeletedTaintKey = "ToBeDeletedByClusterAutoscaler"
)

// Event reasons of the local cloud's Problems (provider has the shared ones).
const (
	ReasonIPPoolExhausted = "IPPoolExhausted"
	ReasonIPNotAvailable  = "IPNotAvailable"
	ReasonListenFailed    = "ListenFailed"
)

// servedLB is a Service this process serves.
type servedLB struct {
	key        string
	ip         netip.Addr
	sharingKey string
	ports      []PortKey
	fp         lbcycle.Fingerprint // what it was converged to (the cycle's record)
}

// lbOptions are the parsed annotations and spec of one Service.
type lbOptions struct {
	pool          string
	ip            netip.Addr
	sharingKey    string
	hcInterval    time.Duration
	udpIdle       time.Duration
	ports         []PortKey
	sourceRanges  []netip.Prefix
	family        v1.IPFamily
	healthCheckNP int32
}

// GetLoadBalancer reports whether this process serves the Service.
func (c *Cloud) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	return c.lb.getLoadBalancer(ctx, clusterName, svc)
}

func (st *steps) getLoadBalancer(_ context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.served[svc.UID]
	if !ok {
		return nil, false, nil
	}
	return statusFor(s.ip), true, nil
}

// GetLoadBalancerName is the framework's default name (from the Service UID).
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// serve allocates the Service's address and serves every port on it.
func (st *steps) serve(ctx context.Context, svc *v1.Service, opts lbOptions, nodes []*v1.Node) error {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	st.infMu.RLock()
	synced, services := st.synced, st.services
	st.infMu.RUnlock()
	for _, ok := range synced {
		if !ok() {
			return errors.New("the Service and Node caches have not synced yet")
		}
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	used, err := st.usedAddresses(services, svc)
	if err != nil {
		return err
	}
	var current netip.Addr
	if s, ok := st.served[svc.UID]; ok {
		current = s.ip
	} else {
		current = statusIP(svc)
	}
	ip, err := Allocate(st.pools, used, Request{
		Key:        svc.Namespace + "/" + svc.Name,
		Namespace:  svc.Namespace,
		Pool:       opts.pool,
		IP:         opts.ip,
		Current:    current,
		Family:     opts.family,
		SharingKey: opts.sharingKey,
		Ports:      opts.ports,
	})
	if err != nil {
		reason := ReasonIPNotAvailable
		if errors.Is(err, ErrPoolExhausted) {
			reason = ReasonIPPoolExhausted
		}
		return &outcome.Problem{Reason: reason, Message: "Cannot allocate a load balancer IP: " + err.Error(), Err: err}
	}

	specs := st.listenerSpecs(svc, ip, opts, nodes)
	if err := st.proxy.Ensure(string(svc.UID), specs); err != nil {
		return &outcome.Problem{Reason: ReasonListenFailed, Message: fmt.Sprintf("Cannot serve %s: %v", ip, err), Err: err}
	}
	prev, existed := st.served[svc.UID]
	st.served[svc.UID] = &servedLB{key: svc.Namespace + "/" + svc.Name, ip: ip, sharingKey: opts.sharingKey, ports: opts.ports}
	if !existed || prev.ip != ip {
		logger.Info("Serving load balancer", "ip", ip, "ports", len(specs), "backends", len(nodes))
	} else {
		logger.V(2).Info("Load balancer up to date", "ip", ip, "backends", len(nodes))
	}
	return nil
}

func statusFor(ip netip.Addr) *v1.LoadBalancerStatus {
	mode := v1.LoadBalancerIPModeProxy
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip.String(), IPMode: &mode}}}
}

func statusIP(svc *v1.Service) netip.Addr {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			return a.Unmap()
		}
	}
	return netip.Addr{}
}

// usedAddresses: who holds which pool address, from every Service's status and from
// what this process serves. Status is the only record of an allocation, so a new
// process or a new leader rebuilds the same picture and never hands an IP out twice.
func (st *steps) usedAddresses(services corelisters.ServiceLister, self *v1.Service) (map[netip.Addr][]Holder, error) {
	used := map[netip.Addr][]Holder{}
	seen := map[string]bool{}
	for _, s := range st.served {
		used[s.ip] = append(used[s.ip], Holder{Key: s.key, SharingKey: s.sharingKey, Ports: s.ports})
		seen[s.key+"|"+s.ip.String()] = true
	}
	if services == nil {
		return used, nil
	}
	svcs, err := services.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing Services from the cache: %w", err)
	}
	for _, s := range svcs {
		key := s.Namespace + "/" + s.Name
		if s.UID == self.UID {
			continue
		}
		for _, in := range s.Status.LoadBalancer.Ingress {
			a, err := netip.ParseAddr(in.IP)
			if err != nil || !st.inPools(a.Unmap()) || seen[key+"|"+a.Unmap().String()] {
				continue
			}
			sharing, _ := annotation.LocalAllowSharedIP.NonEmptyString(s)
			used[a.Unmap()] = append(used[a.Unmap()], Holder{Key: key, SharingKey: sharing, Ports: portKeys(s)})
		}
	}
	return used, nil
}

func (st *steps) inPools(a netip.Addr) bool {
	return slices.ContainsFunc(st.pools, func(p Pool) bool { return p.Contains(a) })
}

func portKeys(svc *v1.Service) []PortKey {
	out := make([]PortKey, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		out = append(out, PortKey{Protocol: p.Protocol, Port: p.Port})
	}
	return out
}

// parseOptions reads and checks everything of the Service this cloud uses, and
// reports every problem at once.
func (st *steps) parseOptions(svc *v1.Service) (lbOptions, error) {
	var errs []error
	o := lbOptions{
		hcInterval:    st.cfg.LoadBalancer.HealthCheck.Interval.Duration,
		udpIdle:       st.cfg.LoadBalancer.UDPIdleTimeout.Duration,
		ports:         portKeys(svc),
		healthCheckNP: svc.Spec.HealthCheckNodePort,
	}
	keep := func(err error) bool {
		if err != nil && !errors.Is(err, annotation.ErrNotSet) {
			errs = append(errs, err)
			return false
		}
		return err == nil
	}
	if v, err := annotation.LocalPool.NonEmptyString(svc); keep(err) {
		o.pool = v
	}
	if v, err := annotation.LocalLoadBalancerIP.IP(svc); keep(err) {
		o.ip = v
	} else if !annotation.LocalLoadBalancerIP.IsSet(svc) && svc.Spec.LoadBalancerIP != "" {
		a, err := netip.ParseAddr(svc.Spec.LoadBalancerIP)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.loadBalancerIP %q is not an IP address", svc.Spec.LoadBalancerIP))
		} else {
			o.ip = a.Unmap()
		}
	}
	if v, err := annotation.LocalAllowSharedIP.NonEmptyString(svc); keep(err) {
		o.sharingKey = v
	}
	if v, err := annotation.LocalHealthCheckInterval.Duration(svc, time.Second, 5*time.Minute); keep(err) {
		o.hcInterval = v
	}
	if v, err := annotation.LocalUDPIdleTimeout.Duration(svc, time.Second, time.Hour); keep(err) {
		o.udpIdle = v
	}
	if len(svc.Spec.IPFamilies) > 0 {
		o.family = svc.Spec.IPFamilies[0]
	}
	for _, p := range svc.Spec.Ports {
		switch {
		case p.Protocol != v1.ProtocolTCP && p.Protocol != v1.ProtocolUDP:
			errs = append(errs, fmt.Errorf("port %q: protocol %s is not supported by the local cloud (TCP and UDP are)", p.Name, p.Protocol))
		case p.NodePort == 0:
			errs = append(errs, fmt.Errorf("port %q has no NodePort: the local cloud forwards to NodePorts, so allocateLoadBalancerNodePorts must not be false", p.Name))
		}
	}
	ranges, err := servicehelpers.GetLoadBalancerSourceRanges(svc)
	if err != nil {
		errs = append(errs, fmt.Errorf("load balancer source ranges: %w", err))
	} else if !servicehelpers.IsAllowAll(ranges) {
		for _, n := range ranges {
			if p, err := netip.ParsePrefix(n.String()); err == nil {
				o.sourceRanges = append(o.sourceRanges, p.Masked())
			}
		}
		slices.SortFunc(o.sourceRanges, func(a, b netip.Prefix) int { return strings.Compare(a.String(), b.String()) })
	}
	return o, errors.Join(errs...)
}

func (st *steps) listenerSpecs(svc *v1.Service, ip netip.Addr, o lbOptions, nodes []*v1.Node) []l4proxy.ListenerSpec {
	hc := l4proxy.HealthCheck{
		Interval:           o.hcInterval,
		Timeout:            min(st.cfg.LoadBalancer.HealthCheck.Timeout.Duration, o.hcInterval),
		HealthyThreshold:   st.cfg.LoadBalancer.HealthCheck.HealthyThreshold,
		UnhealthyThreshold: st.cfg.LoadBalancer.HealthCheck.UnhealthyThreshold,
	}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && o.healthCheckNP != 0 {
		// kube-proxy answers 200 on this port only on nodes with a local endpoint.
		hc.HTTPPort = int(o.healthCheckNP)
		hc.HTTPPath = "/healthz"
	}
	specs := make([]l4proxy.ListenerSpec, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		var backends []l4proxy.Backend
		for _, n := range nodes {
			if a, ok := st.backendIP(n, ip.Is4()); ok {
				backends = append(backends, l4proxy.Backend{Name: n.Name, Addr: netip.AddrPortFrom(a, uint16(p.NodePort))})
			}
		}
		specs = append(specs, l4proxy.ListenerSpec{
			Protocol:       l4proxy.Protocol(p.Protocol),
			Address:        netip.AddrPortFrom(ip, uint16(p.Port)),
			Backends:       backends,
			SourceRanges:   o.sourceRanges,
			HealthCheck:    hc,
			UDPIdleTimeout: o.udpIdle,
		})
	}
	return specs
}

// backendIP is where a Node is reached. The node controller writes a Node's
// providerID first and its addresses a moment later, and only the first change
// makes the service controller sync; a Node caught in between is reached at the
// InternalIP its instance is about to give it.
func (st *steps) backendIP(n *v1.Node, want4 bool) (netip.Addr, bool) {
	family := v1.IPv6Protocol
	if want4 {
		family = v1.IPv4Protocol
	}
	if !provider.AwaitingAddresses(n) {
		return provider.InternalIP(n.Status.Addresses, family)
	}
	in, found, err := st.inv.lookup(n)
	if err != nil || !found || in.State == StateTerminated {
		return netip.Addr{}, false
	}
	addrs := make([]v1.NodeAddress, 0, len(in.Addresses))
	for _, a := range in.Addresses {
		addrs = append(addrs, v1.NodeAddress{Type: a.Type, Address: a.Address})
	}
	return provider.InternalIP(addrs, family)
}

// nodeEligible is asked by the proxy for every new connection: a Node gets traffic
// while it is Ready, not excluded and not being removed.
func (st *steps) nodeEligible(name string) bool {
	st.infMu.RLock()
	lister := st.nodes
	st.infMu.RUnlock()
	if lister == nil {
		return true
	}
	n, err := lister.Get(name)
	if err != nil {
		return false
	}
	if n.DeletionTimestamp != nil {
		return false
	}
	if _, ok := n.Labels[excludeLBLabel]; ok {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == toBeDeletedTaintKey {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1.NodeReady {
			return cond.Status == v1.ConditionTrue
		}
	}
	return false
}
