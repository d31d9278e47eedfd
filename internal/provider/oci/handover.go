package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// A rule Overcast marked may be one the peer's load balancer of another
// cluster relies on: the peer adds no rule for a port and peer a rule
// already opens, whoever marked it (load_balancer_security_lists.go
// getLoadBalancerIngressRules, getLoadBalancerEgressRules,
// getNodeIngressRules keep such a rule and add none). So when a rule of ours
// would go while such a load balancer still relies on it, the rule is handed
// over instead: kept, its mark taken off. The peer's Delete removes the
// rules of its ports in the lists it relies on, whoever made them, so the
// rule goes with the last of its Services on the port: nothing is left.
// Overcast of any cluster never relies on another Service's mark (stands),
// so only the peer's load balancers count: those no Overcast tagged, named
// as the peer names them (a Service UID last), not being deleted, of no
// Service of this cluster (Overcast adopted those, and they hold rules of
// their own).
//
// What the peer relies on, as it writes its rules:
//   - in the lists of its load balancer's subnets: ingress on its listeners'
//     ports (from its Service's sources), and egress on its backends' and
//     health checks' ports to its nodes' subnets;
//   - in the lists of its nodes' subnets: ingress on those ports from its
//     load balancer's subnets.

// peerName is the end of the peer's name of a load balancer: its Service's
// UID (lbName, nlbName).
var peerName = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// peerUses are the rules the peer's load balancers rely on, by where they
// are (a list, the direction and, but for ingress in a load balancer's
// list, the peer of the rule) and port, each with the load balancer's name.
type peerUses map[string]map[int]string

// where is the key of peerUses of a rule in list, in direction dir, to or
// from peer ("" when any).
func where(list, dir, peer string) string { return list + "|" + dir + "|" + peer }

// relies is the name of a peer's load balancer that relies on rule r of
// list, if one does.
func (u peerUses) relies(list string, r ociapi.SecurityRule) (string, bool) {
	if r.TCPOptions == nil || r.TCPOptions.DestinationPortRange == nil || r.TCPOptions.SourcePortRange != nil {
		return "", false
	}
	d := r.TCPOptions.DestinationPortRange
	if d.Min != d.Max {
		return "", false
	}
	keys := []string{where(list, "egress", r.Destination)}
	if r.Source != "" {
		keys = []string{where(list, "ingress", ""), where(list, "ingress", r.Source)}
	}
	for _, k := range keys {
		if name, ok := u[k][d.Min]; ok {
			return name, true
		}
	}
	return "", false
}

func (u peerUses) add(key, name string, ports map[int]bool) {
	if u[key] == nil {
		u[key] = map[int]string{}
	}
	for p := range ports {
		u[key][p] = name
	}
}

// peerUsesNow are the rules the peer's load balancers of the compartment
// rely on now (read now, not from the shared listings: one made a minute
// ago counts), but those of this cluster's Services.
func (st *steps) peerUsesNow(ctx context.Context) (peerUses, error) {
	u := peerUses{}
	var peers []ociapi.LB
	for _, kind := range []string{ociapi.KindLB, ociapi.KindNLB} {
		all, err := st.api.LoadBalancers(ctx, kind, ociapi.InCompartment(st.cfg.CompartmentID))
		if err != nil {
			return u, fmt.Errorf("listing the load balancers, to keep the rules the peer's rely on: %w", err)
		}
		for _, lb := range all {
			if lb.FreeformTags[tagCluster] == "" && peerName.MatchString(lb.DisplayName) && lb.LifecycleState != "DELETING" && lb.LifecycleState != "DELETED" {
				peers = append(peers, lb)
			}
		}
	}
	if len(peers) == 0 {
		return u, nil
	}
	ours, err := st.serviceUIDs(ctx)
	if err != nil {
		return u, err
	}
	for _, lb := range peers {
		if ours[peerName.FindString(lb.DisplayName)] {
			continue
		}
		if err := st.addPeerUses(ctx, u, lb); err != nil {
			return u, err
		}
	}
	return u, nil
}

// addPeerUses adds to u the rules the peer's load balancer lb relies on.
func (st *steps) addPeerUses(ctx context.Context, u peerUses, lb ociapi.LB) error {
	listeners, backends, ips := lbPorts(lb)
	var nodeSubnets []string
	for _, ip := range ips {
		if m, found, err := st.machines.Get(ctx, "ip/"+ip); err != nil {
			return err
		} else if found && m.SubnetID != "" && !slices.Contains(nodeSubnets, m.SubnetID) {
			nodeSubnets = append(nodeSubnets, m.SubnetID)
		}
	}
	lbLists, lbCIDRs, err := st.listsAndCIDRs(ctx, lb.SubnetIDs)
	if err != nil {
		return err
	}
	nodeLists, nodeCIDRs, err := st.listsAndCIDRs(ctx, nodeSubnets)
	if err != nil {
		return err
	}
	for _, list := range lbLists {
		u.add(where(list, "ingress", ""), lb.DisplayName, listeners)
		for _, cidr := range nodeCIDRs {
			u.add(where(list, "egress", cidr), lb.DisplayName, backends)
		}
	}
	for _, list := range nodeLists {
		for _, cidr := range lbCIDRs {
			u.add(where(list, "ingress", cidr), lb.DisplayName, backends)
		}
	}
	return nil
}

// listsAndCIDRs are the security lists the rules of subnets go in, and
// their CIDRs (IPv4 and IPv6).
func (st *steps) listsAndCIDRs(ctx context.Context, subnets []string) (lists, cidrs []string, err error) {
	for _, id := range subnets {
		sub, list, err := st.subnetList(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		lists = append(lists, list)
		if sub.CIDRBlock != "" {
			cidrs = append(cidrs, sub.CIDRBlock)
		}
		cidrs = append(cidrs, sub.IPv6CIDRBlocks...)
	}
	return lists, cidrs, nil
}

// serviceUIDs are the UIDs of the cluster's Services.
func (st *steps) serviceUIDs(ctx context.Context) (map[string]bool, error) {
	list, err := st.services(ctx, "tell this cluster's load balancers from the peer's")
	if err != nil {
		return nil, err
	}
	uids := map[string]bool{}
	for _, s := range list {
		uids[string(s.UID)] = true
	}
	return uids, nil
}

// handedOver is the description of a rule of svc's handed over to the
// peer's load balancer name: no mark, and what it was; the name shortened
// if the description would be longer than OCI takes.
func handedOver(svc *v1.Service, name string) string {
	const format = "kept for load balancer %s (was Overcast's, of %s/%s)"
	over := len(fmt.Sprintf(format, name, svc.Namespace, svc.Name)) - maxDescription
	for over > 0 && name != "" {
		_, size := utf8.DecodeLastRuneInString(name)
		name, over = name[:len(name)-size], over-size
	}
	return fmt.Sprintf(format, name, svc.Namespace, svc.Name)
}

// maxDescription is the longest description of a security rule OCI takes.
const maxDescription = 255

// withDescription is rule raw with its description d, every other field as
// OCI answered it.
func withDescription(raw json.RawMessage, d string) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	fields["description"] = b
	return json.Marshal(fields)
}

// reliedByPeer says, for a rule of svc in a list, whether a peer's load
// balancer relies on it, and the description it is then kept with. The
// peer's load balancers are listed once, at the first rule that goes.
func (st *steps) reliedByPeer(ctx context.Context, svc *v1.Service) func(list string, r ociapi.SecurityRule) (string, bool, error) {
	var (
		once sync.Once
		uses peerUses
		err  error
	)
	return func(list string, r ociapi.SecurityRule) (string, bool, error) {
		once.Do(func() { uses, err = st.peerUsesNow(ctx) })
		if err != nil {
			return "", false, err
		}
		name, ok := uses.relies(list, r)
		return handedOver(svc, name), ok, nil
	}
}

// handOver adds to out (whose rules are kept) each rule of going that a
// peer's load balancer relies on, unmarked, unless an unmarked rule of out
// does the same already.
func handOver(out []json.RawMessage, kept []ociapi.SecurityRule, going []json.RawMessage, ch listChange) ([]json.RawMessage, []ociapi.SecurityRule, error) {
	if ch.handOver == nil {
		return out, kept, nil
	}
	for _, raw := range going {
		var r ociapi.SecurityRule
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, nil, err
		}
		if slices.ContainsFunc(kept, func(k ociapi.SecurityRule) bool { return does(k, r) && !strings.HasPrefix(k.Description, markPrefix) }) {
			continue
		}
		d, relied, err := ch.handOver(r)
		if err != nil || !relied {
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		if raw, err = withDescription(raw, d); err != nil {
			return nil, nil, err
		}
		r.Description = d
		out, kept = append(out, raw), append(kept, r)
	}
	return out, kept, nil
}
