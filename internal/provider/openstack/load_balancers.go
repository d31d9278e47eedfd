package openstack

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// Tags that say a load balancer is ours: the Service's UID and the cluster's
// (the kube-system namespace's UID), so that two clusters with the same
// --cluster-name in one project never touch each other's load balancers.
// Listeners carry the Service's tag too, which is what scopes a Service to its
// own listeners on a load balancer it shares (load-balancer-id).
const (
	tagService = "overcast-service-uid="
	tagCluster = "overcast-cluster-uid="
	// fullCheckInterval: an ACTIVE load balancer whose converged annotation
	// matches what the Service asks now is not walked (listeners, pools, members,
	// monitors) except once in this interval, which repairs drift.
	fullCheckInterval = time.Hour
	// fipDescription marks a floating IP this CCM created for a Service.
	fipDescription = "overcast-ccm floating IP of Service UID "
	// pendingRetry is how soon a Service is looked at again while Octavia works:
	// a look costs one read, and each step of a new load balancer is one pass.
	pendingRetry = 2 * time.Second
)

// Event reasons of the OpenStack load balancers.
const (
	reasonFloatingIPFailed    = "FloatingIPFailed"
	reasonImmutableIgnored    = "LoadBalancerSettingIgnored"
	reasonReplacingInError    = "ReplacingLoadBalancer"
	reasonRecreatingPool      = "RecreatingPool"
	reasonAdoptedLoadBalancer = "SharedLoadBalancer"
)

func (c *Cloud) lbName(clusterName string, svc *v1.Service) string {
	// cloud-provider-openstack's name, so existing tooling recognises it.
	return fmt.Sprintf("kube_service_%s_%s_%s", clusterName, svc.Namespace, svc.Name)
}

func portKey(p v1.ServicePort) string { return fmt.Sprintf("%s/%05d", p.Protocol, p.Port) }

func (c *Cloud) tags(svc *v1.Service, name string) []string {
	return []string{name, tagService + string(svc.UID), tagCluster + c.Cluster.Get()}
}

// owned says whether lb was created by this cluster for svc.
func (c *Cloud) owned(lb *loadbalancers.LoadBalancer, svc *v1.Service) bool {
	return slices.Contains(lb.Tags, tagService+string(svc.UID)) && slices.Contains(lb.Tags, tagCluster+c.Cluster.Get())
}

// findLB returns the Service's load balancer (found by its UID tag), or nil. An
// explicit load-balancer-id annotation names a load balancer to share instead.
func (c *Cloud) findLB(ctx context.Context, svc *v1.Service) (*loadbalancers.LoadBalancer, error) {
	if id, err := annotation.OpenStackLoadBalancerID.NonEmptyString(svc); err == nil {
		lb, err := c.api.getLoadBalancer(ctx, id)
		if hasStatus(err, http.StatusNotFound) {
			return nil, nil
		}
		return lb, octaviaErr(err)
	}
	lbs, err := c.api.listLoadBalancers(ctx, loadbalancers.ListOpts{Tags: []string{tagService + string(svc.UID)}})
	if err != nil {
		return nil, fmt.Errorf("listing load balancers: %w", octaviaErr(err))
	}
	// A Service UID is unique, but only a load balancer with this cluster's tag too
	// is ours: never act on another cluster's.
	lbs = slices.DeleteFunc(lbs, func(lb loadbalancers.LoadBalancer) bool { return !c.owned(&lb, svc) })
	switch len(lbs) {
	case 0:
		return nil, nil
	case 1:
		return &lbs[0], nil
	}
	return nil, fmt.Errorf("%d load balancers carry the tags of Service %s/%s: resolve by hand", len(lbs), svc.Namespace, svc.Name)
}

// GetLoadBalancer reports the Service's load balancer.
func (c *Cloud) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if err := c.api.session(ctx, svcOctavia, svcNetwork); err != nil {
		return nil, false, err
	}
	lb, err := c.findLB(ctx, svc)
	if err != nil || lb == nil {
		return nil, false, err
	}
	if name := c.lbName(clusterName, svc); !c.isOwner(lb, svc, name) && !slices.Contains(lb.Tags, name) {
		return nil, false, nil // named, but not (or no longer) shared by the Service
	}
	spec, err := c.spec(clusterName, svc, nil)
	if err != nil {
		// The status of what exists, however the Service reads now.
		spec = lbSpec{onlyPublic: true}
	}
	fip, err := c.vipFloatingIP(ctx, lb)
	if err != nil {
		return nil, true, err
	}
	addr := lb.VipAddress
	if fip != nil {
		addr = fip.FloatingIP
	}
	return c.statusFor(spec, addr, lb.VipAddress, spec.otherVIP(lb, addr)), true, nil
}

// GetLoadBalancerName is cloud-provider-openstack's name.
func (c *Cloud) GetLoadBalancerName(_ context.Context, clusterName string, svc *v1.Service) string {
	return c.lbName(clusterName, svc)
}

// resolveMembers adds the members of Nodes whose addresses the node controller
// has not written yet: their InternalIP is the one it is about to write, taken
// from the same (usually cached) view of the server. Without this, such a Node
// would stay out of its pools until the next unrelated sync, since a change of
// addresses alone does not make the service controller sync. A Node whose server
// is not found is left out, as an uninitialised one is.
func (c *Cloud) resolveMembers(ctx context.Context, s *lbSpec) error {
	if len(s.unaddressed) == 0 {
		return nil
	}
	for _, n := range s.unaddressed {
		srv, found, err := c.find(ctx, n, snapshot.MaxAge)
		if err != nil {
			return fmt.Errorf("looking up the addresses of Node %s: %w", n.Name, err)
		}
		if !found {
			continue
		}
		addrs := nodeAddresses(srv.Name, c.addressesOf(ctx, srv), []string{srv.AccessIPv4, srv.AccessIPv6}, c.cfg.Networking)
		if ip, ok := provider.InternalIP(addrs, s.family); ok && ip.Is6() == (s.family == v1.IPv6Protocol) {
			s.members = append(s.members, ip.String())
			if s.sg != nil {
				s.sg.servers = append(s.sg.servers, srv.ID)
				s.sg.serverLabels[srv.ID] = n.Labels
			}
		}
	}
	sort.Strings(s.members)
	s.members = slices.Compact(s.members)
	if s.sg != nil {
		sort.Strings(s.sg.servers)
		s.sg.servers = slices.Compact(s.sg.servers)
	}
	return nil
}

// statusFor: the hostname when one is asked for (the address is then in the
// load-balancer-address annotation), else the address, then the VIP unless only
// the public address is to be published. PROXY protocol makes ipMode Proxy, so
// kube-proxy sends in-cluster traffic through the load balancer too.
func (c *Cloud) statusFor(s lbSpec, addr, vip string, more ...string) *v1.LoadBalancerStatus {
	hostname := s.hostname
	if hostname == "" && s.proxy != annotation.ProxyProtocolNone && c.cfg.LoadBalancer.EnableIngressHostname {
		suffix := c.cfg.LoadBalancer.IngressHostnameSuffix
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
	st := &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: addr, IPMode: &mode}}}
	for _, m := range more { // a dual-stack load balancer's other family
		if m != "" && m != addr {
			st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: m, IPMode: &mode})
		}
	}
	if !s.onlyPublic && vip != "" && vip != addr && !slices.Contains(more, vip) {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: vip, IPMode: &mode})
	}
	return st
}

// warnImmutable tells the user when a setting Octavia cannot change on an existing
// load balancer differs from what the Service asks now.
func (c *Cloud) warnImmutable(svc *v1.Service, lb *loadbalancers.LoadBalancer, s lbSpec) {
	var diffs []string
	if s.flavorID != "" && lb.FlavorID != "" && s.flavorID != lb.FlavorID {
		diffs = append(diffs, fmt.Sprintf("flavor %s (it has %s)", s.flavorID, lb.FlavorID))
	}
	if s.availabilityZone != "" && s.availabilityZone != lb.AvailabilityZone {
		diffs = append(diffs, fmt.Sprintf("availability zone %q (it has %q)", s.availabilityZone, lb.AvailabilityZone))
	}
	if s.subnetID != "" && lb.VipSubnetID != "" && s.subnetID != lb.VipSubnetID {
		diffs = append(diffs, fmt.Sprintf("VIP subnet %s (it has %s)", s.subnetID, lb.VipSubnetID))
	}
	if vip, err := netip.ParseAddr(lb.VipAddress); err == nil && !isFamily(vip, s.family) && s.family != "" {
		diffs = append(diffs, fmt.Sprintf("an %s VIP (it has %s)", s.family, lb.VipAddress))
	}
	if s.secondFamily != "" && len(lb.AdditionalVips) == 0 && c.octaviaAPI.additionalVIPs.Load() == featureYes {
		diffs = append(diffs, "a second VIP for dual-stack (it has one)")
	}
	if len(diffs) > 0 {
		c.Events.Eventf(svc, v1.EventTypeWarning, reasonImmutableIgnored,
			"Load balancer %s keeps its %s: Octavia cannot change them; recreate the Service to apply", lb.ID, strings.Join(diffs, ", "))
	}
}

func (c *Cloud) createOpts(svc *v1.Service, s lbSpec) loadbalancers.CreateOpts {
	opts := loadbalancers.CreateOpts{
		Name:             s.name,
		Description:      fmt.Sprintf("Kubernetes Service %s/%s", svc.Namespace, svc.Name),
		VipSubnetID:      s.subnetID,
		VipNetworkID:     s.networkID,
		VipPortID:        s.portID,
		VipAddress:       s.vipAddress,
		Provider:         c.cfg.LoadBalancer.LBProvider,
		FlavorID:         s.flavorID,
		AvailabilityZone: s.availabilityZone,
		Tags:             c.tags(svc, s.name),
	}
	if c.serial.Load() {
		// Step by step: the listeners, pools, members and monitors follow,
		// one per pass (converge).
		return opts
	}
	// Fully populated: each listener with its default pool, the pool with its
	// members and health monitor, so that Octavia provisions the whole load
	// balancer once. (Octavia takes pools in a graph as a listener's
	// default_pool; a top-level "pools" list, or a POST of a listener with its
	// pool inline outside a graph, is another matter.)
	for _, p := range s.ports {
		l := c.listenerOpts(svc, s, p)
		pool := c.poolOpts(s, p)
		pool.Members = c.memberOpts(s, p)
		if s.monitor != nil {
			pool.Monitor = c.monitorOpts(s, p)
		}
		l.DefaultPool = &pool
		opts.Listeners = append(opts.Listeners, l)
	}
	return opts
}

func (c *Cloud) objectName(s lbSpec, p v1.ServicePort) string {
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

func (c *Cloud) listenerOpts(svc *v1.Service, s lbSpec, p v1.ServicePort) listeners.CreateOpts {
	limit := s.connLimit
	opts := listeners.CreateOpts{
		Name:         c.objectName(s, p),
		Protocol:     listeners.Protocol(s.listenerProtocol(p)),
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
	if s.xff && p.Protocol == v1.ProtocolTCP {
		opts.InsertHeaders = map[string]string{"X-Forwarded-For": "true"}
	}
	if s.isTLS(p) {
		opts.DefaultTlsContainerRef = s.tls.ref
	}
	return opts
}

func (c *Cloud) poolOpts(s lbSpec, p v1.ServicePort) pools.CreateOpts {
	return pools.CreateOpts{
		Name:     c.objectName(s, p),
		Protocol: pools.Protocol(s.poolProtocol(p)),
		LBMethod: pools.LBMethod(s.method),
	}
}

func (c *Cloud) memberOpts(s lbSpec, p v1.ServicePort) []pools.CreateMemberOpts {
	out := make([]pools.CreateMemberOpts, 0, len(s.members))
	for _, m := range s.members {
		o := pools.CreateMemberOpts{Address: m, ProtocolPort: int(p.NodePort), SubnetID: s.memberSubnetID}
		if s.monitor != nil && s.monitor.httpPort != 0 {
			port := s.monitor.httpPort
			o.MonitorPort = &port
		}
		out = append(out, o)
	}
	return out
}

func (c *Cloud) monitorOpts(s lbSpec, p v1.ServicePort) monitors.CreateOpts {
	m := s.monitor
	o := monitors.CreateOpts{
		Name:           c.objectName(s, p),
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

// converge makes at most one change (Octavia allows one at a time per load
// balancer) and says whether it made one. Only the Service's own listeners
// (mineListener) are ever changed: a port another Service holds refuses the
// Service before anything is written, and a Service sharing a load balancer is
// recorded on it before its first listener. Removals come first, so that a
// port whose listener must change protocol is free when its new listener is
// created.
func (c *Cloud) converge(ctx context.Context, svc *v1.Service, lb *loadbalancers.LoadBalancer, s lbSpec, shared bool) (bool, error) {
	have, err := c.api.listListeners(ctx, lb.ID)
	if err != nil {
		return false, fmt.Errorf("listing listeners: %w", octaviaErr(err))
	}
	mine, err := ownListeners(have, svc, s, lb.ID, shared)
	if err != nil {
		return false, err
	}
	if shared && len(s.ports) > 0 && !slices.Contains(lb.Tags, s.name) {
		// Recorded first: a Service's listeners are never on a load
		// balancer that does not name it.
		if err := c.updateTags(ctx, lb.ID, append(slices.Clone(lb.Tags), s.name)); err != nil {
			return false, err
		}
		c.Events.Eventf(svc, v1.EventTypeNormal, reasonAdoptedLoadBalancer, "Sharing load balancer %s", lb.ID)
		return true, nil
	}
	// Pools are listed once: protocol, method and health monitor of each. The
	// load balancer names its pools: a new one has none to list.
	var allPools []pools.Pool
	if len(lb.Pools) > 0 {
		if allPools, err = c.api.listPools(ctx, lb.ID); err != nil {
			return false, fmt.Errorf("listing pools: %w", octaviaErr(err))
		}
	}
	if changed, err := c.deleteUnwantedListener(ctx, mine, s); err != nil || changed {
		return changed, err
	}
	if changed, err := c.deleteStrayPools(ctx, allPools, s); err != nil || changed {
		return changed, err
	}
	poolByID := map[string]pools.Pool{}
	for _, p := range allPools {
		poolByID[p.ID] = p
	}
	for _, p := range s.ports {
		l, ok := mine[s.listenerKey(p)]
		if !ok {
			if err := c.createListener(ctx, svc, lb.ID, allPools, s, p); err != nil {
				return false, err
			}
			return true, nil
		}
		if changed, err := c.convergePort(ctx, svc, l, poolByID, s, p); err != nil || changed {
			return changed, err
		}
	}
	return false, nil
}

// ownListeners are the Service's listeners on the load balancer, by
// protocol/port; a port of the spec another Service's listener holds refuses
// the Service.
func ownListeners(have []listeners.Listener, svc *v1.Service, s lbSpec, lbID string, shared bool) (map[string]listeners.Listener, error) {
	byKey := map[string]listeners.Listener{}
	taken := map[string]listeners.Listener{} // other Services' listeners
	for _, l := range have {
		k := fmt.Sprintf("%s/%05d", l.Protocol, l.ProtocolPort)
		if !mineListener(l, svc, s.name, !shared) {
			taken[k] = l
			continue
		}
		byKey[k] = l
	}
	var clashes []string
	for _, p := range s.ports {
		if l, ok := taken[s.listenerKey(p)]; ok {
			clashes = append(clashes, fmt.Sprintf("%s/%d (Service %s)", l.Protocol, l.ProtocolPort, serviceNamed(l, s.cluster)))
		}
	}
	if len(clashes) > 0 {
		return nil, outcome.Refuse(reasonPortTaken, "Load balancer %s already listens on %s; nothing was changed", lbID, strings.Join(clashes, ", "))
	}
	return byKey, nil
}

// deleteUnwantedListener deletes, of the Service's listeners no port wants
// (in the order of their keys), the first one's pool, else the listener.
func (c *Cloud) deleteUnwantedListener(ctx context.Context, mine map[string]listeners.Listener, s lbSpec) (bool, error) {
	want := map[string]bool{}
	for _, p := range s.ports {
		want[s.listenerKey(p)] = true
	}
	for _, k := range slices.Sorted(maps.Keys(mine)) {
		if want[k] {
			continue
		}
		l := mine[k]
		if l.DefaultPoolID != "" {
			if err := c.api.deletePool(ctx, l.DefaultPoolID); err != nil {
				return false, fmt.Errorf("deleting pool of listener %s: %w", k, octaviaErr(err))
			}
			return true, nil
		}
		if err := c.api.deleteListener(ctx, l.ID); err != nil {
			return false, fmt.Errorf("deleting listener %s: %w", k, octaviaErr(err))
		}
		return true, nil
	}
	return false, nil
}

// createListener creates the listener of p. The pool a listener deleted
// behind our back left serves the new one: nothing is left over, and its
// members are kept.
func (c *Cloud) createListener(ctx context.Context, svc *v1.Service, lbID string, allPools []pools.Pool, s lbSpec, p v1.ServicePort) error {
	opts := c.listenerOpts(svc, s, p)
	opts.LoadbalancerID = lbID
	if i := slices.IndexFunc(allPools, func(pool pools.Pool) bool {
		return len(pool.Listeners) == 0 && pool.Name == c.objectName(s, p) && pool.Protocol == s.poolProtocol(p)
	}); i >= 0 {
		opts.DefaultPoolID = allPools[i].ID
	}
	if err := c.api.createListener(ctx, opts); err != nil {
		return fmt.Errorf("creating listener %s: %w", s.listenerKey(p), octaviaErr(err))
	}
	return nil
}

// convergePort makes the first change the listener of p and its pool need.
func (c *Cloud) convergePort(ctx context.Context, svc *v1.Service, l listeners.Listener, poolByID map[string]pools.Pool, s lbSpec, p v1.ServicePort) (bool, error) {
	k := s.listenerKey(p)
	if changed, err := c.convergeListener(ctx, l, s, p); err != nil || changed {
		return changed, err
	}
	pool, ok := poolByID[l.DefaultPoolID]
	if !ok {
		opts := c.poolOpts(s, p)
		opts.ListenerID = l.ID
		if err := c.api.createPool(ctx, opts); err != nil {
			return false, fmt.Errorf("creating the pool of listener %s: %w", k, octaviaErr(err))
		}
		return true, nil
	}
	if pool.Protocol != s.poolProtocol(p) {
		// Octavia cannot change a pool's protocol (PROXY on or off): replace it.
		c.Events.Eventf(svc, v1.EventTypeNormal, reasonRecreatingPool, "Recreating the pool of %s to speak %s instead of %s", k, s.poolProtocol(p), pool.Protocol)
		if err := c.api.deletePool(ctx, pool.ID); err != nil {
			return false, fmt.Errorf("deleting pool %s to change its protocol: %w", pool.ID, octaviaErr(err))
		}
		return true, nil
	}
	if pool.LBMethod != s.method {
		if err := c.api.setPoolMethod(ctx, pool.ID, s.method); err != nil {
			return false, fmt.Errorf("updating the method of pool %s: %w", pool.ID, octaviaErr(err))
		}
		return true, nil
	}
	if changed, err := c.convergeMembers(ctx, pool, s, p); err != nil || changed {
		return changed, err
	}
	return c.convergeMonitor(ctx, pool, s, p)
}

// deleteStrayPools deletes a pool of the Service's that no listener uses and
// none of its ports wants (its listener deleted with the port, or behind our
// back with a pool of another protocol); one a pass.
func (c *Cloud) deleteStrayPools(ctx context.Context, all []pools.Pool, s lbSpec) (bool, error) {
	wanted := map[string]string{} // name → protocol
	for _, p := range s.ports {
		wanted[c.objectName(s, p)] = s.poolProtocol(p)
	}
	for _, pool := range all {
		if len(pool.Listeners) > 0 || !strings.HasPrefix(pool.Name, s.name+"_") || wanted[pool.Name] == pool.Protocol {
			continue
		}
		if err := c.api.deletePool(ctx, pool.ID); err != nil {
			return false, fmt.Errorf("deleting pool %s, which no listener uses: %w", pool.ID, octaviaErr(err))
		}
		return true, nil
	}
	return false, nil
}

// convergeListener updates what Octavia can change in place.
func (c *Cloud) convergeListener(ctx context.Context, l listeners.Listener, s lbSpec, p v1.ServicePort) (bool, error) {
	var u listeners.UpdateOpts
	changed := false
	cidrs := slices.Clone(l.AllowedCIDRs)
	sort.Strings(cidrs)
	if !slices.Equal(cidrs, s.allowedCIDRs) && (!openToAll(cidrs) || !openToAll(s.allowedCIDRs)) {
		update := s.listenerCIDRs()
		u.AllowedCIDRs, changed = &update, true
	}
	if l.ConnLimit != s.connLimit {
		limit := s.connLimit
		u.ConnLimit, changed = &limit, true
	}
	if s.isTLS(p) && l.DefaultTlsContainerRef != s.tls.ref {
		// A new certificate (a rotated Secret, another reference).
		ref := s.tls.ref
		u.DefaultTlsContainerRef, changed = &ref, true
	}
	if p.Protocol == v1.ProtocolTCP {
		for _, t := range []struct {
			want *int
			have int
			into **int
		}{
			{s.timeouts.clientData, l.TimeoutClientData, &u.TimeoutClientData},
			{s.timeouts.memberConnect, l.TimeoutMemberConnect, &u.TimeoutMemberConnect},
			{s.timeouts.memberData, l.TimeoutMemberData, &u.TimeoutMemberData},
			{s.timeouts.tcpInspect, l.TimeoutTCPInspect, &u.TimeoutTCPInspect},
		} {
			if t.want != nil && *t.want != t.have {
				*t.into, changed = t.want, true
			}
		}
	}
	if !changed {
		return false, nil
	}
	if err := c.api.updateListener(ctx, l.ID, u); err != nil {
		return false, fmt.Errorf("updating listener %s/%d: %w", l.Protocol, l.ProtocolPort, octaviaErr(err))
	}
	return true, nil
}

// convergeMonitor creates, updates or deletes the pool's health monitor. Its type
// cannot change in place, so a new type replaces it.
func (c *Cloud) convergeMonitor(ctx context.Context, pool pools.Pool, s lbSpec, p v1.ServicePort) (bool, error) {
	if s.monitor == nil {
		if pool.MonitorID == "" {
			return false, nil
		}
		if err := c.api.deleteMonitor(ctx, pool.MonitorID); err != nil {
			return false, fmt.Errorf("deleting health monitor %s: %w", pool.MonitorID, octaviaErr(err))
		}
		return true, nil
	}
	want := c.monitorOpts(s, p)
	if pool.MonitorID == "" {
		want.PoolID = pool.ID
		if err := c.api.createMonitor(ctx, want); err != nil {
			return false, fmt.Errorf("creating the health monitor of pool %s: %w", pool.ID, octaviaErr(err))
		}
		return true, nil
	}
	have, err := c.api.getMonitor(ctx, pool.MonitorID)
	if err != nil {
		return false, fmt.Errorf("reading health monitor %s: %w", pool.MonitorID, octaviaErr(err))
	}
	if have.Type != want.Type {
		if err := c.api.deleteMonitor(ctx, have.ID); err != nil {
			return false, fmt.Errorf("deleting health monitor %s to change its type: %w", have.ID, octaviaErr(err))
		}
		return true, nil
	}
	if have.Delay == want.Delay && have.Timeout == want.Timeout && have.MaxRetries == want.MaxRetries &&
		have.MaxRetriesDown == want.MaxRetriesDown && (want.Type != "HTTP" || have.URLPath == want.URLPath) {
		return false, nil
	}
	u := monitors.UpdateOpts{Delay: want.Delay, Timeout: want.Timeout, MaxRetries: want.MaxRetries, MaxRetriesDown: want.MaxRetriesDown, URLPath: want.URLPath}
	if err := c.api.updateMonitor(ctx, have.ID, u); err != nil {
		return false, fmt.Errorf("updating health monitor %s: %w", have.ID, octaviaErr(err))
	}
	return true, nil
}

// convergeMembers replaces the pool's members in one batch call when they differ.
func (c *Cloud) convergeMembers(ctx context.Context, pool pools.Pool, s lbSpec, p v1.ServicePort) (bool, error) {
	poolID := pool.ID
	var members []leanMember
	if len(pool.Members) > 0 { // the pool names its members: a new one has none to list
		var err error
		if members, err = c.api.listMembers(ctx, poolID); err != nil {
			return false, fmt.Errorf("listing members: %w", octaviaErr(err))
		}
	}
	monitorPort := 0
	if s.monitor != nil {
		monitorPort = s.monitor.httpPort
	}
	have := make([]string, 0, len(members))
	for _, m := range members {
		monitor := 0
		if m.MonitorPort != nil {
			monitor = *m.MonitorPort
		}
		have = append(have, m.Address+":"+strconv.Itoa(m.ProtocolPort)+"/"+strconv.Itoa(monitor))
	}
	want := make([]string, 0, len(s.members))
	for _, m := range s.members {
		want = append(want, m+":"+strconv.Itoa(int(p.NodePort))+"/"+strconv.Itoa(monitorPort))
	}
	sort.Strings(have)
	sort.Strings(want)
	if slices.Equal(have, want) {
		return false, nil
	}
	batch := make([]pools.BatchUpdateMemberOpts, 0, len(s.members))
	for _, m := range c.memberOpts(s, p) {
		o := pools.BatchUpdateMemberOpts{Address: m.Address, ProtocolPort: m.ProtocolPort, MonitorPort: m.MonitorPort}
		if m.SubnetID != "" {
			subnet := m.SubnetID
			o.SubnetID = &subnet
		}
		batch = append(batch, o)
	}
	if err := c.api.putMembers(ctx, poolID, batch); err != nil {
		return false, fmt.Errorf("updating members of pool %s: %w", poolID, octaviaErr(err))
	}
	return true, nil
}

// rebuildIfStranded looks at the status tree of an ACTIVE load balancer of the
// Service: when Octavia left any of its listeners, pools, monitors or members
// pending, they never finish (a provider that does not complete the children of
// a fully populated load balancer: the test harness's Octavia 11.0.0 is one),
// and nothing of them can be changed. The load balancer is then deleted to be
// built again step by step, as every later one is. Its floating IP is kept for
// the new one. It returns a RetryError when it rebuilds, nil when all is well.
func (c *Cloud) rebuildIfStranded(ctx context.Context, svc *v1.Service, lb *loadbalancers.LoadBalancer) (string, error) {
	if err := c.api.session(ctx, svcOctavia); err != nil {
		return "", err
	}
	var tree statusTree
	if err := c.api.loadBalancerStatuses(ctx, lb.ID, &tree); err != nil {
		return "", fmt.Errorf("reading the status tree of load balancer %s: %w", lb.ID, octaviaErr(err))
	}
	pending := tree.pending()
	if tree.Statuses.LoadBalancer.ProvisioningStatus != "ACTIVE" || pending == "" {
		return "", nil
	}
	if others := sharers(lb, lb.Name); len(others) > 0 {
		return "", outcome.Refuse(outcome.ReasonCloudRefused, "Octavia left %s of load balancer %s pending for good; it is shared with %d other Service(s), so it is left as it is", pending, lb.ID, len(others))
	}
	logger := klog.FromContext(ctx)
	if c.serial.CompareAndSwap(false, true) {
		logger.Error(nil, "Octavia left the children of a fully populated load balancer pending; creating load balancers step by step from now on (set [LoadBalancer] provider-requires-serial-api-calls=true to skip the first attempt)",
			"loadBalancer", lb.ID, "pending", pending)
	}
	c.Events.Eventf(svc, v1.EventTypeNormal, reasonReplacingInError, "Octavia left %s of load balancer %s pending for good; rebuilding it step by step", pending, lb.ID)
	c.setCreated(lb.ID, "")
	if err := c.deleteKeepingAddress(ctx, svc, lb); err != nil {
		return "", fmt.Errorf("deleting load balancer %s to rebuild it: %w", lb.ID, err)
	}
	return fmt.Sprintf("load balancer %s is being rebuilt step by step", lb.ID), nil
}

// deleteKeepingAddress deletes the Service's load balancer (cascade) to build
// it anew; its floating IP is detached and kept for the new one.
func (c *Cloud) deleteKeepingAddress(ctx context.Context, svc *v1.Service, lb *loadbalancers.LoadBalancer) error {
	if err := c.api.session(ctx, svcOctavia, svcNetwork); err != nil {
		return err
	}
	if err := c.releaseFloatingIP(ctx, svc, lb, true, false); err != nil {
		return err
	}
	return c.deleteCascade(ctx, lb.ID)
}

// deleteCascade deletes a load balancer with all it has; already gone is success.
func (c *Cloud) deleteCascade(ctx context.Context, id string) error {
	return octaviaErr(c.api.deleteLoadBalancer(ctx, id))
}

// statusTree is Octavia's status tree of a load balancer (GET
// /v2/lbaas/loadbalancers/{id}/status), with only the provisioning statuses:
// gophercloud's StatusTree reads pools' monitors under "healthmonitor", but the
// tree names them "health_monitor".
type statusTree struct {
	Statuses struct {
		LoadBalancer struct {
			ProvisioningStatus string `json:"provisioning_status"`
			Listeners          []struct {
				ProvisioningStatus string `json:"provisioning_status"`
				Pools              []struct {
					ProvisioningStatus string `json:"provisioning_status"`
					HealthMonitor      *struct {
						ProvisioningStatus string `json:"provisioning_status"`
					} `json:"health_monitor"`
					Members []struct {
						ProvisioningStatus string `json:"provisioning_status"`
					} `json:"members"`
				} `json:"pools"`
			} `json:"listeners"`
		} `json:"loadbalancer"`
	} `json:"statuses"`
}

// pending says how many listeners, pools, monitors and members of the tree
// are pending ("" if none).
func (t *statusTree) pending() string {
	n := 0
	count := func(status string) {
		if strings.HasPrefix(status, "PENDING") {
			n++
		}
	}
	for _, l := range t.Statuses.LoadBalancer.Listeners {
		count(l.ProvisioningStatus)
		for _, p := range l.Pools {
			count(p.ProvisioningStatus)
			if p.HealthMonitor != nil {
				count(p.HealthMonitor.ProvisioningStatus)
			}
			for _, m := range p.Members {
				count(m.ProvisioningStatus)
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d listener(s), pool(s), monitor(s) or member(s)", n)
}
