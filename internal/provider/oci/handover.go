package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A rule Overcast marked may be one the peer's load balancer of another
// cluster relies on: the peer adds no rule for a port and source a rule
// already opens, whoever marked it (load_balancer_security_lists.go
// getLoadBalancerIngressRules, getNodeIngressRules keep such a rule and add
// none). So when a rule of ours would go while such a load balancer still
// uses its port, the rule is handed over instead: kept, its mark taken off.
// The peer removes a rule of its ports whoever made it, so the rule goes with
// the last of its Services on the port, and nothing is left behind.
// Overcast of any cluster never relies on another Service's mark (stands),
// so only the peer's load balancers count: those no Overcast tagged, named
// as the peer names them (a Service UID last), of no Service of this
// cluster (Overcast adopted those, and they hold rules of their own).

// peerName is the end of the peer's name of a load balancer: its Service's
// UID (lbName, nlbName).
var peerName = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// peerUses are the ports the peer's load balancers use, by the security list
// their rules go in and by the CIDR their rules to the nodes come from, each
// with the load balancer's name.
type peerUses struct {
	inList, fromCIDR map[string]map[int]string
}

// relies is the name of a peer's load balancer that relies on rule r of
// list, if one does.
func (u peerUses) relies(list string, r rule) (string, bool) {
	if r.TCPOptions == nil || r.TCPOptions.DestinationPortRange == nil || r.TCPOptions.SourcePortRange != nil {
		return "", false
	}
	d := r.TCPOptions.DestinationPortRange
	if d.Min != d.Max {
		return "", false
	}
	if name, ok := u.inList[list][d.Min]; ok {
		return name, true
	}
	name, ok := u.fromCIDR[r.Source][d.Min]
	return name, ok
}

func (u peerUses) add(to map[string]map[int]string, key, name string, ports map[int]bool) {
	if to[key] == nil {
		to[key] = map[int]string{}
	}
	for p := range ports {
		to[key][p] = name
	}
}

// peerUsesNow are the ports the peer's load balancers of the compartment
// use now (from the shared listings), but those of this cluster's Services.
func (c *Cloud) peerUsesNow(ctx context.Context) (peerUses, error) {
	u := peerUses{inList: map[string]map[int]string{}, fromCIDR: map[string]map[int]string{}}
	var peers []LB
	for _, kind := range []string{kindLB, kindNLB} {
		all, err := c.listings[kind].All(ctx)
		if err != nil {
			return u, fmt.Errorf("listing the load balancers, to keep the rules the peer's rely on: %w", err)
		}
		for _, lb := range all {
			if lb.FreeformTags[tagCluster] == "" && peerName.MatchString(lb.DisplayName) {
				peers = append(peers, lb)
			}
		}
	}
	if len(peers) == 0 {
		return u, nil
	}
	ours, err := c.serviceUIDs(ctx)
	if err != nil {
		return u, err
	}
	for _, lb := range peers {
		if ours[peerName.FindString(lb.DisplayName)] {
			continue
		}
		ports := peerPorts(lb)
		for _, id := range lb.SubnetIDs {
			sub, list, err := c.subnetList(ctx, id)
			if err != nil {
				return u, err
			}
			u.add(u.inList, list, lb.DisplayName, ports)
			for _, cidr := range append([]string{sub.CIDRBlock}, sub.IPv6CIDRBlocks...) {
				u.add(u.fromCIDR, cidr, lb.DisplayName, ports)
			}
		}
	}
	return u, nil
}

// serviceUIDs are the UIDs of the cluster's Services.
func (c *Cloud) serviceUIDs(ctx context.Context) (map[string]bool, error) {
	kube := c.Kube()
	if kube == nil {
		return nil, fmt.Errorf("no Kubernetes client yet to tell this cluster's load balancers from the peer's")
	}
	list, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the Services, to tell this cluster's load balancers from the peer's: %w", err)
	}
	uids := map[string]bool{}
	for _, s := range list.Items {
		uids[string(s.UID)] = true
	}
	return uids, nil
}

// handedOver is the description of a rule of svc's handed over to the
// peer's load balancer name: no mark, and what it was.
func handedOver(svc *v1.Service, name string) string {
	d := fmt.Sprintf("kept for load balancer %s (was Overcast's, of %s/%s)", name, svc.Namespace, svc.Name)
	if len(d) > maxDescription {
		d = d[:maxDescription]
	}
	return d
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
func (c *Cloud) reliedByPeer(ctx context.Context, svc *v1.Service) func(list string, r rule) (string, bool, error) {
	var (
		once sync.Once
		uses peerUses
		err  error
	)
	return func(list string, r rule) (string, bool, error) {
		once.Do(func() { uses, err = c.peerUsesNow(ctx) })
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
func handOver(out []json.RawMessage, kept []rule, going []json.RawMessage, ch listChange) ([]json.RawMessage, []rule, error) {
	if ch.handOver == nil {
		return out, kept, nil
	}
	for _, raw := range going {
		var r rule
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, nil, err
		}
		if slices.ContainsFunc(kept, func(k rule) bool { return k.does(r) && !strings.HasPrefix(k.Description, markPrefix) }) {
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
