package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// routes manages pod-CIDR routes as extraroutes of the [Route] router-id router,
// with Neutron's atomic add/remove (no read-modify-write race with other writers).
type routes struct{ c *Cloud }

var _ cloudprovider.Routes = routes{}

// ListRoutes returns the router's extraroutes, each matched to the Node whose
// InternalIP is its nexthop. A route whose nexthop is no Node's is reported as a
// blackhole; the route controller removes it only if it lies in --cluster-cidr.
func (r routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	if err := r.c.api.Session(ctx, osapi.Neutron); err != nil {
		return nil, err
	}
	extra, err := r.c.api.RouterRoutes(ctx, r.c.cfg.Route.RouterID)
	if err != nil {
		return nil, fmt.Errorf("getting router %s: %w", r.c.cfg.Route.RouterID, err)
	}
	byIP, err := r.c.nodesByInternalIP()
	if err != nil {
		return nil, err
	}
	out := make([]*cloudprovider.Route, 0, len(extra))
	for _, rt := range extra {
		node, ok := byIP[rt.NextHop]
		out = append(out, &cloudprovider.Route{
			Name:            rt.Destination + "-" + rt.NextHop,
			TargetNode:      types.NodeName(node),
			DestinationCIDR: rt.Destination,
			Blackhole:       !ok,
		})
	}
	return out, nil
}

// CreateRoute adds destination → the Node's InternalIP of the same family.
func (r routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	dest, err := netip.ParsePrefix(route.DestinationCIDR)
	if err != nil {
		return fmt.Errorf("route destination %q: %w", route.DestinationCIDR, err)
	}
	nexthop, err := r.c.nodeInternalIP(string(route.TargetNode), dest.Addr().Is4())
	if err != nil {
		return err
	}
	if err := r.c.api.Session(ctx, osapi.Neutron); err != nil {
		return err
	}
	rts := []osapi.Route{{Destination: route.DestinationCIDR, NextHop: nexthop}}
	if err := r.c.api.AddRoutes(ctx, r.c.cfg.Route.RouterID, rts); err != nil {
		return fmt.Errorf("adding route %s via %s to router %s: %w", route.DestinationCIDR, nexthop, r.c.cfg.Route.RouterID, err)
	}
	klog.FromContext(ctx).Info("Created route", "destination", route.DestinationCIDR, "nexthop", nexthop, "node", route.TargetNode)
	return nil
}

// DeleteRoute removes the router's routes to the destination (whatever their
// nexthop: the Node may be gone). Removing a route that is not there is a no-op.
func (r routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	if err := r.c.api.Session(ctx, osapi.Neutron); err != nil {
		return err
	}
	extra, err := r.c.api.RouterRoutes(ctx, r.c.cfg.Route.RouterID)
	if err != nil {
		return fmt.Errorf("getting router %s: %w", r.c.cfg.Route.RouterID, err)
	}
	var rts []osapi.Route
	for _, rt := range extra {
		if rt.Destination == route.DestinationCIDR {
			rts = append(rts, rt)
		}
	}
	if len(rts) == 0 {
		return nil
	}
	if err := r.c.api.RemoveRoutes(ctx, r.c.cfg.Route.RouterID, rts); err != nil {
		return fmt.Errorf("removing route %s from router %s: %w", route.DestinationCIDR, r.c.cfg.Route.RouterID, err)
	}
	klog.FromContext(ctx).Info("Deleted route", "destination", route.DestinationCIDR, "node", route.TargetNode)
	return nil
}

var errNoNodeCache = errors.New("the Node cache is not available yet")

func (c *Cloud) nodesByInternalIP() (map[string]string, error) {
	lister := c.nodeLister()
	if lister == nil {
		return nil, errNoNodeCache
	}
	nodes, err := lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				out[a.Address] = n.Name
			}
		}
	}
	return out, nil
}

func (c *Cloud) nodeInternalIP(name string, want4 bool) (string, error) {
	lister := c.nodeLister()
	if lister == nil {
		return "", errNoNodeCache
	}
	n, err := lister.Get(name)
	if err != nil {
		return "", fmt.Errorf("node %s: %w", name, err)
	}
	for _, a := range n.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); err == nil && a.Type == v1.NodeInternalIP && ip.Is4() == want4 {
			return a.Address, nil
		}
	}
	return "", fmt.Errorf("node %s has no InternalIP of the route's family yet", name)
}
