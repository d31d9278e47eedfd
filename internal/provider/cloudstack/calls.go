package cloudstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"

	"github.com/overcast-ccm/overcast/internal/outcome"
)

// The calls the CCM makes, each answering the fields it uses. Listings ask
// with listall=true (the account's and its projects' objects, as the peer) and
// the project when one is configured.

// machine is the part of a virtual machine the CCM uses.
type machine struct {
	ID, Name, State, Zone, Offering, PublicIP string
	NICs                                      []nic
}

type nic struct {
	IP, IP6, Network string
	Default          bool
}

func toMachine(v *cs.VirtualMachine) machine {
	m := machine{ID: v.Id, Name: v.Name, State: v.State, Zone: v.Zonename, Offering: v.Serviceofferingname, PublicIP: v.Publicip}
	for _, n := range v.Nic {
		m.NICs = append(m.NICs, nic{IP: n.Ipaddress, IP6: n.Ip6address, Network: n.Networkid, Default: n.Isdefault})
	}
	return m
}

func (gw *gateway) vmParams(ctx context.Context) (*cs.ListVirtualMachinesParams, error) {
	project, err := gw.projectID(ctx)
	if err != nil {
		return nil, err
	}
	p := build.VirtualMachine.NewListVirtualMachinesParams()
	p.SetListall(true)
	p.SetDetails([]string{"min", "nics"})
	if project != "" {
		p.SetProjectid(project)
	}
	return p, nil
}

// machines lists every virtual machine, page by page (the peer asks for one
// page, and misses machines beyond the server's default.page.size).
func (gw *gateway) machines(ctx context.Context) ([]machine, error) {
	return pages(gw, func(page, size int) ([]machine, int, error) {
		p, err := gw.vmParams(ctx)
		if err != nil {
			return nil, 0, err
		}
		p.SetPage(page)
		p.SetPagesize(size)
		r, err := gw.cs(ctx).VirtualMachine.ListVirtualMachines(p)
		if err != nil {
			return nil, 0, translate("listVirtualMachines", err)
		}
		return convert(r.VirtualMachines, toMachine), r.Count, nil
	})
}

// machine looks a virtual machine up by id. found is false only when the
// server answers that there is none: an empty list (an expunged machine, or a
// destroyed one to a user's keys) or 431 for an id that names nothing.
func (gw *gateway) machine(ctx context.Context, id string) (machine, bool, error) {
	p, err := gw.vmParams(ctx)
	if err != nil {
		return machine{}, false, err
	}
	p.SetId(id)
	r, err := gw.cs(ctx).VirtualMachine.ListVirtualMachines(p)
	if err = translate("listVirtualMachines", err); err != nil {
		if isNotFound(err) {
			return machine{}, false, nil
		}
		return machine{}, false, err
	}
	for _, v := range r.VirtualMachines {
		if v.Id == id {
			return toMachine(v), true, nil
		}
	}
	return machine{}, false, nil
}

// machinesNamed lists the virtual machines named name (the server compares
// names without case; older servers match a part of the name, so the names
// are compared here again).
func (gw *gateway) machinesNamed(ctx context.Context, name string) ([]machine, error) {
	p, err := gw.vmParams(ctx)
	if err != nil {
		return nil, err
	}
	p.SetName(name)
	r, err := gw.cs(ctx).VirtualMachine.ListVirtualMachines(p)
	if err != nil {
		return nil, translate("listVirtualMachines", err)
	}
	var out []machine
	for _, v := range r.VirtualMachines {
		if strings.EqualFold(v.Name, name) {
			out = append(out, toMachine(v))
		}
	}
	return out, nil
}

// convert is each of an answer's objects as the CCM uses it (to says how).
func convert[S, T any](in []S, to func(S) T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = to(v)
	}
	return out
}

func isNotFound(err error) bool { return errors.Is(err, outcome.ErrNotFound) }

// address is a public IP address.
type address struct {
	ID, IP, State, Network, VPC string
	// Allocated is when it was associated (the server's date; "" when free).
	Allocated string
	// settling: an untagged address that may be the Service's, not taken
	// up yet (associating.go); the load balancer is busy meanwhile.
	settling string
	Tags     map[string]string
	// SourceNAT, StaticNAT: the network's own address, or one mapped to a
	// machine; never a load balancer's.
	SourceNAT, StaticNAT bool
}

func toAddress(a *cs.PublicIpAddress) address {
	return address{ID: a.Id, IP: a.Ipaddress, State: a.State, Network: a.Associatednetworkid, VPC: a.Vpcid, Tags: tagMap(a.Tags),
		Allocated: a.Allocated, SourceNAT: a.Issourcenat, StaticNAT: a.Isstaticnat}
}

// associated is the address an associateIpAddress job's result names.
func associated(result json.RawMessage) (address, bool) {
	var r struct {
		Address *cs.PublicIpAddress `json:"ipaddress"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.Address == nil || r.Address.Id == "" {
		return address{}, false
	}
	return toAddress(r.Address), true
}

func tagMap(tags []cs.Tags) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[t.Key] = t.Value
	}
	return out
}

func (gw *gateway) addressParams(ctx context.Context) (*cs.ListPublicIpAddressesParams, error) {
	project, err := gw.projectID(ctx)
	if err != nil {
		return nil, err
	}
	p := build.Address.NewListPublicIpAddressesParams()
	p.SetListall(true)
	if project != "" {
		p.SetProjectid(project)
	}
	return p, nil
}

// addressesTagged lists the public addresses carrying every tag of tags
// (nil: every allocated address).
func (gw *gateway) addressesTagged(ctx context.Context, tags map[string]string) ([]address, error) {
	return pages(gw, func(page, size int) ([]address, int, error) {
		p, err := gw.addressParams(ctx)
		if err != nil {
			return nil, 0, err
		}
		if len(tags) > 0 {
			p.SetTags(tags)
		}
		p.SetPage(page)
		p.SetPagesize(size)
		r, err := gw.cs(ctx).Address.ListPublicIpAddresses(p)
		if err != nil {
			return nil, 0, translate("listPublicIpAddresses", err)
		}
		return convert(r.PublicIpAddresses, toAddress), r.Count, nil
	})
}

// address looks a public address up by id.
func (gw *gateway) address(ctx context.Context, id string) (address, bool, error) {
	p, err := gw.addressParams(ctx)
	if err != nil {
		return address{}, false, err
	}
	p.SetId(id)
	r, err := gw.cs(ctx).Address.ListPublicIpAddresses(p)
	if err = translate("listPublicIpAddresses", err); err != nil {
		if isNotFound(err) {
			return address{}, false, nil
		}
		return address{}, false, err
	}
	for _, a := range r.PublicIpAddresses {
		if a.Id == id {
			return toAddress(a), true, nil
		}
	}
	return address{}, false, nil
}

// addressOf looks up a public address by its IP, free ones included (state
// Free: no one holds it).
func (gw *gateway) addressOf(ctx context.Context, ip string) (address, bool, error) {
	p, err := gw.addressParams(ctx)
	if err != nil {
		return address{}, false, err
	}
	p.SetIpaddress(ip)
	p.SetAllocatedonly(false)
	r, err := gw.cs(ctx).Address.ListPublicIpAddresses(p)
	if err != nil {
		return address{}, false, translate("listPublicIpAddresses", err)
	}
	for _, a := range r.PublicIpAddresses {
		if a.Ipaddress == ip {
			return toAddress(a), true, nil
		}
	}
	return address{}, false, nil
}

// associate acquires a public address for the guest network (or its VPC),
// the one asked for when ip is set.
func (gw *gateway) associate(ctx context.Context, n network, ip string) (id, job string, err error) {
	project, err := gw.projectID(ctx)
	if err != nil {
		return "", "", err
	}
	p := build.Address.NewAssociateIpAddressParams()
	if n.VPC != "" {
		p.SetVpcid(n.VPC)
	} else {
		p.SetNetworkid(n.ID)
	}
	if ip != "" {
		p.SetIpaddress(ip)
	}
	if project != "" {
		p.SetProjectid(project)
	}
	r, err := gw.cs(ctx).Address.AssociateIpAddress(p)
	if err != nil {
		return "", "", translate("associateIpAddress", err)
	}
	return r.Id, r.JobID, nil
}

func (gw *gateway) disassociate(ctx context.Context, id string) (string, error) {
	r, err := gw.cs(ctx).Address.DisassociateIpAddress(build.Address.NewDisassociateIpAddressParams(id))
	if err != nil {
		return "", translate("disassociateIpAddress", err)
	}
	return r.JobID, nil
}

// tag puts tags on resources of one type (PublicIpAddress, LoadBalancer).
func (gw *gateway) tag(ctx context.Context, resourceType string, ids []string, tags map[string]string) (string, error) {
	r, err := gw.cs(ctx).Resourcetags.CreateTags(build.Resourcetags.NewCreateTagsParams(ids, resourceType, tags))
	if err != nil {
		return "", translate("createTags", err)
	}
	return r.JobID, nil
}

// network is the guest network, and how it filters traffic: firewall rules
// (an isolated network) or network ACL items (a VPC tier).
type network struct {
	ID, VPC, ACL string
	Firewall     bool
}

func (gw *gateway) network(ctx context.Context, id string) (network, error) {
	project, err := gw.projectID(ctx)
	if err != nil {
		return network{}, err
	}
	p := build.Network.NewListNetworksParams()
	p.SetId(id)
	p.SetListall(true)
	if project != "" {
		p.SetProjectid(project)
	}
	r, err := gw.cs(ctx).Network.ListNetworks(p)
	if err != nil {
		return network{}, translate("listNetworks", err)
	}
	for _, n := range r.Networks {
		if n.Id != id {
			continue
		}
		out := network{ID: n.Id, VPC: n.Vpcid, ACL: n.Aclid}
		for _, s := range n.Service {
			if s.Name == "Firewall" {
				out.Firewall = true
			}
		}
		return out, nil
	}
	return network{}, outcome.Classify(outcome.ErrNotFound, fmt.Errorf("network %s is not visible to the CCM's account", id))
}

// rule is a load balancer rule.
type rule struct {
	ID, Name, Algorithm, Protocol, State string
	AddressID, IP, Network               string
	PublicPort, PrivatePort              int
	CIDRs                                []string
}

func toRule(r *cs.LoadBalancerRule) rule {
	pub, _ := strconv.Atoi(r.Publicport)
	priv, _ := strconv.Atoi(r.Privateport)
	return rule{ID: r.Id, Name: r.Name, Algorithm: r.Algorithm, Protocol: strings.ToLower(r.Protocol), State: r.State,
		AddressID: r.Publicipid, IP: r.Publicip, Network: r.Networkid, PublicPort: pub, PrivatePort: priv,
		CIDRs: splitCIDRs(r.Cidrlist)}
}

// splitCIDRs reads a cidrlist, which servers answer space-separated (LB
// rules) or comma-separated (firewall rules, older servers).
func splitCIDRs(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

func (gw *gateway) ruleParams(ctx context.Context) (*cs.ListLoadBalancerRulesParams, error) {
	project, err := gw.projectID(ctx)
	if err != nil {
		return nil, err
	}
	p := build.LoadBalancer.NewListLoadBalancerRulesParams()
	p.SetListall(true)
	if project != "" {
		p.SetProjectid(project)
	}
	return p, nil
}

// rules lists the load balancer rules; keyword ("" for all) narrows the
// listing on the server, which matches it as a part of the name or the
// description: callers compare names exactly.
func (gw *gateway) rules(ctx context.Context, keyword string) ([]rule, error) {
	return pages(gw, func(page, size int) ([]rule, int, error) {
		p, err := gw.ruleParams(ctx)
		if err != nil {
			return nil, 0, err
		}
		if keyword != "" {
			p.SetKeyword(keyword)
		}
		p.SetPage(page)
		p.SetPagesize(size)
		r, err := gw.cs(ctx).LoadBalancer.ListLoadBalancerRules(p)
		if err != nil {
			return nil, 0, translate("listLoadBalancerRules", err)
		}
		return convert(r.LoadBalancerRules, toRule), r.Count, nil
	})
}

// rulesOn lists the load balancer rules of a public address.
func (gw *gateway) rulesOn(ctx context.Context, addressID string) ([]rule, error) {
	p, err := gw.ruleParams(ctx)
	if err != nil {
		return nil, err
	}
	p.SetPublicipid(addressID)
	r, err := gw.cs(ctx).LoadBalancer.ListLoadBalancerRules(p)
	if err != nil {
		return nil, translate("listLoadBalancerRules", err)
	}
	return convert(r.LoadBalancerRules, toRule), nil
}

// createRule creates a rule on its address (in the address's project).
func (gw *gateway) createRule(ctx context.Context, r rule) (id, job string, err error) {
	p := build.LoadBalancer.NewCreateLoadBalancerRuleParams(r.Algorithm, r.Name, r.PrivatePort, r.PublicPort)
	p.SetPublicipid(r.AddressID)
	p.SetNetworkid(r.Network)
	p.SetProtocol(r.Protocol)
	p.SetOpenfirewall(false)
	p.SetCidrlist(r.CIDRs)
	resp, err := gw.cs(ctx).LoadBalancer.CreateLoadBalancerRule(p)
	if err != nil {
		return "", "", translate("createLoadBalancerRule", err)
	}
	return resp.Id, resp.JobID, nil
}

// updateRule changes a rule's algorithm (its protocol and ports cannot be
// changed in place).
func (gw *gateway) updateRule(ctx context.Context, id, algorithm string) (string, error) {
	p := build.LoadBalancer.NewUpdateLoadBalancerRuleParams(id)
	p.SetAlgorithm(algorithm)
	r, err := gw.cs(ctx).LoadBalancer.UpdateLoadBalancerRule(p)
	if err != nil {
		return "", translate("updateLoadBalancerRule", err)
	}
	return r.JobID, nil
}

func (gw *gateway) deleteRule(ctx context.Context, id string) (string, error) {
	r, err := gw.cs(ctx).LoadBalancer.DeleteLoadBalancerRule(build.LoadBalancer.NewDeleteLoadBalancerRuleParams(id))
	if err != nil {
		return "", translate("deleteLoadBalancerRule", err)
	}
	return r.JobID, nil
}

// ruleMachines is the ids of a rule's machines.
func (gw *gateway) ruleMachines(ctx context.Context, id string) ([]string, error) {
	return pages(gw, func(page, size int) ([]string, int, error) {
		p := build.LoadBalancer.NewListLoadBalancerRuleInstancesParams(id)
		p.SetPage(page)
		p.SetPagesize(size)
		r, err := gw.cs(ctx).LoadBalancer.ListLoadBalancerRuleInstances(p)
		if err != nil {
			return nil, 0, translate("listLoadBalancerRuleInstances", err)
		}
		return convert(r.LoadBalancerRuleInstances, func(v *cs.VirtualMachine) string { return v.Id }), r.Count, nil
	})
}

func (gw *gateway) assign(ctx context.Context, id string, machines []string) (string, error) {
	p := build.LoadBalancer.NewAssignToLoadBalancerRuleParams(id)
	p.SetVirtualmachineids(machines)
	r, err := gw.cs(ctx).LoadBalancer.AssignToLoadBalancerRule(p)
	if err != nil {
		return "", translate("assignToLoadBalancerRule", err)
	}
	return r.JobID, nil
}

func (gw *gateway) unassign(ctx context.Context, id string, machines []string) (string, error) {
	p := build.LoadBalancer.NewRemoveFromLoadBalancerRuleParams(id)
	p.SetVirtualmachineids(machines)
	r, err := gw.cs(ctx).LoadBalancer.RemoveFromLoadBalancerRule(p)
	if err != nil {
		return "", translate("removeFromLoadBalancerRule", err)
	}
	return r.JobID, nil
}

// opening is a firewall rule or a network ACL item: traffic of a protocol to a
// port range let in from some sources.
type opening struct {
	ID, Protocol string
	AddressID    string // a firewall rule's
	Start, End   int
	CIDRs        []string
	// ACL items only: Allow or Deny, Ingress or Egress, and their tags.
	Action, Traffic string
	Tags            map[string]string
}

// firewallRules lists the firewall rules of an address ("": of every
// address the account or project has, page by page).
func (gw *gateway) firewallRules(ctx context.Context, addressID string) ([]opening, error) {
	project, err := gw.projectID(ctx)
	if err != nil {
		return nil, err
	}
	return pages(gw, func(page, size int) ([]opening, int, error) {
		p := build.Firewall.NewListFirewallRulesParams()
		if addressID != "" {
			p.SetIpaddressid(addressID)
		}
		p.SetListall(true)
		if project != "" {
			p.SetProjectid(project)
		}
		p.SetPage(page)
		p.SetPagesize(size)
		r, err := gw.cs(ctx).Firewall.ListFirewallRules(p)
		if err != nil {
			return nil, 0, translate("listFirewallRules", err)
		}
		return convert(r.FirewallRules, toFirewallOpening), r.Count, nil
	})
}

// toFirewallOpening is a firewall rule as the CCM uses it.
func toFirewallOpening(f *cs.FirewallRule) opening {
	return opening{ID: f.Id, Protocol: strings.ToLower(f.Protocol), Start: f.Startport, End: f.Endport,
		CIDRs: splitCIDRs(f.Cidrlist), AddressID: f.Ipaddressid}
}

func (gw *gateway) createFirewallRule(ctx context.Context, addressID string, o opening) (string, error) {
	p := build.Firewall.NewCreateFirewallRuleParams(addressID, o.Protocol)
	p.SetStartport(o.Start)
	p.SetEndport(o.End)
	p.SetCidrlist(o.CIDRs)
	r, err := gw.cs(ctx).Firewall.CreateFirewallRule(p)
	if err != nil {
		return "", translate("createFirewallRule", err)
	}
	return r.JobID, nil
}

func (gw *gateway) deleteFirewallRule(ctx context.Context, id string) (string, error) {
	r, err := gw.cs(ctx).Firewall.DeleteFirewallRule(build.Firewall.NewDeleteFirewallRuleParams(id))
	if err != nil {
		return "", translate("deleteFirewallRule", err)
	}
	return r.JobID, nil
}

// aclListName is the name of a network ACL list (default_allow and
// default_deny are the server's own, which nobody may change).
func (gw *gateway) aclListName(ctx context.Context, id string) (string, error) {
	p := build.NetworkACL.NewListNetworkACLListsParams()
	p.SetId(id)
	r, err := gw.cs(ctx).NetworkACL.ListNetworkACLLists(p)
	if err != nil {
		return "", translate("listNetworkACLLists", err)
	}
	for _, l := range r.NetworkACLLists {
		if l.Id == id {
			return l.Name, nil
		}
	}
	return "", outcome.Classify(outcome.ErrNotFound, fmt.Errorf("network ACL list %s is not visible to the CCM's account", id))
}

func (gw *gateway) aclItems(ctx context.Context, aclID string) ([]opening, error) {
	return pages(gw, func(page, size int) ([]opening, int, error) {
		p := build.NetworkACL.NewListNetworkACLsParams()
		p.SetAclid(aclID)
		p.SetListall(true)
		p.SetPage(page)
		p.SetPagesize(size)
		r, err := gw.cs(ctx).NetworkACL.ListNetworkACLs(p)
		if err != nil {
			return nil, 0, translate("listNetworkACLs", err)
		}
		return convert(r.NetworkACLs, toACLItem), r.Count, nil
	})
}

// toACLItem is a network ACL item as the CCM uses it.
func toACLItem(a *cs.NetworkACL) opening {
	start, _ := strconv.Atoi(a.Startport)
	end, _ := strconv.Atoi(a.Endport)
	return opening{ID: a.Id, Protocol: strings.ToLower(a.Protocol), Start: start, End: end, CIDRs: splitCIDRs(a.Cidrlist),
		Action: a.Action, Traffic: a.Traffictype, Tags: tagMap(a.Tags)}
}

func (gw *gateway) createACLItem(ctx context.Context, aclID string, o opening) (id, job string, err error) {
	p := build.NetworkACL.NewCreateNetworkACLParams(o.Protocol)
	p.SetAclid(aclID)
	p.SetAction("Allow")
	p.SetTraffictype("Ingress")
	p.SetStartport(o.Start)
	p.SetEndport(o.End)
	p.SetCidrlist(o.CIDRs)
	r, err := gw.cs(ctx).NetworkACL.CreateNetworkACL(p)
	if err != nil {
		return "", "", translate("createNetworkACL", err)
	}
	return r.Id, r.JobID, nil
}

func (gw *gateway) deleteACLItem(ctx context.Context, id string) (string, error) {
	r, err := gw.cs(ctx).NetworkACL.DeleteNetworkACL(build.NetworkACL.NewDeleteNetworkACLParams(id))
	if err != nil {
		return "", translate("deleteNetworkACL", err)
	}
	return r.JobID, nil
}

// healthCheck is a rule's health-check policy.
type healthCheck struct {
	ID, Path           string
	Interval, Timeout  int
	Healthy, Unhealthy int
}

func (gw *gateway) healthChecks(ctx context.Context, ruleID string) ([]healthCheck, error) {
	p := build.LoadBalancer.NewListLBHealthCheckPoliciesParams()
	p.SetLbruleid(ruleID)
	r, err := gw.cs(ctx).LoadBalancer.ListLBHealthCheckPolicies(p)
	if err != nil {
		return nil, translate("listLBHealthCheckPolicies", err)
	}
	var out []healthCheck
	for _, pol := range r.LBHealthCheckPolicies {
		for _, h := range pol.Healthcheckpolicy {
			out = append(out, healthCheck{ID: h.Id, Path: h.Pingpath, Interval: h.Healthcheckinterval, Timeout: h.Responsetime,
				Healthy: h.Healthcheckthresshold, Unhealthy: h.Unhealthcheckthresshold})
		}
	}
	return out, nil
}

func (gw *gateway) createHealthCheck(ctx context.Context, ruleID string, h healthCheck) (string, error) {
	p := build.LoadBalancer.NewCreateLBHealthCheckPolicyParams(ruleID)
	p.SetPingpath(h.Path)
	p.SetIntervaltime(h.Interval)
	p.SetResponsetimeout(h.Timeout)
	p.SetHealthythreshold(h.Healthy)
	p.SetUnhealthythreshold(h.Unhealthy)
	r, err := gw.cs(ctx).LoadBalancer.CreateLBHealthCheckPolicy(p)
	if err != nil {
		return "", translate("createLBHealthCheckPolicy", err)
	}
	return r.JobID, nil
}

func (gw *gateway) deleteHealthCheck(ctx context.Context, id string) (string, error) {
	r, err := gw.cs(ctx).LoadBalancer.DeleteLBHealthCheckPolicy(build.LoadBalancer.NewDeleteLBHealthCheckPolicyParams(id))
	if err != nil {
		return "", translate("deleteLBHealthCheckPolicy", err)
	}
	return r.JobID, nil
}

// jobStatus is how a job went (queryAsyncJobResult).
func (gw *gateway) jobStatus(ctx context.Context, id string) (jobState, error) {
	r, err := gw.cs(ctx).Asyncjob.QueryAsyncJobResult(build.Asyncjob.NewQueryAsyncJobResultParams(id))
	if err != nil {
		return jobState{}, translate("queryAsyncJobResult", err)
	}
	return toJobState(r.Jobstatus, r.Cmd, r.Jobresult, r.Jobresultcode, r.Created, r.Completed), nil
}

// jobState is how a job went: pending, done with its result, or failed
// (failure); created is when the server took it (its clock, to the second;
// zero when not known), took how long it ran there (0 when not known).
type jobState struct {
	pending bool
	failure error
	result  json.RawMessage
	created time.Time
	took    time.Duration
}

func toJobState(status int, cmd string, result json.RawMessage, code int, created, completed string) jobState {
	st := jobState{pending: status == 0}
	switch status {
	case 1:
		st.result = result
	case 2:
		st.failure = jobFailure(cmd, &cs.QueryAsyncJobResultResponse{Jobresult: result, Jobresultcode: code, Cmd: cmd})
	}
	if c, err := time.Parse(csDateLayout, created); err == nil {
		st.created = c
		if d, err := time.Parse(csDateLayout, completed); err == nil && status != 0 && !d.Before(c) {
			st.took = d.Sub(c)
		}
	}
	return st
}

// csDateLayout is how the server writes dates ("2021-10-04T09:24:38+0000").
const csDateLayout = "2006-01-02T15:04:05-0700"

// jobsSince lists the account's jobs created at since or later
// (listAsyncJobs: one call for every job under way, however many).
func (gw *gateway) jobsSince(ctx context.Context, since time.Time) (map[string]jobState, error) {
	list, err := pages(gw, func(page, size int) ([]*cs.AsyncJob, int, error) {
		p := build.Asyncjob.NewListAsyncJobsParams()
		p.SetStartdate(since.UTC().Format(csDateLayout))
		p.SetPage(page)
		p.SetPagesize(size)
		r, err := gw.cs(ctx).Asyncjob.ListAsyncJobs(p)
		if err != nil {
			return nil, 0, translate("listAsyncJobs", err)
		}
		return r.AsyncJobs, r.Count, nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]jobState, len(list))
	for _, j := range list {
		out[j.JobID] = toJobState(j.Jobstatus, j.Cmd, j.Jobresult, j.Jobresultcode, j.Created, j.Completed)
	}
	return out, nil
}

// pager is a list call's parameters.
type pager interface {
	SetPage(int)
	SetPagesize(int)
}

// countVisible is how many objects list (the command op, with parameters p
// made with err) says the keys see, from a page of one: the doctor's
// harmless read.
func countVisible[P pager, R any](p P, err error, op string, list func(P) (R, error), count func(R) int) (int, error) {
	if err != nil {
		return 0, err
	}
	p.SetPage(1)
	p.SetPagesize(1)
	r, err := list(p)
	if err = translate(op, err); err != nil {
		return 0, err
	}
	return count(r), nil
}

// machinesVisible, addressesVisible and rulesVisible count what the keys see.
func (gw *gateway) machinesVisible(ctx context.Context) (int, error) {
	p, err := gw.vmParams(ctx)
	return countVisible(p, err, "listVirtualMachines", gw.cs(ctx).VirtualMachine.ListVirtualMachines,
		func(r *cs.ListVirtualMachinesResponse) int { return r.Count })
}

func (gw *gateway) addressesVisible(ctx context.Context) (int, error) {
	p, err := gw.addressParams(ctx)
	return countVisible(p, err, "listPublicIpAddresses", gw.cs(ctx).Address.ListPublicIpAddresses,
		func(r *cs.ListPublicIpAddressesResponse) int { return r.Count })
}

func (gw *gateway) rulesVisible(ctx context.Context) (int, error) {
	p, err := gw.ruleParams(ctx)
	return countVisible(p, err, "listLoadBalancerRules", gw.cs(ctx).LoadBalancer.ListLoadBalancerRules,
		func(r *cs.ListLoadBalancerRulesResponse) int { return r.Count })
}
