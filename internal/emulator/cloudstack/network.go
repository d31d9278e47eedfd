package cloudstack

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The guest network, its firewall rules (an isolated network) or its network
// ACL (a VPC tier), as the peer reads them (../shared/facts/cloudstack-api.md
// §3–4): which path a port takes is decided by the network's services
// (Firewall, or NetworkACL); firewall rules carry start and end ports as JSON
// numbers and a comma-separated cidrlist, ACL items as JSON strings.

func (e *Emulator) networkView() map[string]any {
	services := []any{svc("Dhcp"), svc("Dns"), svc("UserData"), svc("SourceNat"), svc("StaticNat"), svc("PortForwarding"),
		map[string]any{"name": "Lb", "capability": []any{
			capability("SupportedLBIsolation", "dedicated"), capability("SupportedLbAlgorithms", "roundrobin,leastconn,source"),
			capability("SupportedProtocols", "tcp, udp, tcp-proxy"), capability("LbSchemes", "Public"),
		}}}
	m := map[string]any{
		"id": e.fx.NetworkID, "name": e.fx.NetworkName, "displaytext": e.fx.NetworkName, "state": "Implemented",
		"traffictype": "Guest", "type": "Isolated", "broadcastdomaintype": "Vlan", "acltype": "Account",
		"cidr": e.machineNet.String(), "gateway": e.machineNet.Addr().Next().String(), "netmask": netmask(e.machineNet.Bits()),
		"zoneid": e.fx.ZoneID, "zonename": e.fx.ZoneName, "account": e.fx.AccountName, "domainid": e.fx.DomainID, "domain": "ROOT",
		"issystem": false, "related": e.fx.NetworkID, "tags": []any{},
	}
	if e.opts.VPC {
		services = append(services, svc("NetworkACL"))
		m["vpcid"], m["aclid"] = e.fx.VPCID, e.fx.ACLListID
	} else {
		services = append(services, svc("Firewall"))
	}
	m["service"] = services
	if e.opts.InProject {
		m["projectid"], m["project"] = e.fx.ProjectID, e.fx.ProjectName
	}
	return m
}

func svc(name string) map[string]any { return map[string]any{"name": name, "capability": []any{}} }

func capability(name, value string) map[string]any {
	return map[string]any{"name": name, "value": value, "canchooseservicecapability": false}
}

func (e *Emulator) listNetworks(_ *account, p url.Values, _ time.Time) (any, *apiError) {
	if err := e.checkProject("listNetworks", p); err != nil {
		return nil, err
	}
	if id := p.Get("id"); id != "" && id != e.fx.NetworkID {
		return nil, invalidID("listNetworks", id)
	}
	return list("network", 1, []any{e.networkView()}), nil
}

type firewallRule struct {
	id, protocol, ipID string
	start, end         int
	cidrs              []string
}

func (e *Emulator) firewallView(f *firewallRule) map[string]any {
	m := map[string]any{"id": f.id, "protocol": f.protocol, "startport": f.start, "endport": f.end,
		"ipaddressid": f.ipID, "networkid": e.fx.NetworkID, "cidrlist": strings.Join(f.cidrs, ","),
		"state": "Active", "fordisplay": true, "tags": []any{}}
	if ip := e.ips.At(f.ipID); ip != nil {
		m["ipaddress"] = ip.address
	}
	return m
}

// cidrList reads a comma-separated cidrlist (0.0.0.0/0 when absent), as a
// firewall rule or an ACL item takes it: an empty entry is no CIDR.
func cidrList(p url.Values) ([]string, *apiError) {
	v, ok := p["cidrlist"]
	if !ok || strings.TrimSpace(v[0]) == "" {
		return []string{"0.0.0.0/0"}, nil
	}
	return splitCIDRs(v[0], false)
}

// splitCIDRs reads the CIDRs of a comma-separated list, each trimmed; an
// empty entry is skipped when skipEmpty (a load balancer rule's reading),
// else refused.
func splitCIDRs(list string, skipEmpty bool) ([]string, *apiError) {
	var out []string
	for _, c := range strings.Split(list, ",") {
		c = strings.TrimSpace(c)
		if c == "" && skipEmpty {
			continue
		}
		if _, err := netip.ParsePrefix(c); err != nil {
			return nil, &apiError{code: codeParamError, cs: csInvalidValue, text: fmt.Sprintf("Source cidrs formatting error %s", c)}
		}
		out = append(out, c)
	}
	return out, nil
}

func ports(command string, p url.Values) (int, int, *apiError) {
	start, err1 := strconv.Atoi(p.Get("startport"))
	end, err2 := strconv.Atoi(p.Get("endport"))
	if p.Get("endport") == "" {
		end, err2 = start, nil
	}
	if err1 != nil || err2 != nil || start < 1 || end > 65535 || start > end {
		return 0, 0, paramError("Unable to execute API command %s due to invalid value: startport %q, endport %q", strings.ToLower(command), p.Get("startport"), p.Get("endport"))
	}
	return start, end, nil
}

// match is what a firewall rule or a network ACL item matches: a protocol,
// a port range and source CIDRs.
type match struct {
	proto      string
	start, end int
	cidrs      []string
}

// parseMatch reads a rule's protocol (tcp, udp, icmp or all; protocolMsg
// begins the refusal of another, as each command words it), its ports and
// its CIDRs.
func parseMatch(command string, p url.Values, protocolMsg string) (match, *apiError) {
	m := match{proto: strings.ToLower(p.Get("protocol"))}
	if !slices.Contains([]string{"tcp", "udp", "icmp", "all"}, m.proto) {
		return m, &apiError{code: codeParamError, cs: csInvalidValue, text: protocolMsg + p.Get("protocol")}
	}
	var aerr *apiError
	if m.start, m.end, aerr = ports(command, p); aerr != nil {
		return m, aerr
	}
	m.cidrs, aerr = cidrList(p)
	return m, aerr
}

func (e *Emulator) createFirewallRule(a *account, p url.Values, now time.Time) (any, *apiError) {
	if e.opts.VPC {
		return nil, &apiError{code: codeParamError, cs: csInvalidValue, text: "Firewall service is not supported in the network of the VPC; use network ACLs"}
	}
	ip, ok := e.ips.Get(p.Get("ipaddressid"))
	if !ok {
		return nil, invalidID("createFirewallRule", p.Get("ipaddressid"))
	}
	if ip.state != "Allocated" {
		// FirewallManagerImpl: the address must be readyToUse (Allocated).
		return nil, paramError("Ip address id=%s is not ready for firewall rules yet", ip.id)
	}
	m, aerr := parseMatch("createFirewallRule", p, "Invalid protocol ")
	if aerr != nil {
		return nil, aerr
	}
	f := &firewallRule{id: e.newID(), protocol: m.proto, ipID: ip.id, start: m.start, end: m.end, cidrs: m.cidrs}
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.firewall.CreateFirewallRuleCmd", "FirewallRule", f.id, now, func() (any, error) {
		e.firewall = append(e.firewall, f)
		return map[string]any{"firewallrule": e.firewallView(f)}, nil
	})
	return map[string]any{"id": f.id, "jobid": job}, nil
}

// listFirewallRules lists the firewall rules of the caller's scope (its
// account's addresses, or with projectid a project's), as
// listLoadBalancerRules does; one named by id or address is listed as it is.
func (e *Emulator) listFirewallRules(_ *account, p url.Values, _ time.Time) (any, *apiError) {
	has := func(id string) bool {
		return slices.ContainsFunc(e.firewall, func(f *firewallRule) bool { return f.id == id })
	}
	return e.listed("listFirewallRules", "firewallrule", p, has, func() []any {
		ipID, id := p.Get("ipaddressid"), p.Get("id")
		named := ipID != "" || id != ""
		return views(e.firewall, func(f *firewallRule) bool {
			if (ipID != "" && ipID != f.ipID) || (id != "" && id != f.id) {
				return false
			}
			ip := e.ips.At(f.ipID)
			return named || ip == nil || e.inScope(p, ip.projectID)
		}, e.firewallView)
	})
}

func (e *Emulator) deleteFirewallRule(a *account, p url.Values, now time.Time) (any, *apiError) {
	return deleteByJob(e, a, p, now, "deleteFirewallRule", "org.apache.cloudstack.api.command.user.firewall.DeleteFirewallRuleCmd", "FirewallRule",
		&e.firewall, func(f *firewallRule) string { return f.id })
}

// deleteByJob answers a delete command (command) of the object of *list
// the id parameter names: its job (cmd, of the object's kind) removes it,
// as CloudStack deletes asynchronously ({"jobid"}, the job's result
// {"success": true}).
func deleteByJob[T any](e *Emulator, a *account, p url.Values, now time.Time, command, cmd, kind string, list *[]*T, idOf func(*T) string) (any, *apiError) {
	i := slices.IndexFunc(*list, func(o *T) bool { return idOf(o) == p.Get("id") })
	if i < 0 {
		return nil, invalidID(command, p.Get("id"))
	}
	o := (*list)[i]
	job := e.startJob(a, cmd, kind, idOf(o), now, func() (any, error) {
		*list = slices.DeleteFunc(*list, func(x *T) bool { return x == o })
		e.forget(idOf(o))
		return map[string]any{"success": true}, nil
	})
	return map[string]any{"jobid": job}, nil
}

type aclItem struct {
	id, protocol, action, trafficType string
	// reason is the item's description (4.15+), as its creator gave it.
	reason             string
	start, end, number int
	cidrs              []string
	// state is Add from its creation, Active once its job has applied it.
	state string
}

func (e *Emulator) aclView(r *aclItem) map[string]any {
	return map[string]any{"id": r.id, "protocol": r.protocol, "startport": strconv.Itoa(r.start), "endport": strconv.Itoa(r.end),
		"traffictype": r.trafficType, "action": r.action, "number": r.number, "aclid": e.fx.ACLListID,
		"cidrlist": strings.Join(r.cidrs, ","), "state": r.state, "fordisplay": true, "tags": e.tagsOf(r.id), "reason": r.reason}
}

func (e *Emulator) listNetworkACLLists(_ *account, p url.Values, _ time.Time) (any, *apiError) {
	if !e.opts.VPC {
		return map[string]any{}, nil
	}
	if id := p.Get("id"); id != "" && id != e.fx.ACLListID {
		return nil, invalidID("listNetworkACLLists", id)
	}
	return list("networkacllist", 1, []any{map[string]any{"id": e.fx.ACLListID, "name": "k8s-acl", "description": "the cluster tier's ACL",
		"vpcid": e.fx.VPCID, "fordisplay": true}}), nil
}

func (e *Emulator) listNetworkACLs(_ *account, p url.Values, _ time.Time) (any, *apiError) {
	page, size, perr := e.paging(p)
	if perr != nil {
		return nil, perr
	}
	if !e.opts.VPC {
		return map[string]any{}, nil // a network without an ACL: an empty list
	}
	// The filters of the real API's listNetworkACLs that matter here: id,
	// aclid (the tier's one list).
	id, aclID := p.Get("id"), p.Get("aclid")
	var items []any
	for _, r := range e.acl {
		if (id == "" || r.id == id) && (aclID == "" || aclID == e.fx.ACLListID) {
			items = append(items, e.aclView(r))
		}
	}
	return pageOf("networkacl", items, page, size), nil
}

func (e *Emulator) createNetworkACL(a *account, p url.Values, now time.Time) (any, *apiError) {
	if !e.opts.VPC {
		return nil, &apiError{code: codeParamError, cs: csInvalidValue, text: "Network ACLs can only be created for networks of a VPC"}
	}
	if id := p.Get("aclid"); id != "" && id != e.fx.ACLListID {
		return nil, invalidID("createNetworkACL", id)
	}
	// The peer sends "tcp-proxy" for PROXY-protocol Services (a latent bug),
	// which this refuses as the real API does.
	m, aerr := parseMatch("createNetworkACL", p, "Invalid protocol: ")
	if aerr != nil {
		return nil, aerr
	}
	action, traffic := p.Get("action"), p.Get("traffictype")
	if action == "" {
		action = "Allow"
	}
	if traffic == "" {
		traffic = "Ingress"
	}
	// CreateNetworkACLCmd is a BaseAsyncCreateCmd: its create() persists the
	// item (state Add) before the job's execute() applies it (Active), so the
	// item is listed, and can be tagged, at once.
	r := &aclItem{id: e.newID(), protocol: m.proto, action: action, trafficType: traffic, start: m.start, end: m.end, number: len(e.acl) + 1, cidrs: m.cidrs, state: "Add",
		reason: p.Get("reason")}
	e.acl = append(e.acl, r)
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.network.CreateNetworkACLCmd", "NetworkAcl", r.id, now, func() (any, error) {
		r.state = "Active"
		return map[string]any{"networkacl": e.aclView(r)}, nil
	})
	return map[string]any{"id": r.id, "jobid": job}, nil
}

func (e *Emulator) deleteNetworkACL(a *account, p url.Values, now time.Time) (any, *apiError) {
	return deleteByJob(e, a, p, now, "deleteNetworkACL", "org.apache.cloudstack.api.command.user.network.DeleteNetworkACLCmd", "NetworkAcl",
		&e.acl, func(r *aclItem) string { return r.id })
}
