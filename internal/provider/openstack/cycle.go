package openstack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// Octavia's steps of the load-balancer cycle (internal/lbcycle). The cycle
// decides which runs; each makes at most one change, since Octavia takes one at
// a time per load balancer.
type steps struct{ *Cloud }

type octaviaLB = lbcycle.LB[loadbalancers.LoadBalancer]

var (
	_ lbcycle.Cloud[lbSpec, loadbalancers.LoadBalancer]         = steps{}
	_ lbcycle.MemberUpdater[lbSpec, loadbalancers.LoadBalancer] = steps{}
	_ lbcycle.DriftChecker[loadbalancers.LoadBalancer]          = steps{}
	_ lbcycle.Relister                                          = steps{}
)

func newCycle(c *Cloud) *lbcycle.Cycle[lbSpec, loadbalancers.LoadBalancer] {
	// The record is kept in the annotations cloud-provider-openstack users
	// know: load-balancer-address (the address, the one place it shows when a
	// hostname is published instead) and the converged record. A Service on
	// a shared load balancer (load-balancer-id) has none: it is always walked.
	records := &lbcycle.AnnotationRecords{Converged: annotation.OpenStackConverged,
		Address: annotation.OpenStackLoadBalancerAddress, Kube: c.Kube,
		None: func(svc *v1.Service) bool {
			// Unless the named one is the Service's own (taken over from
			// cloud-provider-openstack, which names it on every Service).
			id := svc.Annotations[string(annotation.OpenStackLoadBalancerID)]
			return id != "" && !strings.HasPrefix(svc.Annotations[string(annotation.OpenStackConverged)], id+"/")
		}}
	return lbcycle.New[lbSpec, loadbalancers.LoadBalancer](steps{c}, records,
		lbcycle.Options{Retry: pendingRetry, FullCheck: fullCheckInterval})
}

func (s steps) Spec(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	spec, err := s.spec(clusterName, svc, nodes)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	if s.Cluster.Get() == "" {
		return lbSpec{}, lbcycle.Fingerprint{}, errors.New("the cluster UID (the kube-system namespace's) is not known yet")
	}
	if err := s.readTLSSecret(ctx, svc, spec.tls); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	if err := s.resolveMembers(ctx, &spec); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	return spec, lbcycle.Fingerprint{Config: spec.configFingerprint(), Members: spec.membersFingerprint()}, nil
}

// asLB is an Octavia load balancer as the cycle sees it.
func (s steps) asLB(lb *loadbalancers.LoadBalancer, svc *v1.Service) octaviaLB {
	state := lbcycle.Ready
	switch {
	case strings.HasPrefix(lb.ProvisioningStatus, "PENDING"):
		state = lbcycle.Busy
	case lb.ProvisioningStatus == "ERROR":
		state = lbcycle.Failed
	}
	return octaviaLB{ID: lb.ID, Status: lb.ProvisioningStatus, State: state, Shared: !s.owned(lb, svc), Obj: *lb}
}

func (s steps) Listed(ctx context.Context, svc *v1.Service) (octaviaLB, bool, error) {
	lb, found, err := s.index.lbs.Get(ctx, "svc/"+string(svc.UID))
	if err != nil || !found {
		return octaviaLB{}, false, err
	}
	return s.asLB(&lb, svc), true, nil
}

func (s steps) Find(ctx context.Context, svc *v1.Service) (octaviaLB, bool, error) {
	if err := s.api.session(ctx, svcOctavia); err != nil {
		return octaviaLB{}, false, err
	}
	lb, err := s.findLB(ctx, svc)
	if err != nil || lb == nil {
		return octaviaLB{}, false, err
	}
	return s.asLB(lb, svc), true, nil
}

// Create refuses, before anything is created, what would refuse the Service
// later (a load-balancer-id that names nothing, a taken floating IP), then
// creates the load balancer: fully populated, one provisioning round, unless
// the cloud needs it step by step.
func (s steps) Create(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	if id, err := annotation.OpenStackLoadBalancerID.NonEmptyString(svc); err == nil {
		return "", outcome.Refuse(outcome.ReasonInvalidAnnotation, "Load balancer %s named by %s does not exist; nothing was created", id, annotation.OpenStackLoadBalancerID)
	}
	if err := s.api.session(ctx, svcOctavia, svcNetwork); err != nil {
		return "", err
	}
	if err := s.requestedFloatingIPFree(ctx, svc, spec); err != nil {
		return "", err
	}
	fingerprint := spec.fingerprint()
	more, err := s.vipSubnets(ctx, svc, &spec)
	if err != nil {
		return "", err
	}
	if err := s.prepareTLS(ctx, svc, &spec); err != nil {
		return "", err
	}
	opts := s.createOpts(svc, spec)
	opts.AdditionalVips = more
	created, err := s.api.createLoadBalancer(ctx, opts)
	if err != nil {
		if refused := s.tlsRefusal(err, spec); refused != nil {
			return "", refused
		}
		return "", fmt.Errorf("octavia refused load balancer %s: %w", spec.name, octaviaErr(err))
	}
	if len(opts.Listeners) == len(spec.ports) {
		s.setCreated(created.ID, fingerprint) // fully populated
	}
	if spec.sg == nil {
		// A new load balancer: no group is left from when groups were managed.
		s.sgs.unmanagedChecked.Store(svc.UID, true)
	} else {
		// Made while Octavia provisions: it needs nothing of the load balancer.
		svc, logger := svc.DeepCopy(), klog.FromContext(ctx)
		s.sgs.start(svc.UID, spec.sgFingerprint(), func(ctx context.Context) error {
			return s.convergeSG(klog.NewContext(ctx, logger), svc, spec)
		})
	}
	klog.FromContext(ctx).Info("Created load balancer", "service", klog.KObj(svc), "id", created.ID, "listeners", len(spec.ports), "members", len(spec.members))
	return fmt.Sprintf("load balancer %s is being created", created.ID), nil
}

// Replace deletes a load balancer in ERROR; its floating IP is kept, detached,
// for the new one.
func (s steps) Replace(ctx context.Context, svc *v1.Service, lb octaviaLB) (string, error) {
	if others := sharers(&lb.Obj, lb.Obj.Name); len(others) > 0 {
		// Never deleted while another Service is on it.
		return "", outcome.Refuse(outcome.ReasonCloudRefused, "Load balancer %s is in ERROR and is shared with %d other Service(s); it is left as it is: repair or delete it in Octavia", lb.ID, len(others))
	}
	if _, named := svc.Annotations[string(annotation.OpenStackLoadBalancerID)]; named {
		return "", outcome.Refuse(outcome.ReasonCloudRefused, "Load balancer %s named by %s is in ERROR; it is left as it is: remove the annotation to have a new one built", lb.ID, annotation.OpenStackLoadBalancerID)
	}
	klog.FromContext(ctx).Info("Replacing load balancer in ERROR", "service", klog.KObj(svc), "id", lb.ID)
	s.Events.Eventf(svc, v1.EventTypeNormal, reasonReplacingInError, "Load balancer %s is in ERROR; deleting it to create it anew", lb.ID)
	if err := s.deleteKeepingAddress(ctx, svc, &lb.Obj); err != nil {
		return "", fmt.Errorf("deleting load balancer %s in ERROR: %w", lb.ID, err)
	}
	return fmt.Sprintf("load balancer %s was in ERROR and is being replaced", lb.ID), nil
}

// Converge walks the load balancer's listeners, pools, members and monitors and
// makes the first change it needs. One this process created fully populated
// from the very spec is not walked: only its status tree is read, to catch
// children Octavia never finished.
func (s steps) Converge(ctx context.Context, svc *v1.Service, spec lbSpec, lb octaviaLB) (string, error) {
	if !lb.Shared && s.createdAs(lb.ID) == spec.fingerprint() {
		if progress, err := s.rebuildIfStranded(ctx, svc, &lb.Obj); err != nil || progress != "" {
			return progress, err
		}
		s.setCreated(lb.ID, "")
		return s.converged(ctx, svc, spec)
	}
	if err := s.api.session(ctx, svcOctavia); err != nil {
		return "", err
	}
	if err := s.prepareTLS(ctx, svc, &spec); err != nil {
		return "", err
	}
	if lb.Shared {
		if progress, err := s.share(ctx, svc, spec, &lb.Obj); err != nil || progress != "" {
			return progress, err
		}
	} else {
		s.warnImmutable(svc, &lb.Obj, spec)
	}
	changed, err := s.converge(ctx, svc, &lb.Obj, spec, lb.Shared)
	if refused := s.tlsRefusal(err, spec); refused != nil {
		return "", refused
	}
	if err != nil {
		if errors.Is(err, outcome.ErrBusy) && !lb.Shared {
			// Busy children of an ACTIVE load balancer may never finish.
			if progress, serr := s.rebuildIfStranded(ctx, svc, &lb.Obj); serr != nil || progress != "" {
				return progress, serr
			}
		}
		return "", fmt.Errorf("cannot update load balancer %s: %w", lb.ID, err)
	}
	if changed {
		return fmt.Sprintf("load balancer %s is being updated", lb.ID), nil
	}
	return s.converged(ctx, svc, spec)
}

// converged finishes a load balancer that is as spec asks: its security
// group, then the certificates in Barbican no listener uses any more (those
// of a rotated Secret, or all of them once the Service stops naming one).
func (s steps) converged(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	if err := s.convergedSG(ctx, svc, spec); err != nil {
		return "", err
	}
	keep := ""
	if spec.tls != nil && spec.tls.secret != nil {
		keep = spec.tls.secret.hash
	}
	if err := s.sweepCerts(ctx, svc, keep); err != nil {
		return "", fmt.Errorf("certificates of %s/%s in Barbican: %w", svc.Namespace, svc.Name, err)
	}
	return "", nil
}

// convergedSG makes the Service's security group as spec asks once its load
// balancer is: all its writes in one pass (they are Neutron's, not Octavia's
// one at a time), so it never makes a pass of its own. The one started with
// the load balancer's creation is waited for, not repeated.
func (s steps) convergedSG(ctx context.Context, svc *v1.Service, spec lbSpec) error {
	if spec.sg == nil {
		return s.convergeSG(ctx, svc, spec) // a group left from before goes
	}
	if err := s.sgs.converged(ctx, svc.UID, spec.sgFingerprint(), func(ctx context.Context) error {
		return s.convergeSG(ctx, svc, spec)
	}); err != nil {
		return fmt.Errorf("security group of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// Publish attaches the floating IP (an internal Service gives its own back) and
// says the status.
func (s steps) Publish(ctx context.Context, svc *v1.Service, spec lbSpec, lb octaviaLB) (*v1.LoadBalancerStatus, string, error) {
	err := s.api.session(ctx, svcNetwork)
	if err != nil {
		return nil, "", err
	}
	addr := lb.Obj.VipAddress
	switch {
	case spec.noFloatingIP() && !lb.Shared:
		// A Service made internal gives its floating IP back.
		if err := s.releaseFloatingIP(ctx, svc, &lb.Obj, spec.keepFIP, false); err != nil {
			return nil, "", err
		}
	case spec.noFloatingIP():
	case lb.Shared:
		// The owner gives a shared load balancer its address (one that is
		// internal has none): a sharer never does.
		fip, err := s.vipFloatingIP(ctx, &lb.Obj)
		if err != nil {
			return nil, "", err
		}
		if fip == nil {
			return nil, "", outcome.Refuse(reasonSharingRefused, "Load balancer %s has no floating IP: only the Service it was made for gives it one", lb.ID)
		}
		addr = fip.FloatingIP
	default:
		if addr, err = s.ensureFloatingIP(ctx, svc, &lb.Obj, spec); err != nil {
			return nil, "", err
		}
	}
	return s.statusFor(spec, addr, lb.Obj.VipAddress, spec.otherVIP(&lb.Obj, addr)), addr, nil
}

// Published answers from the shared listing of floating IPs: the address must
// be the recorded one, on the VIP's port (an internal Service must have none).
func (s steps) Published(ctx context.Context, _ *v1.Service, spec lbSpec, rec lbcycle.Record, lb octaviaLB) (*v1.LoadBalancerStatus, bool, error) {
	addr := lb.Obj.VipAddress
	fip, hasFIP, err := s.index.fips.Get(ctx, "port/"+lb.Obj.VipPortID)
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
	return s.statusFor(spec, addr, lb.Obj.VipAddress, spec.otherVIP(&lb.Obj, addr)), true, nil
}

// UpdateMembers handles a change of Nodes alone: its pools from one listing,
// and one declarative batch update of each pool whose members differ, counted
// as done once Octavia accepts it. Octavia takes one update at a time, so a
// second pool to update waits for the next pass. Any doubt (a pool missing or
// named twice) is not ok: the full cycle repairs it.
func (s steps) UpdateMembers(ctx context.Context, svc *v1.Service, spec lbSpec, lb octaviaLB) (string, bool, error) {
	if err := s.api.session(ctx, svcOctavia); err != nil {
		return "", false, err
	}
	all, err := s.api.listPools(ctx, lb.ID)
	if err != nil {
		return "", false, fmt.Errorf("listing the pools of load balancer %s: %w", lb.ID, octaviaErr(err))
	}
	byName := map[string]pools.Pool{}
	for _, p := range all {
		if _, dup := byName[p.Name]; dup {
			return "", false, nil
		}
		byName[p.Name] = p
	}
	mine := make([]pools.Pool, len(spec.ports))
	for i, p := range spec.ports {
		pool, ok := byName[s.objectName(spec, p)]
		if !ok || pool.Protocol != spec.poolProtocol(p) {
			return "", false, nil
		}
		mine[i] = pool
	}
	wrote := false
	for i, p := range spec.ports {
		if wrote {
			return fmt.Sprintf("members of load balancer %s are being updated", lb.ID), true, nil
		}
		changed, err := s.convergeMembers(ctx, mine[i], spec, p)
		if err != nil {
			return "", true, fmt.Errorf("cannot update the members of load balancer %s: %w", lb.ID, err)
		}
		wrote = wrote || changed
	}
	klog.FromContext(ctx).V(2).Info("Updated the members of load balancer", "service", klog.KObj(svc), "id", lb.ID, "members", len(spec.members))
	if spec.sg != nil {
		if done, err := s.sgMembersChanged(ctx, svc, spec); err != nil {
			return "", true, fmt.Errorf("security group of %s/%s: %w", svc.Namespace, svc.Name, err)
		} else if !done {
			if err := s.convergedSG(ctx, svc, spec); err != nil {
				return "", true, err
			}
		}
	}
	return "", true, nil
}

// Drift sees, in the shared listings, a load balancer short of a listener or a
// pool, and a floating IP no longer on it; and a TLS Secret that changed.
func (s steps) Drift(ctx context.Context, svc *v1.Service, rec lbcycle.Record, l octaviaLB) (string, error) {
	if why := s.secretRotated(ctx, svc); why != "" {
		return why, nil
	}
	lb := l.Obj
	switch {
	case len(lb.Listeners) < len(svc.Spec.Ports):
		return fmt.Sprintf("load balancer %s has %d listener(s) for %d port(s)", lb.ID, len(lb.Listeners), len(svc.Spec.Ports)), nil
	case len(lb.Pools) < len(lb.Listeners):
		return fmt.Sprintf("load balancer %s has %d pool(s) for %d listener(s)", lb.ID, len(lb.Pools), len(lb.Listeners)), nil
	}
	if rec.Address == "" || rec.Address == lb.VipAddress {
		return "", nil // internal: its address is the VIP
	}
	fip, has, err := s.index.fips.Get(ctx, "port/"+lb.VipPortID)
	if err != nil {
		return "", err
	}
	if !has || fip.FloatingIP != rec.Address {
		return fmt.Sprintf("floating IP %s is no longer on load balancer %s", rec.Address, lb.ID), nil
	}
	return "", nil
}

func (s steps) Relist() {
	s.index.lbs.Invalidate()
	s.index.fips.Invalidate()
	s.index.listeners.Invalidate()
	s.index.pools.Invalidate()
	s.index.sgRules.Invalidate()
}

// Delete deletes the Service's load balancer (cascade) and the floating IP a
// CCM created for it (detached instead with keep-floatingip, and always when
// no CCM created it). Already gone is success. A load balancer another Service
// still shares is not deleted: the Service's listeners and its tag leave it
// (deleteOrLeave); the last Service on one this cluster made deletes it. Done
// once the load balancer is gone: the Service keeps its finalizer until then,
// and its free floating IPs go last.
func (s steps) Delete(ctx context.Context, clusterName string, svc *v1.Service) (string, error) {
	if err := s.api.session(ctx, svcOctavia, svcNetwork); err != nil {
		return "", err
	}
	lb, err := s.findLB(ctx, svc)
	if err != nil {
		return "", err
	}
	keep, _ := annotation.OpenStackKeepFloatingIP.Bool(svc)
	if lb == nil {
		// Gone (deleted now, or behind our back before): what it left of ours
		// goes too, its security group whether or not groups are managed now.
		if err := s.deleteSG(ctx, svc); err != nil {
			return "", err
		}
		if err := s.sweepCerts(ctx, svc, ""); err != nil {
			return "", err
		}
		if keep {
			return "", nil
		}
		return "", s.deleteOwnFloatingIPs(ctx, svc)
	}
	if strings.HasPrefix(lb.ProvisioningStatus, "PENDING") {
		return fmt.Sprintf("load balancer %s is %s", lb.ID, lb.ProvisioningStatus), nil
	}
	if progress, err := s.deleteOrLeave(ctx, svc, lb, clusterName); err != nil || progress != "" {
		return progress, err
	}
	// A Service that left a shared load balancer.
	if err := s.deleteSG(ctx, svc); err != nil {
		return "", err
	}
	return "", s.sweepCerts(ctx, svc, "")
}
