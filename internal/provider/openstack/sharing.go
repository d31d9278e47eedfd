package openstack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Sharing a load balancer (the load-balancer-id annotation), recorded as
// cloud-provider-openstack records it, so that either can take over from the
// other: the load balancer's tags name every Service on it by its load
// balancer name (kube_service_<cluster>_<namespace>_<name>), its owner's
// included, and [LoadBalancer] max-shared-lb bounds how many there are. A
// Service's listeners are those tagged with its UID (ours) or its name (the
// peer's); the owner's are also those that name no Service at all (the
// peer's, made before it shared).

const (
	// servicePrefix starts every load balancer name and sharer tag the CCMs
	// of cloud-provider-openstack's naming write.
	servicePrefix = "kube_service_"
	// defaultMaxSharedLB is cloud-provider-openstack's default max-shared-lb.
	defaultMaxSharedLB = 2
	// peerFIPDescription starts the description of a floating IP
	// cloud-provider-openstack allocated (pkg/openstack/loadbalancer.go,
	// ensureFloatingIP): it deletes those, and only those, with the load
	// balancer, as we do once we have taken it over.
	peerFIPDescription = "Floating IP for Kubernetes external service "
)

// Event reasons of sharing.
const (
	reasonSharingRefused = "SharingRefused"
	reasonPortTaken      = "PortTakenOnSharedLoadBalancer"
	reasonAdoptedPeerLB  = "AdoptedLoadBalancer"
)

// peerOwned says whether lb is the Service's own load balancer as
// cloud-provider-openstack made it: named as the Service's, named by the
// Service's load-balancer-id (the peer writes it on every Service it serves),
// and carrying no tag of ours for another Service or cluster.
func (st *steps) peerOwned(lb *osapi.LoadBalancer, svc *v1.Service, name string) bool {
	id, _ := annotation.OpenStackLoadBalancerID.NonEmptyString(svc)
	if id != lb.ID || lb.Name != name {
		return false
	}
	for _, t := range lb.Tags {
		if (strings.HasPrefix(t, tagService) && t != tagService+string(svc.UID)) ||
			(strings.HasPrefix(t, tagCluster) && t != tagCluster+st.cluster.Get()) {
			return false
		}
	}
	return true
}

// isOwner: lb was made for svc, by this cluster's CCM or by the peer.
func (st *steps) isOwner(lb *osapi.LoadBalancer, svc *v1.Service, name string) bool {
	return st.owned(lb, svc) || st.peerOwned(lb, svc, name)
}

// ours says whether the load balancer was made by a CCM of this cluster, so
// that the last Service on it may delete it: it carries this cluster's tag,
// or (the peer's, which has no cluster tag) its name is one of this
// cluster's. A load balancer a person made, or another cluster's, never is.
func (st *steps) ours(lb *osapi.LoadBalancer, clusterName string) bool {
	if slices.Contains(lb.Tags, tagCluster+st.cluster.Get()) {
		return true
	}
	for _, t := range lb.Tags {
		if strings.HasPrefix(t, tagCluster) {
			return false
		}
	}
	return strings.HasPrefix(lb.Name, servicePrefix+clusterName+"_")
}

// sharers are the Services other than the one named name that lb's tags
// record.
func sharers(lb *osapi.LoadBalancer, name string) []string {
	var out []string
	for _, t := range lb.Tags {
		if strings.HasPrefix(t, servicePrefix) && t != name {
			out = append(out, t)
		}
	}
	return out
}

// listenerOwner is how a listener names the Service it is for: "" when it
// names none.
func listenerOwner(l osapi.Listener) string {
	for _, t := range l.Tags {
		if strings.HasPrefix(t, tagService) || strings.HasPrefix(t, servicePrefix) {
			return t
		}
	}
	return ""
}

// mineListener says whether l is the Service's listener.
func mineListener(l osapi.Listener, svc *v1.Service, name string, owner bool) bool {
	if slices.Contains(l.Tags, tagService+string(svc.UID)) || (name != "" && slices.Contains(l.Tags, name)) {
		return true
	}
	return owner && listenerOwner(l) == ""
}

// serviceNamed is the namespace/name a listener's tags or name give for the
// Service it belongs to, for a person to read; its tag when it names none.
func serviceNamed(l osapi.Listener, clusterName string) string {
	prefix := servicePrefix + clusterName + "_"
	for _, s := range append(slices.Clone(l.Tags), l.Name) {
		if i := strings.Index(s, prefix); i >= 0 {
			// Namespaces and Service names never hold "_".
			if parts := strings.SplitN(s[i+len(prefix):], "_", 3); len(parts) >= 2 {
				return parts[0] + "/" + parts[1]
			}
		}
	}
	if o := listenerOwner(l); o != "" {
		return "with tag " + o
	}
	return "of listener " + l.ID
}

// share makes a Service that names a load balancer it does not own (yet) a
// part of it: the peer's own load balancer of the Service is adopted (tagged
// as ours, nothing rebuilt); otherwise the Service may share it as the peer
// allows (not internal, within max-shared-lb). It says what it started, or
// "" to go on.
func (st *steps) share(ctx context.Context, svc *v1.Service, spec lbSpec, lb *osapi.LoadBalancer) (string, error) {
	if st.peerOwned(lb, svc, spec.name) {
		tags := slices.Clone(lb.Tags)
		for _, t := range st.tags(svc, spec.name) {
			if !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
		if err := st.updateTags(ctx, lb.ID, tags); err != nil {
			return "", err
		}
		klog.FromContext(ctx).Info("Adopted the load balancer cloud-provider-openstack made", "service", klog.KObj(svc), "id", lb.ID)
		st.events.Eventf(svc, v1.EventTypeNormal, reasonAdoptedPeerLB, "Took over load balancer %s as it is", lb.ID)
		return fmt.Sprintf("load balancer %s is being taken over", lb.ID), nil
	}
	if spec.internal {
		return "", outcome.Refuse(reasonSharingRefused, "An internal Service cannot share load balancer %s (it would become public with its owner); nothing was built", lb.ID)
	}
	if !slices.Contains(lb.Tags, spec.name) {
		max := defaultMaxSharedLB
		if m := st.cfg.LoadBalancer.MaxSharedLB; m != nil {
			max = *m
		}
		count := len(sharers(lb, "")) // every Service on it
		if count+1 > max {
			return "", outcome.Refuse(reasonSharingRefused, "Load balancer %s already serves %d Service(s), as many as [LoadBalancer] max-shared-lb = %d allows; nothing was built", lb.ID, count, max)
		}
	}
	return "", nil
}

// updateTags writes a load balancer's tags (one provisioning round).
func (st *steps) updateTags(ctx context.Context, id string, tags []string) error {
	if len(tags) == 0 {
		tags = []string{} // an empty list, which Octavia takes as "none"
	}
	if err := st.api.SetLoadBalancerTags(ctx, id, tags); err != nil {
		return fmt.Errorf("updating the tags of load balancer %s: %w", id, err)
	}
	return nil
}

// leave takes the Service off a load balancer others still use (or one a
// person made): its listeners and pools one at a time, then its tags. The
// load balancer stays, with its floating IP. "" once nothing of the Service
// is left on it.
func (st *steps) leave(ctx context.Context, svc *v1.Service, lb *osapi.LoadBalancer, name string, owner bool) (string, error) {
	changed, err := st.converge(ctx, &treeReads{api: st.api}, svc, lb, lbSpec{name: name}, !owner)
	if err != nil {
		return "", err
	}
	if changed {
		return fmt.Sprintf("removing the listeners of %s/%s from shared load balancer %s", svc.Namespace, svc.Name, lb.ID), nil
	}
	mine := map[string]bool{name: true, tagService + string(svc.UID): true}
	tags := slices.DeleteFunc(slices.Clone(lb.Tags), func(t string) bool { return mine[t] })
	if len(tags) == len(lb.Tags) {
		return "", nil
	}
	if err := st.updateTags(ctx, lb.ID, tags); err != nil {
		return "", err
	}
	klog.FromContext(ctx).Info("Left shared load balancer", "service", klog.KObj(svc), "id", lb.ID, "others", len(sharers(lb, name)))
	return fmt.Sprintf("load balancer %s is being updated to forget %s/%s", lb.ID, svc.Namespace, svc.Name), nil
}

// othersOn says whether a Service other than svc still has a part of lb: a
// tag naming it, or a listener of its own.
func (st *steps) othersOn(ctx context.Context, svc *v1.Service, lb *osapi.LoadBalancer, name string, owner bool) (bool, error) {
	if len(sharers(lb, name)) > 0 {
		return true, nil
	}
	ls, err := st.api.ListListeners(ctx, lb.ID)
	if err != nil {
		return false, fmt.Errorf("listing listeners: %w", err)
	}
	for _, l := range ls {
		if !mineListener(l, svc, name, owner) {
			return true, nil
		}
	}
	return false, nil
}

// deleteOrLeave is Delete's step for a load balancer the Service has a part
// of: the Service's own, or the last Service's of one this cluster made, is
// deleted with its floating IP (unless kept); any other is left, with what
// the Service had on it removed.
func (st *steps) deleteOrLeave(ctx context.Context, svc *v1.Service, lb *osapi.LoadBalancer, clusterName string) (string, error) {
	name := lbName(clusterName, svc)
	owner := st.isOwner(lb, svc, name)
	others, err := st.othersOn(ctx, svc, lb, name, owner)
	if err != nil {
		return "", err
	}
	if others || (!owner && !st.ours(lb, clusterName)) {
		return st.leave(ctx, svc, lb, name, owner)
	}
	keep, _ := annotation.OpenStackKeepFloatingIP.Bool(svc)
	if err := st.releaseFloatingIP(ctx, svc, lb, keep, !owner); err != nil {
		return "", err
	}
	if err := st.deleteCascade(ctx, lb.ID); err != nil {
		return "", fmt.Errorf("deleting load balancer %s: %w", lb.ID, err)
	}
	klog.FromContext(ctx).Info("Deleting load balancer", "service", klog.KObj(svc), "id", lb.ID, "owner", owner)
	return fmt.Sprintf("load balancer %s is being deleted", lb.ID), nil
}
