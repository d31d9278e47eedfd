package openstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider"
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
	return []string{name, tagService + string(svc.UID), tagCluster + c.clusterUID()}
}

// owned says whether lb was created by this cluster for svc.
func (c *Cloud) owned(lb *loadbalancers.LoadBalancer, svc *v1.Service) bool {
	return slices.Contains(lb.Tags, tagService+string(svc.UID)) && slices.Contains(lb.Tags, tagCluster+c.clusterUID())
}

// findLB returns the Service's load balancer (found by its UID tag), or nil. An
// explicit load-balancer-id annotation names a load balancer to share instead.
func (c *Cloud) findLB(ctx context.Context, octavia *gophercloud.ServiceClient, svc *v1.Service) (*loadbalancers.LoadBalancer, error) {
	if id, err := annotation.OpenStackLoadBalancerID.NonEmptyString(svc); err == nil {
		lb, err := loadbalancers.Get(ctx, octavia, id).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, nil
		}
		return lb, redactErr(err)
	}
	pages, err := loadbalancers.List(octavia, loadbalancers.ListOpts{Tags: []string{tagService + string(svc.UID)}}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing load balancers: %w", redact(err))
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, err
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

// busyOr turns Octavia's 409 (the load balancer is PENDING: immutable) into a
// requeue; other errors stay errors.
func busyOr(err error) error {
	if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		return api.NewRetryError("Octavia is busy with this load balancer: "+err.Error(), pendingRetry)
	}
	return err
}

func redactErr(err error) error {
	if err == nil {
		return nil
	}
	return redact(err)
}

// GetLoadBalancer reports the Service's load balancer.
func (c *Cloud) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	octavia, network, err := c.lbClients(ctx)
	if err != nil {
		return nil, false, err
	}
	lb, err := c.findLB(ctx, octavia, svc)
	if err != nil || lb == nil {
		return nil, false, err
	}
	spec, err := c.spec(clusterName, svc, nil)
	if err != nil {
		// The status of what exists, however the Service reads now.
		spec = lbSpec{onlyPublic: true}
	}
	fip, err := c.vipFloatingIP(ctx, network, lb)
	if err != nil {
		return nil, true, err
	}
	addr := lb.VipAddress
	if fip != nil {
		addr = fip.FloatingIP
	}
	return c.statusFor(spec, addr, lb.VipAddress), true, nil
}

// GetLoadBalancerName is cloud-provider-openstack's name.
func (c *Cloud) GetLoadBalancerName(_ context.Context, clusterName string, svc *v1.Service) string {
	return c.lbName(clusterName, svc)
}

// EnsureLoadBalancer creates or converges the Service's Octavia load balancer. It
// never waits for Octavia: while anything is PENDING it returns a RetryError and
// the Service is looked at again. A converged load balancer costs no write.
func (c *Cloud) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	spec, err := c.spec(clusterName, svc, nodes)
	if err != nil {
		return nil, provider.Invalid(err)
	}
	if c.clusterUID() == "" {
		return nil, errors.New("the cluster UID (the kube-system namespace's) is not known yet")
	}
	if err := c.resolveMembers(ctx, &spec); err != nil {
		return nil, err
	}
	if st, ok := c.unchanged(ctx, svc, spec); ok {
		return st, nil
	}
	octavia, network, err := c.lbClients(ctx)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	lb, err := c.findLB(ctx, octavia, svc)
	if err != nil {
		return nil, err
	}
	if lb == nil {
		if id, err := annotation.OpenStackLoadBalancerID.NonEmptyString(svc); err == nil {
			return nil, provider.Refuse(provider.ReasonInvalidAnnotation, "Load balancer %s named by %s does not exist; nothing was created", id, annotation.OpenStackLoadBalancerID)
		}
		// Check before building: what would refuse the Service later must
		// refuse it before anything is created for it.
		if err := c.requestedFloatingIPFree(ctx, network, spec); err != nil {
			return nil, err
		}
		opts := c.createOpts(svc, spec)
		created, err := createLoadBalancer(ctx, octavia, opts)
		if err != nil {
			return nil, refusedOr(fmt.Errorf("octavia refused load balancer %s: %w", spec.name, redact(err)))
		}
		if len(opts.Listeners) == len(spec.ports) {
			c.setCreated(created.ID, spec.fingerprint()) // fully populated
		}
		logger.Info("Created load balancer", "id", created.ID, "listeners", len(spec.ports), "members", len(spec.members))
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is being created", created.ID), pendingRetry)
	}
	shared := !c.owned(lb, svc)
	switch {
	case strings.HasPrefix(lb.ProvisioningStatus, "PENDING"):
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is %s", lb.ID, lb.ProvisioningStatus), pendingRetry)
	case lb.ProvisioningStatus == "ERROR" && !shared:
		logger.Info("Replacing load balancer in ERROR", "id", lb.ID)
		c.events.Eventf(svc, v1.EventTypeNormal, reasonReplacingInError, "Load balancer %s is in ERROR; deleting it to create it anew", lb.ID)
		// Its floating IP is kept, detached, for the new load balancer.
		if err := c.releaseFloatingIP(ctx, network, svc, lb, true); err != nil {
			return nil, err
		}
		if err := loadbalancers.Delete(ctx, octavia, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, busyOr(fmt.Errorf("deleting load balancer %s in ERROR: %w", lb.ID, redact(err)))
		}
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s was in ERROR and is being replaced", lb.ID), pendingRetry)
	}
	converged := lb.ID + "/" + spec.fingerprint()
	asCreated := !shared && c.createdAs(lb.ID) == spec.fingerprint()
	if asCreated {
		// ACTIVE as created, provided Octavia finished its children too.
		if err := c.rebuildIfStranded(ctx, octavia, svc, lb); err != nil {
			return nil, err
		}
	}
	if !asCreated && (shared || svc.Annotations[string(annotation.OpenStackConverged)] != converged || c.fullCheckDue(lb.ID)) {
		if !shared {
			c.warnImmutable(svc, lb, spec)
		}
		changed, err := c.converge(ctx, octavia, svc, lb, spec, shared)
		if err != nil {
			if isRetry(err) && !shared && lb.ProvisioningStatus == "ACTIVE" {
				// Busy children of an ACTIVE load balancer may never finish.
				if serr := c.rebuildIfStranded(ctx, octavia, svc, lb); serr != nil {
					return nil, serr
				}
			}
			return nil, refusedOr(fmt.Errorf("cannot update load balancer %s: %w", lb.ID, err))
		}
		if changed {
			return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is being updated", lb.ID), pendingRetry)
		}
		c.fullCheckDone(lb.ID)
	}
	if shared {
		converged = ""
	}
	addr := lb.VipAddress
	if spec.internal {
		if !shared {
			// A Service made internal gives its floating IP back.
			if err := c.releaseFloatingIP(ctx, network, svc, lb, spec.keepFIP); err != nil {
				return nil, err
			}
		}
	} else {
		if addr, err = c.ensureFloatingIP(ctx, network, svc, lb, spec); err != nil {
			return nil, err
		}
	}
	c.recordAnnotations(ctx, svc, map[annotation.Name]string{
		annotation.OpenStackLoadBalancerAddress: addr,
		annotation.OpenStackConverged:           converged,
	})
	if asCreated {
		c.fullCheckDone(lb.ID)
		c.setCreated(lb.ID, "")
	}
	return c.statusFor(spec, addr, lb.VipAddress), nil
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
		srv, found, err := c.find(ctx, n, snapshotMaxAge)
		if err != nil {
			return fmt.Errorf("looking up the addresses of Node %s: %w", n.Name, err)
		}
		if !found {
			continue
		}
		addrs := nodeAddresses(srv.Name, c.addressesOf(ctx, srv), []string{srv.AccessIPv4, srv.AccessIPv6}, c.cfg.Networking)
		if ip := internalIP(addrs); ip != "" {
			s.members = append(s.members, ip)
		}
	}
	sort.Strings(s.members)
	s.members = slices.Compact(s.members)
	return nil
}

func isRetry(err error) bool {
	var re *api.RetryError
	return errors.As(err, &re)
}

// refusedOr makes a Problem of a request the cloud refused for what it was (a
// 4xx other than busy or throttled: a bad value, a quota, a missing network),
// which retrying does not fix; other errors stay as they are. A progress
// (RetryError) passes through.
func refusedOr(err error) error {
	if err == nil || isRetry(err) {
		return err
	}
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) && code.Actual >= 400 && code.Actual < 500 &&
		code.Actual != http.StatusConflict && code.Actual != http.StatusTooManyRequests &&
		code.Actual != http.StatusUnauthorized && code.Actual != http.StatusRequestTimeout {
		return &provider.Problem{Reason: provider.ReasonCloudRefused, Message: capitalise(err.Error()), Err: err}
	}
	return err
}

func capitalise(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// statusFor: the hostname when one is asked for (the address is then in the
// load-balancer-address annotation), else the address, then the VIP unless only
// the public address is to be published. PROXY protocol makes ipMode Proxy, so
// kube-proxy sends in-cluster traffic through the load balancer too.
func (c *Cloud) statusFor(s lbSpec, addr, vip string) *v1.LoadBalancerStatus {
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
	if !s.onlyPublic && vip != "" && vip != addr {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: vip, IPMode: &mode})
	}
	return st
}

// recordAnnotations writes the annotations the CCM keeps on the Service when
// they changed (one patch): load-balancer-address, the one place the address
// shows when a hostname is published instead, and the fingerprint of the spec the
// load balancer was converged to, which lets the next look at an unchanged
// Service skip walking the load balancer's graph (two reads instead of one per
// object) — a Kubernetes write, never a cloud one. An empty value is not written.
func (c *Cloud) recordAnnotations(ctx context.Context, svc *v1.Service, values map[annotation.Name]string) {
	patch := map[string]string{}
	for name, v := range values {
		if v != "" && svc.Annotations[string(name)] != v {
			patch[string(name)] = v
		}
	}
	kube := c.kubeClient()
	if len(patch) == 0 || kube == nil {
		return
	}
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if _, err := kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, data, metav1PatchOptions); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot record the load balancer's annotations on the Service", "service", klog.KObj(svc))
	}
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
	if len(diffs) > 0 {
		c.events.Eventf(svc, v1.EventTypeWarning, reasonImmutableIgnored,
			"Load balancer %s keeps its %s: Octavia cannot change them; recreate the Service to apply", lb.ID, strings.Join(diffs, ", "))
	}
}

// UpdateLoadBalancer converges members (and anything else that changed). When
// only the Nodes changed since the load balancer last converged, it updates the
// members alone (updateMembers); anything else takes EnsureLoadBalancer's path.
func (c *Cloud) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) error {
	if done, err := c.updateMembers(ctx, clusterName, svc, nodes); done || err != nil {
		return err
	}
	_, err := c.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
	return err
}

// updateMembers handles a change of Nodes alone: the Service's converged record
// names the load balancer and says its configuration is what the Service asks
// now, so only members can differ. The load balancer comes from the cluster's
// shared listing, its pools from one listing; each pool whose members differ
// gets one declarative batch update, and the update counts as done once Octavia
// accepts it: nothing else is read or written. A pool that must wait for
// Octavia (one update at a time per load balancer) makes a RetryError, and the
// retry finds the pools already updated equal. done is false (and err nil) when
// this path does not apply or is in doubt: the caller takes the full path.
func (c *Cloud) updateMembers(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (done bool, err error) {
	spec, lb, ok := c.membersOnly(ctx, clusterName, svc, nodes)
	if !ok {
		return false, nil
	}
	octavia, err := c.clients.octaviaClient(ctx)
	if err != nil {
		return false, err
	}
	all, err := listPools(ctx, octavia, lb.ID)
	if err != nil {
		return false, fmt.Errorf("listing the pools of load balancer %s: %w", lb.ID, redact(err))
	}
	byName := map[string]pools.Pool{}
	for _, p := range all {
		if _, dup := byName[p.Name]; dup {
			return false, nil
		}
		byName[p.Name] = p
	}
	mine := make([]pools.Pool, len(spec.ports))
	for i, p := range spec.ports {
		pool, ok := byName[c.objectName(spec, p)]
		if !ok || pool.Protocol != spec.poolProtocol(p) {
			return false, nil // not as converged: the full path repairs it
		}
		mine[i] = pool
	}
	wrote := false
	for i, p := range spec.ports {
		if wrote {
			// Octavia takes one update at a time: the next pool after it is done.
			return true, api.NewRetryError(fmt.Sprintf("members of load balancer %s are being updated", lb.ID), pendingRetry)
		}
		changed, err := c.convergeMembers(ctx, octavia, mine[i], spec, p)
		if err != nil {
			return true, refusedOr(fmt.Errorf("cannot update the members of load balancer %s: %w", lb.ID, err))
		}
		wrote = wrote || changed
	}
	klog.FromContext(ctx).V(2).Info("Updated the members of load balancer", "service", klog.KObj(svc), "id", lb.ID, "members", len(spec.members))
	c.recordAnnotations(ctx, svc, map[annotation.Name]string{annotation.OpenStackConverged: lb.ID + "/" + spec.fingerprint()})
	return true, nil
}

// membersOnly says whether only the members of the Service's load balancer can
// differ from what it asks now, with the spec and the load balancer (ACTIVE,
// from the shared listing). Any doubt, a failed look-up included, is a no: the
// full path then decides, and reports what it finds.
func (c *Cloud) membersOnly(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (lbSpec, loadbalancers.LoadBalancer, bool) {
	id, config, members, ok := convergedRecord(svc)
	if !ok || c.clusterUID() == "" {
		return lbSpec{}, loadbalancers.LoadBalancer{}, false
	}
	spec, err := c.spec(clusterName, svc, nodes)
	if err != nil || config != spec.configFingerprint() {
		return lbSpec{}, loadbalancers.LoadBalancer{}, false
	}
	// Equal members: nothing to do, and the full path answers from the shared listings.
	if err := c.resolveMembers(ctx, &spec); err != nil || members == spec.membersFingerprint() {
		return lbSpec{}, loadbalancers.LoadBalancer{}, false
	}
	lb, ok := c.recordedLB(ctx, svc, id)
	return spec, lb, ok
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

func (c *Cloud) listenerOpts(svc *v1.Service, s lbSpec, p v1.ServicePort) listeners.CreateOpts {
	limit := s.connLimit
	opts := listeners.CreateOpts{
		Name:         c.objectName(s, p),
		Protocol:     listeners.Protocol(s.listenerProtocol(p)),
		ProtocolPort: int(p.Port),
		AllowedCIDRs: s.allowedCIDRs,
		ConnLimit:    &limit,
		Tags:         []string{tagService + string(svc.UID)},
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
// balancer) and says whether it made one. Removals come first, so that a port
// whose listener must change protocol is free when its new listener is created.
// On a shared load balancer only the listeners tagged with the Service are its.
func (c *Cloud) converge(ctx context.Context, octavia *gophercloud.ServiceClient, svc *v1.Service, lb *loadbalancers.LoadBalancer, s lbSpec, shared bool) (bool, error) {
	pages, err := listeners.List(octavia, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	if err != nil {
		return false, fmt.Errorf("listing listeners: %w", redact(err))
	}
	have, err := listeners.ExtractListeners(pages)
	if err != nil {
		return false, err
	}
	mine := tagService + string(svc.UID)
	byKey := map[string]listeners.Listener{}
	taken := map[string]bool{} // ports of other Services' listeners on a shared LB
	for _, l := range have {
		k := fmt.Sprintf("%s/%05d", l.Protocol, l.ProtocolPort)
		if shared && !slices.Contains(l.Tags, mine) {
			taken[k] = true
			continue
		}
		byKey[k] = l
	}
	want := map[string]v1.ServicePort{}
	for _, p := range s.ports {
		want[s.listenerKey(p)] = p
	}
	// Pools are listed once: protocol, method and health monitor of each. The
	// load balancer names its pools: a new one has none to list.
	var allPools []pools.Pool
	if len(lb.Pools) > 0 {
		if allPools, err = listPools(ctx, octavia, lb.ID); err != nil {
			return false, fmt.Errorf("listing pools: %w", redact(err))
		}
	}
	poolByID := map[string]pools.Pool{}
	for _, p := range allPools {
		poolByID[p.ID] = p
	}

	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := want[k]; ok {
			continue
		}
		l := byKey[k]
		if l.DefaultPoolID != "" {
			if err := pools.Delete(ctx, octavia, l.DefaultPoolID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
				return false, busyOr(fmt.Errorf("deleting pool of listener %s: %w", k, redact(err)))
			}
			return true, nil
		}
		if err := listeners.Delete(ctx, octavia, l.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return false, busyOr(fmt.Errorf("deleting listener %s: %w", k, redact(err)))
		}
		return true, nil
	}

	for _, p := range s.ports {
		k := s.listenerKey(p)
		if taken[k] {
			return false, fmt.Errorf("port %s of shared load balancer %s belongs to another Service", k, lb.ID)
		}
		l, ok := byKey[k]
		if !ok {
			opts := c.listenerOpts(svc, s, p)
			opts.LoadbalancerID = lb.ID
			if _, err := listeners.Create(ctx, octavia, opts).Extract(); err != nil {
				return false, busyOr(fmt.Errorf("creating listener %s: %w", k, redact(err)))
			}
			return true, nil
		}
		if changed, err := c.convergeListener(ctx, octavia, l, s, p); err != nil || changed {
			return changed, err
		}
		pool, ok := poolByID[l.DefaultPoolID]
		if !ok {
			opts := c.poolOpts(s, p)
			opts.ListenerID = l.ID
			if _, err := pools.Create(ctx, octavia, opts).Extract(); err != nil {
				return false, busyOr(fmt.Errorf("creating the pool of listener %s: %w", k, redact(err)))
			}
			return true, nil
		}
		if pool.Protocol != s.poolProtocol(p) {
			// Octavia cannot change a pool's protocol (PROXY on or off): replace it.
			c.events.Eventf(svc, v1.EventTypeNormal, reasonRecreatingPool, "Recreating the pool of %s to speak %s instead of %s", k, s.poolProtocol(p), pool.Protocol)
			if err := pools.Delete(ctx, octavia, pool.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
				return false, busyOr(fmt.Errorf("deleting pool %s to change its protocol: %w", pool.ID, redact(err)))
			}
			return true, nil
		}
		if pool.LBMethod != s.method {
			if _, err := pools.Update(ctx, octavia, pool.ID, pools.UpdateOpts{LBMethod: pools.LBMethod(s.method)}).Extract(); err != nil {
				return false, busyOr(fmt.Errorf("updating the method of pool %s: %w", pool.ID, redact(err)))
			}
			return true, nil
		}
		if changed, err := c.convergeMembers(ctx, octavia, pool, s, p); err != nil || changed {
			return changed, err
		}
		if changed, err := c.convergeMonitor(ctx, octavia, pool, s, p); err != nil || changed {
			return changed, err
		}
	}
	return false, nil
}

// convergeListener updates what Octavia can change in place.
func (c *Cloud) convergeListener(ctx context.Context, octavia *gophercloud.ServiceClient, l listeners.Listener, s lbSpec, p v1.ServicePort) (bool, error) {
	var u listeners.UpdateOpts
	changed := false
	cidrs := slices.Clone(l.AllowedCIDRs)
	sort.Strings(cidrs)
	if !slices.Equal(cidrs, s.allowedCIDRs) && (len(cidrs) != 0 || len(s.allowedCIDRs) != 0) {
		update := s.allowedCIDRs
		if update == nil {
			update = []string{}
		}
		u.AllowedCIDRs, changed = &update, true
	}
	if l.ConnLimit != s.connLimit {
		limit := s.connLimit
		u.ConnLimit, changed = &limit, true
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
	if _, err := listeners.Update(ctx, octavia, l.ID, u).Extract(); err != nil {
		return false, busyOr(fmt.Errorf("updating listener %s/%d: %w", l.Protocol, l.ProtocolPort, redact(err)))
	}
	return true, nil
}

// convergeMonitor creates, updates or deletes the pool's health monitor. Its type
// cannot change in place, so a new type replaces it.
func (c *Cloud) convergeMonitor(ctx context.Context, octavia *gophercloud.ServiceClient, pool pools.Pool, s lbSpec, p v1.ServicePort) (bool, error) {
	if s.monitor == nil {
		if pool.MonitorID == "" {
			return false, nil
		}
		if err := monitors.Delete(ctx, octavia, pool.MonitorID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return false, busyOr(fmt.Errorf("deleting health monitor %s: %w", pool.MonitorID, redact(err)))
		}
		return true, nil
	}
	want := c.monitorOpts(s, p)
	if pool.MonitorID == "" {
		want.PoolID = pool.ID
		if _, err := monitors.Create(ctx, octavia, want).Extract(); err != nil {
			return false, busyOr(fmt.Errorf("creating the health monitor of pool %s: %w", pool.ID, redact(err)))
		}
		return true, nil
	}
	have, err := monitors.Get(ctx, octavia, pool.MonitorID).Extract()
	if err != nil {
		return false, fmt.Errorf("reading health monitor %s: %w", pool.MonitorID, redact(err))
	}
	if have.Type != want.Type {
		if err := monitors.Delete(ctx, octavia, have.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return false, busyOr(fmt.Errorf("deleting health monitor %s to change its type: %w", have.ID, redact(err)))
		}
		return true, nil
	}
	if have.Delay == want.Delay && have.Timeout == want.Timeout && have.MaxRetries == want.MaxRetries &&
		have.MaxRetriesDown == want.MaxRetriesDown && (want.Type != "HTTP" || have.URLPath == want.URLPath) {
		return false, nil
	}
	u := monitors.UpdateOpts{Delay: want.Delay, Timeout: want.Timeout, MaxRetries: want.MaxRetries, MaxRetriesDown: want.MaxRetriesDown, URLPath: want.URLPath}
	if _, err := monitors.Update(ctx, octavia, have.ID, u).Extract(); err != nil {
		return false, busyOr(fmt.Errorf("updating health monitor %s: %w", have.ID, redact(err)))
	}
	return true, nil
}

// convergeMembers replaces the pool's members in one batch call when they differ.
func (c *Cloud) convergeMembers(ctx context.Context, octavia *gophercloud.ServiceClient, pool pools.Pool, s lbSpec, p v1.ServicePort) (bool, error) {
	poolID := pool.ID
	var members []leanMember
	if len(pool.Members) > 0 { // the pool names its members: a new one has none to list
		var err error
		if members, err = listMembers(ctx, octavia, poolID); err != nil {
			return false, fmt.Errorf("listing members: %w", redact(err))
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
	if err := putMembers(ctx, octavia, poolID, batch); err != nil {
		return false, busyOr(fmt.Errorf("updating members of pool %s: %w", poolID, redact(err)))
	}
	return true, nil
}

// EnsureLoadBalancerDeleted deletes the Service's load balancer (cascade) and the
// floating IP this CCM created for it (detached instead with keep-floatingip, and
// always when the CCM did not create it). Already gone is success; only our own
// (tagged) load balancer is ever deleted. On a shared load balancer only the
// Service's own listeners go.
func (c *Cloud) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	octavia, network, err := c.lbClients(ctx)
	if err != nil {
		return err
	}
	lb, err := c.findLB(ctx, octavia, svc)
	if err != nil {
		return err
	}
	keep, _ := annotation.OpenStackKeepFloatingIP.Bool(svc)
	if lb == nil {
		// Gone (deleted now, or behind our back before): what it left of ours
		// goes too.
		if keep {
			return nil
		}
		return c.deleteOwnFloatingIPs(ctx, network, svc)
	}
	if strings.HasPrefix(lb.ProvisioningStatus, "PENDING") {
		return api.NewRetryError(fmt.Sprintf("load balancer %s is %s", lb.ID, lb.ProvisioningStatus), pendingRetry)
	}
	if !c.owned(lb, svc) {
		// Shared through load-balancer-id: remove this Service's listeners only.
		changed, err := c.converge(ctx, octavia, svc, lb, lbSpec{}, true)
		if err != nil || changed {
			if err == nil {
				err = api.NewRetryError(fmt.Sprintf("removing the listeners of %s/%s from shared load balancer %s", svc.Namespace, svc.Name, lb.ID), pendingRetry)
			}
			return err
		}
		return nil
	}
	if err := c.releaseFloatingIP(ctx, network, svc, lb, keep); err != nil {
		return err
	}
	if err := loadbalancers.Delete(ctx, octavia, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return busyOr(fmt.Errorf("deleting load balancer %s: %w", lb.ID, redact(err)))
	}
	c.mu.Lock()
	delete(c.checked, lb.ID)
	c.mu.Unlock()
	klog.FromContext(ctx).Info("Deleting load balancer", "service", klog.KObj(svc), "id", lb.ID)
	// Done when it is gone: the Service keeps its finalizer until then.
	return api.NewRetryError(fmt.Sprintf("load balancer %s is being deleted", lb.ID), pendingRetry)
}

// rebuildIfStranded looks at the status tree of an ACTIVE load balancer of the
// Service: when Octavia left any of its listeners, pools, monitors or members
// pending, they never finish (a provider that does not complete the children of
// a fully populated load balancer: the test harness's Octavia 11.0.0 is one),
// and nothing of them can be changed. The load balancer is then deleted to be
// built again step by step, as every later one is. Its floating IP is kept for
// the new one. It returns a RetryError when it rebuilds, nil when all is well.
func (c *Cloud) rebuildIfStranded(ctx context.Context, octavia *gophercloud.ServiceClient, svc *v1.Service, lb *loadbalancers.LoadBalancer) error {
	var tree statusTree
	if err := loadbalancers.GetStatuses(ctx, octavia, lb.ID).ExtractInto(&tree); err != nil {
		return fmt.Errorf("reading the status tree of load balancer %s: %w", lb.ID, redact(err))
	}
	pending := tree.pending()
	if tree.Statuses.LoadBalancer.ProvisioningStatus != "ACTIVE" || pending == "" {
		return nil
	}
	logger := klog.FromContext(ctx)
	if c.serial.CompareAndSwap(false, true) {
		logger.Error(nil, "Octavia left the children of a fully populated load balancer pending; creating load balancers step by step from now on (set [LoadBalancer] provider-requires-serial-api-calls=true to skip the first attempt)",
			"loadBalancer", lb.ID, "pending", pending)
	}
	c.events.Eventf(svc, v1.EventTypeNormal, reasonReplacingInError, "Octavia left %s of load balancer %s pending for good; rebuilding it step by step", pending, lb.ID)
	c.setCreated(lb.ID, "")
	network, err := c.clients.networkClient(ctx)
	if err != nil {
		return err
	}
	if err := c.releaseFloatingIP(ctx, network, svc, lb, true); err != nil {
		return err
	}
	if err := loadbalancers.Delete(ctx, octavia, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return busyOr(fmt.Errorf("deleting load balancer %s to rebuild it: %w", lb.ID, redact(err)))
	}
	return api.NewRetryError(fmt.Sprintf("load balancer %s is being rebuilt step by step", lb.ID), pendingRetry)
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
