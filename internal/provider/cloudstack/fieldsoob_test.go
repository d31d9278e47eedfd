package cloudstack

import (
	"fmt"
	"slices"
	"strings"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// fieldChange is a field someone else changes on the emulator, through
// its API: on a VPC tier (an ACL item's) or an isolated network; has is the
// value it then has and asks the one the Service asks, as explain must name
// them.
type fieldChange struct {
	vpc       bool
	change    func(o *outOfBand) error
	has, asks string
}

// fieldChanges are the fields the drift check, the walk and explain compare,
// by object and wire name (of the port tcp/80 of fieldsService).
var fieldChanges = map[string]fieldChange{
	"rule algorithm": {change: func(o *outOfBand) error {
		p := o.admin.LoadBalancer.NewUpdateLoadBalancerRuleParams(o.rule().Id)
		p.SetAlgorithm("leastconn")
		_, err := o.admin.LoadBalancer.UpdateLoadBalancerRule(p)
		return err
	}, has: "leastconn", asks: "roundrobin"},
	"rule privateport": {change: func(o *outOfBand) error {
		return o.remakeRule(func(r *cs.LoadBalancerRule) { r.Privateport = "30081" })
	}, has: "30081", asks: "30080"},
	"rule publicport": {change: func(o *outOfBand) error {
		return o.remakeRule(func(r *cs.LoadBalancerRule) { r.Publicport = "8081" })
	}, has: "8081", asks: "80"},
	"rule protocol": {change: func(o *outOfBand) error {
		return o.remakeRule(func(r *cs.LoadBalancerRule) { r.Protocol = "udp" })
	}, has: "udp", asks: "tcp"},
	"rule cidrlist": {change: func(o *outOfBand) error {
		return o.remakeRule(func(r *cs.LoadBalancerRule) { r.Cidrlist = "192.0.2.0/24" })
	}, has: "192.0.2.0/24", asks: "198.51.100.0/24"},
	"rule virtualmachineids": {change: func(o *outOfBand) error {
		return replaceMember(o.admin, "member/"+o.members[0]+" of "+o.rule().Id, o.stray)
	}, has: "hold STRAY", asks: "lack MEMBER"},
	"firewall rule protocol": {change: func(o *outOfBand) error {
		return o.remakeFirewallRule(func(p *cs.CreateFirewallRuleParams, _ *cs.FirewallRule) { p.SetProtocol("udp") })
	}, has: "udp", asks: "tcp"},
	"firewall rule startport": {change: func(o *outOfBand) error {
		return o.remakeFirewallRule(func(p *cs.CreateFirewallRuleParams, _ *cs.FirewallRule) { p.SetStartport(79) })
	}, has: "79", asks: "80"},
	"firewall rule endport": {change: func(o *outOfBand) error {
		return o.remakeFirewallRule(func(p *cs.CreateFirewallRuleParams, _ *cs.FirewallRule) { p.SetEndport(81) })
	}, has: "81", asks: "80"},
	"firewall rule cidrlist": {change: func(o *outOfBand) error {
		return o.remakeFirewallRule(func(p *cs.CreateFirewallRuleParams, _ *cs.FirewallRule) { p.SetCidrlist([]string{"192.0.2.0/24"}) })
	}, has: "192.0.2.0/24", asks: "198.51.100.0/24"},
	"ACL item protocol": {vpc: true, change: func(o *outOfBand) error {
		return o.updateItem(func(p *cs.UpdateNetworkACLItemParams) { p.SetProtocol("udp") })
	}, has: "udp", asks: "tcp"},
	"ACL item startport": {vpc: true, change: func(o *outOfBand) error {
		return o.updateItem(func(p *cs.UpdateNetworkACLItemParams) { p.SetStartport(79) })
	}, has: "79", asks: "80"},
	"ACL item endport": {vpc: true, change: func(o *outOfBand) error {
		return o.updateItem(func(p *cs.UpdateNetworkACLItemParams) { p.SetEndport(81) })
	}, has: "81", asks: "80"},
	"ACL item cidrlist": {vpc: true, change: func(o *outOfBand) error {
		return o.updateItem(func(p *cs.UpdateNetworkACLItemParams) { p.SetCidrlist([]string{"192.0.2.0/24"}) })
	}, has: "192.0.2.0/24", asks: "198.51.100.0/24"},
	"ACL item action": {vpc: true, change: func(o *outOfBand) error {
		return o.updateItem(func(p *cs.UpdateNetworkACLItemParams) { p.SetAction("Deny") })
	}, has: "Deny", asks: "Allow"},
	"ACL item traffictype": {vpc: true, change: func(o *outOfBand) error {
		return o.updateItem(func(p *cs.UpdateNetworkACLItemParams) { p.SetTraffictype("Egress") })
	}, has: "Egress", asks: "Ingress"},
	"health check pingpath":           {change: remakeCheck(func(h *csapi.HealthCheck) { h.Path = "/other" }), has: "/other", asks: "/healthz"},
	"health check intervaltime":       {change: remakeCheck(func(h *csapi.HealthCheck) { h.Interval = 9 }), has: "9", asks: "5"},
	"health check responsetimeout":    {change: remakeCheck(func(h *csapi.HealthCheck) { h.Timeout = 3 }), has: "3", asks: "2"},
	"health check healthythreshold":   {change: remakeCheck(func(h *csapi.HealthCheck) { h.Healthy = 4 }), has: "4", asks: "2"},
	"health check unhealthythreshold": {change: remakeCheck(func(h *csapi.HealthCheck) { h.Unhealthy = 3 }), has: "3", asks: "1"},
}

// outOfBand is another API client (an administrator's cloudstack-go) and
// what it changes: the Service's objects of port tcp/80.
type outOfBand struct {
	f       *fixture
	admin   *cs.CloudStackClient
	svc     func() *v1.Service
	members []string // the Nodes' machines, sorted
	stray   string   // a machine that is no Node's
}

// rule is the Service's rule of tcp/80, by its name.
func (o *outOfBand) rule() *cs.LoadBalancerRule {
	name := portSpec{proto: "tcp", port: 80}.ruleName(lbName(o.svc()))
	for _, r := range o.f.rules() {
		if r.Name == name {
			return r
		}
	}
	return &cs.LoadBalancerRule{}
}

// remakeRule deletes the rule of tcp/80 and makes it again as edit says,
// with its machines (CloudStack cannot change a rule's ports, protocol or
// cidrlist in place).
func (o *outOfBand) remakeRule(edit func(r *cs.LoadBalancerRule)) error {
	r := *o.rule()
	machines := o.f.members(r.Id)
	if _, err := o.admin.LoadBalancer.DeleteLoadBalancerRule(o.admin.LoadBalancer.NewDeleteLoadBalancerRuleParams(r.Id)); err != nil {
		return err
	}
	edit(&r)
	p := o.admin.LoadBalancer.NewCreateLoadBalancerRuleParams(r.Algorithm, r.Name, atoi(r.Privateport), atoi(r.Publicport))
	p.SetPublicipid(r.Publicipid)
	p.SetNetworkid(r.Networkid)
	p.SetProtocol(r.Protocol)
	p.SetOpenfirewall(false)
	p.SetCidrlist(csapi.SplitCIDRs(r.Cidrlist))
	made, err := o.admin.LoadBalancer.CreateLoadBalancerRule(p)
	if err != nil {
		return err
	}
	a := o.admin.LoadBalancer.NewAssignToLoadBalancerRuleParams(made.Id)
	a.SetVirtualmachineids(machines)
	_, err = o.admin.LoadBalancer.AssignToLoadBalancerRule(a)
	return err
}

// remakeFirewallRule deletes the firewall rule of tcp/80 and makes it
// again as edit says (a firewall rule cannot be changed in place).
func (o *outOfBand) remakeFirewallRule(edit func(p *cs.CreateFirewallRuleParams, was *cs.FirewallRule)) error {
	f := o.firewallRule()
	if f == nil {
		return fmt.Errorf("no firewall rule opens tcp/80")
	}
	if _, err := o.admin.Firewall.DeleteFirewallRule(o.admin.Firewall.NewDeleteFirewallRuleParams(f.Id)); err != nil {
		return err
	}
	p := o.admin.Firewall.NewCreateFirewallRuleParams(f.Ipaddressid, f.Protocol)
	p.SetStartport(f.Startport)
	p.SetEndport(f.Endport)
	p.SetCidrlist(csapi.SplitCIDRs(f.Cidrlist))
	edit(p, f)
	_, err := o.admin.Firewall.CreateFirewallRule(p)
	return err
}

// firewallRule is the firewall rule that opens tcp/80 (nil: none).
func (o *outOfBand) firewallRule() *cs.FirewallRule {
	for _, f := range o.f.firewall() {
		if f.Protocol == "tcp" && f.Startport <= 80 && 80 <= f.Endport {
			return f
		}
	}
	return nil
}

// item is the Service's ACL item (by its tags) of port 80.
func (o *outOfBand) item() *cs.NetworkACL {
	p := o.admin.NetworkACL.NewListNetworkACLsParams()
	p.SetListall(true)
	items, err := o.admin.NetworkACL.ListNetworkACLs(p)
	if err != nil {
		return nil
	}
	for _, it := range items.NetworkACLs {
		if atoi(it.Startport) <= 80 && 80 <= atoi(it.Endport) && slices.ContainsFunc(it.Tags, func(t cs.Tags) bool {
			return t.Key == tagService && t.Value == string(o.svc().UID)
		}) {
			return it
		}
	}
	return nil
}

// updateItem changes the Service's ACL item of port 80 in place.
func (o *outOfBand) updateItem(edit func(p *cs.UpdateNetworkACLItemParams)) error {
	it := o.item()
	if it == nil {
		return fmt.Errorf("no ACL item of the Service's opens port 80")
	}
	p := o.admin.NetworkACL.NewUpdateNetworkACLItemParams(it.Id)
	edit(p)
	_, err := o.admin.NetworkACL.UpdateNetworkACLItem(p)
	return err
}

// check is the health-check policy of the rule of tcp/80.
func (o *outOfBand) check() (csapi.HealthCheck, bool) {
	checks, err := o.f.c.api.HealthChecks(o.f.t.Context(), o.rule().Id)
	if err != nil || len(checks) != 1 {
		return csapi.HealthCheck{}, false
	}
	return checks[0], true
}

// remakeCheck deletes the health-check policy of tcp/80's rule and makes it
// again as edit says (a policy cannot be changed in place).
func remakeCheck(edit func(h *csapi.HealthCheck)) func(o *outOfBand) error {
	return func(o *outOfBand) error {
		h, ok := o.check()
		if !ok {
			return fmt.Errorf("the rule of tcp/80 has no health-check policy")
		}
		if _, err := o.admin.LoadBalancer.DeleteLBHealthCheckPolicy(o.admin.LoadBalancer.NewDeleteLBHealthCheckPolicyParams(h.ID)); err != nil {
			return err
		}
		edit(&h)
		p := o.admin.LoadBalancer.NewCreateLBHealthCheckPolicyParams(o.rule().Id)
		p.SetPingpath(h.Path)
		p.SetIntervaltime(h.Interval)
		p.SetResponsetimeout(h.Timeout)
		p.SetHealthythreshold(h.Healthy)
		p.SetUnhealthythreshold(h.Unhealthy)
		_, err := o.admin.LoadBalancer.CreateLBHealthCheckPolicy(p)
		return err
	}
}

// state is what the Service's objects of tcp/80 are, field by field: the
// same before a change and after its repair.
func (o *outOfBand) state() string {
	r := o.rule()
	h, _ := o.check()
	h.ID = ""
	out := fmt.Sprintf("rule %s %s->%s %s %s %v; check %+v", r.Protocol, r.Publicport, r.Privateport, r.Algorithm, r.Cidrlist, o.f.members(r.Id), h)
	if f := o.firewallRule(); f != nil {
		out += fmt.Sprintf("; firewall rule %s %d-%d %s", f.Protocol, f.Startport, f.Endport, f.Cidrlist)
	}
	if it := o.item(); it != nil {
		out += fmt.Sprintf("; ACL item %s %s-%s %s %s %s", it.Protocol, it.Startport, it.Endport, it.Cidrlist, it.Action, it.Traffictype)
	}
	return strings.TrimSpace(out)
}
