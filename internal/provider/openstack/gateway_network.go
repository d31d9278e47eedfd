package openstack

import (
	"context"
	"fmt"
	"net/url"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// Neutron's calls: floating IPs, subnets and networks, security groups and
// their rules, ports, the router's extraroutes.

// asFloatingIP is the part of gophercloud's floating IP the CCM reads.
func asFloatingIP(f *floatingips.FloatingIP) floatingIP {
	return floatingIP{ID: f.ID, FloatingIP: f.FloatingIP, PortID: f.PortID, FloatingNetworkID: f.FloatingNetworkID, Description: f.Description}
}

// listFloatingIPs lists the floating IPs q asks for.
func (gw *gateway) listFloatingIPs(ctx context.Context, q floatingIPQuery) ([]floatingIP, error) {
	opts := floatingIPListOpts(q)
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) ([]floatingIP, error) {
		all, err := allPages(ctx, floatingips.List(sc, opts), floatingips.ExtractFloatingIPs)
		if err != nil {
			return nil, err
		}
		out := make([]floatingIP, len(all))
		for i := range all {
			out[i] = asFloatingIP(&all[i])
		}
		return out, nil
	})
}

// createFloatingIP allocates a floating IP as opts says.
func (gw *gateway) createFloatingIP(ctx context.Context, opts floatingIPCreate) (floatingIP, error) {
	create := floatingIPCreateOpts(opts)
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) (floatingIP, error) {
		f, err := floatingips.Create(ctx, sc, create).Extract()
		if err != nil {
			return floatingIP{}, err
		}
		return asFloatingIP(f), nil
	})
}

// floatingIPListOpts is q as gophercloud's (an empty field is no filter).
func floatingIPListOpts(q floatingIPQuery) floatingips.ListOpts {
	return floatingips.ListOpts{FloatingIP: q.FloatingIP, Description: q.Description, PortID: q.PortID}
}

// floatingIPCreateOpts is opts as gophercloud's.
func floatingIPCreateOpts(o floatingIPCreate) floatingips.CreateOpts {
	return floatingips.CreateOpts{FloatingNetworkID: o.FloatingNetworkID, SubnetID: o.SubnetID, FloatingIP: o.FloatingIP,
		PortID: o.PortID, Description: o.Description}
}

// setFloatingIPPort attaches the floating IP to the port (an empty one
// detaches it).
func (gw *gateway) setFloatingIPPort(ctx context.Context, id string, portID *string) error {
	return do(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) error {
		return discard(floatingips.Update(ctx, sc, id, floatingips.UpdateOpts{PortID: portID}).Extract())
	})
}

func (gw *gateway) deleteFloatingIP(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, svcNetwork, id, floatingips.Delete)
}

// externalNetworkIDs lists the ids of the external networks the project
// sees.
func (gw *gateway) externalNetworkIDs(ctx context.Context) ([]string, error) {
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) ([]string, error) {
		iTrue := true
		opts := external.ListOptsExt{ListOptsBuilder: networks.ListOpts{}, External: &iTrue}
		nets, err := allPages(ctx, networks.List(sc, opts), func(p pagination.Page) (nets []networks.Network, err error) {
			return nets, networks.ExtractNetworksInto(p, &nets)
		})
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(nets))
		for i := range nets {
			ids[i] = nets[i].ID
		}
		return ids, nil
	})
}

// subnetListOpts is q as gophercloud's (an empty field is no filter).
func subnetListOpts(q subnetQuery) subnets.ListOpts {
	return subnets.ListOpts{NetworkID: q.NetworkID, IPVersion: q.IPVersion}
}

// asSubnet is the part of gophercloud's subnet the CCM reads.
func asSubnet(sn *subnets.Subnet) subnet {
	return subnet{ID: sn.ID, Name: sn.Name, NetworkID: sn.NetworkID, CIDR: sn.CIDR, Tags: sn.Tags}
}

func (gw *gateway) getSubnet(ctx context.Context, id string) (subnet, error) {
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) (subnet, error) {
		sn, err := subnets.Get(ctx, sc, id).Extract()
		if err != nil {
			return subnet{}, err
		}
		return asSubnet(sn), nil
	})
}

// listSubnets lists the subnets q asks for.
func (gw *gateway) listSubnets(ctx context.Context, q subnetQuery) ([]subnet, error) {
	opts := subnetListOpts(q)
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) ([]subnet, error) {
		all, err := allPages(ctx, subnets.List(sc, opts), subnets.ExtractSubnets)
		if err != nil {
			return nil, err
		}
		out := make([]subnet, len(all))
		for i := range all {
			out[i] = asSubnet(&all[i])
		}
		return out, nil
	})
}

// subnetCIDRs lists the CIDRs of the project's subnets.
func (gw *gateway) subnetCIDRs(ctx context.Context) ([]string, error) {
	all, err := gw.listSubnets(ctx, subnetQuery{})
	if err != nil {
		return nil, err
	}
	cidrs := make([]string, 0, len(all))
	for _, sn := range all {
		cidrs = append(cidrs, sn.CIDR)
	}
	return cidrs, nil
}

// securityGroup is the part of a Neutron security group the CCM uses.
type securityGroup struct {
	ID, Name string
	Tags     []string
	Rules    []securityRule
}

// securityRule is the part of a security group rule the CCM uses.
type securityRule struct {
	ID, SecGroupID                 string
	Direction, EtherType, Protocol string
	RemoteIPPrefix                 string
	PortRangeMin, PortRangeMax     int
}

func asSecurityGroup(g *groups.SecGroup) securityGroup {
	out := securityGroup{ID: g.ID, Name: g.Name, Tags: g.Tags}
	for _, r := range g.Rules {
		out.Rules = append(out.Rules, asSecurityRule(r))
	}
	return out
}

func asSecurityRule(r rules.SecGroupRule) securityRule {
	return securityRule{ID: r.ID, SecGroupID: r.SecGroupID, Direction: r.Direction, EtherType: r.EtherType, Protocol: r.Protocol,
		RemoteIPPrefix: r.RemoteIPPrefix, PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax}
}

// listSecurityGroups lists the groups named name and carrying tags ("":
// any).
func (gw *gateway) listSecurityGroups(ctx context.Context, name, tags string) ([]securityGroup, error) {
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) ([]securityGroup, error) {
		all, err := allPages(ctx, groups.List(sc, groups.ListOpts{Name: name, Tags: tags}), groups.ExtractGroups)
		if err != nil {
			return nil, err
		}
		out := make([]securityGroup, len(all))
		for i := range all {
			out[i] = asSecurityGroup(&all[i])
		}
		return out, nil
	})
}

func (gw *gateway) createSecurityGroup(ctx context.Context, name, description string) (*securityGroup, error) {
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) (*securityGroup, error) {
		g, err := groups.Create(ctx, sc, groups.CreateOpts{Name: name, Description: description}).Extract()
		if err != nil {
			return nil, err
		}
		out := asSecurityGroup(g)
		return &out, nil
	})
}

// tagSecurityGroup replaces the group's tags.
func (gw *gateway) tagSecurityGroup(ctx context.Context, id string, tags []string) error {
	return do(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) error {
		return discard(attributestags.ReplaceAll(ctx, sc, "security-groups", id, attributestags.ReplaceAllOpts{Tags: tags}).Extract())
	})
}

func (gw *gateway) deleteSecurityGroup(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, svcNetwork, id, groups.Delete)
}

// listRules lists every security group rule of the project.
func (gw *gateway) listRules(ctx context.Context) ([]securityRule, error) {
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) ([]securityRule, error) {
		all, err := allPages(ctx, rules.List(sc, rules.ListOpts{}), rules.ExtractRules)
		if err != nil {
			return nil, err
		}
		out := make([]securityRule, len(all))
		for i, r := range all {
			out[i] = asSecurityRule(r)
		}
		return out, nil
	})
}

// createRules creates the group's ingress rules in one bulk call.
func (gw *gateway) createRules(ctx context.Context, groupID string, ingress []sgRuleKey) error {
	opts := make([]rules.CreateOpts, 0, len(ingress))
	for _, k := range ingress {
		opts = append(opts, rules.CreateOpts{
			Direction: rules.DirIngress, EtherType: rules.RuleEtherType(k.ether), SecGroupID: groupID,
			Protocol: rules.RuleProtocol(k.proto), PortRangeMin: k.min, PortRangeMax: k.max, RemoteIPPrefix: k.remote,
		})
	}
	return do(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) error {
		return discard(rules.CreateBulk(ctx, sc, opts).Extract())
	})
}

func (gw *gateway) deleteRule(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, svcNetwork, id, rules.Delete)
}

// listPortViews lists the ports the query names, with the fields the
// security groups' placement reads.
func (gw *gateway) listPortViews(ctx context.Context, query url.Values) ([]sgPortView, error) {
	query["fields"] = []string{"id", "device_id", "security_groups", "port_security_enabled", "revision_number", "fixed_ips"}
	out, err := call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) ([]sgPortView, error) {
		return listAll[sgPortView](ctx, sc, "ports", query, "ports")
	})
	if err != nil {
		return nil, fmt.Errorf("listing ports: %w", err)
	}
	return out, nil
}

// setPortGroups writes the port's security groups if its revision is still
// revision (If-Match: 412 when it is not).
func (gw *gateway) setPortGroups(ctx context.Context, id string, groups []string, revision int) (sgKnownPort, error) {
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) (sgKnownPort, error) {
		p, err := ports.Update(ctx, sc, id, ports.UpdateOpts{SecurityGroups: &groups, RevisionNumber: &revision}).Extract()
		if err != nil {
			return sgKnownPort{}, err
		}
		return sgKnownPort{id: p.ID, groups: p.SecurityGroups, revision: p.RevisionNumber}, nil
	})
}

// The lists that make the servers' addresses (ports.go), each asking Neutron
// for the fields used only.

func (gw *gateway) listLeanPorts(ctx context.Context) ([]leanPort, error) {
	return leanList[leanPort](ctx, gw, "ports", "id", "device_id", "device_owner", "network_id", "fixed_ips")
}

func (gw *gateway) listLeanNetworks(ctx context.Context) ([]leanNetwork, error) {
	return leanList[leanNetwork](ctx, gw, "networks", "id", "name")
}

func (gw *gateway) listLeanTrunks(ctx context.Context) ([]leanTrunk, error) {
	return leanList[leanTrunk](ctx, gw, "trunks", "port_id", "sub_ports")
}

// leanList lists Neutron's kind (its path and key), with only fields.
func leanList[T any](ctx context.Context, gw *gateway, kind string, fields ...string) ([]T, error) {
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) ([]T, error) {
		return listAll[T](ctx, sc, kind, url.Values{"fields": fields}, kind)
	})
}

// routerRoutes reads the router's extraroutes.
func (gw *gateway) routerRoutes(ctx context.Context, routerID string) ([]extraRoute, error) {
	return call(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) ([]extraRoute, error) {
		r, err := routers.Get(ctx, sc, routerID).Extract()
		if err != nil {
			return nil, err
		}
		out := make([]extraRoute, 0, len(r.Routes))
		for _, rt := range r.Routes {
			out = append(out, extraRoute{destination: rt.DestinationCIDR, nextHop: rt.NextHop})
		}
		return out, nil
	})
}

// addRoutes adds extraroutes to the router, atomically (no read-modify-write).
func (gw *gateway) addRoutes(ctx context.Context, routerID string, routes []extraRoute) error {
	return do(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) error {
		rts := routerRouteList(routes)
		return discard(extraroutes.Add(ctx, sc, routerID, extraroutes.Opts{Routes: &rts}).Extract())
	})
}

// removeRoutes removes extraroutes from the router, atomically.
func (gw *gateway) removeRoutes(ctx context.Context, routerID string, routes []extraRoute) error {
	return do(ctx, gw, svcNetwork, func(sc *gophercloud.ServiceClient) error {
		rts := routerRouteList(routes)
		return discard(extraroutes.Remove(ctx, sc, routerID, extraroutes.Opts{Routes: &rts}).Extract())
	})
}

// routerRouteList is routes as Neutron's extraroutes take them.
func routerRouteList(routes []extraRoute) []routers.Route {
	out := make([]routers.Route, 0, len(routes))
	for _, rt := range routes {
		out = append(out, routers.Route{DestinationCIDR: rt.destination, NextHop: rt.nextHop})
	}
	return out
}
