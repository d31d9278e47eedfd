package cloudstack

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// Converge starts every change the load balancer needs, as far as they are
// independent: first rules that are wrong go (their ports are taken until
// they are gone), then missing rules are created with their machines, the
// openings for their sources, the existing rules' algorithm, machines and
// health checks are put right.
func (s *steps) Converge(ctx context.Context, svc *v1.Service, spec lbSpec, lb csLB) (string, error) {
	st := lb.Obj
	if spec.ip != "" && st.addr.IP != spec.ip {
		return s.moveAddress(ctx, svc, st)
	}
	if key, _ := s.createdBy(svc); key == createdKey(spec) && len(st.rules) == len(spec.ports) {
		s.created.set(svc.UID, "") // as created, and its jobs went well (Find)
		return "", nil
	}
	changes, err := s.adoptPeerAddress(ctx, svc, spec, st)
	if err != nil {
		return "", err
	}
	n, err := s.network(ctx, spec.network)
	if err != nil {
		return "", err
	}
	op, err := s.readOpenings(ctx, svc, st, n)
	if err != nil {
		return "", err
	}
	want := rulesWanted(spec)
	plan := op.plan(spec, rulesByOpening(st, want))
	have, wrong, err := s.deleteWrongRules(ctx, svc, spec, st, want, plan)
	if err != nil {
		return "", err
	}
	if wrong > 0 {
		changes = append(changes, fmt.Sprintf("%d rule(s) not as the Service asks are being deleted", wrong))
		return strings.Join(changes, ", "), nil
	}
	created, opened, err := s.createAndOpen(ctx, svc, spec, st, n, have, op, plan)
	if err != nil {
		return "", err
	}
	if len(created) > 0 {
		changes = append(changes, fmt.Sprintf("%d rule(s) being created", len(created)))
	}
	if opened > 0 {
		s.firewall.Invalidate()
		changes = append(changes, fmt.Sprintf("%d opening(s) for the sources being changed", opened))
	}
	updated, err := s.convergeRules(ctx, svc, spec, have)
	if err != nil {
		return "", err
	}
	changes = append(changes, updated...)
	if len(changes) == 0 {
		return "", nil
	}
	if len(created) == len(spec.ports) {
		s.createdWith(svc, spec, created)
	}
	return strings.Join(changes, ", "), nil
}

// createdWith notes that the Service's rules were all created as spec asks,
// by the jobs ruleJobs, each with its machines: when the next look at the
// jobs sees them all done well, their results are the load balancer
// (Find), with nothing to read. Without machines a rule is not applied
// (it stays in state Add): the next pass reads it.
func (s *steps) createdWith(svc *v1.Service, spec lbSpec, ruleJobs []string) {
	note := createdKey(spec)
	if len(spec.members) > 0 {
		note += " " + strings.Join(ruleJobs, " ")
	}
	s.created.set(svc.UID, note)
}

// createdBy is the created memo's key and the jobs that created the rules
// (none when they were not all given machines).
func (s *steps) createdBy(svc *v1.Service) (key string, ruleJobs []string) {
	f := strings.Fields(s.created.get(svc.UID))
	if len(f) == 0 {
		return "", nil
	}
	return f[0], f[1:]
}

// createdKey is what the created memo holds for a load balancer built whole
// as spec asks: its next Converge, once the jobs went well (Find), has
// nothing to read.
func createdKey(spec lbSpec) string {
	return spec.configFingerprint() + "." + spec.membersFingerprint()
}

// adoptPeerAddress tags the address of rules the peer made before anything
// else, so that it is found and released with the Service whatever becomes
// of the rules, as the peer would release it; the change it started, if any.
func (s *steps) adoptPeerAddress(ctx context.Context, svc *v1.Service, spec lbSpec, st lbState) ([]string, error) {
	if st.addrRead || spec.ip != "" {
		return nil, nil
	}
	adopting, err := s.adoptAddress(ctx, svc, st.addr)
	if err != nil || !adopting {
		return nil, err
	}
	return []string{"adopting public address " + st.addr.IP}, nil
}

// rulesWanted are the spec's ports by the name of their rule.
func rulesWanted(spec lbSpec) map[string]portSpec {
	want := map[string]portSpec{}
	for _, p := range spec.ports {
		want[p.ruleName(spec.name)] = p
	}
	return want
}

// rulesByOpening are the current rules that serve a wanted port, by
// openingKey (the first of each): what the openings are judged with.
func rulesByOpening(st lbState, want map[string]portSpec) map[string]csapi.Rule {
	current := map[string]csapi.Rule{}
	for _, r := range st.rules {
		if _, dup := current[openingKey(r.Protocol, r.PublicPort)]; !dup && want[r.Name].port == r.PublicPort {
			current[openingKey(r.Protocol, r.PublicPort)] = r
		}
	}
	return current
}

// deleteWrongRules starts the deletion of every rule not as the Service
// asks (a second of one name, another address, port or protocol, or a
// cidrlist that with its opening lets in other sources): their ports are
// taken until they are gone. have are the rules that stay, by name.
func (s *steps) deleteWrongRules(ctx context.Context, svc *v1.Service, spec lbSpec, st lbState, want map[string]portSpec,
	plan openingPlan) (have map[string]csapi.Rule, wrong int, err error) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc), "address", st.addr.IP)
	have = map[string]csapi.Rule{}
	for _, r := range st.rules {
		if ruleWrong(r, spec, st, want, have, plan) != "" {
			job, err := s.api.DeleteRule(ctx, r.ID)
			if err := s.deleting(svc, "rule "+r.Name, job, err); err != nil {
				return nil, 0, err
			}
			logger.Info("Deleting a rule not as the Service asks", "rule", r.Name)
			wrong++
			continue
		}
		have[r.Name] = r
	}
	return have, wrong, nil
}

// ruleWrong says why a rule is not as the Service asks ("" when it is): a
// second of its name (have are the rules judged before it), another
// address, port or protocol, or a cidrlist that with its opening lets in
// other sources.
func ruleWrong(r csapi.Rule, spec lbSpec, st lbState, want map[string]portSpec, have map[string]csapi.Rule, plan openingPlan) string {
	p, ok := want[r.Name]
	_, dup := have[r.Name]
	switch {
	case !ok:
		return "no port of the Service asks for it"
	case dup:
		return "a second rule of its name"
	case r.AddressID != st.addr.ID:
		return fmt.Sprintf("it is on address %s, not %s", r.IP, st.addr.IP)
	case r.PublicPort != p.port || r.PrivatePort != p.nodePort || r.Protocol != p.proto:
		return describeDiffs(differing(fieldDiff{"protocol", r.Protocol, p.proto},
			fieldDiff{"publicport", num(r.PublicPort), num(p.port)}, fieldDiff{"privateport", num(r.PrivatePort), num(p.nodePort)}))
	case !plan.ruleServes(r, spec):
		return fmt.Sprintf("cidrlist %s, with its opening, does not let in what the Service asks (%s)", cidrText(r.CIDRs), cidrText(spec.sources))
	}
	return ""
}

// peerShaped says whether new rules take the peer's shape (their cidrlist
// lets everyone in, the firewall the sources): as the Service's other rules
// are, one shape for all of them, else on an address of its own.
func peerShaped(spec lbSpec, op openings, plan openingPlan, have map[string]csapi.Rule) bool {
	if names := slices.Sorted(maps.Keys(have)); len(names) > 0 {
		return plan.alone && sameSet(have[names[0]].CIDRs, spec.peerRuleCIDRs)
	}
	return plan.alone && op.own
}

// createAndOpen creates the missing rules and puts the openings right at
// once: neither needs the other (an opening is the address's port, a rule
// the port's machines), so their jobs start a round trip sooner.
func (s *steps) createAndOpen(ctx context.Context, svc *v1.Service, spec lbSpec, st lbState, n csapi.Network, have map[string]csapi.Rule,
	op openings, plan openingPlan) (created []string, opened int, err error) {
	var wg sync.WaitGroup
	var createErr, openErr error
	wg.Go(func() {
		created, createErr = s.createMissingRules(ctx, svc, spec, st, n, have, peerShaped(spec, op, plan, have))
	})
	wg.Go(func() { opened, openErr = s.convergeOpenings(ctx, svc, spec, st, op, plan) })
	wg.Wait()
	return created, opened, cmp.Or(createErr, openErr)
}

// createMissingRules starts the creation of the spec's rules that have
// lacks, each with its machines; the jobs that create them.
func (s *steps) createMissingRules(ctx context.Context, svc *v1.Service, spec lbSpec, st lbState, n csapi.Network, have map[string]csapi.Rule,
	peerShaped bool) ([]string, error) {
	var created []string
	for _, p := range spec.ports {
		name := p.ruleName(spec.name)
		if _, ok := have[name]; ok {
			continue
		}
		id, job, err := s.api.CreateRule(ctx, ruleOf(spec, p, st.addr.ID, n.ID, peerShaped))
		if err != nil {
			return nil, outcome.RefusedProblem(outcome.ReasonCloudRefused, fmt.Errorf("cannot create rule %s: %w", name, err))
		}
		s.jobs.add(svc.UID, job, "creating rule "+name)
		// Its machines and its health check, at once: each needs the rule
		// alone.
		var wg sync.WaitGroup
		var assignErr, checkErr error
		wg.Go(func() { assignErr = s.assignNew(ctx, svc, spec, id, name) })
		wg.Go(func() { checkErr = s.checkNew(ctx, svc, spec, id, name) })
		wg.Wait()
		if err := cmp.Or(assignErr, checkErr); err != nil {
			return nil, err
		}
		created = append(created, job)
	}
	return created, nil
}

// assignNew assigns the spec's machines to a rule just created.
func (s *steps) assignNew(ctx context.Context, svc *v1.Service, spec lbSpec, id, name string) error {
	if len(spec.members) == 0 {
		return nil
	}
	s.ruleMachines.Stale(id)
	job, err := s.api.Assign(ctx, id, spec.members)
	if err != nil {
		return fmt.Errorf("cannot assign the machines to rule %s: %w", name, err)
	}
	s.jobs.add(svc.UID, job, "assigning machines to rule "+name)
	return nil
}

// checkNew gives a rule just created the spec's health-check policy, if it
// asks for one (the next pass, the rule built, has nothing to read).
func (s *steps) checkNew(ctx context.Context, svc *v1.Service, spec lbSpec, id, name string) error {
	if spec.check == nil {
		return nil
	}
	s.ruleChecks.Stale(id)
	job, err := s.api.CreateHealthCheck(ctx, id, *spec.check)
	if err != nil {
		return outcome.RefusedProblem(outcome.ReasonCloudRefused, fmt.Errorf("cannot create the health check of rule %s: %w", name, err))
	}
	s.jobs.add(svc.UID, job, "creating the health check of rule "+name)
	return nil
}

// convergeRules puts the existing rules right, in the order of the spec's
// ports; the changes it started.
func (s *steps) convergeRules(ctx context.Context, svc *v1.Service, spec lbSpec, have map[string]csapi.Rule) ([]string, error) {
	var changes []string
	for _, p := range spec.ports {
		r, ok := have[p.ruleName(spec.name)]
		if !ok {
			continue
		}
		changed, err := s.convergeRule(ctx, svc, spec, r)
		if err != nil {
			return nil, err
		}
		if changed {
			changes = append(changes, "rule "+r.Name+" being updated")
		}
	}
	return changes, nil
}

// convergeRule puts an existing rule's algorithm, machines and health check
// right; true when it started a change.
func (s *steps) convergeRule(ctx context.Context, svc *v1.Service, spec lbSpec, r csapi.Rule) (bool, error) {
	changed := false
	if r.Algorithm != spec.algorithm {
		job, err := s.api.UpdateRule(ctx, r.ID, spec.algorithm)
		if err != nil {
			return false, fmt.Errorf("cannot update rule %s: %w", r.Name, err)
		}
		s.jobs.add(svc.UID, job, "updating rule "+r.Name)
		changed = true
	}
	members, err := s.convergeMembers(ctx, svc, spec, r, nil)
	if err != nil {
		return false, err
	}
	checks, err := s.api.HealthChecks(ctx, r.ID)
	if err != nil {
		return false, fmt.Errorf("cannot list the health checks of rule %s: %w", r.Name, err)
	}
	drop, create := checkChanges(checks, spec.check)
	if len(drop) > 0 || create {
		s.ruleChecks.Stale(r.ID) // the drift check reads what this leaves
	}
	for _, h := range drop {
		job, err := s.api.DeleteHealthCheck(ctx, h.ID)
		if err := s.deleting(svc, "a health check of rule "+r.Name, job, err); err != nil {
			return false, err
		}
		changed = true
	}
	if create {
		job, err := s.api.CreateHealthCheck(ctx, r.ID, *spec.check)
		if err != nil {
			return false, outcome.RefusedProblem(outcome.ReasonCloudRefused, fmt.Errorf("cannot create the health check of rule %s: %w", r.Name, err))
		}
		s.jobs.add(svc.UID, job, "creating the health check of rule "+r.Name)
		changed = true
	}
	return changed || members, nil
}

// checkChanges are the health checks of a rule to delete (all but the
// first as want asks), and whether want's is to be created (there are
// none left then).
func checkChanges(checks []csapi.HealthCheck, want *csapi.HealthCheck) (drop []csapi.HealthCheck, create bool) {
	keep := false
	for _, h := range checks {
		if want != nil && !keep && len(checkDiffs(h, *want)) == 0 {
			keep = true
			continue
		}
		drop = append(drop, h)
	}
	return drop, want != nil && !keep && len(checks) == 0
}
