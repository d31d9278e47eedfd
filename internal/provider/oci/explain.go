package oci

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// `overcast explain` on OCI: a Service's load balancer or network load
// balancer (its addresses, listeners, backend sets and backends), the
// security list rules and NSG rules it relies on with whose marks they
// carry, and what the next pass would change: Converge's differences, by
// its own comparisons (childChange's same* functions, certNames,
// staleCertificate, ipModeDrift, wantedNSGs, shapeDrift), and Publish's
// security rules (wantedRules and merge, nsgRulesWanted and nsgChanges),
// none acted on. Everything is read by name from the API, not from the
// shared listings.

var _ provider.Explainer = (*Cloud)(nil)

// ExplainService says what OCI holds for the Service.
func (c *Cloud) ExplainService(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (provider.ServiceExplanation, error) {
	return c.lb.explainService(ctx, clusterName, svc, nodes)
}

func (st *steps) explainService(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (provider.ServiceExplanation, error) {
	e, spec, err := provider.BeginExplanation(ctx, ProviderName, annotation.OCIConverged, st.cycle, st, clusterName, svc, nodes)
	if err != nil {
		return e, err
	}
	kind := kindOf(svc)
	lb, found, err := st.byName(ctx, svc, kind)
	if err != nil {
		return e, err
	}
	other, otherFound, err := st.byName(ctx, svc, otherKind(kind))
	if err != nil {
		return e, err
	}
	switch {
	case !found && !otherFound:
		return e, nil
	case !found:
		lb, found = other, false
		e.Note("the Service asks for a %s and has a %s: the next pass builds the one it asks for, then deletes this one", noun(kind), noun(other.Kind))
	}
	e.Found = true
	if lb, err = st.unfold(ctx, lb); err != nil {
		return e, err
	}
	st.describeLB(&e, lb, nodes)
	valid := e.SpecProblem == ""
	if err := st.explainRules(ctx, &e, svc, spec, lb, valid); err != nil {
		return e, err
	}
	switch {
	case !valid || !found:
	case lb.LifecycleState != "ACTIVE":
		e.Note("%s %s is %s: the next pass waits for OCI, then compares", noun(lb.Kind), lb.ID, lb.LifecycleState)
	default:
		e.DriftChecked = true
		if err := st.explainDrift(ctx, &e, svc, spec, lb); err != nil {
			return e, err
		}
		if otherFound && other.LifecycleState != "DELETING" {
			e.Change(provider.ActionDelete, noun(other.Kind)+" "+other.ID, "the Service asks for a %s now", noun(kind))
		}
	}
	e.SortRules()
	return e, nil
}

func otherKind(kind string) string {
	if kind == ociapi.KindLB {
		return ociapi.KindNLB
	}
	return ociapi.KindLB
}

// describeLB fills in the load balancer, its addresses, its listeners and
// its backend sets.
func (st *steps) describeLB(e *provider.ServiceExplanation, lb ociapi.LB, nodes []*v1.Node) {
	d := provider.Details{"kind": noun(lb.Kind), "subnets": strings.Join(append(slices.Clone(lb.SubnetIDs), lb.SubnetID), " "),
		"network security groups": strings.Join(lb.NetworkSecurityGroupIDs, " "), "owner": "the peer's (adopted)"}
	if st.builtHere(lb) {
		d["owner"] = "this cluster's"
	}
	if lb.ShapeName != "" {
		d["shape"] = lb.ShapeName
	}
	if f := lb.ShapeDetails; f != nil {
		d["bandwidth"] = fmt.Sprintf("%d-%d Mbps", f.MinimumBandwidthInMbps, f.MaximumBandwidthInMbps)
	}
	if v := cmp.Or(lb.IPMode, lb.NLBIPVersion); v != "" {
		d["IP version"] = v
	}
	e.LoadBalancer = &provider.LoadBalancer{ID: lb.ID, Name: lb.DisplayName, State: lb.LifecycleState, Details: d}
	for _, a := range lb.IPAddresses {
		e.Addresses = append(e.Addresses, provider.Address{IP: a.IPAddress, Kind: map[bool]string{true: "public", false: "private"}[a.IsPublic]})
	}
	for _, name := range slices.Sorted(maps.Keys(lb.Listeners)) {
		l := lb.Listeners[name]
		ld := provider.Details{}
		if l.SSLConfiguration != nil {
			ld["certificate"] = l.SSLConfiguration.CertificateName
		}
		if len(l.RuleSetNames) > 0 {
			ld["rule sets"] = strings.Join(l.RuleSetNames, ",")
		}
		if l.IPVersion != "" {
			ld["IP version"] = l.IPVersion
		}
		e.Listeners = append(e.Listeners, provider.Listener{Name: name, Protocol: l.Protocol, Port: l.Port, Pool: l.DefaultBackendSetName, Details: ld})
	}
	byIP := map[string]string{}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			byIP[a.Address] = n.Name
		}
	}
	for _, name := range slices.Sorted(maps.Keys(lb.BackendSets)) {
		bs := lb.BackendSets[name]
		p := provider.Pool{Name: name, Policy: bs.Policy, Health: describeCheck(bs.HealthChecker), Members: []provider.Member{}}
		for _, b := range bs.Backends {
			p.Members = append(p.Members, provider.Member{ID: b.TargetID, Address: b.IPAddress, Port: b.Port, Node: byIP[b.IPAddress]})
		}
		e.Pools = append(e.Pools, p)
	}
}

func describeCheck(h ociapi.HealthChecker) string {
	out := h.Protocol
	if h.URLPath != "" {
		out += " " + h.URLPath
	}
	return fmt.Sprintf("%s on %d every %dms, %d retries", out, h.Port, h.IntervalInMillis, h.Retries)
}

// explainRules fills in the security rules the load balancer relies on (by
// reliesOn, as the drift check reads them: inventory.go), and
// what Publish would change of them: in the security lists of its subnets
// and its nodes' subnets, and in its NSGs (NSG mode) or the backend NSGs
// the Service names.
func (st *steps) explainRules(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, spec lbSpec, lb ociapi.LB, valid bool) error {
	ports := peerPorts(lb)
	for _, p := range spec.listenerPorts {
		ports[p] = true
	}
	if !valid {
		spec = lbSpec{subnets: append(slices.Clone(lb.SubnetIDs), lb.SubnetID), mode: ModeNone}
		spec.subnets = slices.DeleteFunc(spec.subnets, func(s string) bool { return s == "" })
	}
	listSpec := spec
	if spec.mode == ModeNSG {
		listSpec.mode = ModeNone
		if err := st.explainNSGs(ctx, e, svc, spec, lb, valid); err != nil {
			return err
		}
	} else if err := st.explainBackendNSGs(ctx, e, svc, spec, valid); err != nil {
		return err
	}
	want, lists, err := st.wantedRules(ctx, svc, listSpec)
	if err != nil {
		return err
	}
	mark, adopt := st.mark(svc)+" ", !st.builtHere(lb)
	for _, id := range lists {
		sl, err := st.api.SecurityList(ctx, id)
		if err != nil {
			return fmt.Errorf("reading security list %s: %w", id, err)
		}
		for _, side := range []struct {
			dir  string
			have []json.RawMessage
			want []ociapi.SecurityRule
		}{{"ingress", sl.Ingress, want[id].ingress}, {"egress", sl.Egress, want[id].egress}} {
			for _, raw := range side.have {
				var r ociapi.SecurityRule
				if json.Unmarshal(raw, &r) == nil && reliesOn(r, mark, ports, adopt) {
					e.SecurityRules = append(e.SecurityRules, st.asRule("security list rule", "security list "+id, side.dir, r, svc))
				}
			}
			if valid && lb.LifecycleState == "ACTIVE" {
				if err := listDrift(e, id, side.dir, side.have, side.want, listChange{mark: mark, adopt: adopt}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// asRule is a security list or NSG rule as a security rule.
func (st *steps) asRule(kind, in, dir string, r ociapi.SecurityRule, svc *v1.Service) provider.SecurityRule {
	proto, ports, peer := ruleFields(r, dir)
	return provider.SecurityRule{Kind: kind, In: in, Direction: strings.ToLower(dir), Protocol: proto, Ports: ports, Peer: peer, Mark: st.markOf(r.Description, svc)}
}

// ruleFields are a rule's protocol, destination ports and peer (its
// source, or its destination going out), for a person.
func ruleFields(r ociapi.SecurityRule, dir string) (proto, ports, peer string) {
	peer = r.Source
	if strings.EqualFold(dir, "egress") {
		peer = r.Destination
	}
	ports = "all"
	if r.TCPOptions != nil && r.TCPOptions.DestinationPortRange != nil {
		pr := r.TCPOptions.DestinationPortRange
		ports = fmt.Sprintf("%d-%d", pr.Min, pr.Max)
		if pr.Min == pr.Max {
			ports = strconv.Itoa(pr.Min)
		}
	}
	proto = map[string]string{"6": "TCP", "17": "UDP", "1": "ICMP", "all": "all"}[r.Protocol]
	if proto == "" {
		proto = r.Protocol
	}
	return proto, ports, peer
}

// markOf is whose a rule's description says it is.
func (st *steps) markOf(desc string, svc *v1.Service) string {
	switch {
	case strings.HasPrefix(desc, st.mark(svc)) || desc == nsgMark(svc) || desc == string(svc.UID):
		return provider.MarkThisCluster
	case strings.HasPrefix(desc, markPrefix+st.cluster.Get()+"/") || strings.HasPrefix(desc, "service-uid-"):
		return provider.MarkOtherService
	case strings.HasPrefix(desc, markPrefix):
		return provider.MarkOtherCluster
	}
	return provider.MarkNone
}

// listDrift is what merge would change of one side (dir) of security list
// id: the rules it drops, those it adds.
func listDrift(e *provider.ServiceExplanation, id, dir string, have []json.RawMessage, want []ociapi.SecurityRule, ch listChange) error {
	out, changed, err := merge(have, want, ch)
	if err != nil || !changed {
		return err
	}
	j := 0
	for _, raw := range have {
		if j < len(out) && bytes.Equal(raw, out[j]) {
			j++
			continue
		}
		var r ociapi.SecurityRule
		_ = json.Unmarshal(raw, &r)
		e.Change(provider.ActionDelete, dir+" rule "+ruleText(r, dir), "in security list %s: the Service no longer asks for it", id)
	}
	for _, raw := range out[j:] {
		var r ociapi.SecurityRule
		_ = json.Unmarshal(raw, &r)
		e.Change(provider.ActionCreate, dir+" rule "+ruleText(r, dir), "in security list %s", id)
	}
	return nil
}

// ruleText is a rule for a person: "TCP 80 from 0.0.0.0/0".
func ruleText(r ociapi.SecurityRule, dir string) string {
	proto, ports, peer := ruleFields(r, dir)
	if r.IsStateless {
		proto = "stateless " + proto
	}
	if strings.EqualFold(dir, "egress") {
		return proto + " " + ports + " to " + peer
	}
	return proto + " " + ports + " from " + peer
}

// explainNSGs fills in the Service's rules in its frontend NSG and its
// backend NSGs (NSG mode), and what Converge (the load balancer's NSGs)
// and Publish (their rules, the backend NSGs' tag) would change.
func (st *steps) explainNSGs(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, spec lbSpec, lb ociapi.LB, valid bool) error {
	front, err := st.frontendNSG(ctx, svc)
	if err != nil {
		return err
	}
	drift := valid && lb.LifecycleState == "ACTIVE"
	if front == "" {
		if drift {
			e.Change(provider.ActionCreate, "network security group "+frontendNSGName(svc), "the Service's frontend NSG")
		}
		return nil
	}
	wantFront, wantBack := nsgRulesWanted(svc, spec, front)
	ids := append([]string{front}, spec.backendNSGs...)
	for _, id := range ids {
		want := wantFront
		if id != front {
			want = wantBack[id]
			if err := st.explainManaged(ctx, e, id, drift); err != nil {
				return err
			}
		}
		if err := st.explainNSG(ctx, e, svc, id, want, drift); err != nil {
			return err
		}
	}
	return nil
}

// explainBackendNSGs: outside NSG mode, the Service's rules in the backend
// NSGs it names go (Publish's removeBackendNSGRules).
func (st *steps) explainBackendNSGs(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, spec lbSpec, valid bool) error {
	for _, id := range spec.backendNSGs {
		if err := st.explainNSG(ctx, e, svc, id, nil, valid); err != nil {
			return err
		}
	}
	return nil
}

// explainManaged: a backend NSG lacking the peer's ManagedBy tag gets it.
func (st *steps) explainManaged(ctx context.Context, e *provider.ServiceExplanation, id string, drift bool) error {
	g, err := st.api.NSG(ctx, id)
	if err != nil {
		return fmt.Errorf("reading network security group %s: %w", id, err)
	}
	if _, ok := g.FreeformTags["ManagedBy"]; !ok && drift {
		e.Change(provider.ActionChange, "network security group "+id, "tagged ManagedBy: CCM, as the peer tags a backend NSG")
	}
	return nil
}

// explainNSG fills in NSG id's rules that are the Service's (isOurs: those
// the drift check watches, nsginventory.go), and what applyNSGRules would
// change (want: the Service's rules there).
func (st *steps) explainNSG(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, id string, want []ociapi.NSGRule, drift bool) error {
	have, err := st.api.NSGRules(ctx, id)
	if err != nil {
		return fmt.Errorf("reading the rules of network security group %s: %w", id, err)
	}
	for _, r := range have {
		if st.isOurs(r, svc) {
			sr := st.asRule("NSG rule", "network security group "+id, r.Direction, r.SecurityRule, svc)
			sr.ID = r.ID
			if r.SourceType == "NETWORK_SECURITY_GROUP" || r.DestinationType == "NETWORK_SECURITY_GROUP" {
				sr.Peer = "NSG " + sr.Peer
			}
			e.SecurityRules = append(e.SecurityRules, sr)
		}
	}
	if !drift {
		return nil
	}
	add, stale := st.nsgChanges(svc, have, want)
	for _, r := range add {
		e.Change(provider.ActionCreate, strings.ToLower(r.Direction)+" NSG rule "+ruleText(r.SecurityRule, r.Direction), "in network security group %s", id)
	}
	for _, sid := range stale {
		e.Change(provider.ActionDelete, "NSG rule "+sid, "in network security group %s: the Service no longer asks for it", id)
	}
	return nil
}

// explainDrift is what Converge would change of the load balancer: its IP
// version, certificates, rule sets, backend sets, listeners, what is no
// longer asked, its NSGs, and what cannot change.
func (st *steps) explainDrift(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, spec lbSpec, have ociapi.LB) error {
	name := noun(have.Kind) + " " + have.ID
	if have.Kind == ociapi.KindNLB {
		if got, want := versionOr(have.NLBIPVersion), versionOr(spec.ipv.endpoint); got != want {
			e.Change(provider.ActionChange, name, "IP version %s, the Service asks %s", got, want)
		}
	} else if msg := ipModeDrift(have, spec); msg != "" {
		e.Change(provider.ActionRefuse, name, "%s", msg)
	}
	names := certNames(have, spec)
	for _, secret := range slices.Sorted(maps.Keys(spec.certs)) {
		if _, ok := have.Certificates[names[secret]]; !ok {
			e.Change(provider.ActionCreate, "certificate "+names[secret], "of Secret %s", spec.tls[secret].String())
		}
	}
	spec = withCertNames(spec, names)
	if spec.ruleSets == nil {
		spec = keepRuleSetNames(spec, have)
	} else {
		childDrift(e, "rule set", spec.ruleSets, have.RuleSets, sameRuleSet, func(ociapi.RuleSet, ociapi.RuleSet) string { return "its rules differ" })
	}
	childDrift(e, "backend set", spec.backendSets, have.BackendSets, sameBackendSet, backendSetDiff)
	childDrift(e, "listener", spec.listeners, have.Listeners, sameListener, listenerDiff)
	if name := staleCertificate(have, spec, names); name != "" {
		e.Change(provider.ActionDelete, "certificate "+name, "its Secret was renewed")
	}
	front := ""
	if spec.mode == ModeNSG {
		var err error
		if front, err = st.frontendNSG(ctx, svc); err != nil {
			return err
		}
	}
	if want, got := wantedNSGs(spec, front), slices.Sorted(slices.Values(have.NetworkSecurityGroupIDs)); !slices.Equal(want, got) && (spec.mode != ModeNSG || front != "") {
		e.Change(provider.ActionChange, name, "in network security groups %s, the Service asks %s", listOr(got), listOr(want))
	}
	if msg := shapeDrift(have, spec); msg != "" {
		e.Change(provider.ActionRefuse, name, "%s", msg)
	}
	return nil
}

func listOr(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// childDrift is every child of a kind that want asks and have lacks
// (create) or has otherwise (change, what says how), and every child have
// has that want does not ask (delete): childChange and unasked, all of
// them.
func childDrift[T any](e *provider.ServiceExplanation, kind string, want, have map[string]T, same func(got, want T) bool, what func(got, want T) string) {
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, ok := have[name]
		switch {
		case !ok:
			e.Change(provider.ActionCreate, kind+" "+name, "the Service asks for it")
		case !same(got, want[name]):
			e.Change(provider.ActionChange, kind+" "+name, "%s", what(got, want[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[name]; !ok {
			e.Change(provider.ActionDelete, kind+" "+name, "no port of the Service asks for it")
		}
	}
}

// backendSetDiff says how a backend set differs from what is asked: each
// field (backendSetFields), each backend lacking or not asked, and each
// backend's fields that differ ("backend 10.0.0.5:30080 weight 7, the
// Service asks 1").
func backendSetDiff(got, want ociapi.BackendSet) string {
	out := fieldDiffs(backendSetFields(got, want))
	have := map[string]ociapi.Backend{}
	for _, b := range got.Backends {
		have[backendID(b)] = b
	}
	asked := map[string]bool{}
	for _, w := range want.Backends {
		id := backendID(w)
		asked[id] = true
		g, ok := have[id]
		if !ok {
			out = append(out, "lacks backend "+id)
			continue
		}
		if d := fieldDiffs(backendFields(g, w)); len(d) > 0 {
			out = append(out, "backend "+id+" "+strings.Join(d, ", "))
		}
	}
	for _, g := range got.Backends {
		if !asked[backendID(g)] {
			out = append(out, "has backend "+backendID(g)+", not an eligible Node's")
		}
	}
	return strings.Join(out, "; ")
}

// listenerDiff says how a listener differs from what is asked, field by
// field (listenerFields).
func listenerDiff(got, want ociapi.Listener) string {
	return strings.Join(fieldDiffs(listenerFields(got, want)), "; ")
}

// ExplainNode says what OCI holds for the Node.
func (c *Cloud) ExplainNode(ctx context.Context, node *v1.Node, nodes []*v1.Node) (provider.NodeExplanation, error) {
	m, found, err := c.find(ctx, node, snapshot.MaxAge)
	md := provider.LookedUp(m, found, err, func(m machine) (*provider.Machine, *cloudprovider.InstanceMetadata) {
		want := metadataOf(m, node)
		machine := &provider.Machine{ID: m.ID, Name: m.DisplayName, State: m.LifecycleState, Type: m.Shape, Zone: want.Zone, Region: m.Region,
			Addresses: provider.NodeAddresses(want.NodeAddresses), Details: provider.Details{"fault domain": m.FaultDomain, "subnet": m.SubnetID}}
		if slices.Contains(goneStates, m.LifecycleState) {
			return machine, nil
		}
		return machine, want
	})
	return provider.ExplainedNode(ctx, ProviderName, node, nodes, md, c.InstanceExists)
}
