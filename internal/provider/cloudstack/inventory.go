package cloudstack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// The drift check sees every object of a Service's load balancer that a
// listing shared by all Services shows (lbcycle's Inventory): its rules
// (address, ports, algorithm, source list), and what opens their ports (the
// address's firewall rules, or the tier's ACL items tagged as the
// Service's), and each rule's machines, which CloudStack lists per rule:
// those are read on a budget (a provider.Rotation), ruleReadsPerPass rules
// a pass, those read longest ago, and more when there are so many rules that
// one would wait longer than provider.WatchedWithin (an hour): a machine
// removed from a rule behind our back is seen within the drift period up to
// ruleReadsPerPass rules, within an hour whatever their number, at a cost of
// at most ruleReadsPerPass reads a pass or the rules' number an hour; a rule
// whose machines this CCM just changed is read at the next pass. Each rule's
// health-check policies are read the same way.

var _ lbcycle.Inventory[lbState] = (*steps)(nil)

// ruleReadsPerPass is the rules whose machines one drift pass reads, below
// provider.WatchedWithin's need.
const ruleReadsPerPass = 20

// Objects are the Service's rules, their machines, health-check policies
// and openings (the address is its rules'), each keyed by every field the
// walk compares (fields.go).
func (s *steps) Objects(ctx context.Context, svc *v1.Service, lb csLB) ([]string, error) {
	st := lb.Obj
	var out []string
	for _, r := range st.rules {
		keys, err := s.ruleKeys(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
	}
	open, what, err := s.openings(ctx, svc, st)
	if err != nil {
		return nil, err
	}
	for _, o := range open {
		if !slices.ContainsFunc(st.rules, func(r csapi.Rule) bool { return opens(o, r) }) {
			continue // another Service's, on an address they share
		}
		out = append(out, fmt.Sprintf("%s/%s protocol=%s startport=%d endport=%d cidrlist=%s action=%s traffictype=%s", openingKind(what), o.ID,
			o.Protocol, o.Start, o.End, cidrText(o.CIDRs), o.Action, o.Traffic))
	}
	return out, nil
}

// openingKind is the kind, in its key, of an opening of what kind: a
// firewall rule or an ACL item.
func openingKind(what string) string {
	if strings.HasPrefix(what, "ACL") {
		return "acl-item"
	}
	return "firewall-rule"
}

// ruleKeys are a rule's key, its machines' and its health-check policies'
// (both read on the rotation's budget).
func (s *steps) ruleKeys(ctx context.Context, r csapi.Rule) ([]string, error) {
	out := []string{fmt.Sprintf("rule/%s protocol=%s publicip=%s publicport=%d privateport=%d algorithm=%s cidrlist=%s",
		r.ID, r.Protocol, r.IP, r.PublicPort, r.PrivatePort, r.Algorithm, cidrText(r.CIDRs))}
	machines, err := s.ruleMachines.Get(ctx, r.ID, s.machineKeys)
	if err != nil {
		return nil, fmt.Errorf("cannot list the machines of rule %s: %w", r.Name, err)
	}
	out = append(out, machines...)
	checks, err := s.ruleChecks.Get(ctx, r.ID, s.api.HealthChecks)
	if err != nil {
		return nil, fmt.Errorf("cannot list the health checks of rule %s: %w", r.Name, err)
	}
	for _, h := range checks {
		out = append(out, fmt.Sprintf("health-check/%s pingpath=%s intervaltime=%d responsetimeout=%d healthythreshold=%d unhealthythreshold=%d of %s",
			h.ID, h.Path, h.Interval, h.Timeout, h.Healthy, h.Unhealthy, r.ID))
	}
	return out, nil
}

// machineKeys are the member keys of the machines of rule id, as the
// rotation keeps them between its reads: many as one key (2,000 rules of
// 5,000 machines would be 10 million ids in memory).
func (s *steps) machineKeys(ctx context.Context, id string) ([]string, error) {
	machines, err := s.api.RuleMachines(ctx, id)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(machines))
	for i, m := range machines {
		keys[i] = fmt.Sprintf(lbcycle.MemberPrefix+"%s of %s", m, id)
	}
	return lbcycle.CompactMembers(keys), nil
}

// openings are what opens the ports of the Service's rules, from the shared
// listings: the firewall rules of its address (an isolated network), or the
// ACL items of its tier's list tagged as the Service's (a VPC), and what
// they are called; "" when its network has neither.
func (s *steps) openings(ctx context.Context, svc *v1.Service, st lbState) ([]csapi.Opening, string, error) {
	if len(st.rules) == 0 {
		return nil, "", nil
	}
	n, err := s.network(ctx, st.rules[0].Network)
	if err != nil {
		return nil, "", err
	}
	switch {
	case n.Firewall:
		fw, _, err := s.firewall.Get(ctx, "addr/"+st.addr.ID)
		return fw.openings, "firewall rule", err
	case n.ACL != "":
		items, managed, err := s.acls.items(ctx, s.api, n.ACL)
		if err != nil || !managed {
			return nil, "", err
		}
		var open []csapi.Opening
		for _, it := range items {
			if s.itemOurs(it, svc) {
				open = append(open, it)
			}
		}
		return open, "ACL item of the tier's list", nil
	}
	return nil, "", nil
}

// opens says whether the opening lets traffic in to the rule's port.
func opens(o csapi.Opening, r csapi.Rule) bool {
	return o.Protocol == l4(r.Protocol) && o.Start <= r.PublicPort && r.PublicPort <= o.End
}
