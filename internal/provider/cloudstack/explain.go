package cloudstack

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
	"github.com/overcast-ccm/overcast/internal/providerid"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// `overcast explain` on CloudStack: a Service's public address, its rules
// (a listener and its machines each), their health checks and the openings
// of their ports (the address's firewall rules, or the tier's ACL items),
// read as Find reads them but for the writes (an untagged address is
// never taken up here), and the differences Converge would act on, by its
// own comparisons (ruleWrong, openings.changes, memberChanges,
// checkChanges).

var _ provider.Explainer = (*Cloud)(nil)

// ExplainService says what CloudStack holds for the Service.
func (c *Cloud) ExplainService(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (provider.ServiceExplanation, error) {
	s := c.lb
	e, spec, err := provider.BeginExplanation(ctx, c.name, annotation.CloudStackConverged, c.Cycle, s, clusterName, svc, nodes)
	if err != nil {
		return e, err
	}
	st, found, err := s.read(ctx, svc, false)
	if err != nil || !found {
		if _, ok := associatingSince(svc); ok && err == nil {
			e.Note("an address is being associated for the Service (annotation %s): the next pass takes it up", annotation.CloudStackAssociating)
		}
		return e, err
	}
	e.Found = true
	lb := asLB(st)
	full, err := s.describe(ctx, &e, svc, st, lb, nodes)
	if err != nil {
		return e, err
	}
	switch {
	case e.SpecProblem != "":
	case lb.State == lbcycle.Busy:
		e.Note("the cloud is working on the load balancer (%s): the next pass waits for it, then compares", lb.Status)
	default:
		e.DriftChecked = true
		err = s.explainDrift(ctx, &e, svc, spec, st, full)
	}
	return e, err
}

// explained is what describe read that the drift is worked out from too.
type explained struct {
	addr     csapi.Address // the address as read itself (its state and tags)
	machines map[string][]string
	checks   map[string][]csapi.HealthCheck
	network  csapi.Network
	nodeOf   map[string]string // the Nodes by machine id
}

// describe fills in the load balancer, its address, its rules with their
// machines and health checks, and the openings of their ports.
func (s *steps) describe(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, st lbState, lb csLB, nodes []*v1.Node) (explained, error) {
	x := explained{addr: st.addr, machines: map[string][]string{}, checks: map[string][]csapi.HealthCheck{}}
	if a, found, err := s.api.Address(ctx, st.addr.ID); err != nil {
		return x, err
	} else if found {
		x.addr = a
	}
	e.LoadBalancer = &provider.LoadBalancer{ID: st.addr.ID, Name: lbName(svc), State: lb.Status,
		Details: provider.Details{"address state": x.addr.State, "address owner": s.addressMark(x.addr, svc)}}
	e.Addresses = append(e.Addresses, provider.Address{IP: st.addr.IP, Kind: "public", ID: st.addr.ID})
	byMachine := machineNodes(nodes)
	x.nodeOf = byMachine
	for _, r := range st.rules {
		e.Listeners = append(e.Listeners, provider.Listener{ID: r.ID, Name: r.Name, Protocol: r.Protocol, Port: r.PublicPort, Pool: r.Name,
			Details: provider.Details{"node port": strconv.Itoa(r.PrivatePort), "state": r.State, "cidrlist": strings.Join(r.CIDRs, ",")}})
		machines, err := s.api.RuleMachines(ctx, r.ID)
		if err != nil {
			return x, fmt.Errorf("cannot list the machines of rule %s: %w", r.Name, err)
		}
		checks, err := s.api.HealthChecks(ctx, r.ID)
		if err != nil {
			return x, fmt.Errorf("cannot list the health checks of rule %s: %w", r.Name, err)
		}
		x.machines[r.ID], x.checks[r.ID] = machines, checks
		pool := provider.Pool{ID: r.ID, Name: r.Name, Protocol: r.Protocol, Policy: r.Algorithm, Health: describeChecks(checks), Members: []provider.Member{}}
		for _, m := range machines {
			mb := provider.Member{ID: m, Port: r.PrivatePort, Node: byMachine[m]}
			if vm, found, err := s.machines.Get(ctx, "id/"+m); err == nil && found {
				mb.Address = vm.DefaultNIC().IP
			}
			pool.Members = append(pool.Members, mb)
		}
		e.Pools = append(e.Pools, pool)
	}
	return x, s.describeOpenings(ctx, e, svc, st, &x)
}

// describeOpenings fills in what opens the rules' ports: the firewall rules
// of the address (an isolated network), or the items of the tier's ACL
// list that are the Service's or open one of its ports (a VPC).
func (s *steps) describeOpenings(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, st lbState, x *explained) error {
	if len(st.rules) == 0 {
		return nil
	}
	n, err := s.network(ctx, st.rules[0].Network)
	if err != nil {
		return err
	}
	x.network = n
	switch {
	case n.Firewall:
		fw, err := s.api.FirewallRules(ctx, st.addr.ID)
		if err != nil {
			return err
		}
		for _, o := range fw {
			e.SecurityRules = append(e.SecurityRules, openingRule("firewall rule", "address "+st.addr.IP, o, s.addressMark(x.addr, svc)))
		}
	case n.ACL != "":
		list, err := s.api.ACLListName(ctx, n.ACL)
		if err != nil || list == "default_allow" || list == "default_deny" {
			if err == nil {
				e.Note("the tier's ACL list is the server's own %s: it is left as it is", list)
			}
			return err
		}
		items, err := s.api.ACLItems(ctx, n.ACL)
		if err != nil {
			return err
		}
		for _, it := range items {
			mark := s.itemMark(it, svc)
			if mark == provider.MarkThisCluster || slices.ContainsFunc(st.rules, func(r csapi.Rule) bool { return opens(it, r) }) {
				e.SecurityRules = append(e.SecurityRules, openingRule("ACL item", "ACL list "+list, it, mark))
			}
		}
	}
	e.SortRules()
	return nil
}

// openingRule is a firewall rule or an ACL item as a security rule.
func openingRule(kind, in string, o csapi.Opening, mark string) provider.SecurityRule {
	dir := "ingress"
	if o.Traffic != "" {
		dir = strings.ToLower(o.Traffic)
	}
	r := provider.SecurityRule{Kind: kind, In: in, ID: o.ID, Direction: dir, Protocol: o.Protocol,
		Ports: fmt.Sprintf("%d-%d", o.Start, o.End), Peer: strings.Join(o.CIDRs, ","), Mark: mark}
	if o.Start == o.End {
		r.Ports = strconv.Itoa(o.Start)
	}
	if o.Action != "" && !strings.EqualFold(o.Action, "allow") {
		r.Protocol += " (" + strings.ToLower(o.Action) + ")"
	}
	return r
}

// addressMark is whose the address's tags say it is (its firewall rules
// are its own).
func (s *steps) addressMark(a csapi.Address, svc *v1.Service) string {
	return s.markOf(a.Tags, svc)
}

// itemMark is whose an ACL item's tags say it is.
func (s *steps) itemMark(o csapi.Opening, svc *v1.Service) string { return s.markOf(o.Tags, svc) }

func (s *steps) markOf(tags map[string]string, svc *v1.Service) string {
	switch {
	case tags[tagCluster] == "" && tags[tagService] == "":
		return provider.MarkNone
	case tags[tagCluster] != s.cluster.Get():
		return provider.MarkOtherCluster
	case tags[tagService] != string(svc.UID):
		return provider.MarkOtherService
	}
	return provider.MarkThisCluster
}

// describeChecks says a rule's health checks.
func describeChecks(checks []csapi.HealthCheck) string {
	var out []string
	for _, h := range checks {
		out = append(out, fmt.Sprintf("HTTP %s every %ds", h.Path, h.Interval))
	}
	if len(out) == 0 {
		return "haproxy's TCP check"
	}
	return strings.Join(out, "; ")
}

// machineNodes are the Nodes by the machine id of their providerID.
func machineNodes(nodes []*v1.Node) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		if id, err := providerid.ParseCloudStack(n.Spec.ProviderID); err == nil && id != "" {
			out[id] = n.Name
		}
	}
	return out
}

// explainDrift is what Converge would change, found by its comparisons:
// the address moved, the peer's address to adopt, rules not as asked or
// missing, openings, algorithms, machines and health checks.
func (s *steps) explainDrift(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, spec lbSpec, st lbState, x explained) error {
	if spec.ip != "" && st.addr.IP != spec.ip {
		e.Change(provider.ActionChange, "address "+st.addr.IP, "the Service asks for %s: the rules move there", spec.ip)
		return nil
	}
	if !st.addrRead && spec.ip == "" && len(x.addr.Tags) == 0 {
		e.Change(provider.ActionChange, "address "+st.addr.IP, "untagged (the peer's): tagged as the Service's, to go with it")
	}
	n, err := s.network(ctx, spec.network)
	if err != nil {
		return err
	}
	op, err := s.readOpenings(ctx, svc, st, n)
	if err != nil {
		return err
	}
	want := rulesWanted(spec)
	plan := op.plan(spec, rulesByOpening(st, want))
	have := map[string]csapi.Rule{}
	for _, r := range st.rules {
		if why := ruleWrong(r, spec, st, want, have, plan); why != "" {
			e.Change(provider.ActionDelete, "rule "+r.Name, "%s: deleted, and made anew if a port asks for it", why)
			continue
		}
		have[r.Name] = r
	}
	for _, p := range spec.ports {
		if _, ok := have[p.ruleName(spec.name)]; !ok {
			e.Change(provider.ActionCreate, "rule "+p.ruleName(spec.name), "%s %d to node port %d, with %d machine(s)", p.proto, p.port, p.nodePort, len(spec.members))
		}
	}
	explainOpenings(e, spec, op, plan)
	for _, p := range spec.ports {
		if r, ok := have[p.ruleName(spec.name)]; ok {
			ruleDrift(e, spec, r, x)
		}
	}
	return nil
}

// explainOpenings is what convergeOpenings would change: an opening not as
// asked is named with the fields that differ from the one made in its
// place (of its port and protocol, else of its port).
func explainOpenings(e *provider.ServiceExplanation, spec lbSpec, op openings, plan openingPlan) {
	drop, open := op.changes(spec, plan)
	kind := map[bool]string{true: "firewall rule", false: "ACL item"}[op.firewall]
	for _, o := range drop {
		i := slices.IndexFunc(open, func(n csapi.Opening) bool { return n.Protocol == o.Protocol && o.Start <= n.Start && n.Start <= o.End })
		if i < 0 {
			i = slices.IndexFunc(open, func(n csapi.Opening) bool { return n.Start == o.Start })
		}
		if i >= 0 {
			e.Change(provider.ActionDelete, kind+" "+o.ID, "%s: deleted, and made anew", describeDiffs(openingDiffs(o, open[i])))
			continue
		}
		e.Change(provider.ActionDelete, kind+" "+o.ID, "opens %s %d-%d to %s, not as the Service asks", o.Protocol, o.Start, o.End, cidrText(o.CIDRs))
	}
	for _, o := range open {
		e.Change(provider.ActionCreate, fmt.Sprintf("%s for %s %d", kind, o.Protocol, o.Start), "to let in %s", cidrText(o.CIDRs))
	}
}

// ruleDrift is what convergeRule would change of a rule that stays: its
// algorithm, its machines, its health checks.
func ruleDrift(e *provider.ServiceExplanation, spec lbSpec, r csapi.Rule, x explained) {
	if r.Algorithm != spec.algorithm {
		e.Change(provider.ActionChange, "rule "+r.Name, "%s", describeDiffs([]fieldDiff{{"algorithm", r.Algorithm, spec.algorithm}}))
	}
	add, remove := memberChanges(x.machines[r.ID], spec.members)
	for _, m := range add {
		e.Change(provider.ActionCreate, "member "+m+" of rule "+r.Name, "virtualmachineids lack %s, the machine of Node %s", m, x.nodeOf[m])
	}
	for _, m := range remove {
		e.Change(provider.ActionDelete, "member "+m+" of rule "+r.Name, "virtualmachineids hold %s, not an eligible Node's machine", m)
	}
	drop, create := checkChanges(x.checks[r.ID], spec.check)
	for _, h := range drop {
		why := "HTTP " + h.Path + ", which the Service does not ask"
		if spec.check != nil {
			why = "a second policy of the rule"
			if ds := checkDiffs(h, *spec.check); len(ds) > 0 {
				why = describeDiffs(ds) + ": deleted, and made anew"
			}
		}
		e.Change(provider.ActionDelete, "health check "+h.ID+" of rule "+r.Name, "%s", why)
	}
	if create {
		e.Change(provider.ActionCreate, "health check of rule "+r.Name, "HTTP %s every %ds", spec.check.Path, spec.check.Interval)
	}
}

// ExplainNode says what CloudStack holds for the Node.
func (c *Cloud) ExplainNode(ctx context.Context, node *v1.Node, nodes []*v1.Node) (provider.NodeExplanation, error) {
	m, found, err := c.find(ctx, node, snapshot.MaxAge)
	md := provider.LookedUp(m, found, err, func(m csapi.Machine) (*provider.Machine, *cloudprovider.InstanceMetadata) {
		return &provider.Machine{ID: m.ID, Name: m.Name, State: m.State, Type: m.Offering, Zone: m.Zone,
			Region: c.cfg.RegionOf(m.Zone), Addresses: provider.NodeAddresses(addresses(m))}, c.metadataOf(m)
	})
	return provider.ExplainedNode(ctx, c.name, node, nodes, md, c.InstanceExists)
}
