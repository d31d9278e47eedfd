package openstack

import (
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Routers (Networking API reference, "Routers" and the extraroute-atomic
// extension): the emulator's routers are the fixture's; a write changes
// their attributes and extra routes, not their gateway.

// validateRoutes checks destinations and that every nexthop is on a subnet
// attached to the router.
func (e *Emulator) validateRoutes(rt *router, routes []route) *apiErr {
	for _, ro := range routes {
		if _, err := netip.ParsePrefix(ro.Destination); err != nil {
			return errf(400, "InvalidInput", "Invalid input for routes. Reason: '%s' is not a valid IP subnet.", ro.Destination)
		}
		hop, err := netip.ParseAddr(ro.NextHop)
		if err != nil {
			return errf(400, "InvalidInput", "Invalid input for routes. Reason: '%s' is not a valid IP address.", ro.NextHop)
		}
		connected := false
		for _, sid := range rt.Interfaces {
			if s, ok := e.subnets.Get(sid); ok && s.ipam.prefix.Contains(hop) {
				connected = true
			}
		}
		if !connected {
			return errf(400, "InvalidRoutes", "Invalid format for routes: [{'destination': '%s', 'nexthop': '%s'}], the nexthop is not connected with router", ro.Destination, ro.NextHop)
		}
	}
	return nil
}

// decodeRouterUpdate reads a router update: its gateway is not changeable
// here.
func decodeRouterUpdate(r *http.Request, b *routesBody) *apiErr {
	if aerr := neutronBody(r, b); aerr != nil {
		return aerr
	}
	if b.Router.Gateway != nil {
		return badRequest("The emulator does not support changing external_gateway_info.")
	}
	return nil
}

// updateRouter changes a router's attributes and replaces its routes.
func (e *Emulator) updateRouter(rt *router, _ *http.Request, b *routesBody, now time.Time) (core.Reply, *apiErr) {
	if b.Router.Routes != nil {
		if aerr := e.validateRoutes(rt, *b.Router.Routes); aerr != nil {
			return core.Reply{}, aerr
		}
		rt.Routes = slices.Clone(*b.Router.Routes)
	}
	rt.Name = deref(b.Router.Name, rt.Name)
	rt.Description = deref(b.Router.Description, rt.Description)
	rt.AdminStateUp = deref(b.Router.AdminStateUp, rt.AdminStateUp)
	rt.touch(now)
	return core.OK(keyed("router", rt.view())), nil
}

// decodeExtraRoutes reads {"router": {"routes": [...]}}, which
// add_extraroutes and remove_extraroutes require.
func decodeExtraRoutes(r *http.Request, b *routesBody) *apiErr {
	if err := decodeJSON(r, b); err != nil || b.Router.Routes == nil {
		return badRequest("Invalid input: {\"router\": {\"routes\": [...]}} is required.")
	}
	return nil
}

// extraRoutes serves add_extraroutes (add) and remove_extraroutes: atomic
// and idempotent.
func (e *Emulator) extraRoutes(add bool) change[routesBody] {
	return onObject(e.routers, routerMissing, func(rt *router, _ *http.Request, b *routesBody, now time.Time) (core.Reply, *apiErr) {
		routes := slices.Clone(rt.Routes)
		if add {
			if aerr := e.validateRoutes(rt, *b.Router.Routes); aerr != nil {
				return core.Reply{}, aerr
			}
			for _, ro := range *b.Router.Routes {
				if !slices.Contains(routes, ro) {
					routes = append(routes, ro)
				}
			}
		} else {
			routes = slices.DeleteFunc(routes, func(ro route) bool { return slices.Contains(*b.Router.Routes, ro) })
		}
		rt.Routes = routes
		rt.touch(now)
		return core.OK(keyed("router", rt.view())), nil
	})
}
