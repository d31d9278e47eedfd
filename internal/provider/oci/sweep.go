package oci

import (
	"context"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

var _ provider.Sweeper = (*Cloud)(nil)

// Leftovers lists what this cluster made for Services that are gone, by
// the freeform tags it puts on them (this cluster's UID and the Service's):
// load balancers and network load balancers (their listeners, backend sets
// and certificates go with them) and the Services' frontend network security
// groups (those of Services whose load balancer it built, or tagged by an
// earlier Overcast: a group whose load balancer is gone too, as after a
// crash between the two creates and the Service's finalizer removed by
// hand, is nobody's it can prove, and left), and the rules it marked in the
// security lists of the load balancer and node subnets. Three listings of the compartment and a read
// of each security list; nothing is changed. Rules in backend NSGs a Service
// named by annotation are not listed: the Service's delete path removes them
// while its annotation names the NSG.
func (c *Cloud) Leftovers(ctx context.Context, clusterName string, live provider.Live) ([]provider.Leftover, error) {
	return c.lb.leftovers(ctx, clusterName, live)
}

func (st *steps) leftovers(ctx context.Context, _ string, live provider.Live) ([]provider.Leftover, error) {
	cluster, err := st.cluster.Known()
	if err != nil {
		return nil, err
	}
	var owners provider.Owners
	var out []provider.Leftover
	// ours are the Services this cluster built a load balancer for: their
	// frontend NSGs carry the peer's tags alone (nsgTags), the load
	// balancer says whose they are.
	ours := map[types.UID]bool{}
	st.Relist() // the shared listings, as they are now
	for _, kind := range []string{ociapi.KindLB, ociapi.KindNLB} {
		lbs, err := st.listings[kind].All(ctx)
		if err != nil {
			return nil, err
		}
		for _, lb := range lbs {
			uid := types.UID(lb.FreeformTags[tagService])
			if lb.FreeformTags[tagCluster] == cluster && uid != "" {
				ours[uid] = true
			}
			if lb.FreeformTags[tagCluster] != cluster || uid == "" || live.HasUID(uid) || gone(lb.LifecycleState) {
				continue
			}
			ns, name := namespaceName(lb.DisplayName, uid)
			out = append(out, provider.Leftover{Kind: noun(kind), ID: lb.ID, Name: lb.DisplayName,
				Owner: owners.Of(uid, ns, name), Removable: true, Note: "its Service is gone"})
		}
	}
	groups, err := st.api.NSGs(ctx, ociapi.InCompartment(st.cfg.CompartmentID))
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		uid := types.UID(g.FreeformTags["ServiceUid"])
		if (g.FreeformTags[tagCluster] != cluster && !ours[uid]) || uid == "" || live.HasUID(uid) || gone(g.LifecycleState) {
			continue
		}
		ns, name := namespaceName(strings.TrimSuffix(g.DisplayName, "/nsg"), uid)
		out = append(out, provider.Leftover{Kind: "network security group", ID: g.ID, Name: g.DisplayName,
			Owner: owners.Of(uid, ns, name), Removable: true, Note: "its Service is gone"})
	}
	rules, err := st.ruleLeftovers(ctx, cluster, live, &owners)
	if err != nil {
		return nil, err
	}
	out = append(out, rules...)
	return out, nil
}

// ruleLeftovers are the rules of gone Services in the security lists of
// the configured load balancer subnets and of the nodes' subnets, known by
// their mark (overcast:<cluster UID>/<Service UID>).
func (st *steps) ruleLeftovers(ctx context.Context, cluster string, live provider.Live, owners *provider.Owners) ([]provider.Leftover, error) {
	var subnets []string
	if lb := st.cfg.LoadBalancer; lb != nil {
		for _, id := range []string{lb.Subnet1, lb.Subnet2} {
			if id != "" {
				subnets = append(subnets, id)
			}
		}
	}
	lists, err := st.lbLists(ctx, subnets)
	if err != nil {
		return nil, err
	}
	prefix := markPrefix + cluster + "/"
	var out []provider.Leftover
	for _, id := range lists {
		sl, err := st.api.SecurityList(ctx, id)
		if err != nil {
			return nil, err
		}
		for dir, raws := range map[string][]json.RawMessage{"ingress": sl.Ingress, "egress": sl.Egress} {
			for _, raw := range raws {
				var r struct {
					Description string `json:"description"`
				}
				if json.Unmarshal(raw, &r) != nil {
					continue
				}
				rest, ok := strings.CutPrefix(r.Description, prefix)
				if !ok {
					continue
				}
				uidPart, nsName, _ := strings.Cut(rest, " ")
				uid := types.UID(uidPart)
				if uid == "" || live.HasUID(uid) {
					continue
				}
				ns, name, _ := strings.Cut(nsName, "/")
				out = append(out, provider.Leftover{Kind: "security list rule", ID: id, Name: dir + " " + r.Description,
					Owner: owners.Of(uid, ns, name), Removable: true, Note: "its Service is gone"})
			}
		}
	}
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
