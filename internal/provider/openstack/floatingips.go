package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// ensureFloatingIP returns the address of the floating IP on the VIP port,
// attaching one first if there is none: spec.loadBalancerIP names an existing one
// (created with that address if the project may), else a new one is allocated
// from the floating network, on the subnet the Service picks.
func (st *steps) ensureFloatingIP(ctx context.Context, svc *v1.Service, lb *osapi.LoadBalancer, s lbSpec) (string, error) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	fip, err := st.vipFloatingIP(ctx, lb)
	if err != nil {
		return "", err
	}
	if fip != nil && (s.floatingIP == "" || fip.FloatingIP == s.floatingIP) {
		return fip.FloatingIP, nil
	}
	if fip != nil {
		// spec.loadBalancerIP changed: give the old address back first.
		if err := st.releaseFloatingIP(ctx, svc, lb, s.keepFIP, false); err != nil {
			return "", err
		}
	}
	if s.floatingIP != "" {
		return st.attachRequestedFloatingIP(ctx, svc, lb, s)
	}
	// A Service that had an address keeps it: the floating IP created for it
	// earlier is free when its load balancer was lost (deleted behind our back,
	// or replaced after ERROR). A new Service has none to look for.
	if _, had := svc.Annotations[string(annotation.OpenStackLoadBalancerAddress)]; had {
		if addr, ok, err := st.reattachOwnFloatingIP(ctx, svc, lb, s.floatingNetworkID); err != nil || ok {
			return addr, err
		}
	}
	netID := s.floatingNetworkID
	if netID == "" {
		if netID, err = st.onlyExternalNetwork(ctx); err != nil {
			return "", err
		}
	}
	subnetIDs, err := st.floatingSubnets(ctx, netID, s)
	if err != nil {
		return "", err
	}
	var lastErr error
	for _, subnet := range subnetIDs {
		created, err := st.api.CreateFloatingIP(ctx, osapi.FloatingIPCreate{
			FloatingNetworkID: netID,
			SubnetID:          subnet,
			PortID:            lb.VipPortID,
			Description:       fipDescription + string(svc.UID),
		})
		if err == nil {
			st.fipQuota.forget()
			logger.Info("Attached floating IP", "ip", created.FloatingIP, "network", netID)
			return created.FloatingIP, nil
		}
		st.fipQuota.learn(err)
		lastErr = err
	}
	return "", fipRefusedOr(fmt.Errorf("cannot allocate a floating IP from network %s for load balancer %s: %w", netID, lb.ID, lastErr))
}

// attachRequestedFloatingIP attaches the floating IP spec.loadBalancerIP names.
// One attached elsewhere is never taken away.
func (st *steps) attachRequestedFloatingIP(ctx context.Context, svc *v1.Service, lb *osapi.LoadBalancer, s lbSpec) (string, error) {
	fips, err := st.api.ListFloatingIPs(ctx, osapi.FloatingIPQuery{FloatingIP: s.floatingIP})
	if err != nil {
		return "", fmt.Errorf("looking up floating IP %s: %w", s.floatingIP, err)
	}
	if len(fips) == 0 {
		// Not in the project yet: allocate that very address (clouds often allow
		// this to admins only).
		opts := osapi.FloatingIPCreate{FloatingIP: s.floatingIP, PortID: lb.VipPortID, FloatingNetworkID: s.floatingNetworkID, Description: fipDescription + string(svc.UID)}
		if opts.FloatingNetworkID == "" {
			if opts.FloatingNetworkID, err = st.onlyExternalNetwork(ctx); err != nil {
				return "", err
			}
		}
		created, err := st.api.CreateFloatingIP(ctx, opts)
		st.fipQuota.learn(err)
		if err != nil {
			return "", fipRefusedOr(fmt.Errorf("spec.loadBalancerIP %s is not a floating IP of the project, and allocating it failed: %w", s.floatingIP, err))
		}
		return created.FloatingIP, nil
	}
	fip := fips[0]
	if fip.PortID != "" && fip.PortID != lb.VipPortID {
		return "", outcome.Refuse(outcome.ReasonAddressUnavailable, "spec.loadBalancerIP %s is attached to port %s; detach it first", s.floatingIP, fip.PortID)
	}
	if fip.PortID == "" {
		port := lb.VipPortID
		if err := st.api.SetFloatingIPPort(ctx, fip.ID, &port); err != nil {
			return "", fipRefusedOr(fmt.Errorf("cannot attach floating IP %s: %w", s.floatingIP, err))
		}
		klog.FromContext(ctx).Info("Attached requested floating IP", "service", klog.KObj(svc), "ip", fip.FloatingIP)
	}
	return fip.FloatingIP, nil
}

// ownFloatingIPs lists the floating IPs this CCM created for the Service.
func (st *steps) ownFloatingIPs(ctx context.Context, svc *v1.Service) ([]osapi.FloatingIP, error) {
	desc := fipDescription + string(svc.UID)
	all, err := st.api.ListFloatingIPs(ctx, osapi.FloatingIPQuery{Description: desc})
	if err != nil {
		return nil, fmt.Errorf("listing the floating IPs of Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	// The filter is the server's; ownership is checked here too.
	return slices.DeleteFunc(all, func(f osapi.FloatingIP) bool { return f.Description != desc }), nil
}

// reattachOwnFloatingIP puts a free floating IP this CCM created for the
// Service on the load balancer's VIP port: the Service keeps its address when
// its load balancer is rebuilt. ok is false when there is none.
func (st *steps) reattachOwnFloatingIP(ctx context.Context, svc *v1.Service, lb *osapi.LoadBalancer, netID string) (string, bool, error) {
	own, err := st.ownFloatingIPs(ctx, svc)
	if err != nil {
		return "", false, err
	}
	for _, f := range own {
		if f.PortID != "" || (netID != "" && f.FloatingNetworkID != netID) {
			continue
		}
		port := lb.VipPortID
		if err := st.api.SetFloatingIPPort(ctx, f.ID, &port); err != nil {
			return "", false, fipRefusedOr(fmt.Errorf("cannot move floating IP %s to load balancer %s: %w", f.FloatingIP, lb.ID, err))
		}
		klog.FromContext(ctx).Info("Kept the Service's floating IP on its new load balancer", "service", klog.KObj(svc), "ip", f.FloatingIP, "loadBalancer", lb.ID)
		return f.FloatingIP, true, nil
	}
	return "", false, nil
}

// deleteOwnFloatingIPs deletes the floating IPs this CCM created for the
// Service that are on no port (those of load balancers lost or deleted).
func (st *steps) deleteOwnFloatingIPs(ctx context.Context, svc *v1.Service) error {
	own, err := st.ownFloatingIPs(ctx, svc)
	if err != nil {
		return err
	}
	for _, f := range own {
		if f.PortID != "" {
			continue
		}
		if err := st.api.DeleteFloatingIP(ctx, f.ID); err != nil {
			return fmt.Errorf("deleting floating IP %s: %w", f.FloatingIP, err)
		}
		st.fipQuota.forget()
		klog.FromContext(ctx).Info("Released floating IP", "service", klog.KObj(svc), "ip", f.FloatingIP)
	}
	return nil
}

// requestedFloatingIPFree refuses, before anything is created, a Service whose
// spec.loadBalancerIP is a floating IP already on a port, and a new Service
// that needs a new floating IP while the project's quota of them is known to
// be met (a Service that had an address gets its own back, and needs none).
func (st *steps) requestedFloatingIPFree(ctx context.Context, svc *v1.Service, s lbSpec) error {
	if s.internal {
		return nil
	}
	if _, had := svc.Annotations[string(annotation.OpenStackLoadBalancerAddress)]; s.floatingIP == "" && !had {
		if msg, met := st.fipQuota.met(); met {
			return outcome.Refuse(outcome.ReasonQuotaExceeded,
				"The project's floating IP quota is met (Neutron: %s): no load balancer was created for this Service. It is tried again when this cluster releases a floating IP, or within %s",
				msg, quotaRecheck)
		}
	}
	if s.floatingIP == "" {
		return nil
	}
	fips, err := st.api.ListFloatingIPs(ctx, osapi.FloatingIPQuery{FloatingIP: s.floatingIP})
	if err != nil {
		return fmt.Errorf("looking up floating IP %s: %w", s.floatingIP, err)
	}
	for _, f := range fips {
		if f.PortID != "" {
			return outcome.Refuse(outcome.ReasonAddressUnavailable,
				"spec.loadBalancerIP %s is attached to port %s; detach it or choose another address (nothing was created)", s.floatingIP, f.PortID)
		}
	}
	return nil
}

// fipRefusedOr makes a Problem of a floating IP the cloud refused (a quota
// met, an address taken); other errors pass as they are.
func fipRefusedOr(err error) error { return outcome.RefusedProblem(reasonFloatingIPFailed, err) }

// releaseFloatingIP takes the floating IP off the VIP port: deleted when a CCM
// allocated it for this Service (this one, or cloud-provider-openstack before
// it) and it is not to be kept, detached otherwise. anyService: the last
// Service on a load balancer a CCM made for another deletes what a CCM
// allocated for that one.
func (st *steps) releaseFloatingIP(ctx context.Context, svc *v1.Service, lb *osapi.LoadBalancer, keep, anyService bool) error {
	fip, err := st.vipFloatingIP(ctx, lb)
	if err != nil || fip == nil {
		return err
	}
	d := fip.Description
	allocated := d == fipDescription+string(svc.UID) || strings.HasPrefix(d, peerFIPDescription+svc.Namespace+"/"+svc.Name+" from cluster ") ||
		(anyService && (strings.HasPrefix(d, fipDescription) || strings.HasPrefix(d, peerFIPDescription)))
	if !keep && allocated {
		if err := st.api.DeleteFloatingIP(ctx, fip.ID); err != nil {
			return fmt.Errorf("deleting floating IP %s: %w", fip.FloatingIP, err)
		}
		st.fipQuota.forget()
		klog.FromContext(ctx).Info("Released floating IP", "service", klog.KObj(svc), "ip", fip.FloatingIP)
		return nil
	}
	if err := st.api.SetFloatingIPPort(ctx, fip.ID, new(string)); err != nil && !errors.Is(err, outcome.ErrNotFound) {
		return fmt.Errorf("detaching floating IP %s: %w", fip.FloatingIP, err)
	}
	klog.FromContext(ctx).Info("Detached floating IP", "service", klog.KObj(svc), "ip", fip.FloatingIP)
	return nil
}

func (st *steps) vipFloatingIP(ctx context.Context, lb *osapi.LoadBalancer) (*osapi.FloatingIP, error) {
	if lb.VipPortID == "" {
		return nil, nil
	}
	fips, err := st.api.ListFloatingIPs(ctx, osapi.FloatingIPQuery{PortID: lb.VipPortID})
	if err != nil {
		return nil, fmt.Errorf("listing floating IPs: %w", err)
	}
	if err != nil || len(fips) == 0 {
		return nil, err
	}
	return &fips[0], nil
}

// onlyExternalNetwork is the floating network when none is configured: the one
// external network the project sees, and an error naming them when not one.
func (st *steps) onlyExternalNetwork(ctx context.Context) (string, error) {
	nets, err := st.api.ExternalNetworkIDs(ctx)
	if err != nil {
		return "", fmt.Errorf("listing external networks: %w", err)
	}
	switch len(nets) {
	case 1:
		return nets[0], nil
	case 0:
		return "", outcome.Refuse(reasonFloatingIPFailed, "no floating network: set [LoadBalancer] floating-network-id or the annotation loadbalancer.openstack.org/floating-network-id (the project sees no external network)")
	}
	return "", outcome.Refuse(reasonFloatingIPFailed, "no floating network chosen and the project sees %d external networks (%v): set [LoadBalancer] floating-network-id or the annotation loadbalancer.openstack.org/floating-network-id", len(nets), nets)
}

// floatingSubnets are the subnets to try in turn: the one by ID, those matching
// the name pattern or the tags, or "" (Neutron's choice).
func (st *steps) floatingSubnets(ctx context.Context, netID string, s lbSpec) ([]string, error) {
	if s.floatingSubnetID != "" {
		return []string{s.floatingSubnetID}, nil
	}
	if s.floatingSubnet == nil && s.floatingSubnetTags == nil {
		return []string{""}, nil
	}
	all, err := st.api.ListSubnets(ctx, osapi.SubnetQuery{NetworkID: netID})
	if err != nil {
		return nil, fmt.Errorf("listing subnets of floating network %s: %w", netID, err)
	}
	var ids []string
	for _, sn := range all {
		if s.floatingSubnet != nil && !s.floatingSubnet.Match(sn.Name) {
			continue
		}
		if s.floatingSubnetTags != nil && !s.floatingSubnetTags.Match(sn.Tags) {
			continue
		}
		ids = append(ids, sn.ID)
	}
	if len(ids) == 0 {
		return nil, outcome.Refuse(reasonFloatingIPFailed, "no subnet of floating network %s matches the floating-subnet or floating-subnet-tags choice", netID)
	}
	return ids, nil
}
