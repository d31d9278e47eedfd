package cloudstack

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// convergeMembers assigns the machines a rule lacks and removes the ones it
// should not have; true when it started a change. The rule's machines are
// read, unless last holds them: the set it was last converged to.
func (s *steps) convergeMembers(ctx context.Context, svc *v1.Service, spec lbSpec, r csapi.Rule, last *[]string) (bool, error) {
	var current []string
	if last != nil {
		current = *last
	} else {
		read, err := s.api.RuleMachines(ctx, r.ID)
		if err != nil {
			return false, fmt.Errorf("cannot list the machines of rule %s: %w", r.Name, err)
		}
		current = read
	}
	add, remove := memberChanges(current, spec.members)
	defer func() {
		if len(add)+len(remove) > 0 {
			s.ruleMachines.Stale(r.ID) // the drift check reads what this leaves
		}
	}()
	if len(add) > 0 {
		job, err := s.api.Assign(ctx, r.ID, add)
		if err != nil {
			return false, fmt.Errorf("cannot assign machines to rule %s: %w", r.Name, err)
		}
		s.jobs.add(svc.UID, job, "assigning machines to rule "+r.Name)
	}
	if len(remove) > 0 {
		job, err := s.api.Unassign(ctx, r.ID, remove)
		if err != nil && !isNotFound(err) {
			return false, fmt.Errorf("cannot remove machines from rule %s: %w", r.Name, err)
		}
		s.jobs.add(svc.UID, job, "removing machines from rule "+r.Name)
	}
	return len(add)+len(remove) > 0, nil
}

// memberChanges are the machines a rule with current lacks of want, and
// those it has that want has not, each in its list's order (by set: 5,000
// machines a rule are 5,000 lookups, not 25 million comparisons).
func memberChanges(current, want []string) (add, remove []string) {
	has, wanted := setOf(current), setOf(want)
	for _, m := range want {
		if !has[m] {
			add = append(add, m)
		}
	}
	for _, m := range current {
		if !wanted[m] {
			remove = append(remove, m)
		}
	}
	return add, remove
}

func setOf(ids []string) map[string]bool {
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// UpdateMembers puts the rules' machines right when only the Nodes changed.
//
// The machines a pass assigned and removed are not read again: once their
// jobs went well the rules have them. Nor are the machines the rules were
// last converged to, while this process knows that set (MemberSets.Last): a
// Node joining 2,000 rules of 5,000 machines is 2,000 assignments of one,
// not 20,000 pages read first. A rule changed behind our back since is the
// drift check's to find (its rotation reads every rule's machines within
// the hour), and a change that fails is done again from a reading.
func (s *steps) UpdateMembers(ctx context.Context, svc *v1.Service, spec lbSpec, lb csLB) (string, bool, error) {
	if !hasRules(lb.Obj, spec) {
		return "", false, nil
	}
	progress, _, err := s.jobs.check(ctx, s.api, svc.UID)
	if progress != "" {
		return "waiting: " + progress, true, nil
	}
	want := spec.membersFingerprint()
	changedTo := s.assigned.get(svc.UID)
	s.assigned.set(svc.UID, "")
	if err != nil {
		// Read below, and done again.
		klog.FromContext(ctx).V(2).Info("A change of the rules' machines failed; they are read and put right", "service", klog.KObj(svc), "err", err.Error())
	} else if changedTo == want {
		return "", true, nil
	}
	var last *[]string
	if err == nil {
		last = s.memberSets.Last(s.cycle, svc)
	}
	changed := 0
	for _, r := range lb.Obj.rules {
		c, err := s.convergeMembers(ctx, svc, spec, r, last)
		if err != nil {
			return "", true, err
		}
		if c {
			changed++
		}
	}
	if changed > 0 {
		s.assigned.set(svc.UID, want)
		return fmt.Sprintf("the machines of %d rule(s) are being changed", changed), true, nil
	}
	return "", true, nil
}
