package openstack

import (
	"context"
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
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	servicehelpers "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
)

// Tags that say a load balancer is ours: the Service's UID and the cluster's
// (the kube-system namespace's UID), so that two clusters with the same
// --cluster-name in one project never touch each other's load balancers.
const (
	tagService = "overcast-service-uid="
	tagCluster = "overcast-cluster-uid="
	// fipDescription marks a floating IP this CCM created for a Service.
	fipDescription = "overcast-ccm floating IP of Service UID "
	// pendingRetry is how soon a Service is looked at again while Octavia works.
	pendingRetry = 5 * time.Second
)

// lbSpec is what a Service asks of Octavia.
type lbSpec struct {
	name, subnetID, floatingNetworkID, method string
	internal, keepFIP                         bool
	ports                                     []v1.ServicePort
	members                                   []string // node InternalIPs, sorted
	allowedCIDRs                              []string // sorted; nil: everyone
}

func (c *Cloud) lbName(clusterName string, svc *v1.Service) string {
	// cloud-provider-openstack's name, so existing tooling recognises it.
	return fmt.Sprintf("kube_service_%s_%s_%s", clusterName, svc.Namespace, svc.Name)
}

func (c *Cloud) spec(clusterName string, svc *v1.Service, nodes []*v1.Node) (lbSpec, error) {
	cfg := c.cfg.LoadBalancer
	s := lbSpec{
		name:              c.lbName(clusterName, svc),
		subnetID:          cfg.SubnetID,
		floatingNetworkID: cfg.FloatingNetworkID,
		method:            strings.ToUpper(cfg.LBMethod),
		internal:          cfg.InternalLB,
	}
	if s.method == "" {
		s.method = "ROUND_ROBIN"
	}
	var errs []error
	keep := func(err error) bool {
		if err != nil && !errors.Is(err, annotation.ErrNotSet) {
			errs = append(errs, err)
			return false
		}
		return err == nil
	}
	if v, err := annotation.OpenStackInternalLoadBalancer.Bool(svc); keep(err) {
		s.internal = v
	}
	if v, err := annotation.OpenStackSubnetID.NonEmptyString(svc); keep(err) {
		s.subnetID = v
	}
	if v, err := annotation.OpenStackFloatingNetworkID.NonEmptyString(svc); keep(err) {
		s.floatingNetworkID = v
	}
	if v, err := annotation.OpenStackKeepFloatingIP.Bool(svc); keep(err) {
		s.keepFIP = v
	}
	if v, err := annotation.OpenStackLBMethod.String(svc); keep(err) {
		m, err := annotation.ParseLBMethod(v)
		if keep(err) {
			s.method = string(m)
		}
	}
	if s.subnetID == "" {
		errs = append(errs, errors.New("no subnet for the VIP: set [LoadBalancer] subnet-id or the annotation "+string(annotation.OpenStackSubnetID)))
	}
	if !s.internal && s.floatingNetworkID == "" {
		errs = append(errs, errors.New("a public load balancer needs a floating network: set [LoadBalancer] floating-network-id or the annotation "+string(annotation.OpenStackFloatingNetworkID)+", or make it internal"))
	}
	for _, p := range svc.Spec.Ports {
		switch p.Protocol {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			errs = append(errs, fmt.Errorf("port %q: protocol %s is not supported", p.Name, p.Protocol))
		}
		if p.NodePort == 0 {
			errs = append(errs, fmt.Errorf("port %q has no NodePort: Octavia members are NodePorts", p.Name))
		}
	}
	s.ports = slices.Clone(svc.Spec.Ports)
	sort.Slice(s.ports, func(i, j int) bool { return portKey(s.ports[i]) < portKey(s.ports[j]) })
	ranges, err := servicehelpers.GetLoadBalancerSourceRanges(svc)
	if err != nil {
		errs = append(errs, err)
	} else if !servicehelpers.IsAllowAll(ranges) {
		s.allowedCIDRs = ranges.StringSlice()
		sort.Strings(s.allowedCIDRs)
	}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				s.members = append(s.members, a.Address)
				break
			}
		}
	}
	sort.Strings(s.members)
	return s, errors.Join(errs...)
}

func portKey(p v1.ServicePort) string { return fmt.Sprintf("%s/%05d", p.Protocol, p.Port) }

func (c *Cloud) tags(svc *v1.Service, name string) []string {
	return []string{name, tagService + string(svc.UID), tagCluster + c.clusterUID()}
}

// findLB returns the Service's load balancer (found by its UID tag), or nil. An
// explicit load-balancer-id annotation adopts that load balancer.
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
	switch len(lbs) {
	case 0:
		return nil, nil
	case 1:
		return &lbs[0], nil
	}
	return nil, fmt.Errorf("%d load balancers carry the tag of Service %s/%s: resolve by hand", len(lbs), svc.Namespace, svc.Name)
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
func (c *Cloud) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	octavia, network, err := c.lbClients(ctx)
	if err != nil {
		return nil, false, err
	}
	lb, err := c.findLB(ctx, octavia, svc)
	if err != nil || lb == nil {
		return nil, false, err
	}
	st, err := c.status(ctx, network, lb)
	return st, true, err
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
		reason := "UnsupportedService"
		if errors.As(err, new(*annotation.InvalidError)) {
			reason = "InvalidAnnotation"
		}
		c.events.Eventf(svc, v1.EventTypeWarning, reason, "%v; the load balancer was left as it was", err)
		return nil, err
	}
	if c.clusterUID() == "" {
		return nil, errors.New("the cluster UID (the kube-system namespace's) is not known yet")
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
		created, err := loadbalancers.Create(ctx, octavia, c.createOpts(svc, spec)).Extract()
		if err != nil {
			c.events.Eventf(svc, v1.EventTypeWarning, "CreateLoadBalancerFailed", "Octavia refused the load balancer: %v", redact(err))
			return nil, fmt.Errorf("creating load balancer %s: %w", spec.name, redact(err))
		}
		logger.Info("Created load balancer", "id", created.ID, "listeners", len(spec.ports))
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is being created", created.ID), pendingRetry)
	}
	switch {
	case strings.HasPrefix(lb.ProvisioningStatus, "PENDING"):
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is %s", lb.ID, lb.ProvisioningStatus), pendingRetry)
	case lb.ProvisioningStatus == "ERROR":
		logger.Info("Replacing load balancer in ERROR", "id", lb.ID)
		if err := loadbalancers.Delete(ctx, octavia, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, fmt.Errorf("deleting load balancer %s in ERROR: %w", lb.ID, redact(err))
		}
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s was in ERROR and is being replaced", lb.ID), pendingRetry)
	}
	if changed, err := c.converge(ctx, octavia, lb, spec); err != nil || changed {
		if err != nil {
			return nil, err // a RetryError when Octavia was busy
		}
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is being updated", lb.ID), pendingRetry)
	}
	if spec.internal {
		return ingress(lb.VipAddress), nil
	}
	fip, err := c.ensureFloatingIP(ctx, network, svc, lb, spec)
	if err != nil {
		return nil, err
	}
	return ingress(fip), nil
}

func ingress(ip string) *v1.LoadBalancerStatus {
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip}}}
}

// UpdateLoadBalancer converges members (and anything else that changed).
func (c *Cloud) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) error {
	_, err := c.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
	return err
}

func (c *Cloud) createOpts(svc *v1.Service, s lbSpec) loadbalancers.CreateOpts {
	opts := loadbalancers.CreateOpts{
		Name:             s.name,
		Description:      fmt.Sprintf("Kubernetes Service %s/%s", svc.Namespace, svc.Name),
		VipSubnetID:      s.subnetID,
		Provider:         c.cfg.LoadBalancer.LBProvider,
		FlavorID:         c.cfg.LoadBalancer.FlavorID,
		AvailabilityZone: c.cfg.LoadBalancer.AvailabilityZone,
		Tags:             c.tags(svc, s.name),
	}
	for _, p := range s.ports {
		opts.Listeners = append(opts.Listeners, c.listenerOpts(s, p))
	}
	return opts
}

func (c *Cloud) listenerOpts(s lbSpec, p v1.ServicePort) listeners.CreateOpts {
	name := fmt.Sprintf("%s_%s_%d", s.name, strings.ToLower(string(p.Protocol)), p.Port)
	pool := &pools.CreateOpts{
		Name:     name,
		Protocol: pools.Protocol(p.Protocol),
		LBMethod: pools.LBMethod(s.method),
	}
	for _, m := range s.members {
		pool.Members = append(pool.Members, pools.CreateMemberOpts{Address: m, ProtocolPort: int(p.NodePort), SubnetID: c.memberSubnet(s)})
	}
	return listeners.CreateOpts{
		Name:         name,
		Protocol:     listeners.Protocol(p.Protocol),
		ProtocolPort: int(p.Port),
		DefaultPool:  pool,
		AllowedCIDRs: s.allowedCIDRs,
	}
}

func (c *Cloud) memberSubnet(s lbSpec) string {
	if c.cfg.LoadBalancer.MemberSubnetID != "" {
		return c.cfg.LoadBalancer.MemberSubnetID
	}
	return s.subnetID
}

// converge makes at most one change (Octavia allows one at a time per load
// balancer) and says whether it made one.
func (c *Cloud) converge(ctx context.Context, octavia *gophercloud.ServiceClient, lb *loadbalancers.LoadBalancer, s lbSpec) (bool, error) {
	pages, err := listeners.List(octavia, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	if err != nil {
		return false, fmt.Errorf("listing listeners: %w", redact(err))
	}
	have, err := listeners.ExtractListeners(pages)
	if err != nil {
		return false, err
	}
	byKey := map[string]listeners.Listener{}
	for _, l := range have {
		byKey[fmt.Sprintf("%s/%05d", l.Protocol, l.ProtocolPort)] = l
	}
	want := map[string]bool{}
	for _, p := range s.ports {
		k := portKey(p)
		want[k] = true
		l, ok := byKey[k]
		if !ok {
			// One object a call: Octavia (Zed) fails a listener created with its
			// pool and members inline; a whole load balancer graph works.
			opts := c.listenerOpts(s, p)
			opts.LoadbalancerID, opts.DefaultPool = lb.ID, nil
			if _, err := listeners.Create(ctx, octavia, opts).Extract(); err != nil {
				return false, busyOr(fmt.Errorf("creating listener %s: %w", k, redact(err)))
			}
			return true, nil
		}
		if l.DefaultPoolID == "" {
			pool := *c.listenerOpts(s, p).DefaultPool
			pool.ListenerID, pool.Members = l.ID, nil
			if _, err := pools.Create(ctx, octavia, pool).Extract(); err != nil {
				return false, busyOr(fmt.Errorf("creating the pool of listener %s: %w", k, redact(err)))
			}
			return true, nil
		}
		cidrs := slices.Clone(l.AllowedCIDRs)
		sort.Strings(cidrs)
		if !slices.Equal(cidrs, s.allowedCIDRs) && (len(cidrs) != 0 || len(s.allowedCIDRs) != 0) {
			update := s.allowedCIDRs
			if update == nil {
				update = []string{"0.0.0.0/0"}
			}
			if _, err := listeners.Update(ctx, octavia, l.ID, listeners.UpdateOpts{AllowedCIDRs: &update}).Extract(); err != nil {
				return false, busyOr(fmt.Errorf("updating allowed CIDRs of listener %s: %w", k, redact(err)))
			}
			return true, nil
		}
		if changed, err := c.convergeMembers(ctx, octavia, l.DefaultPoolID, s, p); err != nil || changed {
			return changed, err
		}
	}
	for k, l := range byKey {
		if want[k] {
			continue
		}
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
	return false, nil
}

func (c *Cloud) convergeMembers(ctx context.Context, octavia *gophercloud.ServiceClient, poolID string, s lbSpec, p v1.ServicePort) (bool, error) {
	if poolID == "" {
		return false, nil
	}
	pages, err := pools.ListMembers(octavia, poolID, pools.ListMembersOpts{}).AllPages(ctx)
	if err != nil {
		return false, fmt.Errorf("listing members: %w", redact(err))
	}
	members, err := pools.ExtractMembers(pages)
	if err != nil {
		return false, err
	}
	have := make([]string, 0, len(members))
	for _, m := range members {
		have = append(have, m.Address+":"+strconv.Itoa(m.ProtocolPort))
	}
	want := make([]string, 0, len(s.members))
	for _, m := range s.members {
		want = append(want, m+":"+strconv.Itoa(int(p.NodePort)))
	}
	sort.Strings(have)
	sort.Strings(want)
	if slices.Equal(have, want) {
		return false, nil
	}
	batch := make([]pools.BatchUpdateMemberOpts, 0, len(s.members))
	subnet := c.memberSubnet(s)
	for _, m := range s.members {
		batch = append(batch, pools.BatchUpdateMemberOpts{Address: m, ProtocolPort: int(p.NodePort), SubnetID: &subnet})
	}
	if err := pools.BatchUpdateMembers(ctx, octavia, poolID, batch).ExtractErr(); err != nil {
		return false, busyOr(fmt.Errorf("updating members of pool %s: %w", poolID, redact(err)))
	}
	return true, nil
}

// ensureFloatingIP returns the address of the floating IP on the VIP port,
// attaching one first if there is none.
func (c *Cloud) ensureFloatingIP(ctx context.Context, network *gophercloud.ServiceClient, svc *v1.Service, lb *loadbalancers.LoadBalancer, s lbSpec) (string, error) {
	fip, err := c.vipFloatingIP(ctx, network, lb)
	if err != nil {
		return "", err
	}
	if fip != nil {
		return fip.FloatingIP, nil
	}
	created, err := floatingips.Create(ctx, network, floatingips.CreateOpts{
		FloatingNetworkID: s.floatingNetworkID,
		PortID:            lb.VipPortID,
		Description:       fipDescription + string(svc.UID),
	}).Extract()
	if err != nil {
		c.events.Eventf(svc, v1.EventTypeWarning, "FloatingIPFailed", "Cannot attach a floating IP from network %s: %v", s.floatingNetworkID, redact(err))
		return "", fmt.Errorf("creating a floating IP for load balancer %s: %w", lb.ID, redact(err))
	}
	klog.FromContext(ctx).Info("Attached floating IP", "service", klog.KObj(svc), "ip", created.FloatingIP)
	return created.FloatingIP, nil
}

func (c *Cloud) vipFloatingIP(ctx context.Context, network *gophercloud.ServiceClient, lb *loadbalancers.LoadBalancer) (*floatingips.FloatingIP, error) {
	pages, err := floatingips.List(network, floatingips.ListOpts{PortID: lb.VipPortID}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing floating IPs: %w", redact(err))
	}
	fips, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil || len(fips) == 0 {
		return nil, err
	}
	return &fips[0], nil
}

// status publishes the floating IP on the VIP port, else the VIP.
func (c *Cloud) status(ctx context.Context, network *gophercloud.ServiceClient, lb *loadbalancers.LoadBalancer) (*v1.LoadBalancerStatus, error) {
	fip, err := c.vipFloatingIP(ctx, network, lb)
	if err != nil {
		return nil, err
	}
	if fip != nil {
		return ingress(fip.FloatingIP), nil
	}
	return ingress(lb.VipAddress), nil
}

// EnsureLoadBalancerDeleted deletes the Service's load balancer (cascade) and the
// floating IP this CCM created for it (kept with keep-floatingip). Already gone is
// success; only our own (tagged) load balancer is ever deleted.
func (c *Cloud) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	octavia, network, err := c.lbClients(ctx)
	if err != nil {
		return err
	}
	lb, err := c.findLB(ctx, octavia, svc)
	if err != nil || lb == nil {
		return err
	}
	if !slices.Contains(lb.Tags, tagService+string(svc.UID)) {
		// Adopted through load-balancer-id: not ours to delete.
		return nil
	}
	if strings.HasPrefix(lb.ProvisioningStatus, "PENDING") {
		return api.NewRetryError(fmt.Sprintf("load balancer %s is %s", lb.ID, lb.ProvisioningStatus), pendingRetry)
	}
	keep, _ := annotation.OpenStackKeepFloatingIP.Bool(svc)
	fip, err := c.vipFloatingIP(ctx, network, lb)
	if err != nil {
		return err
	}
	if fip != nil && !keep && fip.Description == fipDescription+string(svc.UID) {
		if err := floatingips.Delete(ctx, network, fip.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return fmt.Errorf("deleting floating IP %s: %w", fip.FloatingIP, redact(err))
		}
	} else if fip != nil && keep {
		if _, err := floatingips.Update(ctx, network, fip.ID, floatingips.UpdateOpts{PortID: new(string)}).Extract(); err != nil {
			return fmt.Errorf("detaching floating IP %s: %w", fip.FloatingIP, redact(err))
		}
	}
	if err := loadbalancers.Delete(ctx, octavia, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("deleting load balancer %s: %w", lb.ID, redact(err))
	}
	klog.FromContext(ctx).Info("Deleted load balancer", "service", klog.KObj(svc), "id", lb.ID)
	return nil
}
