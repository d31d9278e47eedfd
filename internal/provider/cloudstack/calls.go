package cloudstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/outcome"
)

// The calls the CCM makes, each answering the fields it uses. Listings ask
// with listall=true (the account's and its projects' objects, as the peer) and
// the project when one is configured.
//
// The parameters are those cloudstack-go v2.19 sends for the same calls (its
// <Command>Params.toURLValues, named in each call's comment): a parameter is
// sent when the SDK's setter was called, even when empty (cidrlist=,
// virtualmachineids=). The answers are decoded into types that hold only
// what the CCM reads, with the server's names and JSON types (the SDK's
// response structs, which mirror the server's *Response classes).

// machine is the part of a virtual machine the CCM uses (listVirtualMachines'
// UserVmResponse).
type machine struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	Zone     string `json:"zonename"`
	Offering string `json:"serviceofferingname"`
	PublicIP string `json:"publicip"`
	NICs     []nic  `json:"nic"`
}

type nic struct {
	IP      string `json:"ipaddress"`
	IP6     string `json:"ip6address"`
	Network string `json:"networkid"`
	Default bool   `json:"isdefault"`
}

// params is a call's parameters, set as cloudstack-go's setters set them.
type params url.Values

func (p params) set(name, value string)          { url.Values(p).Set(name, value) }
func (p params) setInt(name string, v int)       { p.set(name, strconv.Itoa(v)) }
func (p params) setBool(name string, v bool)     { p.set(name, strconv.FormatBool(v)) }
func (p params) setList(name string, v []string) { p.set(name, strings.Join(v, ",")) }

// setTags sets tags as tags[i].key and tags[i].value, in the order of the
// keys (cloudstack-go's getSortedKeysFromMap).
func (p params) setTags(tags map[string]string) {
	keys := slices.Sorted(maps.Keys(tags))
	for i, k := range keys {
		p.set(fmt.Sprintf("tags[%d].key", i), k)
		p.set(fmt.Sprintf("tags[%d].value", i), tags[k])
	}
}

// setPage asks for one page of a listing.
func (p params) setPage(page, size int) {
	p.setInt("page", page)
	p.setInt("pagesize", size)
}

// async is the answer to a change: the job doing it, and the id of the
// object it makes (for creations).
type async struct {
	ID    string `json:"id"`
	JobID string `json:"jobid"`
}

// change asks for a change (by POST) and answers its job and the id of
// what it makes.
func (gw *gateway) change(ctx context.Context, command string, p params) (async, error) {
	var r async
	err := gw.post(ctx, command, p, &r)
	return r, err
}

// listAnswer is a list command's answer: the listing's total count and the
// items under its key (the object's name: "virtualmachine", …). An empty
// list is an empty object, without count.
type listAnswer[T any] struct {
	key   string
	count int
	items []T
}

func (l *listAnswer[T]) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	if c, ok := fields["count"]; ok {
		if err := json.Unmarshal(c, &l.count); err != nil {
			return fmt.Errorf("count: %w", err)
		}
	}
	if items, ok := fields[l.key]; ok {
		if err := json.Unmarshal(items, &l.items); err != nil {
			return fmt.Errorf("%s: %w", l.key, err)
		}
	}
	return nil
}

// listPage is the items (under key) of one answer of command, a page when p
// asks for one, and the listing's total count.
func listPage[T any](ctx context.Context, gw *gateway, command, key string, p params) ([]T, int, error) {
	l := listAnswer[T]{key: key}
	if err := gw.get(ctx, command, p, &l); err != nil {
		return nil, 0, err
	}
	return l.items, l.count, nil
}

// listAll is every page of command's answer, asked with the parameters
// query makes (the page set on them).
func listAll[T any](ctx context.Context, gw *gateway, command, key string, query func() (params, error)) ([]T, error) {
	return pages(gw, func(page, size int) ([]T, int, error) {
		p, err := query()
		if err != nil {
			return nil, 0, err
		}
		p.setPage(page, size)
		return listPage[T](ctx, gw, command, key, p)
	})
}

// listed is the params of a listing of the account's and its projects'
// objects (listall=true), in the project when one is configured.
func (gw *gateway) listed(ctx context.Context) (params, error) {
	project, err := gw.projectID(ctx)
	if err != nil {
		return nil, err
	}
	p := params{}
	p.setBool("listall", true)
	if project != "" {
		p.set("projectid", project)
	}
	return p, nil
}

// vmParams are listVirtualMachines' (ListVirtualMachinesParams): only the
// machines' summary and NICs (details=min,nics).
func (gw *gateway) vmParams(ctx context.Context) (params, error) {
	p, err := gw.listed(ctx)
	if err != nil {
		return nil, err
	}
	p.setList("details", []string{"min", "nics"})
	return p, nil
}

// machines lists every virtual machine, page by page (the peer asks for one
// page, and misses machines beyond the server's default.page.size).
func (gw *gateway) machines(ctx context.Context) ([]machine, error) {
	return listAll[machine](ctx, gw, "listVirtualMachines", "virtualmachine", func() (params, error) { return gw.vmParams(ctx) })
}

// machine looks a virtual machine up by id. found is false only when the
// server answers that there is none: an empty list (an expunged machine, or a
// destroyed one to a user's keys) or 431 for an id that names nothing.
func (gw *gateway) machine(ctx context.Context, id string) (machine, bool, error) {
	p, err := gw.vmParams(ctx)
	if err != nil {
		return machine{}, false, err
	}
	p.set("id", id)
	list, _, err := listPage[machine](ctx, gw, "listVirtualMachines", "virtualmachine", p)
	if err != nil {
		if isNotFound(err) {
			return machine{}, false, nil
		}
		return machine{}, false, err
	}
	for _, v := range list {
		if v.ID == id {
			return v, true, nil
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
	p.set("name", name)
	list, _, err := listPage[machine](ctx, gw, "listVirtualMachines", "virtualmachine", p)
	if err != nil {
		return nil, err
	}
	var out []machine
	for _, v := range list {
		if strings.EqualFold(v.Name, name) {
			out = append(out, v)
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

// address is a public IP address (listPublicIpAddresses' IPAddressResponse).
type address struct {
	ID      string `json:"id"`
	IP      string `json:"ipaddress"`
	State   string `json:"state"`
	Network string `json:"associatednetworkid"`
	VPC     string `json:"vpcid"`
	// Allocated is when it was associated (the server's date; "" when free).
	Allocated string `json:"allocated"`
	// settling: an untagged address that may be the Service's, not taken
	// up yet (associating.go); the load balancer is busy meanwhile.
	settling string
	Tags     map[string]string `json:"-"`
	// SourceNAT, StaticNAT: the network's own address, or one mapped to a
	// machine; never a load balancer's.
	SourceNAT bool `json:"issourcenat"`
	StaticNAT bool `json:"isstaticnat"`
}

// addressAnswer is an address as the server answers it, its tags a list.
type addressAnswer struct {
	address
	Tags []tag `json:"tags"`
}

// tag is a resource tag as the server answers it (ResourceTagResponse).
type tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func toAddress(a addressAnswer) address {
	a.address.Tags = tagMap(a.Tags)
	return a.address
}

// associated is the address an associateIpAddress job's result names.
func associated(result json.RawMessage) (address, bool) {
	var r struct {
		Address *addressAnswer `json:"ipaddress"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.Address == nil || r.Address.ID == "" {
		return address{}, false
	}
	return toAddress(*r.Address), true
}

// createdRule is the rule a createLoadBalancerRule job's result holds
// (CreateLoadBalancerRuleCmd answers a LoadBalancerResponse).
func createdRule(result json.RawMessage) (rule, bool) {
	var r struct {
		Rule *ruleAnswer `json:"loadbalancer"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.Rule == nil || r.Rule.ID == "" || r.Rule.AddressID == "" {
		return rule{}, false
	}
	return toRule(*r.Rule), true
}

func tagMap(tags []tag) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[t.Key] = t.Value
	}
	return out
}

// addresses is one page of listPublicIpAddresses (ListPublicIpAddressesParams).
func (gw *gateway) addresses(ctx context.Context, p params) ([]address, int, error) {
	list, count, err := listPage[addressAnswer](ctx, gw, "listPublicIpAddresses", "publicipaddress", p)
	return convert(list, toAddress), count, err
}

// addressesTagged lists the public addresses carrying every tag of tags
// (nil: every allocated address).
func (gw *gateway) addressesTagged(ctx context.Context, tags map[string]string) ([]address, error) {
	return pages(gw, func(page, size int) ([]address, int, error) {
		p, err := gw.listed(ctx)
		if err != nil {
			return nil, 0, err
		}
		if len(tags) > 0 {
			p.setTags(tags)
		}
		p.setPage(page, size)
		return gw.addresses(ctx, p)
	})
}

// address looks a public address up by id.
func (gw *gateway) address(ctx context.Context, id string) (address, bool, error) {
	p, err := gw.listed(ctx)
	if err != nil {
		return address{}, false, err
	}
	p.set("id", id)
	list, _, err := gw.addresses(ctx, p)
	if err != nil {
		if isNotFound(err) {
			return address{}, false, nil
		}
		return address{}, false, err
	}
	for _, a := range list {
		if a.ID == id {
			return a, true, nil
		}
	}
	return address{}, false, nil
}

// addressOf looks up a public address by its IP, free ones included (state
// Free: no one holds it).
func (gw *gateway) addressOf(ctx context.Context, ip string) (address, bool, error) {
	p, err := gw.listed(ctx)
	if err != nil {
		return address{}, false, err
	}
	p.set("ipaddress", ip)
	p.setBool("allocatedonly", false)
	list, _, err := gw.addresses(ctx, p)
	if err != nil {
		return address{}, false, err
	}
	for _, a := range list {
		if a.IP == ip {
			return a, true, nil
		}
	}
	return address{}, false, nil
}

// associate acquires a public address for the guest network (or its VPC),
// the one asked for when ip is set (AssociateIpAddressParams).
func (gw *gateway) associate(ctx context.Context, n network, ip string) (id, job string, err error) {
	project, err := gw.projectID(ctx)
	if err != nil {
		return "", "", err
	}
	p := params{}
	if n.VPC != "" {
		p.set("vpcid", n.VPC)
	} else {
		p.set("networkid", n.ID)
	}
	if ip != "" {
		p.set("ipaddress", ip)
	}
	if project != "" {
		p.set("projectid", project)
	}
	r, err := gw.change(ctx, "associateIpAddress", p)
	return r.ID, r.JobID, err
}

// byID is the parameters of a command on one object (its id).
func byID(id string) params {
	p := params{}
	p.set("id", id)
	return p
}

// job is the job of a change of one object (its id).
func (gw *gateway) job(ctx context.Context, command, id string) (string, error) {
	r, err := gw.change(ctx, command, byID(id))
	return r.JobID, err
}

func (gw *gateway) disassociate(ctx context.Context, id string) (string, error) {
	return gw.job(ctx, "disassociateIpAddress", id)
}

// tag puts tags on resources of one type (PublicIpAddress, LoadBalancer)
// (CreateTagsParams).
func (gw *gateway) tag(ctx context.Context, resourceType string, ids []string, tags map[string]string) (string, error) {
	p := params{}
	p.setList("resourceids", ids)
	p.set("resourcetype", resourceType)
	p.setTags(tags)
	r, err := gw.change(ctx, "createTags", p)
	return r.JobID, err
}

// network is the guest network, and how it filters traffic: firewall rules
// (an isolated network) or network ACL items (a VPC tier).
type network struct {
	ID, VPC, ACL string
	Firewall     bool
}

// network is the guest network id (ListNetworksParams).
func (gw *gateway) network(ctx context.Context, id string) (network, error) {
	p, err := gw.listed(ctx)
	if err != nil {
		return network{}, err
	}
	p.set("id", id)
	type answer struct {
		ID       string `json:"id"`
		VPC      string `json:"vpcid"`
		ACL      string `json:"aclid"`
		Services []struct {
			Name string `json:"name"`
		} `json:"service"`
	}
	list, _, err := listPage[answer](ctx, gw, "listNetworks", "network", p)
	if err != nil {
		return network{}, err
	}
	for _, n := range list {
		if n.ID != id {
			continue
		}
		out := network{ID: n.ID, VPC: n.VPC, ACL: n.ACL}
		for _, s := range n.Services {
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

// ruleAnswer is a rule as the server answers it (LoadBalancerResponse: the
// ports are strings).
type ruleAnswer struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Algorithm   string `json:"algorithm"`
	Protocol    string `json:"protocol"`
	State       string `json:"state"`
	AddressID   string `json:"publicipid"`
	IP          string `json:"publicip"`
	Network     string `json:"networkid"`
	PublicPort  string `json:"publicport"`
	PrivatePort string `json:"privateport"`
	CIDRs       string `json:"cidrlist"`
}

func toRule(r ruleAnswer) rule {
	pub, _ := strconv.Atoi(r.PublicPort)
	priv, _ := strconv.Atoi(r.PrivatePort)
	return rule{ID: r.ID, Name: r.Name, Algorithm: r.Algorithm, Protocol: strings.ToLower(r.Protocol), State: r.State,
		AddressID: r.AddressID, IP: r.IP, Network: r.Network, PublicPort: pub, PrivatePort: priv,
		CIDRs: splitCIDRs(r.CIDRs)}
}

// splitCIDRs reads a cidrlist, which servers answer space-separated (LB
// rules) or comma-separated (firewall rules, older servers).
func splitCIDRs(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

// someRules is one page of listLoadBalancerRules (ListLoadBalancerRulesParams).
func (gw *gateway) someRules(ctx context.Context, p params) ([]rule, int, error) {
	list, count, err := listPage[ruleAnswer](ctx, gw, "listLoadBalancerRules", "loadbalancerrule", p)
	return convert(list, toRule), count, err
}

// rules lists the load balancer rules; keyword ("" for all) narrows the
// listing on the server, which matches it as a part of the name or the
// description: callers compare names exactly.
func (gw *gateway) rules(ctx context.Context, keyword string) ([]rule, error) {
	return pages(gw, func(page, size int) ([]rule, int, error) {
		p, err := gw.listed(ctx)
		if err != nil {
			return nil, 0, err
		}
		if keyword != "" {
			p.set("keyword", keyword)
		}
		p.setPage(page, size)
		return gw.someRules(ctx, p)
	})
}

// rulesOn lists the load balancer rules of a public address.
func (gw *gateway) rulesOn(ctx context.Context, addressID string) ([]rule, error) {
	p, err := gw.listed(ctx)
	if err != nil {
		return nil, err
	}
	p.set("publicipid", addressID)
	list, _, err := gw.someRules(ctx, p)
	return list, err
}

// createRule creates a rule on its address (in the address's project)
// (CreateLoadBalancerRuleParams; the firewall is opened apart).
func (gw *gateway) createRule(ctx context.Context, r rule) (id, job string, err error) {
	p := params{}
	p.set("algorithm", r.Algorithm)
	p.set("name", r.Name)
	p.setInt("privateport", r.PrivatePort)
	p.setInt("publicport", r.PublicPort)
	p.set("publicipid", r.AddressID)
	p.set("networkid", r.Network)
	p.set("protocol", r.Protocol)
	p.setBool("openfirewall", false)
	p.setList("cidrlist", r.CIDRs)
	resp, err := gw.change(ctx, "createLoadBalancerRule", p)
	return resp.ID, resp.JobID, err
}

// updateRule changes a rule's algorithm (its protocol and ports cannot be
// changed in place) (UpdateLoadBalancerRuleParams).
func (gw *gateway) updateRule(ctx context.Context, id, algorithm string) (string, error) {
	p := byID(id)
	p.set("algorithm", algorithm)
	r, err := gw.change(ctx, "updateLoadBalancerRule", p)
	return r.JobID, err
}

func (gw *gateway) deleteRule(ctx context.Context, id string) (string, error) {
	return gw.job(ctx, "deleteLoadBalancerRule", id)
}

// ruleMachines is the ids of a rule's machines
// (ListLoadBalancerRuleInstancesParams).
func (gw *gateway) ruleMachines(ctx context.Context, id string) ([]string, error) {
	type answer struct {
		ID string `json:"id"`
	}
	list, err := listAll[answer](ctx, gw, "listLoadBalancerRuleInstances", "loadbalancerruleinstance",
		func() (params, error) { return byID(id), nil })
	return convert(list, func(v answer) string { return v.ID }), err
}

// assign and unassign add machines to a rule and take them off
// (AssignToLoadBalancerRuleParams, RemoveFromLoadBalancerRuleParams).
func (gw *gateway) assign(ctx context.Context, id string, machines []string) (string, error) {
	return gw.members(ctx, "assignToLoadBalancerRule", id, machines)
}

func (gw *gateway) unassign(ctx context.Context, id string, machines []string) (string, error) {
	return gw.members(ctx, "removeFromLoadBalancerRule", id, machines)
}

func (gw *gateway) members(ctx context.Context, command, id string, machines []string) (string, error) {
	p := byID(id)
	p.setList("virtualmachineids", machines)
	r, err := gw.change(ctx, command, p)
	return r.JobID, err
}

// opening is a firewall rule or a network ACL item: traffic of a protocol to a
// port range let in from some sources.
type opening struct {
	ID, Protocol string
	AddressID    string // a firewall rule's
	Start, End   int
	CIDRs        []string
	// ACL items only: Allow or Deny, Ingress or Egress, their tags, and
	// their reason (the CCM's mark as it makes one: ownership.go).
	Action, Traffic string
	Tags            map[string]string
	Reason          string
}

// firewallRules lists the firewall rules of an address ("": of every
// address the account or project has, page by page) (ListFirewallRulesParams).
func (gw *gateway) firewallRules(ctx context.Context, addressID string) ([]opening, error) {
	project, err := gw.projectID(ctx)
	if err != nil {
		return nil, err
	}
	list, err := listAll[firewallAnswer](ctx, gw, "listFirewallRules", "firewallrule", func() (params, error) {
		p := params{}
		if addressID != "" {
			p.set("ipaddressid", addressID)
		}
		p.setBool("listall", true)
		if project != "" {
			p.set("projectid", project)
		}
		return p, nil
	})
	return convert(list, toFirewallOpening), err
}

// firewallAnswer is a firewall rule as the server answers it
// (FirewallResponse: the ports are numbers).
type firewallAnswer struct {
	ID        string `json:"id"`
	Protocol  string `json:"protocol"`
	Start     int    `json:"startport"`
	End       int    `json:"endport"`
	CIDRs     string `json:"cidrlist"`
	AddressID string `json:"ipaddressid"`
}

// toFirewallOpening is a firewall rule as the CCM uses it.
func toFirewallOpening(f firewallAnswer) opening {
	return opening{ID: f.ID, Protocol: strings.ToLower(f.Protocol), Start: f.Start, End: f.End,
		CIDRs: splitCIDRs(f.CIDRs), AddressID: f.AddressID}
}

// createFirewallRule opens o on an address (CreateFirewallRuleParams).
func (gw *gateway) createFirewallRule(ctx context.Context, addressID string, o opening) (string, error) {
	p := params{}
	p.set("ipaddressid", addressID)
	p.set("protocol", o.Protocol)
	p.setInt("startport", o.Start)
	p.setInt("endport", o.End)
	p.setList("cidrlist", o.CIDRs)
	r, err := gw.change(ctx, "createFirewallRule", p)
	return r.JobID, err
}

func (gw *gateway) deleteFirewallRule(ctx context.Context, id string) (string, error) {
	return gw.job(ctx, "deleteFirewallRule", id)
}

// aclListName is the name of a network ACL list (default_allow and
// default_deny are the server's own, which nobody may change)
// (ListNetworkACLListsParams).
func (gw *gateway) aclListName(ctx context.Context, id string) (string, error) {
	type answer struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	list, _, err := listPage[answer](ctx, gw, "listNetworkACLLists", "networkacllist", byID(id))
	if err != nil {
		return "", err
	}
	for _, l := range list {
		if l.ID == id {
			return l.Name, nil
		}
	}
	return "", outcome.Classify(outcome.ErrNotFound, fmt.Errorf("network ACL list %s is not visible to the CCM's account", id))
}

// aclItems lists the items of a network ACL list (ListNetworkACLsParams).
func (gw *gateway) aclItems(ctx context.Context, aclID string) ([]opening, error) {
	list, err := listAll[aclAnswer](ctx, gw, "listNetworkACLs", "networkacl", func() (params, error) {
		p := params{}
		p.set("aclid", aclID)
		p.setBool("listall", true)
		return p, nil
	})
	return convert(list, toACLItem), err
}

// aclAnswer is a network ACL item as the server answers it
// (NetworkACLItemResponse: the ports are strings).
type aclAnswer struct {
	ID       string `json:"id"`
	Protocol string `json:"protocol"`
	Start    string `json:"startport"`
	End      string `json:"endport"`
	CIDRs    string `json:"cidrlist"`
	Action   string `json:"action"`
	Traffic  string `json:"traffictype"`
	Tags     []tag  `json:"tags"`
	Reason   string `json:"reason"`
}

// toACLItem is a network ACL item as the CCM uses it.
func toACLItem(a aclAnswer) opening {
	start, _ := strconv.Atoi(a.Start)
	end, _ := strconv.Atoi(a.End)
	return opening{ID: a.ID, Protocol: strings.ToLower(a.Protocol), Start: start, End: end, CIDRs: splitCIDRs(a.CIDRs),
		Action: a.Action, Traffic: a.Traffic, Tags: tagMap(a.Tags), Reason: a.Reason}
}

// createACLItem lets o in through a network ACL list, its reason o's
// (CreateNetworkACLParams; servers before 4.15 ignore reason).
func (gw *gateway) createACLItem(ctx context.Context, aclID string, o opening) (id, job string, err error) {
	p := params{}
	p.set("protocol", o.Protocol)
	p.set("aclid", aclID)
	p.set("action", aclAction)
	p.set("traffictype", aclTraffic)
	p.setInt("startport", o.Start)
	p.setInt("endport", o.End)
	p.setList("cidrlist", o.CIDRs)
	if o.Reason != "" {
		p.set("reason", o.Reason)
	}
	r, err := gw.change(ctx, "createNetworkACL", p)
	return r.ID, r.JobID, err
}

func (gw *gateway) deleteACLItem(ctx context.Context, id string) (string, error) {
	return gw.job(ctx, "deleteNetworkACL", id)
}

// healthCheck is a rule's health-check policy (LBHealthCheckPolicyResponse's
// healthcheckpolicy; the server spells thresshold so).
type healthCheck struct {
	ID        string `json:"id"`
	Path      string `json:"pingpath"`
	Interval  int    `json:"healthcheckinterval"`
	Timeout   int    `json:"responsetime"`
	Healthy   int    `json:"healthcheckthresshold"`
	Unhealthy int    `json:"unhealthcheckthresshold"`
}

// healthChecks is a rule's health-check policies (ListLBHealthCheckPoliciesParams).
func (gw *gateway) healthChecks(ctx context.Context, ruleID string) ([]healthCheck, error) {
	p := params{}
	p.set("lbruleid", ruleID)
	type answer struct {
		Policies []healthCheck `json:"healthcheckpolicy"`
	}
	list, _, err := listPage[answer](ctx, gw, "listLBHealthCheckPolicies", "lbhealthcheckpolicy", p)
	if err != nil {
		return nil, err
	}
	var out []healthCheck
	for _, pol := range list {
		out = append(out, pol.Policies...)
	}
	return out, nil
}

// createHealthCheck gives a rule the policy h (CreateLBHealthCheckPolicyParams).
func (gw *gateway) createHealthCheck(ctx context.Context, ruleID string, h healthCheck) (string, error) {
	p := params{}
	p.set("lbruleid", ruleID)
	p.set("pingpath", h.Path)
	p.setInt("intervaltime", h.Interval)
	p.setInt("responsetimeout", h.Timeout)
	p.setInt("healthythreshold", h.Healthy)
	p.setInt("unhealthythreshold", h.Unhealthy)
	r, err := gw.change(ctx, "createLBHealthCheckPolicy", p)
	return r.JobID, err
}

func (gw *gateway) deleteHealthCheck(ctx context.Context, id string) (string, error) {
	return gw.job(ctx, "deleteLBHealthCheckPolicy", id)
}

// jobAnswer is a job as the server answers it (AsyncJobResponse).
type jobAnswer struct {
	ID        string          `json:"jobid"`
	Status    int             `json:"jobstatus"`
	Cmd       string          `json:"cmd"`
	Result    json.RawMessage `json:"jobresult"`
	Code      int             `json:"jobresultcode"`
	Created   string          `json:"created"`
	Completed string          `json:"completed"`
}

// jobStatus is how a job went (QueryAsyncJobResultParams). cloudstack-go
// asks up to three times, half a second apart, whatever the error: not
// here, for the transport retries what is worth retrying within the
// caller's deadline, and a job not asked about now is asked next time.
func (gw *gateway) jobStatus(ctx context.Context, id string) (jobState, error) {
	p := params{}
	p.set("jobid", id)
	var r jobAnswer
	if err := gw.get(ctx, "queryAsyncJobResult", p, &r); err != nil {
		return jobState{}, err
	}
	return toJobState(r), nil
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

func toJobState(j jobAnswer) jobState {
	st := jobState{pending: j.Status == 0}
	switch j.Status {
	case 1:
		st.result = j.Result
	case 2:
		st.failure = jobFailure(j.Cmd, j.Result, j.Code)
	}
	if c, err := time.Parse(csDateLayout, j.Created); err == nil {
		st.created = c
		if d, err := time.Parse(csDateLayout, j.Completed); err == nil && j.Status != 0 && !d.Before(c) {
			st.took = d.Sub(c)
		}
	}
	return st
}

// csDateLayout is how the server writes dates ("2021-10-04T09:24:38+0000").
const csDateLayout = "2006-01-02T15:04:05-0700"

// jobsSince lists the account's jobs created at since or later
// (listAsyncJobs: one call for every job under way, however many)
// (ListAsyncJobsParams).
func (gw *gateway) jobsSince(ctx context.Context, since time.Time) (map[string]jobState, error) {
	list, err := listAll[jobAnswer](ctx, gw, "listAsyncJobs", "asyncjobs", func() (params, error) {
		p := params{}
		p.set("startdate", since.UTC().Format(csDateLayout))
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]jobState, len(list))
	for _, j := range list {
		out[j.ID] = toJobState(j)
	}
	return out, nil
}

// countVisible is how many objects command lists with the parameters p
// (made with err), from a page of one: the doctor's harmless read.
func (gw *gateway) countVisible(ctx context.Context, command string, p params, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	p.setPage(1, 1)
	var r struct {
		Count int `json:"count"`
	}
	err = gw.get(ctx, command, p, &r)
	return r.Count, err
}

// machinesVisible, addressesVisible and rulesVisible count what the keys see.
func (gw *gateway) machinesVisible(ctx context.Context) (int, error) {
	p, err := gw.vmParams(ctx)
	return gw.countVisible(ctx, "listVirtualMachines", p, err)
}

func (gw *gateway) addressesVisible(ctx context.Context) (int, error) {
	p, err := gw.listed(ctx)
	return gw.countVisible(ctx, "listPublicIpAddresses", p, err)
}

func (gw *gateway) rulesVisible(ctx context.Context) (int, error) {
	p, err := gw.listed(ctx)
	return gw.countVisible(ctx, "listLoadBalancerRules", p, err)
}
