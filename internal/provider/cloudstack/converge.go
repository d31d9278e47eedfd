package cloudstack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
)

// Converge starts every change the load balancer needs, as far as they are
// independent: first rules that are wrong go (their ports are taken until
// they are gone), then missing rules are created with their machines, the
// openings for their sources, the existing rules' algorithm, machines and
// health checks are put right.
func (s steps) Converge(ctx context.Context, svc *v1.Service, spec lbSpec, lb csLB) (string, error) {
	st := lb.Obj
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc), "address", st.addr.IP)
	var changes []string
	if spec.ip != "" && st.addr.IP != spec.ip {
		return s.moveAddress(ctx, svc, st)
	}
	if s.created.get(svc.UID) == spec.configFingerprint()+"."+spec.membersFingerprint() && len(st.rules) == len(spec.ports) {
		s.created.set(svc.UID, "") // as created, and its jobs went well (Find)
		return "", nil
	}
	if !st.addrRead && spec.ip == "" {
		// Rules the peer made: their address is adopted (tagged) before
		// anything else, so that it is found and released with the Service
		// whatever becomes of the rules, as the peer would release it.
		adopting, err := s.adoptAddress(ctx, svc, st.addr)
		if err != nil {
			return "", err
		}
		if adopting {
			changes = append(changes, "adopting public address "+st.addr.IP)
		}
	}
	n, err := s.network(ctx, spec.network)
	if err != nil {
		return "", err
	}
	op, err := s.readOpenings(ctx, svc, st, n)
	if err != nil {
		return "", err
	}
	want := map[string]portSpec{}
	for _, p := range spec.ports {
		want[p.ruleName(spec.name)] = p
	}
	current := map[string]rule{}
	for _, r := range st.rules {
		if _, dup := current[openingKey(r.Protocol, r.PublicPort)]; !dup && want[r.Name].port == r.PublicPort {
			current[openingKey(r.Protocol, r.PublicPort)] = r
		}
	}
	plan := op.plan(spec, current)
	have := map[string]rule{}
	wrong := 0
	for _, r := range st.rules {
		p, ok := want[r.Name]
		_, dup := have[r.Name]
		if !ok || dup || r.AddressID != st.addr.ID || r.PublicPort != p.port || r.PrivatePort != p.nodePort || r.Protocol != p.proto ||
			!plan.ruleServes(r, spec) {
			job, err := s.gw.deleteRule(ctx, r.ID)
			if err != nil && !isNotFound(err) {
				return "", fmt.Errorf("cannot delete rule %s: %w", r.Name, err)
			}
			s.jobs.add(svc.UID, job, "deleting rule "+r.Name)
			logger.Info("Deleting a rule not as the Service asks", "rule", r.Name)
			wrong++
			continue
		}
		have[r.Name] = r
	}
	if wrong > 0 {
		changes = append(changes, fmt.Sprintf("%d rule(s) not as the Service asks are being deleted", wrong))
		return strings.Join(changes, ", "), nil
	}
	created := 0
	peerShaped := plan.alone && op.own
	if names := slices.Sorted(maps.Keys(have)); len(names) > 0 {
		// As the Service's other rules are: one shape for all of them.
		peerShaped = plan.alone && sameSet(have[names[0]].CIDRs, spec.peerRuleCIDRs)
	}
	for _, p := range spec.ports {
		name := p.ruleName(spec.name)
		if _, ok := have[name]; ok {
			continue
		}
		cidrs := spec.ruleCIDRs
		if peerShaped {
			// The peer's shape: the address is the Service's own, so its
			// firewall rules are all the Service's, and they let in the
			// sources (on an address shared with others, another firewall
			// rule may let everyone in: the cidrlist holds the sources).
			cidrs = spec.peerRuleCIDRs
		}
		id, job, err := s.gw.createRule(ctx, rule{Name: name, Algorithm: spec.algorithm, Protocol: p.proto, AddressID: st.addr.ID,
			Network: n.ID, PublicPort: p.port, PrivatePort: p.nodePort, CIDRs: cidrs})
		if err != nil {
			return "", outcome.RefusedProblem(outcome.ReasonCloudRefused, fmt.Errorf("cannot create rule %s: %w", name, err))
		}
		s.jobs.add(svc.UID, job, "creating rule "+name)
		if len(spec.members) > 0 {
			s.ruleMachines.Stale(id)
			job, err := s.gw.assign(ctx, id, spec.members)
			if err != nil {
				return "", fmt.Errorf("cannot assign the machines to rule %s: %w", name, err)
			}
			s.jobs.add(svc.UID, job, "assigning machines to rule "+name)
		}
		created++
	}
	if created > 0 {
		changes = append(changes, fmt.Sprintf("%d rule(s) being created", created))
	}
	opened, err := s.convergeOpenings(ctx, svc, spec, st, op, plan)
	if err != nil {
		return "", err
	}
	if opened > 0 {
		s.firewall.Invalidate()
		changes = append(changes, fmt.Sprintf("%d opening(s) for the sources being changed", opened))
	}
	for _, p := range spec.ports {
		r, ok := have[p.ruleName(spec.name)]
		if !ok {
			continue
		}
		changed, err := s.convergeRule(ctx, svc, spec, r)
		if err != nil {
			return "", err
		}
		if changed {
			changes = append(changes, "rule "+r.Name+" being updated")
		}
	}
	if len(changes) == 0 {
		return "", nil
	}
	if created == len(spec.ports) {
		s.created.set(svc.UID, spec.configFingerprint()+"."+spec.membersFingerprint())
	}
	return strings.Join(changes, ", "), nil
}

// convergeRule puts an existing rule's algorithm, machines and health check
// right; true when it started a change.
func (s steps) convergeRule(ctx context.Context, svc *v1.Service, spec lbSpec, r rule) (bool, error) {
	changed := false
	if r.Algorithm != spec.algorithm {
		job, err := s.gw.updateRule(ctx, r.ID, spec.algorithm)
		if err != nil {
			return false, fmt.Errorf("cannot update rule %s: %w", r.Name, err)
		}
		s.jobs.add(svc.UID, job, "updating rule "+r.Name)
		changed = true
	}
	members, err := s.convergeMembers(ctx, svc, spec, r)
	if err != nil {
		return false, err
	}
	checks, err := s.gw.healthChecks(ctx, r.ID)
	if err != nil {
		return false, fmt.Errorf("cannot list the health checks of rule %s: %w", r.Name, err)
	}
	var keep bool
	for _, h := range checks {
		if spec.check != nil && !keep && h.Path == spec.check.Path && h.Interval == spec.check.Interval {
			keep = true
			continue
		}
		job, err := s.gw.deleteHealthCheck(ctx, h.ID)
		if err != nil && !isNotFound(err) {
			return false, fmt.Errorf("cannot delete a health check of rule %s: %w", r.Name, err)
		}
		s.jobs.add(svc.UID, job, "deleting a health check of rule "+r.Name)
		changed = true
	}
	if spec.check != nil && !keep && len(checks) == 0 {
		job, err := s.gw.createHealthCheck(ctx, r.ID, *spec.check)
		if err != nil {
			return false, outcome.RefusedProblem(outcome.ReasonCloudRefused, fmt.Errorf("cannot create the health check of rule %s: %w", r.Name, err))
		}
		s.jobs.add(svc.UID, job, "creating the health check of rule "+r.Name)
		changed = true
	}
	return changed || members, nil
}
