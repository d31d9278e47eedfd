package cloudstack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// openingKey is a protocol and port.
func openingKey(proto string, port int) string { return fmt.Sprintf("%s/%d", l4(proto), port) }

// openings are the Service's current openings: the firewall rules on its
// address (an isolated network), or the ACL items of the tier's list tagged
// as the Service's (a VPC). enforced: the network lets only what they open
// in (false: no firewall, or the server's own default list, left alone).
type openings struct {
	firewall, enforced bool
	acl, list          string // the tier's ACL list, by id and name
	reason             string // the mark of the ACL items made (itemReason)
	current            []csapi.Opening
	// own: the address is the Service's own, so every firewall rule on it
	// is judged, not only those of the Service's ports.
	own bool
}

// readOpenings reads the Service's openings (none to read on an address
// this process has just associated).
func (s *steps) readOpenings(ctx context.Context, svc *v1.Service, st lbState, n csapi.Network) (openings, error) {
	fresh, _ := s.freshAddress(svc)
	if n.Firewall {
		op := openings{firewall: true, enforced: true, own: st.addrRead && s.owns(st.addr, svc)}
		if st.addr.ID == "" || fresh != st.addr.ID {
			var err error
			if op.own, err = s.ownAddress(ctx, svc, st); err != nil {
				return openings{}, err
			}
			if op.current, err = s.api.FirewallRules(ctx, st.addr.ID); err != nil {
				return openings{}, err
			}
		}
		return op, nil
	}
	if n.ACL == "" {
		return openings{}, nil
	}
	list, err := s.api.ACLListName(ctx, n.ACL)
	if err != nil {
		return openings{}, err
	}
	op := openings{acl: n.ACL, list: list, reason: s.itemReason(svc)}
	if list == "default_allow" || list == "default_deny" {
		klog.FromContext(ctx).V(2).Info("The tier's ACL list is the server's own; it is left as it is", "service", klog.KObj(svc), "list", list)
		return op, nil
	}
	items, err := s.api.ACLItems(ctx, n.ACL)
	if err != nil {
		return openings{}, err
	}
	for _, it := range items {
		if s.itemOurs(it, svc) {
			op.current = append(op.current, it)
		}
	}
	op.enforced = true
	return op, nil
}

// ownAddress says whether the Service's address is its own (its tags),
// read when the state took it from the rules: every firewall rule on an
// address of its own is judged (one that opens a port of the Service's
// but not as asked, a range, another protocol, is then not left beside
// the one made).
func (s *steps) ownAddress(ctx context.Context, svc *v1.Service, st lbState) (bool, error) {
	if st.addrRead || st.addr.ID == "" {
		return st.addrRead && s.owns(st.addr, svc), nil
	}
	a, found, err := s.api.Address(ctx, st.addr.ID)
	return found && s.owns(a, svc), err
}

// openingPlan is which current openings stay, and what each port's opening
// lets in once the changes are made.
type openingPlan struct {
	// alone: the port's opening alone decides what else reaches it, so a
	// rule's cidrlist is judged with it: a firewall rule on the address. An
	// ACL list is not: another item (the peer's, untagged, to everyone) may
	// let in more, so there the cidrlist must hold the sources itself.
	alone bool
	keep  map[string]bool     // current openings kept, by id
	after map[string][]string // by openingKey
}

// plan judges the current openings by what they let in together with the
// rule of their port (current, by openingKey), not by their lists alone: the
// peer puts the source ranges in the firewall and everyone in the rule's
// cidrlist, or the source-cidrs annotation in the rule and everyone in the
// firewall; we put what is asked in both. Either lets in the same sources, so
// neither is rebuilt.
func (op openings) plan(spec lbSpec, current map[string]csapi.Rule) openingPlan {
	pl := openingPlan{alone: op.firewall && op.enforced, keep: map[string]bool{}, after: map[string][]string{}}
	want := map[string]bool{}
	for _, p := range spec.ports {
		want[openingKey(p.proto, p.port)] = true
	}
	goal, simple := letIn(spec.ruleCIDRs, spec.sources)
	for _, o := range op.current {
		key := openingKey(o.Protocol, o.Start)
		if o.Start != o.End || !want[key] || pl.after[key] != nil || !asMade(o) {
			continue
		}
		r, ruled := current[key]
		together, one := letIn(r.CIDRs, o.CIDRs)
		if sameSet(o.CIDRs, spec.sources) ||
			(pl.alone && ruled && simple && one && sameSet(r.CIDRs, spec.ruleCIDRs) && sameSet(together, goal)) {
			pl.keep[o.ID], pl.after[key] = true, o.CIDRs
		}
	}
	for key := range want {
		if pl.after[key] == nil {
			pl.after[key] = spec.sources
			if pl.alone && op.own {
				// The peer's shape on an address of the Service's own:
				// with the rule's cidrlist, it lets in the same.
				pl.after[key] = spec.peerSources
			}
		}
	}
	return pl
}

// ruleServes says whether a rule's cidrlist, with what its port's opening
// will let in, lets in what the Service asks.
func (pl openingPlan) ruleServes(r csapi.Rule, spec lbSpec) bool {
	if sameSet(r.CIDRs, spec.ruleCIDRs) {
		return true
	}
	if !pl.alone {
		return false // the cidrlist decides
	}
	goal, simple := letIn(spec.ruleCIDRs, spec.sources)
	together, one := letIn(r.CIDRs, pl.after[openingKey(r.Protocol, r.PublicPort)])
	return simple && one && sameSet(together, goal)
}

// letIn is what a rule's cidrlist and an opening let in together, when that
// is one of them: one lets everyone in, or both are the same set. one is
// false for two different lists (their intersection is not computed).
func letIn(rule, opening []string) (sources []string, one bool) {
	switch {
	case sameSet(rule, everyone):
		return opening, true
	case sameSet(opening, everyone), sameSet(rule, opening):
		return rule, true
	}
	return nil, false
}

// convergeOpenings lets the Service's sources in to its ports as planned:
// the openings not kept go (on an address not the Service's own, only those
// of its ports), the missing ones are made (ACL items tagged as the
// Service's). It starts the changes and says how many.
func (s *steps) convergeOpenings(ctx context.Context, svc *v1.Service, spec lbSpec, st lbState, op openings, pl openingPlan) (int, error) {
	s.fresh.set(svc.UID, "")
	drop, open := op.changes(spec, pl)
	changes := 0
	for _, o := range drop {
		var job string
		var err error
		if op.firewall {
			job, err = s.api.DeleteFirewallRule(ctx, o.ID)
		} else {
			job, err = s.api.DeleteACLItem(ctx, o.ID)
		}
		if err := s.deleting(svc, "opening "+o.ID, job, err); err != nil {
			return 0, err
		}
		changes++
	}
	created := op.untagged(svc, pl)
	changes += len(created)
	for _, o := range open {
		key := lostOpening(svc, o)
		if _, waiting := s.unanswered.Waiting(key); waiting {
			changes++ // made, its answer lost: looked for until it appears
			continue
		}
		var id, job string
		var err error
		if op.firewall {
			job, err = s.api.CreateFirewallRule(ctx, st.addr.ID, o)
		} else {
			id, job, err = s.api.CreateACLItem(ctx, op.acl, o)
			created = append(created, id)
		}
		if outcome.MayHaveActed(err) {
			s.unanswered.Lost(key)
		}
		if err != nil {
			return 0, outcome.RefusedProblem(outcome.ReasonCloudRefused, fmt.Errorf("cannot open port %d/%s%s: %w", o.Start, o.Protocol, inList(op.list), err))
		}
		s.jobs.add(svc.UID, job, fmt.Sprintf("opening port %d/%s", o.Start, o.Protocol))
		changes++
	}
	if len(created) > 0 {
		job, err := s.api.Tag(ctx, "NetworkACL", created, s.newTags(svc))
		if err != nil {
			return 0, fmt.Errorf("cannot tag ACL items %s: %w", strings.Join(created, ", "), err)
		}
		s.jobs.add(svc.UID, job, "tagging ACL items")
	}
	return changes, nil
}

// untagged are the ids of the ACL items kept that are the Service's by
// their reason alone: made, but their tags not put (the answer of their
// createNetworkACL or createTags lost). They get them with the new ones.
func (op openings) untagged(svc *v1.Service, pl openingPlan) []string {
	var out []string
	for _, o := range op.current {
		if !op.firewall && pl.keep[o.ID] && o.Tags[tagService] != string(svc.UID) {
			out = append(out, o.ID)
		}
	}
	return out
}

// lostOpening is what remembers (provider.Unanswered) the creation of an
// opening of the Service whose answer was lost: it is not made again while
// it may yet appear (a late createFirewallRule or createNetworkACL).
func lostOpening(svc *v1.Service, o csapi.Opening) string {
	return "opening/" + string(svc.UID) + "/" + openingKey(o.Protocol, o.Start)
}

// changes are the openings convergeOpenings deletes (those not kept; on an
// address not the Service's own, only those of its ports) and those it
// makes (one for each port none kept opens), as planned; none where the
// network does not enforce them.
func (op openings) changes(spec lbSpec, pl openingPlan) (drop, open []csapi.Opening) {
	if !op.enforced {
		return nil, nil
	}
	matched := map[string]bool{}
	for _, o := range op.current {
		key := openingKey(o.Protocol, o.Start)
		if pl.keep[o.ID] {
			matched[key] = true
			continue
		}
		if _, wanted := pl.after[key]; op.firewall && !wanted && !op.own {
			continue // not ours to judge: the address is not the Service's own
		}
		drop = append(drop, o)
	}
	for _, p := range spec.ports {
		key := openingKey(p.proto, p.port)
		if matched[key] {
			continue
		}
		matched[key] = true
		open = append(open, csapi.Opening{Protocol: l4(p.proto), Start: p.port, End: p.port, CIDRs: pl.after[key], Reason: op.reason})
	}
	return drop, open
}

// inList names an ACL list in a message ("" for a firewall).
func inList(list string) string {
	if list == "" {
		return ""
	}
	return " in ACL list " + list
}

// sameSet says whether two lists of CIDRs are the same set (none is everyone,
// as the server takes it).
func sameSet(a, b []string) bool {
	if len(a) == 0 {
		a = everyone
	}
	if len(b) == 0 {
		b = everyone
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// closeOpenings deletes the openings of the Service's rules: on its address's
// firewall, the rules for their ports (all of them on an address of its own);
// in a VPC, the ACL items tagged as the Service's.
func (s *steps) closeOpenings(ctx context.Context, svc *v1.Service, st lbState) error {
	n, err := s.network(ctx, st.rules[0].Network)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	if n.Firewall {
		return s.closeFirewall(ctx, svc, st)
	}
	if n.ACL == "" {
		return nil
	}
	if err := s.closeACLItems(ctx, svc, n.ACL); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Closed the openings of the Service's rules", "service", klog.KObj(svc))
	return nil
}

// closeFirewall deletes the firewall rules of the Service's ports on its
// address (every one on an address of its own), but those other Services'
// rules on the address still need.
func (s *steps) closeFirewall(ctx context.Context, svc *v1.Service, st lbState) error {
	addr := st.addr
	if a, found, err := s.api.Address(ctx, addr.ID); err != nil {
		return err
	} else if found {
		addr = a
	}
	own := s.addrOwnedBy(addr, svc)
	ports := map[string]bool{}
	for _, r := range st.rules {
		ports[openingKey(r.Protocol, r.PublicPort)] = true
	}
	others, err := s.othersOn(ctx, svc, addr, own)
	if err != nil {
		return err
	}
	current, err := s.api.FirewallRules(ctx, addr.ID)
	if err != nil {
		return err
	}
	for _, f := range current {
		if !own && (f.Start != f.End || !ports[openingKey(f.Protocol, f.Start)]) {
			continue
		}
		if slices.ContainsFunc(others, func(r csapi.Rule) bool {
			return l4(r.Protocol) == l4(f.Protocol) && f.Start <= r.PublicPort && r.PublicPort <= f.End
		}) {
			continue
		}
		job, err := s.api.DeleteFirewallRule(ctx, f.ID)
		if err := s.deleting(svc, "firewall rule "+f.ID, job, err); err != nil {
			return err
		}
	}
	return nil
}

// othersOn are the rules of other Services on the Service's own address (a
// shared loadBalancerIP): they keep the openings of their ports. On an
// address not its own only its ports' openings go, none is read.
func (s *steps) othersOn(ctx context.Context, svc *v1.Service, addr csapi.Address, own bool) ([]csapi.Rule, error) {
	if !own {
		return nil, nil
	}
	on, err := s.api.RulesOn(ctx, addr.ID)
	if err != nil {
		return nil, err
	}
	var others []csapi.Rule
	for _, r := range on {
		if lbNameOf(r.Name) != lbName(svc) {
			others = append(others, r)
		}
	}
	return others, nil
}

// closeACLItems deletes the items of ACL list acl tagged as the Service's.
func (s *steps) closeACLItems(ctx context.Context, svc *v1.Service, acl string) error {
	items, err := s.api.ACLItems(ctx, acl)
	if err != nil {
		return err
	}
	for _, it := range items {
		if !s.itemOurs(it, svc) || (it.Tags[tagCluster] != s.cluster.Get() && it.Reason != s.itemReason(svc)) {
			continue
		}
		job, err := s.api.DeleteACLItem(ctx, it.ID)
		if err := s.deleting(svc, "ACL item "+it.ID, job, err); err != nil {
			return err
		}
	}
	return nil
}
