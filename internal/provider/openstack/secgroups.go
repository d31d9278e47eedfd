package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Security groups ([LoadBalancer] manage-security-groups = true), as
// cloud-provider-openstack makes them (pkg/openstack/loadbalancer_sg.go): one
// group per Service, named lb-sg-<UID>-<namespace>-<name>, with an ingress rule
// per NodePort and protocol (and the healthCheckNodePort) from the member
// subnets (from the Service's source ranges with the ovn provider, which keeps
// the clients' addresses), attached to each member Node's port on those
// subnets. Ours beyond the peer's: the group is tagged with the Service's and
// the cluster's UIDs and only such a group (or the peer's, by its name, which
// holds the Service's UID) is ever changed; only the difference is written (the
// missing rules in one bulk call); a Node's port is written with
// If-Match on its revision, so a change made by someone else meanwhile is
// never lost, and the changes of every Service to one port within a moment go
// in one write; the group is deleted with the Service whatever became of its
// load balancer, and whether or not groups are managed now.

const (
	sgNamePrefix = "lb-sg-"
	// portWriteWindow: the changes of all Services to one port that arrive
	// within it go in one write (a Node that joins is added by every
	// Service's pass within a moment of each other).
	portWriteWindow = 300 * time.Millisecond
	// portWriteTries bounds the writes of one port when another writer's
	// change keeps making its revision stale.
	portWriteTries = 4
	// portWriters: how many ports are written at once.
	portWriters = 8
	// maxKnownPorts bounds the ports remembered as last written.
	maxKnownPorts = 20000
	// subnetsMaxAge: how old the list of subnets (whose CIDRs the rules open)
	// may be.
	subnetsMaxAge = 10 * time.Minute
)

// sgSpec is what a Service's security group must hold.
type sgSpec struct {
	nodePorts []sgPort // sorted
	hcPort    int      // healthCheckNodePort, 0: none
	servers   []string // the member Nodes' server IDs, sorted
	// Which Nodes the Service's members come from, and each member server's
	// Node labels: a Node that joins gets every Service's group at once.
	selector     labels.Selector
	serverLabels map[string]labels.Set
}

// sgPlacement is where a Service's group went at its last convergence: the
// Nodes its selector takes, the servers whose ports hold it, from which
// sources its rules let traffic in.
type sgPlacement struct {
	group    string
	selector labels.Selector
	servers  []string // sorted
	remotes  []string
}

type sgPort struct {
	proto string // Neutron's: tcp, udp, sctp
	port  int
}

func sgName(svc *v1.Service) string {
	n := fmt.Sprintf("%s%s-%s-%s", sgNamePrefix, svc.UID, svc.Namespace, svc.Name)
	if len(n) > 255 {
		n = n[:255]
	}
	return n
}

func ruleKey(r osapi.SecurityRule) osapi.RuleKey {
	return osapi.RuleKey{Ether: r.EtherType, Proto: strings.ToLower(r.Protocol), Remote: r.RemoteIPPrefix, Min: r.PortRangeMin, Max: r.PortRangeMax}
}

// wantedRules are the ingress rules of the Service's group, from these
// sources.
func (g *sgSpec) wantedRules(remotes []string) []osapi.RuleKey {
	var out []osapi.RuleKey
	add := func(proto string, port int) {
		for _, r := range remotes {
			ether := "IPv4"
			if p, err := netip.ParsePrefix(r); err == nil && p.Addr().Is6() {
				ether = "IPv6"
			}
			out = append(out, osapi.RuleKey{Ether: ether, Proto: proto, Remote: r, Min: port, Max: port})
		}
	}
	for _, p := range g.nodePorts {
		add(p.proto, p.port)
	}
	if g.hcPort != 0 {
		add("tcp", g.hcPort)
	}
	slices.SortFunc(out, func(a, b osapi.RuleKey) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return slices.Compact(out)
}

// memberSubnetCIDRs are the CIDRs of the subnets that hold the members'
// addresses (the member subnet, of each family): the load balancer's own
// addresses on them are where its traffic to the Nodes comes from.
func (st *steps) memberSubnetCIDRs(ctx context.Context, members []string) ([]string, error) {
	m := st.sgs
	find := func(all []string) []string {
		var out []string
		for _, cidr := range all {
			p, err := netip.ParsePrefix(cidr)
			if err != nil {
				continue
			}
			for _, a := range members {
				if ip, err := netip.ParseAddr(a); err == nil && p.Contains(ip) {
					out = append(out, p.Masked().String())
					break
				}
			}
		}
		sort.Strings(out)
		return slices.Compact(out)
	}
	m.mu.Lock()
	known, fresh := m.subnets, time.Since(m.subnetsAt) < subnetsMaxAge
	m.mu.Unlock()
	if found := find(known); fresh && (len(found) > 0 || len(members) == 0) {
		return found, nil
	}
	// A member on a subnet not seen yet: listed again (never under the lock
	// the port writes take).
	all, err := st.api.SubnetCIDRs(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing subnets: %w", err)
	}
	m.mu.Lock()
	m.subnets, m.subnetsAt = all, time.Now()
	m.mu.Unlock()
	return find(all), nil
}

// sgRemotes are the sources the Service's rules let in.
func (st *steps) sgRemotes(ctx context.Context, s lbSpec) ([]string, error) {
	if st.cfg.LoadBalancer.LBProvider == "ovn" {
		// OVN keeps the clients' addresses: the rules open the Service's
		// source ranges to the NodePorts.
		if len(s.allowedCIDRs) > 0 {
			return s.allowedCIDRs, nil
		}
		out := []string{"0.0.0.0/0"}
		if s.family == v1.IPv6Protocol || s.secondFamily == v1.IPv6Protocol {
			return append(out, "::/0"), nil // clients over IPv6 too
		}
		for _, m := range s.members {
			if ip, err := netip.ParseAddr(m); err == nil && ip.Is6() {
				return append(out, "::/0"), nil
			}
		}
		return out, nil
	}
	return st.memberSubnetCIDRs(ctx, s.members)
}

// findSG is the Service's security group, found by its name (ours carry the
// peer's name too): the one tagged with the Service's and this cluster's UIDs,
// else the peer's (untagged). A group tagged for another cluster or Service is
// never returned. One read.
func (st *steps) findSG(ctx context.Context, svc *v1.Service) (*osapi.SecurityGroup, error) {
	named, err := st.api.ListSecurityGroups(ctx, sgName(svc), "")
	if err != nil {
		return nil, fmt.Errorf("listing security groups: %w", err)
	}
	var ours, peers []osapi.SecurityGroup
	for _, g := range named {
		tagged := false
		for _, t := range g.Tags {
			tagged = tagged || strings.HasPrefix(t, tagCluster) || strings.HasPrefix(t, tagService)
		}
		switch {
		case slices.Contains(g.Tags, tagService+string(svc.UID)) && slices.Contains(g.Tags, tagCluster+st.cluster.Get()):
			ours = append(ours, g)
		case !tagged:
			peers = append(peers, g)
		}
	}
	for _, set := range [][]osapi.SecurityGroup{ours, peers} {
		switch len(set) {
		case 0:
			continue
		case 1:
			return &set[0], nil
		}
		return nil, fmt.Errorf("%d security groups are named %s: resolve by hand", len(set), sgName(svc))
	}
	return nil, nil
}

// convergeSG makes the Service's security group as the spec asks: the group
// (created, or the peer's adopted by tagging it), its rules (the missing in one
// bulk call, the extra deleted), and its place on the member Nodes' ports (and
// on no other). A Service whose groups are not managed has none: one left from
// before is removed. What it changed is logged.
func (st *steps) convergeSG(ctx context.Context, svc *v1.Service, s lbSpec) error {
	if s.sg == nil {
		// Groups not managed (any more): one left from when they were goes,
		// looked for once a Service in this process (a change of the setting
		// restarts it).
		if _, seen := st.sgs.unmanagedChecked.LoadOrStore(svc.UID, true); seen {
			return nil
		}
	}
	if err := st.api.Session(ctx, osapi.Neutron); err != nil {
		return err
	}
	if s.sg == nil {
		return st.deleteSG(ctx, svc)
	}
	g, err := st.findSG(ctx, svc)
	if err != nil {
		return err
	}
	var did []string
	tags := []string{tagService + string(svc.UID), tagCluster + st.cluster.Get()}
	if g == nil {
		created, err := st.api.CreateSecurityGroup(ctx, sgName(svc),
			fmt.Sprintf("Security Group for %s/%s Service LoadBalancer in cluster %s", svc.Namespace, svc.Name, s.cluster))
		if err != nil {
			return fmt.Errorf("creating security group %s: %w", sgName(svc), err)
		}
		if err := st.dropDefaultEgress(ctx, created); err != nil {
			return err
		}
		g = created
		did = append(did, "created")
	}
	if !slices.Contains(g.Tags, tags[0]) || !slices.Contains(g.Tags, tags[1]) {
		all := append(slices.Clone(g.Tags), tags...)
		slices.Sort(all)
		if err := st.api.TagSecurityGroup(ctx, g.ID, slices.Compact(all)); err != nil {
			return fmt.Errorf("tagging security group %s: %w", g.ID, err)
		}
		if len(did) == 0 {
			did = append(did, "adopted")
		}
	}
	remotes, err := st.sgRemotes(ctx, s)
	if err != nil {
		return err
	}
	n, err := st.convergeRules(ctx, g, s.sg.wantedRules(remotes))
	if err != nil {
		return err
	}
	if n > 0 {
		did = append(did, fmt.Sprintf("%d rule(s) changed", n))
	}
	attached, detached, err := st.placeSG(ctx, g.ID, s, slices.Contains(did, "created"))
	if err != nil {
		return err
	}
	st.sgs.place(svc.UID, sgPlacement{group: g.ID, selector: s.sg.selector, servers: s.sg.servers, remotes: remotes})
	if attached+detached > 0 {
		did = append(did, fmt.Sprintf("on %d more and %d fewer Node port(s)", attached, detached))
	}
	if len(did) == 0 {
		return nil
	}
	klog.FromContext(ctx).Info("Security group converged", "service", klog.KObj(svc), "id", g.ID, "changes", strings.Join(did, ", "))
	return nil
}

// sgMembersChanged is Node churn's path: the group, its rules and its sources
// are as this process last converged them, so only the ports of the servers
// that joined or left are looked at, and a port known to hold the group
// already (a Service before this one put it on) is not even read. false: the
// full convergence is needed.
func (st *steps) sgMembersChanged(ctx context.Context, svc *v1.Service, s lbSpec) (bool, error) {
	p, ok := st.sgs.placement(svc.UID)
	if !ok {
		return false, nil
	}
	if err := st.api.Session(ctx, osapi.Neutron); err != nil {
		return false, err
	}
	remotes, err := st.sgRemotes(ctx, s)
	if err != nil || !slices.Equal(remotes, p.remotes) {
		return false, err
	}
	var read []string
	joined := map[string]bool{}
	for _, id := range s.sg.servers {
		if !slices.Contains(p.servers, id) {
			joined[id] = true
			if !st.sgs.holds(id, p.group) {
				read = append(read, id)
			}
		}
	}
	for _, id := range p.servers {
		if !slices.Contains(s.sg.servers, id) {
			read = append(read, id)
		}
	}
	var changes []*portChange
	if len(read) > 0 {
		ports, err := st.api.ListPortViews(ctx, url.Values{"device_id": read})
		if err != nil {
			return false, err
		}
		for _, port := range ports {
			member := false
			for _, ip := range port.FixedIPs {
				member = member || slices.Contains(s.members, ip.IPAddress)
			}
			has := slices.Contains(port.SecurityGroups, p.group)
			switch {
			case port.PortSecurity != nil && !*port.PortSecurity:
			case joined[port.DeviceID] && member:
				st.sgs.learn(port.DeviceID, port)
				if !has {
					changes = append(changes, st.sgs.request(port, p.group, true, st.sgs.groupsFor(s.sg.serverLabels[port.DeviceID])...))
				}
			case !joined[port.DeviceID] && has:
				changes = append(changes, st.sgs.request(port, p.group, false))
			}
		}
	}
	for _, ch := range changes {
		select {
		case <-ch.done:
			if ch.err != nil {
				return false, ch.err
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	p.servers = s.sg.servers
	st.sgs.place(svc.UID, p)
	return true, nil
}

// dropDefaultEgress deletes the egress rules Neutron gives a new group, as
// the peer's first pass over its group does (getRulesToCreateAndDelete
// keeps only its ingress rules): the group is then the peer's shape, and the
// peer taking it over writes nothing. The nodes' other groups allow their
// egress; a group only adds what it allows.
func (st *steps) dropDefaultEgress(ctx context.Context, g *osapi.SecurityGroup) error {
	kept := g.Rules[:0]
	for _, r := range g.Rules {
		if r.Direction != "egress" {
			kept = append(kept, r)
			continue
		}
		if err := st.api.DeleteRule(ctx, r.ID); err != nil {
			return fmt.Errorf("deleting the default egress rule %s of security group %s: %w", r.ID, g.ID, err)
		}
	}
	g.Rules = kept
	return nil
}

// convergeRules writes the difference between the group's ingress rules and
// the wanted ones; egress rules are left alone.
func (st *steps) convergeRules(ctx context.Context, g *osapi.SecurityGroup, want []osapi.RuleKey) (int, error) {
	create, extra := ruleChanges(g, want)
	if len(create) > 0 {
		if err := st.api.CreateRules(ctx, g.ID, create); err != nil {
			return 0, fmt.Errorf("creating %d rule(s) in security group %s: %w", len(create), g.ID, err)
		}
	}
	for _, r := range extra {
		if err := st.api.DeleteRule(ctx, r.ID); err != nil {
			return 0, fmt.Errorf("deleting rule %s of security group %s: %w", r.ID, g.ID, err)
		}
	}
	return len(create) + len(extra), nil
}

// ruleChanges are the ingress rules the group lacks of want, and those it
// has that want has not (or has twice); egress rules are left alone.
func ruleChanges(g *osapi.SecurityGroup, want []osapi.RuleKey) (create []osapi.RuleKey, extra []osapi.SecurityRule) {
	have := map[osapi.RuleKey]string{}
	for _, r := range g.Rules {
		if r.Direction != "ingress" {
			continue
		}
		k := ruleKey(r)
		if _, dup := have[k]; dup || !slices.Contains(want, k) {
			extra = append(extra, r)
			continue
		}
		have[k] = r.ID
	}
	for _, k := range want {
		if _, ok := have[k]; !ok {
			create = append(create, k)
		}
	}
	return create, extra
}

// placeSG puts the group on each member Node's port (the port holding the
// member's address, when it has port security) and takes it off every other
// port. The writes go through the port writer, batched with other Services'.
func (st *steps) placeSG(ctx context.Context, groupID string, s lbSpec, created bool) (int, int, error) {
	var members, holding []osapi.PortView
	if len(s.sg.servers) > 0 {
		var err error
		if members, err = st.api.ListPortViews(ctx, url.Values{"device_id": s.sg.servers}); err != nil {
			return 0, 0, err
		}
	}
	if !created { // a group made just now is on no port
		var err error
		if holding, err = st.api.ListPortViews(ctx, url.Values{"security_groups": {groupID}}); err != nil {
			return 0, 0, err
		}
	}
	memberPorts, attach, detach := placementChanges(members, holding, groupID, s.members)
	var changes []*portChange
	for _, p := range memberPorts {
		st.sgs.learn(p.DeviceID, p)
	}
	for _, p := range attach {
		// A Node new to this Service is likely new to the others: their
		// groups go on in the same write.
		changes = append(changes, st.sgs.request(p, groupID, true, st.sgs.groupsFor(s.sg.serverLabels[p.DeviceID])...))
	}
	attached := len(changes)
	for _, p := range detach {
		changes = append(changes, st.sgs.request(p, groupID, false))
	}
	var errs []error
	for _, ch := range changes {
		select {
		case <-ch.done:
			errs = append(errs, ch.err)
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	return attached, len(changes) - attached, nil
}

// placementChanges are, of the member servers' ports (members) and those
// holding the group (holding), the ports of the members' addresses with
// port security (memberPorts), those of them without the group (attach),
// and the holding ports that are none of them (detach).
func placementChanges(members, holding []osapi.PortView, groupID string, addrs []string) (memberPorts, attach, detach []osapi.PortView) {
	isMember := map[string]bool{}
	for _, p := range members {
		if p.PortSecurity != nil && !*p.PortSecurity {
			continue // a port without port security takes no group
		}
		member := false
		for _, ip := range p.FixedIPs {
			member = member || slices.Contains(addrs, ip.IPAddress)
		}
		if !member {
			continue
		}
		memberPorts = append(memberPorts, p)
		isMember[p.ID] = true
		if !slices.Contains(p.SecurityGroups, groupID) {
			attach = append(attach, p)
		}
	}
	for _, p := range holding {
		if !isMember[p.ID] {
			detach = append(detach, p)
		}
	}
	return memberPorts, attach, detach
}

// deleteSG takes the Service's group off every port and deletes it: ours, or
// the peer's by its name. Nothing to do when there is none.
func (st *steps) deleteSG(ctx context.Context, svc *v1.Service) error {
	if err := st.sgs.forget(ctx, svc.UID); err != nil {
		return err
	}
	g, err := st.findSG(ctx, svc)
	if err != nil || g == nil {
		return err
	}
	holding, err := st.api.ListPortViews(ctx, url.Values{"security_groups": {g.ID}})
	if err != nil {
		return err
	}
	var changes []*portChange
	for _, p := range holding {
		changes = append(changes, st.sgs.request(p, g.ID, false))
	}
	if len(changes) > 0 {
		st.sgs.flushNow(ctx)
	}
	for _, ch := range changes {
		select {
		case <-ch.done:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the ports' security groups to be written: %w", context.Cause(ctx))
		}
		if ch.err != nil {
			return ch.err
		}
	}
	if err := st.api.DeleteSecurityGroup(ctx, g.ID); err != nil {
		return fmt.Errorf("deleting security group %s: %w", g.ID, err)
	}
	klog.FromContext(ctx).Info("Deleted security group", "service", klog.KObj(svc), "id", g.ID, "ports", len(holding))
	return nil
}
