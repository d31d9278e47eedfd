package cloudstack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// Delete makes one step of deleting the Service's load balancer: its rules
// with their openings first, then the address if it was associated for the
// Service. Done when nothing of it is left.
func (s steps) Delete(ctx context.Context, _ string, svc *v1.Service) (string, error) {
	progress, _, err := s.jobs.check(ctx, s.gw, svc.UID)
	if err != nil {
		klog.FromContext(ctx).Info("A change of the deleted Service's load balancer had failed", "service", klog.KObj(svc), "err", err.Error())
	}
	if progress != "" {
		return progress, nil
	}
	st, found, err := s.read(ctx, svc)
	if err != nil {
		return "", err
	}
	if !found {
		s.created.set(svc.UID, "")
		s.fresh.set(svc.UID, "")
		s.assigned.set(svc.UID, "")
		s.forgetRecord(ctx, svc)
		return "", nil
	}
	if lb := asLB(st); lb.State == lbcycle.Busy {
		return "the load balancer is " + lb.Status, nil
	}
	if len(st.rules) > 0 {
		if !st.addrRead && strings.TrimSpace(svc.Spec.LoadBalancerIP) == "" {
			// The peer's address, never adopted (the Service goes before
			// Overcast converged it): tagged first, so that it is released
			// once its rules are gone, as the peer would.
			if _, err := s.adoptAddress(ctx, svc, st.addr); err != nil {
				return "", err
			}
		}
		if err := s.closeOpenings(ctx, svc, st); err != nil {
			return "", err
		}
		for _, r := range st.rules {
			job, err := s.gw.deleteRule(ctx, r.ID)
			if err != nil && !isNotFound(err) {
				return "", fmt.Errorf("cannot delete rule %s: %w", r.Name, err)
			}
			s.jobs.add(svc.UID, job, "deleting rule "+r.Name)
		}
		klog.FromContext(ctx).Info("Deleting the load balancer rules", "service", klog.KObj(svc), "rules", len(st.rules))
		return fmt.Sprintf("%d rule(s) are being deleted", len(st.rules)), nil
	}
	if !st.addrRead {
		s.forgetRecord(ctx, svc)
		return "", nil
	}
	progress, err = s.release(ctx, svc, st.addr, true)
	if err == nil && progress == "" {
		s.forgetRecord(ctx, svc)
	}
	return progress, err
}

// forgetRecord drops the converged record of a Service whose load balancer is
// gone (a Service made a LoadBalancer again starts afresh).
func (c *Cloud) forgetRecord(ctx context.Context, svc *v1.Service) {
	c.records.Forget(ctx, svc)
}

// closeOpenings deletes the openings of the Service's rules: on its address's
// firewall, the rules for their ports (all of them on an address of its own);
// in a VPC, the ACL items tagged as the Service's.
func (s steps) closeOpenings(ctx context.Context, svc *v1.Service, st lbState) error {
	n, err := s.network(ctx, st.rules[0].Network)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	if n.Firewall {
		addr := st.addr
		if a, found, err := s.gw.address(ctx, addr.ID); err != nil {
			return err
		} else if found {
			addr = a
		}
		own := addr.addrOwnedBy(s.Cloud, svc)
		ports := map[string]bool{}
		for _, r := range st.rules {
			ports[openingKey(r.Protocol, r.PublicPort)] = true
		}
		// Rules of other Services on the address (a shared loadBalancerIP)
		// keep the openings of their ports.
		var others []rule
		if own {
			on, err := s.gw.rulesOn(ctx, addr.ID)
			if err != nil {
				return err
			}
			for _, r := range on {
				if lbNameOf(r.Name) != lbName(svc) {
					others = append(others, r)
				}
			}
		}
		current, err := s.gw.firewallRules(ctx, addr.ID)
		if err != nil {
			return err
		}
		for _, f := range current {
			if !own && (f.Start != f.End || !ports[openingKey(f.Protocol, f.Start)]) {
				continue
			}
			if slices.ContainsFunc(others, func(r rule) bool {
				return l4(r.Protocol) == l4(f.Protocol) && f.Start <= r.PublicPort && r.PublicPort <= f.End
			}) {
				continue
			}
			job, err := s.gw.deleteFirewallRule(ctx, f.ID)
			if err != nil && !isNotFound(err) {
				return fmt.Errorf("cannot delete firewall rule %s: %w", f.ID, err)
			}
			s.jobs.add(svc.UID, job, "deleting firewall rule "+f.ID)
		}
		return nil
	}
	if n.ACL == "" {
		return nil
	}
	items, err := s.gw.aclItems(ctx, n.ACL)
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.Tags[tagService] != string(svc.UID) || it.Tags[tagCluster] != s.Cluster.Get() {
			continue
		}
		job, err := s.gw.deleteACLItem(ctx, it.ID)
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("cannot delete ACL item %s: %w", it.ID, err)
		}
		s.jobs.add(svc.UID, job, "deleting ACL item "+it.ID)
	}
	klog.FromContext(ctx).V(2).Info("Closed the openings of the Service's rules", "service", klog.KObj(svc))
	return nil
}
