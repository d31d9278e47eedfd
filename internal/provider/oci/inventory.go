package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// The drift check sees every object of a Service's load balancer (lbcycle's
// Inventory): its listeners, backend sets and backends, from the shared
// listing of load balancers (OCI lists them whole), and the security rules
// it relies on in the security lists of its subnets and its nodes' subnets
// (those marked as the Service's and, on the peer's load balancer it
// adopted, the unmarked ones that open its ports), each list read once a
// drift pass whatever the number of Services. A rule another cluster's CCM
// removes is thus seen within the drift period, and put back. Network security groups' rules, which OCI
// lists per group, are read on a budget (nsginventory.go).

var (
	_ lbcycle.Inventory[ociapi.LB] = (*steps)(nil)
	_ lbcycle.DriftListener        = (*steps)(nil)
)

// Drifting: the walk of a drifted Service reads the security lists again,
// rather than write on what this process last wrote (listReuse): a rule
// removed behind its back since is put back.
func (st *steps) Drifting(*v1.Service) { st.lists.forgetAll() }

// Objects are the load balancer's listeners, backend sets, backends and
// the security rules it relies on, each keyed by every field the walk
// compares of it (childKeys).
func (st *steps) Objects(ctx context.Context, svc *v1.Service, lb ociLB) ([]string, error) {
	o := lb.Obj
	spec, err := st.parseSpec(svc)
	out := childKeys(o, spec, err == nil)
	ports, backends, ips := lbPorts(o)
	maps.Copy(ports, backends)
	if err != nil || spec.mode == ModeNone {
		return out, nil //nolint:nilerr // no security rules to rely on (an invalid Service is the sync's to report)
	}
	if spec.mode == ModeNSG {
		rules, err := st.nsgObjects(ctx, svc, spec, o)
		return append(out, rules...), err
	}
	if hasMany(o) { // not listed one by one: the subnets of the backends asked
		for _, bs := range spec.backendSets {
			for _, b := range bs.Backends {
				ips = append(ips, b.IPAddress)
			}
		}
	}
	rules, err := st.reliedOn(ctx, svc, append(slices.Clone(o.SubnetIDs), o.SubnetID), ips, ports, !st.builtHere(o))
	return append(out, rules...), err
}

// childKeys are the keys of the listeners, backend sets and backends of o:
// each one's name and the fields the walk compares of it as they are (what
// the Service asks, when valid, says which fields of those compared only
// when asked are; a listener's rule sets are compared only when the
// Service asks for rule sets).
func childKeys(o ociapi.LB, spec lbSpec, valid bool) []string {
	var out []string
	for name, l := range o.Listeners {
		want, ok := spec.listeners[name]
		if !ok || !valid {
			want = l
		}
		if valid && spec.ruleSets == nil {
			l.RuleSetNames, want.RuleSetNames = nil, nil
		}
		out = append(out, fmt.Sprintf("listener/%s %s", name, fieldKey(listenerFields(l, want))))
	}
	for name, bs := range o.BackendSets {
		want, ok := spec.backendSets[name]
		if !ok || !valid {
			want = bs
		}
		out = append(out, fmt.Sprintf("backendset/%s %s", name, fieldKey(backendSetFields(bs, want))))
		if m := bs.Many; m != nil {
			out = append(out, lbcycle.MemberSetKey(m.IDs, m.Count, m.Keys, name))
		}
		for _, b := range bs.Backends {
			out = append(out, fmt.Sprintf(lbcycle.MemberPrefix+"%s:%d %s of %s", b.IPAddress, b.Port, fieldKey(backendFields(b, b)), name))
		}
	}
	return append(out, ruleSetKeys(o, spec, valid)...)
}

// ruleSetKeys are the keys of o's rule sets, when the Service asks for
// rule sets (without, those added by hand are the user's), and of the
// certificates its listeners and backend sets present: each one's name
// and a digest of its content (a rule set's rules, compared whole by the
// walk; a certificate's public and CA certificates, which OCI cannot
// change in place: another is a new certificate, and a renewed Secret the
// Drift step's).
func ruleSetKeys(o ociapi.LB, spec lbSpec, valid bool) []string {
	var out []string
	if valid && spec.ruleSets != nil {
		for name, rs := range o.RuleSets {
			out = append(out, fmt.Sprintf("ruleset/%s rules %s", name, digest(rs.Items)))
		}
	}
	inUse := certificatesInUse(o)
	for name, c := range o.Certificates {
		if inUse[name] {
			out = append(out, fmt.Sprintf("certificate/%s %s", name,
				digest([]string{strings.TrimSpace(c.PublicCertificate), strings.TrimSpace(c.CaCertificate)})))
		}
	}
	return out
}

// digest is a short digest of v as JSON, for a drift key.
func digest(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// reliedOn are the rules of the security lists of subnets and of the
// backends' subnets that the Service's load balancer relies on.
func (st *steps) reliedOn(ctx context.Context, svc *v1.Service, subnets, ips []string, ports map[int]bool, adopt bool) ([]string, error) {
	for _, ip := range ips {
		if m, found, err := st.machines.Get(ctx, "ip/"+ip); err != nil {
			return nil, err
		} else if found && m.SubnetID != "" && !slices.Contains(subnets, m.SubnetID) {
			subnets = append(subnets, m.SubnetID)
		}
	}
	mark := st.mark(svc) + " "
	var out []string
	seen := map[string]bool{}
	for _, id := range subnets {
		if id == "" {
			continue
		}
		_, list, err := st.subnetList(ctx, id)
		if err != nil || seen[list] {
			if err != nil {
				return nil, err
			}
			continue
		}
		seen[list] = true
		sl, err := st.listPass.list(ctx, st.api, list)
		if err != nil {
			// Not this pass's to decide: one list the CCM cannot read stops
			// no other Service's check (the walk reads it and says why).
			klog.FromContext(ctx).V(2).Info("Cannot read a security list for the drift check", "service", klog.KObj(svc), "list", list, "err", err.Error())
			continue
		}
		for dir, raws := range map[string][]json.RawMessage{"ingress": sl.Ingress, "egress": sl.Egress} {
			for _, raw := range raws {
				var r ociapi.SecurityRule
				if json.Unmarshal(raw, &r) != nil || !reliesOn(r, mark, ports, adopt) {
					continue
				}
				out = append(out, ruleKey(r, list, dir))
			}
		}
	}
	return out, nil
}

// ruleKey is the rule's in Objects, in list id and direction dir: what it is
// (a rule of a list has no id: its direction, protocol, peer and ports),
// then its isStateless, then the list.
func ruleKey(r ociapi.SecurityRule, list, dir string) string {
	return fmt.Sprintf("security-rule/%s:%s:%s%s:%s %s of %s", dir, r.Protocol, r.Source, r.Destination, rulePorts(r), statefulness(r.IsStateless), list)
}

// statefulness is isStateless as a key and a person say it.
func statefulness(stateless bool) string {
	if stateless {
		return "stateless"
	}
	return "stateful"
}

// rulePorts are the rule's destination ports, as a key says them.
func rulePorts(r ociapi.SecurityRule) string {
	if r.TCPOptions == nil || r.TCPOptions.DestinationPortRange == nil {
		return "all"
	}
	return fmt.Sprintf("%d-%d", r.TCPOptions.DestinationPortRange.Min, r.TCPOptions.DestinationPortRange.Max)
}

// listPass is each security list as one drift pass read it: one read of a
// list for every Service whose rules are in it.
type listPass struct {
	provider.PassMemo[ociapi.SecurityList]
}

// list is security list id as this pass read it (read now if not yet).
func (p *listPass) list(ctx context.Context, gw ociapi.API, id string) (ociapi.SecurityList, error) {
	return p.Get(ctx, id, func(ctx context.Context) (ociapi.SecurityList, error) { return gw.SecurityList(ctx, id) })
}
