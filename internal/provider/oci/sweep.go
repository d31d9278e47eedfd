package oci

import (
	"context"
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/provider"
)

var _ provider.Sweeper = (*Cloud)(nil)

// Leftovers lists what this cluster made for Services that are gone, by
// the freeform tags it puts on them (this cluster's UID and the Service's):
// load balancers and network load balancers (their listeners, backend sets
// and certificates go with them) and the Services' frontend network security
// groups. Three listings of the compartment; nothing is changed. The rules a
// Service opened in security lists and backend NSGs carry no tag: they are
// removed by the delete path of the Service whose load balancer or NSG is
// left over, and not listed on their own.
func (c *Cloud) Leftovers(ctx context.Context, _ string, live provider.Live) ([]provider.Leftover, error) {
	cluster := c.Cluster.Get()
	if cluster == "" {
		return nil, errors.New("the cluster's UID is not known")
	}
	var owners provider.Owners
	var out []provider.Leftover
	for _, kind := range []string{kindLB, kindNLB} {
		lbs, err := c.gw.loadBalancers(ctx, kind, inCompartment(c.cfg.CompartmentID))
		if err != nil {
			return nil, err
		}
		for _, lb := range lbs {
			uid := types.UID(lb.FreeformTags[tagService])
			if lb.FreeformTags[tagCluster] != cluster || uid == "" || live.HasUID(uid) || gone(lb.LifecycleState) {
				continue
			}
			ns, name := namespaceName(lb.DisplayName, uid)
			out = append(out, provider.Leftover{Kind: noun(kind), ID: lb.ID, Name: lb.DisplayName,
				Owner: owners.Of(uid, ns, name), Removable: true, Note: "its Service is gone"})
		}
	}
	groups, err := c.gw.nsgs(ctx, inCompartment(c.cfg.CompartmentID))
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		uid := types.UID(g.FreeformTags["ServiceUid"])
		if g.FreeformTags[tagCluster] != cluster || uid == "" || live.HasUID(uid) || gone(g.LifecycleState) {
			continue
		}
		ns, name := namespaceName(strings.TrimSuffix(g.DisplayName, "/nsg"), uid)
		out = append(out, provider.Leftover{Kind: "network security group", ID: g.ID, Name: g.DisplayName,
			Owner: owners.Of(uid, ns, name), Removable: true, Note: "its Service is gone"})
	}
	provider.SortLeftovers(out)
	return out, nil
}

// namespaceName reads namespace/name/uid, the peer's names of network load
// balancers and NSGs; "" for a name that is only the UID (load balancers).
func namespaceName(display string, uid types.UID) (string, string) {
	rest, ok := strings.CutSuffix(display, "/"+string(uid))
	if !ok {
		return "", ""
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok {
		return "", ""
	}
	return ns, name
}

// gone: a lifecycle state of what is deleted already.
func gone(state string) bool {
	switch strings.ToUpper(state) {
	case "DELETED", "TERMINATED", "TERMINATING":
		return true
	}
	return false
}
