package openstack

import (
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Security groups and their rules (Networking API reference, "Security
// groups", "Security group rules"): a new group has the two egress rules
// Neutron gives it; a group a port uses is not deleted; a rule is checked
// alone (before the lock) and against the group's others (under it).

// secGroupView is a security group with its rules, as Neutron shows it.
func (e *Emulator) secGroupView(g *secGroup) any {
	c := *g
	c.Rules = []any{}
	for _, ru := range e.sgRules.All() {
		if ru.SecurityGroupID == g.ID {
			c.Rules = append(c.Rules, viewCopy(ru))
		}
	}
	return &c
}

// addSGRule adds a rule of direction and ether type to every traffic (a
// new group's egress rules).
func (e *Emulator) addSGRule(sgID, direction, ether string, now time.Time) {
	ru := &sgRule{ID: e.newID(), SecurityGroupID: sgID, Direction: direction, EtherType: ether, neutronStd: e.std(now)}
	e.sgRules.Add(ru.ID, ru)
}

// secGroupReq is a security group create's body.
type secGroupReq struct {
	SG struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Stateful    *bool  `json:"stateful"`
	} `json:"security_group"`
}

// createSecGroup creates a group with egress to anywhere over IPv4 and IPv6.
func (e *Emulator) createSecGroup(_ *http.Request, b *secGroupReq, now time.Time) (core.Reply, *apiErr) {
	g := &secGroup{ID: e.newID(), Name: b.SG.Name, Description: b.SG.Description,
		Stateful: deref(b.SG.Stateful, true), neutronStd: e.std(now)}
	e.secGroups.Add(g.ID, g)
	e.addSGRule(g.ID, "egress", "IPv4", now)
	e.addSGRule(g.ID, "egress", "IPv6", now)
	return core.Created(keyed("security_group", e.secGroupView(g))), nil
}

// deleteSecGroup deletes a group and its rules, unless a port uses it.
func (e *Emulator) deleteSecGroup(g *secGroup, _ *http.Request, _ *struct{}, _ time.Time) (core.Reply, *apiErr) {
	id := g.ID
	for _, p := range e.ports.All() {
		if has(p.SecurityGroups, id) {
			return core.Reply{}, errf(409, "SecurityGroupInUse", "Security Group %s in use.", id)
		}
	}
	for _, ru := range e.sgRules.All() {
		if ru.SecurityGroupID == id {
			e.sgRules.Remove(ru.ID)
		}
	}
	e.secGroups.Remove(id)
	return core.NoContent(), nil
}

// decodeTags reads {"tags": [...]}: each tag 1 to 255 characters.
func decodeTags(r *http.Request, tags *[]string) *apiErr {
	var b struct {
		Tags *[]string `json:"tags"`
	}
	if err := decodeJSON(r, &b); err != nil || b.Tags == nil {
		return badRequest("Invalid input for tags. Reason: a list of tags is required.")
	}
	for _, t := range *b.Tags {
		if t == "" || len(t) > 255 {
			return badRequestf("Invalid input for tags. Reason: '%s' is not a valid tag (1 to 255 characters).", t)
		}
	}
	*tags = *b.Tags
	return nil
}

// replaceSecGroupTags is the tag extension's "replace all tags" (PUT
// /v2.0/{resource_type}/{resource_id}/tags, Networking API reference, "Tag
// extension"): 200 with the new list, each tag at most 255 characters; the
// resource's revision goes up.
func (e *Emulator) replaceSecGroupTags(g *secGroup, _ *http.Request, given *[]string, now time.Time) (core.Reply, *apiErr) {
	tags := slices.Compact(slices.Sorted(slices.Values(*given)))
	g.Tags = tags
	g.touch(now)
	return core.OK(map[string]any{"tags": tags}), nil
}

// revisionMatches applies an "If-Match: revision_number=N" header (Networking
// API reference, "Revisions": a compare-and-swap on the resource's revision):
// a mismatch is 412 RevisionNumberConstraintFailed and nothing changes.
func revisionMatches(r *http.Request, current int) *apiErr {
	for _, v := range r.Header.Values("If-Match") {
		want, ok := strings.CutPrefix(strings.TrimSpace(v), "revision_number=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(want)
		if err != nil {
			return badRequestf("Invalid If-Match header %q", v)
		}
		if n != current {
			return errf(http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
				"Constrained to %d, but current revision is %d", n, current)
		}
	}
	return nil
}

// sgRules is a rule create: one rule ({"security_group_rule": …}) or
// several at once ({"security_group_rules": […]}, Neutron's bulk create:
// all or none).
type sgRules struct {
	in   []sgRule
	bulk bool
}

// decodeSGRules reads one rule or a bulk of them, each checked alone.
func decodeSGRules(r *http.Request, c *sgRules) *apiErr {
	var b struct {
		Rule  *sgRule  `json:"security_group_rule"`
		Rules []sgRule `json:"security_group_rules"`
	}
	if aerr := neutronBody(r, &b); aerr != nil {
		return aerr
	}
	c.bulk, c.in = b.Rule == nil, b.Rules
	if !c.bulk {
		c.in = []sgRule{*b.Rule}
	}
	if len(c.in) == 0 {
		return badRequest("Resource body required")
	}
	for i := range c.in {
		if aerr := checkSGRule(&c.in[i]); aerr != nil {
			return aerr
		}
	}
	return nil
}

// checkSGRule checks a rule alone (its ethertype defaulted to IPv4):
// direction, ethertype, port range, and a remote prefix of the ethertype.
func checkSGRule(ru *sgRule) *apiErr {
	if ru.EtherType == "" {
		ru.EtherType = "IPv4"
	}
	if ru.Direction != "ingress" && ru.Direction != "egress" {
		return errf(400, "InvalidInput", "Invalid input for direction. Reason: '%s' is not in ['ingress', 'egress'].", ru.Direction)
	}
	if ru.EtherType != "IPv4" && ru.EtherType != "IPv6" {
		return errf(400, "SecurityGroupRuleInvalidEtherType", "Security group rule for ethertype '%s' not supported. Allowed values are ['IPv4', 'IPv6'].", ru.EtherType)
	}
	if ru.PortRangeMin != nil && ru.PortRangeMax != nil && *ru.PortRangeMin > *ru.PortRangeMax {
		return errf(400, "SecurityGroupInvalidPortRange", "For TCP/UDP protocols, port_range_min must be <= port_range_max")
	}
	if ru.RemoteIPPrefix == nil {
		return nil
	}
	p, err := netip.ParsePrefix(*ru.RemoteIPPrefix)
	if err != nil {
		return badRequestf("Invalid input for remote_ip_prefix. Reason: '%s' is not a valid IP prefix.", *ru.RemoteIPPrefix)
	}
	if (ru.EtherType == "IPv4") != p.Addr().Is4() {
		return errf(400, "SecurityGroupRuleParameterConflict", "Conflicting value ethertype %s for CIDR %s", ru.EtherType, *ru.RemoteIPPrefix)
	}
	return nil
}

// createSGRule stores the rules once none repeats another, stored or in
// the same request.
func (e *Emulator) createSGRule(_ *http.Request, c *sgRules, now time.Time) (core.Reply, *apiErr) {
	for i := range c.in {
		if aerr := e.checkRuleIsNew(&c.in[i], c.in[:i]); aerr != nil {
			return core.Reply{}, aerr
		}
	}
	out := make([]any, 0, len(c.in))
	for i := range c.in {
		nr := c.in[i]
		nr.ID = e.newID()
		nr.neutronStd = e.std(now)
		e.sgRules.Add(nr.ID, &nr)
		if g, ok := e.secGroups.Get(nr.SecurityGroupID); ok {
			g.touch(now)
		}
		out = append(out, viewCopy(&nr))
	}
	if c.bulk {
		return core.Created(map[string]any{"security_group_rules": out}), nil
	}
	return core.Created(keyed("security_group_rule", out[0])), nil
}

// checkRuleIsNew checks that ru's group exists and that ru repeats no
// stored rule of it (409) and none of before, the request's earlier ones (400).
func (e *Emulator) checkRuleIsNew(ru *sgRule, before []sgRule) *apiErr {
	if _, aerr := lookup(e.secGroups, ru.SecurityGroupID, secGroupMissing); aerr != nil {
		return aerr
	}
	for _, old := range e.sgRules.All() {
		if old.SecurityGroupID == ru.SecurityGroupID && sameRule(old, ru) {
			return errf(409, "SecurityGroupRuleExists", "Security group rule already exists. Rule id is %s.", old.ID)
		}
	}
	for _, other := range before {
		if other.SecurityGroupID == ru.SecurityGroupID && sameRule(&other, ru) {
			return badRequest("Duplicate Security Group Rule in POST.")
		}
	}
	return nil
}

// sameRule says whether two rules match the same traffic, as Neutron
// compares them to refuse a duplicate.
func sameRule(a, b *sgRule) bool {
	for _, k := range []string{"direction", "ethertype", "protocol", "port_range_min", "port_range_max", "remote_ip_prefix", "remote_group_id"} {
		va, _ := field(a, k)
		vb, _ := field(b, k)
		if va != vb {
			return false
		}
	}
	return true
}

// deleteSGRule deletes a rule.
func (e *Emulator) deleteSGRule(r *http.Request, _ *struct{}, _ time.Time) (core.Reply, *apiErr) {
	id := r.PathValue("id")
	if !e.sgRules.Remove(id) {
		return core.Reply{}, sgRuleMissing(id)
	}
	return core.NoContent(), nil
}
