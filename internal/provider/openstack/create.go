package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Creating a Service's load balancer: refused before anything exists when
// the Service could never be served, then made in one call (fully populated
// unless the cloud needs it step by step). What Octavia cannot change later
// is warned about, never changed.

// Create refuses, before anything is created, what would refuse the Service
// later (a load-balancer-id that names nothing, a taken floating IP), then
// creates the load balancer: fully populated, one provisioning round, unless
// the cloud needs it step by step.
func (st *steps) Create(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	if id, err := annotation.OpenStackLoadBalancerID.NonEmptyString(svc); err == nil {
		return "", outcome.Refuse(outcome.ReasonInvalidAnnotation, "Load balancer %s named by %s does not exist; nothing was created", id, annotation.OpenStackLoadBalancerID)
	}
	if err := st.api.Session(ctx, osapi.Octavia, osapi.Neutron); err != nil {
		return "", err
	}
	if waiting := st.awaitingLostCreate(svc, spec.name); waiting != "" {
		return waiting, nil
	}
	if err := st.requestedFloatingIPFree(ctx, svc, spec); err != nil {
		return "", err
	}
	fingerprint := spec.fingerprint()
	more, err := st.vipSubnets(ctx, svc, &spec)
	if err != nil {
		return "", err
	}
	if err := st.prepareTLS(ctx, svc, &spec); err != nil {
		return "", err
	}
	opts := st.createOpts(svc, spec)
	opts.AdditionalVips = more
	created, err := st.api.CreateLoadBalancer(ctx, opts)
	if outcome.MayHaveActed(err) {
		st.unanswered.Lost(string(svc.UID))
	}
	if err != nil {
		if refused := st.tlsRefusal(err, spec); refused != nil {
			return "", refused
		}
		return "", fmt.Errorf("octavia refused load balancer %s: %w", spec.name, err)
	}
	if len(opts.Listeners) == len(spec.ports) {
		st.setCreated(created.ID, fingerprint) // fully populated
	}
	if spec.sg == nil {
		// A new load balancer: no group is left from when groups were managed.
		st.sgs.unmanagedChecked.Store(svc.UID, true)
	} else {
		// Made while Octavia provisions: it needs nothing of the load balancer.
		svc, logger := svc.DeepCopy(), klog.FromContext(ctx)
		st.sgs.start(svc.UID, spec.sgFingerprint(), func(ctx context.Context) error {
			return st.convergeSG(klog.NewContext(ctx, logger), svc, spec)
		})
	}
	klog.FromContext(ctx).Info("Created load balancer", "service", klog.KObj(svc), "id", created.ID, "listeners", len(spec.ports), "members", len(spec.members))
	return fmt.Sprintf("load balancer %s is being created", created.ID), nil
}

// warnImmutable tells the user when a setting Octavia cannot change on an existing
// load balancer differs from what the Service asks now.
func (st *steps) warnImmutable(svc *v1.Service, lb *osapi.LoadBalancer, s lbSpec) {
	if diffs := st.immutableDiffs(lb, s); len(diffs) > 0 {
		st.events.Eventf(svc, v1.EventTypeWarning, reasonImmutableIgnored,
			"Load balancer %s keeps its %s: Octavia cannot change them; recreate the Service to apply", lb.ID, strings.Join(diffs, ", "))
	}
}

// immutableDiffs are the create-time choices of lb the Service asks
// otherwise now, which Octavia cannot change.
func (st *steps) immutableDiffs(lb *osapi.LoadBalancer, s lbSpec) []string {
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
	if s.secondFamily != "" && len(lb.AdditionalVips) == 0 && st.octaviaAPI.additionalVIPs.Load() == featureYes {
		diffs = append(diffs, "a second VIP for dual-stack (it has one)")
	}
	return diffs
}

func (st *steps) createOpts(svc *v1.Service, s lbSpec) osapi.LoadBalancerCreate {
	opts := osapi.LoadBalancerCreate{
		Name:             s.name,
		Description:      fmt.Sprintf("Kubernetes Service %s/%s", svc.Namespace, svc.Name),
		VipSubnetID:      s.subnetID,
		VipNetworkID:     s.networkID,
		VipPortID:        s.portID,
		VipAddress:       s.vipAddress,
		Provider:         st.cfg.LoadBalancer.LBProvider,
		FlavorID:         s.flavorID,
		AvailabilityZone: s.availabilityZone,
		Tags:             st.tags(svc, s.name),
	}
	if st.serial.Load() {
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
		l := listenerOpts(svc, s, p)
		pool := poolOpts(s, p)
		pool.Members = memberOpts(s, p)
		if s.monitor != nil {
			m := monitorOpts(s, p)
			pool.Monitor = &m
		}
		l.DefaultPool = &pool
		opts.Listeners = append(opts.Listeners, l)
	}
	return opts
}
