package csapi

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

// Machine is the part of a virtual machine the CCM uses (listVirtualMachines'
// UserVmResponse).
type Machine struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	Zone     string `json:"zonename"`
	Offering string `json:"serviceofferingname"`
	PublicIP string `json:"publicip"`
	NICs     []NIC  `json:"nic"`
}

// NIC is a machine's network interface: its addresses and network.
type NIC struct {
	IP      string `json:"ipaddress"`
	IP6     string `json:"ip6address"`
	Network string `json:"networkid"`
	Default bool   `json:"isdefault"`
}

// DefaultNIC is the machine's default NIC, else its first; none (zero) when
// it has no NIC.
func (m Machine) DefaultNIC() NIC {
	for _, n := range m.NICs {
		if n.Default {
			return n
		}
	}
	if len(m.NICs) > 0 {
		return m.NICs[0]
	}
	return NIC{}
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
func (cl *Client) change(ctx context.Context, command string, p params) (async, error) {
	var r async
	err := cl.post(ctx, command, p, &r)
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
func listPage[T any](ctx context.Context, cl *Client, command, key string, p params) ([]T, int, error) {
	l := listAnswer[T]{key: key}
	if err := cl.get(ctx, command, p, &l); err != nil {
		return nil, 0, err
	}
	return l.items, l.count, nil
}

// listAll is every page of command's answer, asked with the parameters
// query makes (the page set on them).
func listAll[T any](ctx context.Context, cl *Client, command, key string, query func() (params, error)) ([]T, error) {
	return pages(cl, func(page, size int) ([]T, int, error) {
		p, err := query()
		if err != nil {
			return nil, 0, err
		}
		p.setPage(page, size)
		return listPage[T](ctx, cl, command, key, p)
	})
}

// listed is the params of a listing of the account's and its projects'
// objects (listall=true), in the project when one is configured.
func (cl *Client) listed(ctx context.Context) (params, error) {
	project, err := cl.ProjectID(ctx)
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
func (cl *Client) vmParams(ctx context.Context) (params, error) {
	p, err := cl.listed(ctx)
	if err != nil {
		return nil, err
	}
	p.setList("details", []string{"min", "nics"})
	return p, nil
}

// Machines lists every virtual machine, page by page (the peer asks for one
// page, and misses machines beyond the server's default.page.size).
func (cl *Client) Machines(ctx context.Context) ([]Machine, error) {
	return listAll[Machine](ctx, cl, "listVirtualMachines", "virtualmachine", func() (params, error) { return cl.vmParams(ctx) })
}

// Machine looks a virtual machine up by id. found is false only when the
// server answers that there is none: an empty list (an expunged machine, or a
// destroyed one to a user's keys) or 431 for an id that names nothing.
func (cl *Client) Machine(ctx context.Context, id string) (Machine, bool, error) {
	p, err := cl.vmParams(ctx)
	if err != nil {
		return Machine{}, false, err
	}
	p.set("id", id)
	list, _, err := listPage[Machine](ctx, cl, "listVirtualMachines", "virtualmachine", p)
	if err != nil {
		if isNotFound(err) {
			return Machine{}, false, nil
		}
		return Machine{}, false, err
	}
	for _, v := range list {
		if v.ID == id {
			return v, true, nil
		}
	}
	return Machine{}, false, nil
}

// MachinesNamed lists the virtual machines named name (the server compares
// names without case; older servers match a part of the name, so the names
// are compared here again).
func (cl *Client) MachinesNamed(ctx context.Context, name string) ([]Machine, error) {
	p, err := cl.vmParams(ctx)
	if err != nil {
		return nil, err
	}
	p.set("name", name)
	list, _, err := listPage[Machine](ctx, cl, "listVirtualMachines", "virtualmachine", p)
	if err != nil {
		return nil, err
	}
	var out []Machine
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

// Address is a public IP address (listPublicIpAddresses' IPAddressResponse).
type Address struct {
	ID      string `json:"id"`
	IP      string `json:"ipaddress"`
	State   string `json:"state"`
	Network string `json:"associatednetworkid"`
	VPC     string `json:"vpcid"`
	// Allocated is when it was associated (the server's date; "" when free).
	Allocated string            `json:"allocated"`
	Tags      map[string]string `json:"-"`
	// SourceNAT, StaticNAT: the network's own address, or one mapped to a
	// machine; never a load balancer's.
	SourceNAT bool `json:"issourcenat"`
	StaticNAT bool `json:"isstaticnat"`
}

// addressAnswer is an address as the server answers it, its tags a list.
type addressAnswer struct {
	Address
	Tags []tag `json:"tags"`
}

// tag is a resource tag as the server answers it (ResourceTagResponse).
type tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func toAddress(a addressAnswer) Address {
	a.Address.Tags = tagMap(a.Tags)
	return a.Address
}

// Associated is the address an associateIpAddress job's result names.
func Associated(result json.RawMessage) (Address, bool) {
	var r struct {
		Address *addressAnswer `json:"ipaddress"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.Address == nil || r.Address.ID == "" {
		return Address{}, false
	}
	return toAddress(*r.Address), true
}

// CreatedRule is the rule a createLoadBalancerRule job's result holds
// (CreateLoadBalancerRuleCmd answers a LoadBalancerResponse).
func CreatedRule(result json.RawMessage) (Rule, bool) {
	var r struct {
		Rule *ruleAnswer `json:"loadbalancer"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.Rule == nil || r.Rule.ID == "" || r.Rule.AddressID == "" {
		return Rule{}, false
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
func (cl *Client) addresses(ctx context.Context, p params) ([]Address, int, error) {
	list, count, err := listPage[addressAnswer](ctx, cl, "listPublicIpAddresses", "publicipaddress", p)
	return convert(list, toAddress), count, err
}

// AddressesTagged lists the public addresses carrying every tag of tags
// (nil: every allocated address).
func (cl *Client) AddressesTagged(ctx context.Context, tags map[string]string) ([]Address, error) {
	return pages(cl, func(page, size int) ([]Address, int, error) {
		p, err := cl.listed(ctx)
		if err != nil {
			return nil, 0, err
		}
		if len(tags) > 0 {
			p.setTags(tags)
		}
		p.setPage(page, size)
		return cl.addresses(ctx, p)
	})
}

// Address looks a public address up by id.
func (cl *Client) Address(ctx context.Context, id string) (Address, bool, error) {
	p, err := cl.listed(ctx)
	if err != nil {
		return Address{}, false, err
	}
	p.set("id", id)
	list, _, err := cl.addresses(ctx, p)
	if err != nil {
		if isNotFound(err) {
			return Address{}, false, nil
		}
		return Address{}, false, err
	}
	for _, a := range list {
		if a.ID == id {
			return a, true, nil
		}
	}
	return Address{}, false, nil
}

// AddressOf looks up a public address by its IP, free ones included (state
// Free: no one holds it).
func (cl *Client) AddressOf(ctx context.Context, ip string) (Address, bool, error) {
	p, err := cl.listed(ctx)
	if err != nil {
		return Address{}, false, err
	}
	p.set("ipaddress", ip)
	p.setBool("allocatedonly", false)
	list, _, err := cl.addresses(ctx, p)
	if err != nil {
		return Address{}, false, err
	}
	for _, a := range list {
		if a.IP == ip {
			return a, true, nil
		}
	}
	return Address{}, false, nil
}

// Associate acquires a public address for the guest network (or its VPC),
// the one asked for when ip is set (AssociateIpAddressParams).
func (cl *Client) Associate(ctx context.Context, n Network, ip string) (id, job string, err error) {
	project, err := cl.ProjectID(ctx)
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
	r, err := cl.change(ctx, "associateIpAddress", p)
	return r.ID, r.JobID, err
}

// byID is the parameters of a command on one object (its id).
func byID(id string) params {
	p := params{}
	p.set("id", id)
	return p
}

// job is the job of a change of one object (its id).
func (cl *Client) job(ctx context.Context, command, id string) (string, error) {
	r, err := cl.change(ctx, command, byID(id))
	return r.JobID, err
}

// Disassociate releases a public address (DisassociateIpAddressParams).
func (cl *Client) Disassociate(ctx context.Context, id string) (string, error) {
	return cl.job(ctx, "disassociateIpAddress", id)
}

// Tag puts tags on resources of one type (PublicIpAddress, LoadBalancer)
// (CreateTagsParams).
func (cl *Client) Tag(ctx context.Context, resourceType string, ids []string, tags map[string]string) (string, error) {
	p := params{}
	p.setList("resourceids", ids)
	p.set("resourcetype", resourceType)
	p.setTags(tags)
	r, err := cl.change(ctx, "createTags", p)
	return r.JobID, err
}

// Network is the guest network, and how it filters traffic: firewall rules
// (an isolated network) or network ACL items (a VPC tier).
type Network struct {
	ID, VPC, ACL string
	Firewall     bool
}

// Network is the guest network id (ListNetworksParams).
func (cl *Client) Network(ctx context.Context, id string) (Network, error) {
	p, err := cl.listed(ctx)
	if err != nil {
		return Network{}, err
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
	list, _, err := listPage[answer](ctx, cl, "listNetworks", "network", p)
	if err != nil {
		return Network{}, err
	}
	for _, n := range list {
		if n.ID != id {
			continue
		}
		out := Network{ID: n.ID, VPC: n.VPC, ACL: n.ACL}
		for _, s := range n.Services {
			if s.Name == "Firewall" {
				out.Firewall = true
			}
		}
		return out, nil
	}
	return Network{}, outcome.Classify(outcome.ErrNotFound, fmt.Errorf("network %s is not visible to the CCM's account", id))
}

// Rule is a load balancer rule.
type Rule struct {
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

func toRule(r ruleAnswer) Rule {
	pub, _ := strconv.Atoi(r.PublicPort)
	priv, _ := strconv.Atoi(r.PrivatePort)
	return Rule{ID: r.ID, Name: r.Name, Algorithm: r.Algorithm, Protocol: strings.ToLower(r.Protocol), State: r.State,
		AddressID: r.AddressID, IP: r.IP, Network: r.Network, PublicPort: pub, PrivatePort: priv,
		CIDRs: SplitCIDRs(r.CIDRs)}
}

// SplitCIDRs reads a cidrlist, which servers answer space-separated (LB
// rules) or comma-separated (firewall rules, older servers).
func SplitCIDRs(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

// someRules is one page of listLoadBalancerRules (ListLoadBalancerRulesParams).
func (cl *Client) someRules(ctx context.Context, p params) ([]Rule, int, error) {
	list, count, err := listPage[ruleAnswer](ctx, cl, "listLoadBalancerRules", "loadbalancerrule", p)
	return convert(list, toRule), count, err
}

// Rules lists the load balancer rules; keyword ("" for all) narrows the
// listing on the server, which matches it as a part of the name or the
// description: callers compare names exactly.
func (cl *Client) Rules(ctx context.Context, keyword string) ([]Rule, error) {
	return pages(cl, func(page, size int) ([]Rule, int, error) {
		p, err := cl.listed(ctx)
		if err != nil {
			return nil, 0, err
		}
		if keyword != "" {
			p.set("keyword", keyword)
		}
		p.setPage(page, size)
		return cl.someRules(ctx, p)
	})
}

// RulesOn lists the load balancer rules of a public address.
func (cl *Client) RulesOn(ctx context.Context, addressID string) ([]Rule, error) {
	p, err := cl.listed(ctx)
	if err != nil {
		return nil, err
	}
	p.set("publicipid", addressID)
	list, _, err := cl.someRules(ctx, p)
	return list, err
}

// CreateRule creates a rule on its address (in the address's project)
// (CreateLoadBalancerRuleParams; the firewall is opened apart).
func (cl *Client) CreateRule(ctx context.Context, r Rule) (id, job string, err error) {
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
	resp, err := cl.change(ctx, "createLoadBalancerRule", p)
	return resp.ID, resp.JobID, err
}

// UpdateRule changes a rule's algorithm (its protocol and ports cannot be
// changed in place) (UpdateLoadBalancerRuleParams).
func (cl *Client) UpdateRule(ctx context.Context, id, algorithm string) (string, error) {
	p := byID(id)
	p.set("algorithm", algorithm)
	r, err := cl.change(ctx, "updateLoadBalancerRule", p)
	return r.JobID, err
}

// DeleteRule deletes a load balancer rule (DeleteLoadBalancerRuleParams).
func (cl *Client) DeleteRule(ctx context.Context, id string) (string, error) {
	return cl.job(ctx, "deleteLoadBalancerRule", id)
}

// RuleMachines is the ids of a rule's machines
// (ListLoadBalancerRuleInstancesParams).
func (cl *Client) RuleMachines(ctx context.Context, id string) ([]string, error) {
	type answer struct {
		ID string `json:"id"`
	}
	list, err := listAll[answer](ctx, cl, "listLoadBalancerRuleInstances", "loadbalancerruleinstance",
		func() (params, error) { return byID(id), nil })
	return convert(list, func(v answer) string { return v.ID }), err
}

// Assign and Unassign add machines to a rule and take them off
// (AssignToLoadBalancerRuleParams, RemoveFromLoadBalancerRuleParams).
func (cl *Client) Assign(ctx context.Context, id string, machines []string) (string, error) {
	return cl.members(ctx, "assignToLoadBalancerRule", id, machines)
}

// Unassign takes machines off a rule.
func (cl *Client) Unassign(ctx context.Context, id string, machines []string) (string, error) {
	return cl.members(ctx, "removeFromLoadBalancerRule", id, machines)
}

func (cl *Client) members(ctx context.Context, command, id string, machines []string) (string, error) {
	p := byID(id)
	p.setList("virtualmachineids", machines)
	r, err := cl.change(ctx, command, p)
	return r.JobID, err
}

// Opening is a firewall rule or a network ACL item: traffic of a protocol to a
// port range let in from some sources.
type Opening struct {
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

// FirewallRules lists the firewall rules of an address ("": of every
// address the account or project has, page by page) (ListFirewallRulesParams).
func (cl *Client) FirewallRules(ctx context.Context, addressID string) ([]Opening, error) {
	project, err := cl.ProjectID(ctx)
	if err != nil {
		return nil, err
	}
	list, err := listAll[firewallAnswer](ctx, cl, "listFirewallRules", "firewallrule", func() (params, error) {
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
func toFirewallOpening(f firewallAnswer) Opening {
	return Opening{ID: f.ID, Protocol: strings.ToLower(f.Protocol), Start: f.Start, End: f.End,
		CIDRs: SplitCIDRs(f.CIDRs), AddressID: f.AddressID}
}

// CreateFirewallRule opens o on an address (CreateFirewallRuleParams).
func (cl *Client) CreateFirewallRule(ctx context.Context, addressID string, o Opening) (string, error) {
	p := params{}
	p.set("ipaddressid", addressID)
	p.set("protocol", o.Protocol)
	p.setInt("startport", o.Start)
	p.setInt("endport", o.End)
	p.setList("cidrlist", o.CIDRs)
	r, err := cl.change(ctx, "createFirewallRule", p)
	return r.JobID, err
}

// DeleteFirewallRule deletes a firewall rule (DeleteFirewallRuleParams).
func (cl *Client) DeleteFirewallRule(ctx context.Context, id string) (string, error) {
	return cl.job(ctx, "deleteFirewallRule", id)
}

// ACLListName is the name of a network ACL list (default_allow and
// default_deny are the server's own, which nobody may change)
// (ListNetworkACLListsParams).
func (cl *Client) ACLListName(ctx context.Context, id string) (string, error) {
	type answer struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	list, _, err := listPage[answer](ctx, cl, "listNetworkACLLists", "networkacllist", byID(id))
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

// ACLItems lists the items of a network ACL list (ListNetworkACLsParams).
func (cl *Client) ACLItems(ctx context.Context, aclID string) ([]Opening, error) {
	list, err := listAll[aclAnswer](ctx, cl, "listNetworkACLs", "networkacl", func() (params, error) {
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
func toACLItem(a aclAnswer) Opening {
	start, _ := strconv.Atoi(a.Start)
	end, _ := strconv.Atoi(a.End)
	return Opening{ID: a.ID, Protocol: strings.ToLower(a.Protocol), Start: start, End: end, CIDRs: SplitCIDRs(a.CIDRs),
		Action: a.Action, Traffic: a.Traffic, Tags: tagMap(a.Tags), Reason: a.Reason}
}

// ACLAction and ACLTraffic are what every item the CCM makes is: an item
// that lets traffic in.
const (
	ACLAction  = "Allow"
	ACLTraffic = "Ingress"
)

// CreateACLItem lets o in through a network ACL list, its reason o's
// (CreateNetworkACLParams; servers before 4.15 ignore reason).
func (cl *Client) CreateACLItem(ctx context.Context, aclID string, o Opening) (id, job string, err error) {
	p := params{}
	p.set("protocol", o.Protocol)
	p.set("aclid", aclID)
	p.set("action", ACLAction)
	p.set("traffictype", ACLTraffic)
	p.setInt("startport", o.Start)
	p.setInt("endport", o.End)
	p.setList("cidrlist", o.CIDRs)
	if o.Reason != "" {
		p.set("reason", o.Reason)
	}
	r, err := cl.change(ctx, "createNetworkACL", p)
	return r.ID, r.JobID, err
}

// DeleteACLItem deletes a network ACL item (DeleteNetworkACLParams).
func (cl *Client) DeleteACLItem(ctx context.Context, id string) (string, error) {
	return cl.job(ctx, "deleteNetworkACL", id)
}

// HealthCheck is a rule's health-check policy (LBHealthCheckPolicyResponse's
// healthcheckpolicy; the server spells thresshold so).
type HealthCheck struct {
	ID        string `json:"id"`
	Path      string `json:"pingpath"`
	Interval  int    `json:"healthcheckinterval"`
	Timeout   int    `json:"responsetime"`
	Healthy   int    `json:"healthcheckthresshold"`
	Unhealthy int    `json:"unhealthcheckthresshold"`
}

// HealthChecks is a rule's health-check policies (ListLBHealthCheckPoliciesParams).
func (cl *Client) HealthChecks(ctx context.Context, ruleID string) ([]HealthCheck, error) {
	p := params{}
	p.set("lbruleid", ruleID)
	type answer struct {
		Policies []HealthCheck `json:"healthcheckpolicy"`
	}
	list, _, err := listPage[answer](ctx, cl, "listLBHealthCheckPolicies", "lbhealthcheckpolicy", p)
	if err != nil {
		return nil, err
	}
	var out []HealthCheck
	for _, pol := range list {
		out = append(out, pol.Policies...)
	}
	return out, nil
}

// CreateHealthCheck gives a rule the policy h (CreateLBHealthCheckPolicyParams).
func (cl *Client) CreateHealthCheck(ctx context.Context, ruleID string, h HealthCheck) (string, error) {
	p := params{}
	p.set("lbruleid", ruleID)
	p.set("pingpath", h.Path)
	p.setInt("intervaltime", h.Interval)
	p.setInt("responsetimeout", h.Timeout)
	p.setInt("healthythreshold", h.Healthy)
	p.setInt("unhealthythreshold", h.Unhealthy)
	r, err := cl.change(ctx, "createLBHealthCheckPolicy", p)
	return r.JobID, err
}

// DeleteHealthCheck deletes a health-check policy (DeleteLBHealthCheckPolicyParams).
func (cl *Client) DeleteHealthCheck(ctx context.Context, id string) (string, error) {
	return cl.job(ctx, "deleteLBHealthCheckPolicy", id)
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

// JobStatus is how a job went (QueryAsyncJobResultParams). cloudstack-go
// asks up to three times, half a second apart, whatever the error: not
// here, for the transport retries what is worth retrying within the
// caller's deadline, and a job not asked about now is asked next time.
func (cl *Client) JobStatus(ctx context.Context, id string) (JobState, error) {
	p := params{}
	p.set("jobid", id)
	var r jobAnswer
	if err := cl.get(ctx, "queryAsyncJobResult", p, &r); err != nil {
		return JobState{}, err
	}
	return toJobState(r), nil
}

// JobState is how a job went: pending, done with its result, or failed
// (failure); created is when the server took it (its clock, to the second;
// zero when not known), took how long it ran there (0 when not known).
type JobState struct {
	Pending bool
	Failure error
	Result  json.RawMessage
	Created time.Time
	Took    time.Duration
}

func toJobState(j jobAnswer) JobState {
	st := JobState{Pending: j.Status == 0}
	switch j.Status {
	case 1:
		st.Result = j.Result
	case 2:
		st.Failure = jobFailure(j.Cmd, j.Result, j.Code)
	}
	if c, err := time.Parse(DateLayout, j.Created); err == nil {
		st.Created = c
		if d, err := time.Parse(DateLayout, j.Completed); err == nil && j.Status != 0 && !d.Before(c) {
			st.Took = d.Sub(c)
		}
	}
	return st
}

// DateLayout is how the server writes dates ("2021-10-04T09:24:38+0000").
const DateLayout = "2006-01-02T15:04:05-0700"

// JobsSince lists the account's jobs created at since or later
// (listAsyncJobs: one call for every job under way, however many)
// (ListAsyncJobsParams).
func (cl *Client) JobsSince(ctx context.Context, since time.Time) (map[string]JobState, error) {
	list, err := listAll[jobAnswer](ctx, cl, "listAsyncJobs", "asyncjobs", func() (params, error) {
		p := params{}
		p.set("startdate", since.UTC().Format(DateLayout))
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]JobState, len(list))
	for _, j := range list {
		out[j.ID] = toJobState(j)
	}
	return out, nil
}

// countVisible is how many objects command lists with the parameters p
// (made with err), from a page of one: the doctor's harmless read.
func (cl *Client) countVisible(ctx context.Context, command string, p params, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	p.setPage(1, 1)
	var r struct {
		Count int `json:"count"`
	}
	err = cl.get(ctx, command, p, &r)
	return r.Count, err
}

// MachinesVisible counts the virtual machines the keys see.
func (cl *Client) MachinesVisible(ctx context.Context) (int, error) {
	p, err := cl.vmParams(ctx)
	return cl.countVisible(ctx, "listVirtualMachines", p, err)
}

// AddressesVisible counts the public addresses the keys see.
func (cl *Client) AddressesVisible(ctx context.Context) (int, error) {
	p, err := cl.listed(ctx)
	return cl.countVisible(ctx, "listPublicIpAddresses", p, err)
}

// RulesVisible counts the load balancer rules the keys see.
func (cl *Client) RulesVisible(ctx context.Context) (int, error) {
	p, err := cl.listed(ctx)
	return cl.countVisible(ctx, "listLoadBalancerRules", p, err)
}
