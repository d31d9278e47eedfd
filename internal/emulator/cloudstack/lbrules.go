package cloudstack

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Load balancer rules, as the peer drives them (../shared/facts/cloudstack-api.md
// §3) and cloudstack-go's recorded createLoadBalancerRule answer shows them:
// ports are JSON strings, the cidrlist is stored and answered space-separated
// (the server's generateCidrString), a rule's member machines are listed with
// listLoadBalancerRuleInstances. Create, update, delete, assign and remove are
// asynchronous.

type lbRule struct {
	seq                     int
	id, name, description   string
	algorithm, protocol     string
	publicPort, privatePort int
	publicIPID, networkID   string
	cidrs                   []string
	projectID, state        string
	members                 []string // machine ids
}

func (e *Emulator) ruleView(r *lbRule) map[string]any {
	ip := e.ips.At(r.publicIPID)
	m := map[string]any{
		"id": r.id, "name": r.name, "algorithm": r.algorithm, "protocol": r.protocol,
		"publicport": strconv.Itoa(r.publicPort), "privateport": strconv.Itoa(r.privatePort),
		"publicipid": r.publicIPID, "networkid": r.networkID, "cidrlist": strings.Join(r.cidrs, " "),
		"state": r.state, "account": e.fx.AccountName, "domain": "ROOT", "domainid": e.fx.DomainID,
		"zoneid": e.fx.ZoneID, "zonename": e.fx.ZoneName, "fordisplay": true, "tags": e.tagsOf(r.id),
	}
	if ip != nil {
		m["publicip"] = ip.address
	}
	if r.description != "" {
		m["description"] = r.description
	}
	if r.projectID != "" {
		m["projectid"], m["project"] = r.projectID, e.fx.ProjectName
	}
	return m
}

var (
	algorithms = []string{"roundrobin", "leastconn", "source"}
	protocols  = []string{"tcp", "udp", "tcp-proxy"}
)

// ruleOptions reads the settable parameters of a rule into r.
func ruleOptions(p url.Values, r *lbRule) *apiError {
	if v := p.Get("algorithm"); v != "" {
		if !slices.Contains(algorithms, v) {
			return &apiError{code: codeParamError, cs: csInvalidValue, text: fmt.Sprintf("Invalid algorithm: %s", v)}
		}
		r.algorithm = v
	}
	if v := p.Get("protocol"); v != "" {
		if !slices.Contains(protocols, strings.ToLower(v)) {
			return &apiError{code: codeParamError, cs: csInvalidValue, text: fmt.Sprintf("Invalid protocol %s; the load balancer supports %s", v, strings.Join(protocols, ", "))}
		}
		r.protocol = strings.ToLower(v)
	}
	if v := p.Get("name"); v != "" {
		r.name = v
	}
	if v, ok := p["description"]; ok {
		r.description = v[0]
	}
	if v, ok := p["cidrlist"]; ok {
		cidrs, aerr := splitCIDRs(v[0], true)
		if aerr != nil {
			return aerr
		}
		r.cidrs = cidrs
	}
	return nil
}

func port(p url.Values, name string) (int, *apiError) {
	n, err := strconv.Atoi(p.Get(name))
	if err != nil || n < 1 || n > 65535 {
		return 0, paramError("Unable to execute API command createloadbalancerrule due to invalid value. Invalid parameter %s value=%s due to incorrect long value format, or entity does not exist or due to incorrect parameter annotation for the field in api cmd class.", name, p.Get(name))
	}
	return n, nil
}

func (e *Emulator) createLoadBalancerRule(a *account, p url.Values, now time.Time) (any, *apiError) {
	for _, req := range []string{"algorithm", "name", "privateport", "publicport"} {
		if p.Get(req) == "" {
			return nil, paramError("Unable to execute API command createloadbalancerrule due to missing parameter %s", req)
		}
	}
	r := &lbRule{algorithm: "roundrobin", protocol: "tcp", cidrs: nil, state: "Add"}
	if err := ruleOptions(p, r); err != nil {
		return nil, err
	}
	var aerr *apiError
	if r.publicPort, aerr = port(p, "publicport"); aerr != nil {
		return nil, aerr
	}
	if r.privatePort, aerr = port(p, "privateport"); aerr != nil {
		return nil, aerr
	}
	ip, ok := e.ips.Get(p.Get("publicipid"))
	if !ok {
		return nil, invalidID("createLoadBalancerRule", p.Get("publicipid"))
	}
	if ip.state != "Allocated" {
		// LoadBalancingRulesManagerImpl.createPublicLoadBalancer: the address
		// must be readyToUse (IPAddressVO: state Allocated), while its
		// association is still being applied it is not.
		return nil, paramError("Unable to create load balancer rule, invalid IP address id specified")
	}
	// The rule is the address's owner's (the command has no projectid).
	r.publicIPID, r.projectID = ip.id, ip.projectID
	r.networkID = p.Get("networkid")
	if r.networkID == "" {
		r.networkID = ip.networkID
	}
	if r.networkID != e.fx.NetworkID {
		return nil, invalidID("createLoadBalancerRule", r.networkID)
	}
	// NetworkRuleConflictException: one rule per address, port and protocol
	// (tcp-proxy is TCP); TCP and UDP on one port coexist.
	for _, other := range e.rules.All() {
		if other.publicIPID == r.publicIPID && other.publicPort == r.publicPort && l4(other.protocol) == l4(r.protocol) {
			return nil, &apiError{code: 537, cs: 4360, text: fmt.Sprintf("The range specified, %d-%d, conflicts with rule %s which has %d-%d", r.publicPort, r.publicPort, other.id, other.publicPort, other.publicPort)}
		}
	}
	e.seq++
	r.seq, r.id = e.seq, e.newID()
	e.rules.Add(r.id, r)
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.loadbalancer.CreateLoadBalancerRuleCmd", "FirewallRule", r.id, now, func() (any, error) {
		view := e.ruleView(r)
		r.state = "Active"
		return map[string]any{"loadbalancer": view}, nil
	})
	return map[string]any{"id": r.id, "jobid": job}, nil
}

func l4(protocol string) string {
	if protocol == "tcp-proxy" {
		return "tcp"
	}
	return protocol
}

// listLoadBalancerRules: by id, name (exact), keyword (the server's LIKE
// %keyword% on the name or the description: what the peer finds its rules
// with), publicipid, networkid; paged.
func (e *Emulator) listLoadBalancerRules(_ *account, p url.Values, _ time.Time) (any, *apiError) {
	has := func(id string) bool { _, ok := e.rules.Get(id); return ok }
	return e.listed("listLoadBalancerRules", "loadbalancerrule", p, has, func() []any {
		id, kw, tagged := p.Get("id"), strings.ToLower(p.Get("keyword")), tagsParam(p)
		return views(e.rules.All(), func(r *lbRule) bool {
			return (id == "" || r.id == id) &&
				(p.Get("name") == "" || p.Get("name") == r.name) &&
				(kw == "" || strings.Contains(strings.ToLower(r.name), kw) || strings.Contains(strings.ToLower(r.description), kw)) &&
				(p.Get("publicipid") == "" || p.Get("publicipid") == r.publicIPID) &&
				(p.Get("networkid") == "" || p.Get("networkid") == r.networkID) &&
				e.tagged(r.id, tagged) &&
				(id != "" || e.inScope(p, r.projectID))
		}, e.ruleView)
	})
}

func (e *Emulator) rule(command string, p url.Values) (*lbRule, *apiError) {
	r, ok := e.rules.Get(p.Get("id"))
	if !ok {
		return nil, invalidID(command, p.Get("id"))
	}
	return r, nil
}

func (e *Emulator) updateLoadBalancerRule(a *account, p url.Values, now time.Time) (any, *apiError) {
	r, aerr := e.rule("updateLoadBalancerRule", p)
	if aerr != nil {
		return nil, aerr
	}
	next := *r
	if err := ruleOptions(p, &next); err != nil {
		return nil, err
	}
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.loadbalancer.UpdateLoadBalancerRuleCmd", "FirewallRule", r.id, now, func() (any, error) {
		r.algorithm, r.protocol, r.name, r.description, r.cidrs = next.algorithm, next.protocol, next.name, next.description, next.cidrs
		return map[string]any{"loadbalancer": e.ruleView(r)}, nil
	})
	return map[string]any{"jobid": job}, nil
}

func (e *Emulator) deleteLoadBalancerRule(a *account, p url.Values, now time.Time) (any, *apiError) {
	r, aerr := e.rule("deleteLoadBalancerRule", p)
	if aerr != nil {
		return nil, aerr
	}
	r.state = "Revoke"
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.loadbalancer.DeleteLoadBalancerRuleCmd", "FirewallRule", r.id, now, func() (any, error) {
		e.rules.Remove(r.id)
		e.forget(r.id)
		e.healthChecks = slices.DeleteFunc(e.healthChecks, func(h *healthCheck) bool { return h.ruleID == r.id })
		return map[string]any{"success": true}, nil
	})
	return map[string]any{"jobid": job}, nil
}

// machines reads virtualmachineids (comma-separated); every one must exist.
func (e *Emulator) machines(command string, p url.Values) ([]string, *apiError) {
	var ids []string
	for _, id := range strings.Split(p.Get("virtualmachineids"), ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		if v, ok := e.vms.Get(id); !ok || v.expunged {
			return nil, invalidID(command, id)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, paramError("Unable to execute API command %s due to missing parameter virtualmachineids", strings.ToLower(command))
	}
	return ids, nil
}

func (e *Emulator) assignToLoadBalancerRule(a *account, p url.Values, now time.Time) (any, *apiError) {
	return e.changeMembers(a, p, now, "assignToLoadBalancerRule", "org.apache.cloudstack.api.command.user.loadbalancer.AssignToLoadBalancerRuleCmd",
		func(r *lbRule, ids []string) error {
			// The job refuses the whole assignment when one machine is mapped
			// already (LoadBalancingRulesManagerImpl.assignToLoadBalancer:
			// InvalidParameterValueException "VM … with … is already mapped").
			has := setOf(r.members)
			for _, id := range ids {
				if has[id] {
					return fmt.Errorf("VM %s with %s is already mapped to load balancer", id, e.vms.At(id).ip)
				}
			}
			for _, id := range ids {
				if !has[id] {
					r.members, has[id] = append(r.members, id), true
				}
			}
			return nil
		})
}

// removeFromLoadBalancerRule revokes the machines' mappings; one that has
// none is passed over (removeFromLoadBalancerInternal lists a machine's
// mappings, an empty list for it).
func (e *Emulator) removeFromLoadBalancerRule(a *account, p url.Values, now time.Time) (any, *apiError) {
	return e.changeMembers(a, p, now, "removeFromLoadBalancerRule", "org.apache.cloudstack.api.command.user.loadbalancer.RemoveFromLoadBalancerRuleCmd",
		func(r *lbRule, ids []string) error {
			gone := setOf(ids)
			r.members = slices.DeleteFunc(r.members, func(id string) bool { return gone[id] })
			return nil
		})
}

// setOf is ids as a set: a rule of 5,000 machines is changed in one walk.
func setOf(ids []string) map[string]bool {
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// changeMembers answers a command (command, its class cmd) that changes the
// machines of the rule id by virtualmachineids: both checked at once, the
// change made by the command's job.
func (e *Emulator) changeMembers(a *account, p url.Values, now time.Time, command, cmd string, change func(r *lbRule, ids []string) error) (any, *apiError) {
	r, aerr := e.rule(command, p)
	if aerr != nil {
		return nil, aerr
	}
	ids, aerr := e.machines(command, p)
	if aerr != nil {
		return nil, aerr
	}
	job := e.startJob(a, cmd, "FirewallRule", r.id, now, func() (any, error) {
		if err := change(r, ids); err != nil {
			return nil, err
		}
		return map[string]any{"success": true}, nil
	})
	return map[string]any{"jobid": job}, nil
}

// listLoadBalancerRuleInstances lists a rule's machines (as machine objects).
func (e *Emulator) listLoadBalancerRuleInstances(a *account, p url.Values, _ time.Time) (any, *apiError) {
	r, aerr := e.rule("listLoadBalancerRuleInstances", p)
	if aerr != nil {
		return nil, aerr
	}
	page, size, perr := e.paging(p)
	if perr != nil {
		return nil, perr
	}
	var items []any
	for _, id := range r.members {
		if v := e.vms.At(id); v != nil && !v.expunged {
			items = append(items, e.vmView(a, v))
		}
	}
	return pageOf("loadbalancerruleinstance", items, page, size), nil
}
