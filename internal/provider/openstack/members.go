package openstack

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// The members of a Service's pools: the eligible Nodes' InternalIPs, and
// their servers for the security group.

// resolveMembers adds the members of Nodes whose addresses the node controller
// has not written yet: their InternalIP is the one it is about to write, taken
// from the same (usually cached) view of the server. Without this, such a Node
// would stay out of its pools until the next unrelated sync, since a change of
// addresses alone does not make the service controller sync. A Node whose server
// is not found is left out, as an uninitialised one is.
func (st *steps) resolveMembers(ctx context.Context, s *lbSpec) error {
	if len(s.unaddressed) == 0 {
		return nil
	}
	for _, n := range s.unaddressed {
		srv, found, err := st.machineOf(ctx, n, snapshot.MaxAge)
		if err != nil {
			return fmt.Errorf("looking up the addresses of Node %s: %w", n.Name, err)
		}
		if !found {
			continue
		}
		addrs := nodeAddresses(srv.Name, st.addressesOf(ctx, srv), []string{srv.AccessIPv4, srv.AccessIPv6}, st.cfg.Networking)
		if ip, ok := provider.InternalIP(addrs, s.family); ok && ip.Is6() == (s.family == v1.IPv6Protocol) {
			s.members = append(s.members, ip.String())
			if s.sg != nil {
				s.sg.servers = append(s.sg.servers, srv.ID)
				s.sg.serverLabels[srv.ID] = n.Labels
			}
		}
	}
	sort.Strings(s.members)
	s.members = slices.Compact(s.members)
	if s.sg != nil {
		sort.Strings(s.sg.servers)
		s.sg.servers = slices.Compact(s.sg.servers)
	}
	return nil
}

// specMembers: the eligible Nodes' addresses (those the node selector
// picks), and the security group when groups are managed.
func (st *steps) specMembers(s *lbSpec, a specAnnotations, nodes []*v1.Node) {
	selector := st.cfg.LoadBalancer.NodeSelector
	if v, err := annotation.OpenStackNodeSelector.String(a.svc); a.e.keep(err) {
		selector = v
	}
	sel := labels.Everything()
	if selector != "" {
		if m, err := annotation.ParseNodeSelector(selector); a.e.keep(err) {
			sel = nodeSelector(m)
		}
	}
	if st.cfg.LoadBalancer.ManageSecurityGroups {
		s.sg = newSGSpec(a.svc, sel, s.ports)
	}
	for _, n := range nodes {
		if !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		if provider.AwaitingAddresses(n) {
			s.unaddressed = append(s.unaddressed, n)
			continue
		}
		if ip, ok := provider.InternalIP(n.Status.Addresses, s.family); ok && ip.Is6() == (s.family == v1.IPv6Protocol) {
			s.members = append(s.members, ip.String())
			if id, err := serverID(n.Spec.ProviderID); err == nil && s.sg != nil {
				s.sg.servers = append(s.sg.servers, id)
				s.sg.serverLabels[id] = n.Labels
			}
		}
	}
	sort.Strings(s.members)
	if s.sg != nil {
		sort.Strings(s.sg.servers)
	}
}

// newSGSpec is the security group of the Service's NodePorts (and its
// health check's with externalTrafficPolicy Local), on the selected Nodes.
func newSGSpec(svc *v1.Service, sel labels.Selector, ports []v1.ServicePort) *sgSpec {
	g := &sgSpec{selector: sel, serverLabels: map[string]labels.Set{}}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		g.hcPort = int(svc.Spec.HealthCheckNodePort)
	}
	for _, p := range ports {
		if p.NodePort != 0 {
			g.nodePorts = append(g.nodePorts, sgPort{proto: strings.ToLower(string(p.Protocol)), port: int(p.NodePort)})
		}
	}
	return g
}

// nodeSelector: "key=value" requires the value, "key" only the label.
func nodeSelector(m map[string]string) labels.Selector {
	sel := labels.NewSelector()
	for k, v := range m {
		var r *labels.Requirement
		var err error
		if v == "" {
			r, err = labels.NewRequirement(k, selection.Exists, nil)
		} else {
			r, err = labels.NewRequirement(k, selection.Equals, []string{v})
		}
		if err == nil {
			sel = sel.Add(*r)
		}
	}
	return sel
}
