package cloudstack

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// Delete makes one step of deleting the Service's load balancer: its rules
// with their openings first, then the address if it was associated for the
// Service. Done when nothing of it is left.
func (s *steps) Delete(ctx context.Context, _ string, svc *v1.Service) (string, error) {
	progress, _, err := s.jobs.check(ctx, s.api, svc.UID)
	if err != nil {
		klog.FromContext(ctx).Info("A change of the deleted Service's load balancer had failed", "service", klog.KObj(svc), "err", err.Error())
	}
	if progress != "" {
		return progress, nil
	}
	st, found, err := s.read(ctx, svc, true)
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
		if err := s.deleteRules(ctx, svc, st.rules); err != nil {
			return "", err
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

// deleteRules starts the deletion of rules.
func (s *steps) deleteRules(ctx context.Context, svc *v1.Service, rules []csapi.Rule) error {
	for _, r := range rules {
		job, err := s.api.DeleteRule(ctx, r.ID)
		if err := s.deleting(svc, "rule "+r.Name, job, err); err != nil {
			return err
		}
	}
	return nil
}

// deleting notes the job of a deletion of what the Service's load balancer
// had, as the API's delete answered (job, err): one already gone is no
// error, and its job, if any, is waited for as any other.
func (s *steps) deleting(svc *v1.Service, what, job string, err error) error {
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("cannot delete %s: %w", what, err)
	}
	s.jobs.add(svc.UID, job, "deleting "+what)
	return nil
}

// forgetRecord drops the converged record of a Service whose load balancer is
// gone (a Service made a LoadBalancer again starts afresh).
func (s *steps) forgetRecord(ctx context.Context, svc *v1.Service) {
	s.records.Forget(ctx, svc)
}
