package osapi

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
func asFloatingIP(f *floatingips.FloatingIP) FloatingIP {
	return FloatingIP{ID: f.ID, FloatingIP: f.FloatingIP, PortID: f.PortID, FloatingNetworkID: f.FloatingNetworkID, Description: f.Description}
}

// ListFloatingIPs lists the floating IPs q asks for.
func (gw *Client) ListFloatingIPs(ctx context.Context, q FloatingIPQuery) ([]FloatingIP, error) {
	opts := floatingIPListOpts(q)
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) ([]FloatingIP, error) {
		return mapped(asFloatingIP)(allPages(ctx, floatingips.List(sc, opts), floatingips.ExtractFloatingIPs))
	})
}

// CreateFloatingIP allocates a floating IP as opts says.
func (gw *Client) CreateFloatingIP(ctx context.Context, opts FloatingIPCreate) (FloatingIP, error) {
	create := floatingIPCreateOpts(opts)
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) (FloatingIP, error) {
		return viewed(asFloatingIP)(floatingips.Create(ctx, sc, create).Extract())
	})
}

// floatingIPListOpts is q as gophercloud's (an empty field is no filter).
func floatingIPListOpts(q FloatingIPQuery) floatingips.ListOpts {
	return floatingips.ListOpts{FloatingIP: q.FloatingIP, Description: q.Description, PortID: q.PortID}
}

// floatingIPCreateOpts is opts as gophercloud's.
func floatingIPCreateOpts(o FloatingIPCreate) floatingips.CreateOpts {
	return floatingips.CreateOpts{FloatingNetworkID: o.FloatingNetworkID, SubnetID: o.SubnetID, FloatingIP: o.FloatingIP,
		PortID: o.PortID, Description: o.Description}
}

// SetFloatingIPPort attaches the floating IP to the port (an empty one
// detaches it).
func (gw *Client) SetFloatingIPPort(ctx context.Context, id string, portID *string) error {
	return do(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) error {
		return discard(floatingips.Update(ctx, sc, id, floatingips.UpdateOpts{PortID: portID}).Extract())
	})
}

// DeleteFloatingIP releases a floating IP (gone already: nil).
func (gw *Client) DeleteFloatingIP(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, Neutron, id, floatingips.Delete)
}

// ExternalNetworkIDs lists the ids of the external networks the project
// sees.
func (gw *Client) ExternalNetworkIDs(ctx context.Context) ([]string, error) {
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) ([]string, error) {
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
func subnetListOpts(q SubnetQuery) subnets.ListOpts {
	return subnets.ListOpts{NetworkID: q.NetworkID, IPVersion: q.IPVersion}
}

// asSubnet is the part of gophercloud's subnet the CCM reads.
func asSubnet(sn *subnets.Subnet) Subnet {
	return Subnet{ID: sn.ID, Name: sn.Name, NetworkID: sn.NetworkID, CIDR: sn.CIDR, Tags: sn.Tags}
}

// GetSubnet reads a subnet: outcome.ErrNotFound when it is gone.
func (gw *Client) GetSubnet(ctx context.Context, id string) (Subnet, error) {
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) (Subnet, error) {
		return viewed(asSubnet)(subnets.Get(ctx, sc, id).Extract())
	})
}

// ListSubnets lists the subnets q asks for.
func (gw *Client) ListSubnets(ctx context.Context, q SubnetQuery) ([]Subnet, error) {
	opts := subnetListOpts(q)
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) ([]Subnet, error) {
		return mapped(asSubnet)(allPages(ctx, subnets.List(sc, opts), subnets.ExtractSubnets))
	})
}

// SubnetCIDRs lists the CIDRs of the project's subnets.
func (gw *Client) SubnetCIDRs(ctx context.Context) ([]string, error) {
	all, err := gw.ListSubnets(ctx, SubnetQuery{})
	if err != nil {
		return nil, err
	}
	cidrs := make([]string, 0, len(all))
	for _, sn := range all {
		cidrs = append(cidrs, sn.CIDR)
	}
	return cidrs, nil
}

// SecurityGroup is the part of a Neutron security group the CCM uses.
type SecurityGroup struct {
	ID, Name string
	Tags     []string
	Rules    []SecurityRule
}

// SecurityRule is the part of a security group rule the CCM uses.
type SecurityRule struct {
	ID, SecGroupID                 string
	Direction, EtherType, Protocol string
	RemoteIPPrefix                 string
	PortRangeMin, PortRangeMax     int
}

func asSecurityGroup(g *groups.SecGroup) SecurityGroup {
	out := SecurityGroup{ID: g.ID, Name: g.Name, Tags: g.Tags}
	for _, r := range g.Rules {
		out.Rules = append(out.Rules, asSecurityRule(&r))
	}
	return out
}

func asSecurityRule(r *rules.SecGroupRule) SecurityRule {
	return SecurityRule{ID: r.ID, SecGroupID: r.SecGroupID, Direction: r.Direction, EtherType: r.EtherType, Protocol: r.Protocol,
		RemoteIPPrefix: r.RemoteIPPrefix, PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax}
}

// ListSecurityGroups lists the groups named name and carrying tags ("":
// any).
func (gw *Client) ListSecurityGroups(ctx context.Context, name, tags string) ([]SecurityGroup, error) {
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) ([]SecurityGroup, error) {
		return mapped(asSecurityGroup)(allPages(ctx, groups.List(sc, groups.ListOpts{Name: name, Tags: tags}), groups.ExtractGroups))
	})
}

// CreateSecurityGroup creates a security group (with Neutron's default
// egress rules).
func (gw *Client) CreateSecurityGroup(ctx context.Context, name, description string) (*SecurityGroup, error) {
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) (*SecurityGroup, error) {
		g, err := groups.Create(ctx, sc, groups.CreateOpts{Name: name, Description: description}).Extract()
		if err != nil {
			return nil, err
		}
		out := asSecurityGroup(g)
		return &out, nil
	})
}

// TagSecurityGroup replaces the group's tags.
func (gw *Client) TagSecurityGroup(ctx context.Context, id string, tags []string) error {
	return do(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) error {
		return discard(attributestags.ReplaceAll(ctx, sc, "security-groups", id, attributestags.ReplaceAllOpts{Tags: tags}).Extract())
	})
}

// DeleteSecurityGroup deletes a security group (gone already: nil).
func (gw *Client) DeleteSecurityGroup(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, Neutron, id, groups.Delete)
}

// ListRules lists every security group rule of the project.
func (gw *Client) ListRules(ctx context.Context) ([]SecurityRule, error) {
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) ([]SecurityRule, error) {
		return mapped(asSecurityRule)(allPages(ctx, rules.List(sc, rules.ListOpts{}), rules.ExtractRules))
	})
}

// CreateRules creates the group's ingress rules in one bulk call.
func (gw *Client) CreateRules(ctx context.Context, groupID string, ingress []RuleKey) error {
	opts := make([]rules.CreateOpts, 0, len(ingress))
	for _, k := range ingress {
		opts = append(opts, rules.CreateOpts{
			Direction: rules.DirIngress, EtherType: rules.RuleEtherType(k.Ether), SecGroupID: groupID,
			Protocol: rules.RuleProtocol(k.Proto), PortRangeMin: k.Min, PortRangeMax: k.Max, RemoteIPPrefix: k.Remote,
		})
	}
	return do(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) error {
		return discard(rules.CreateBulk(ctx, sc, opts).Extract())
	})
}

// DeleteRule deletes a security group rule (gone already: nil).
func (gw *Client) DeleteRule(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, Neutron, id, rules.Delete)
}

// ListPortViews lists the ports the query names, with the fields the
// security groups' placement reads.
func (gw *Client) ListPortViews(ctx context.Context, query url.Values) ([]PortView, error) {
	query["fields"] = []string{"id", "device_id", "security_groups", "port_security_enabled", "revision_number", "fixed_ips"}
	out, err := call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) ([]PortView, error) {
		return listAll[PortView](ctx, sc, "ports", query, "ports")
	})
	if err != nil {
		return nil, fmt.Errorf("listing ports: %w", err)
	}
	return out, nil
}

// SetPortGroups writes the port's security groups if its revision is still
// revision (If-Match: 412 when it is not).
func (gw *Client) SetPortGroups(ctx context.Context, id string, groups []string, revision int) (PortGroups, error) {
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) (PortGroups, error) {
		p, err := ports.Update(ctx, sc, id, ports.UpdateOpts{SecurityGroups: &groups, RevisionNumber: &revision}).Extract()
		if err != nil {
			return PortGroups{}, err
		}
		return PortGroups{ID: p.ID, Groups: p.SecurityGroups, Revision: p.RevisionNumber}, nil
	})
}

// The lists that make the servers' addresses (ports.go), each asking Neutron
// for the fields used only.

// ListLeanPorts lists every port of the project, with the fields that make
// the servers' addresses.
func (gw *Client) ListLeanPorts(ctx context.Context) ([]Port, error) {
	return leanList[Port](ctx, gw, "ports", "id", "device_id", "device_owner", "network_id", "fixed_ips")
}

// ListLeanNetworks lists every network, with its id and name.
func (gw *Client) ListLeanNetworks(ctx context.Context) ([]Network, error) {
	return leanList[Network](ctx, gw, "networks", "id", "name")
}

// ListLeanTrunks lists every trunk, with its parent and sub-ports.
func (gw *Client) ListLeanTrunks(ctx context.Context) ([]Trunk, error) {
	return leanList[Trunk](ctx, gw, "trunks", "port_id", "sub_ports")
}

// leanList lists Neutron's kind (its path and key), with only fields.
func leanList[T any](ctx context.Context, gw *Client, kind string, fields ...string) ([]T, error) {
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) ([]T, error) {
		return listAll[T](ctx, sc, kind, url.Values{"fields": fields}, kind)
	})
}

// RouterRoutes reads the router's extraroutes.
func (gw *Client) RouterRoutes(ctx context.Context, routerID string) ([]Route, error) {
	return call(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) ([]Route, error) {
		r, err := routers.Get(ctx, sc, routerID).Extract()
		if err != nil {
			return nil, err
		}
		out := make([]Route, 0, len(r.Routes))
		for _, rt := range r.Routes {
			out = append(out, Route{Destination: rt.DestinationCIDR, NextHop: rt.NextHop})
		}
		return out, nil
	})
}

// AddRoutes adds extraroutes to the router, atomically (no read-modify-write).
func (gw *Client) AddRoutes(ctx context.Context, routerID string, routes []Route) error {
	return do(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) error {
		rts := routerRouteList(routes)
		return discard(extraroutes.Add(ctx, sc, routerID, extraroutes.Opts{Routes: &rts}).Extract())
	})
}

// RemoveRoutes removes extraroutes from the router, atomically.
func (gw *Client) RemoveRoutes(ctx context.Context, routerID string, routes []Route) error {
	return do(ctx, gw, Neutron, func(sc *gophercloud.ServiceClient) error {
		rts := routerRouteList(routes)
		return discard(extraroutes.Remove(ctx, sc, routerID, extraroutes.Opts{Routes: &rts}).Extract())
	})
}

// routerRouteList is routes as Neutron's extraroutes take them.
func routerRouteList(routes []Route) []routers.Route {
	out := make([]routers.Route, 0, len(routes))
	for _, rt := range routes {
		out = append(out, routers.Route{DestinationCIDR: rt.Destination, NextHop: rt.NextHop})
	}
	return out
}
