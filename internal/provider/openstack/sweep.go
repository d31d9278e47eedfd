package openstack

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

var _ provider.Sweeper = (*Cloud)(nil)

// Leftovers lists what this cluster made for Services that are gone: its
// load balancers (their listeners, pools and members go with them), its part
// of a load balancer others still share, its security groups, the floating
// IPs it allocated and the certificates it stored in Barbican. Ownership
// comes from this cluster's UID in tags and names; a floating IP's
// description names only its Service, so one is removable only when its
// Service's other objects, or the load balancer it is on, say it is this
// cluster's. Five listings at most; nothing is changed.
func (c *Cloud) Leftovers(ctx context.Context, clusterName string, live provider.Live) ([]provider.Leftover, error) {
	return c.lb.leftovers(ctx, clusterName, live)
}

func (st *steps) leftovers(ctx context.Context, clusterName string, live provider.Live) ([]provider.Leftover, error) {
	cluster, err := st.cluster.Known()
	if err != nil {
		return nil, err
	}
	if err := st.api.Session(ctx, osapi.Neutron); err != nil {
		return nil, err
	}
	var owners provider.Owners
	var out []provider.Leftover

	st.Relist() // the shared listings, as they are now
	lbs, err := st.index.lbs.All(ctx)
	if err != nil {
		return nil, err
	}
	ourVIPs := map[string]bool{} // the VIP ports of this cluster's load balancers
	for i := range lbs {
		lb := &lbs[i]
		ourVIPs[lb.VipPortID] = true
		out = append(out, st.lbLeftovers(lb, clusterName, live, &owners)...)
	}
	// Gone Services that shared a load balancer are known by name; their
	// security groups' names (lb-sg-<uid>-<namespace>-<name>) give their UIDs.
	sharers := map[string]*v1.Service{}
	for _, l := range out {
		if l.Owner.UID == "" {
			sharers[l.Owner.Namespace+"-"+l.Owner.Name] = l.Owner
		}
	}

	gs, err := st.api.ListSecurityGroups(ctx, "", tagCluster+cluster)
	if err != nil {
		return nil, fmt.Errorf("listing security groups: %w", err)
	}
	for _, g := range gs {
		uid := tagValue(g.Tags, tagService)
		if uid == "" || live.HasUID(uid) {
			continue
		}
		// lb-sg-<uid>-<namespace>-<name>: any split of the rest at a "-"
		// names the group alike; the load balancer's name, when there is
		// one, gives the true one.
		rest := strings.TrimPrefix(g.Name, sgNamePrefix+string(uid)+"-")
		if svc, ok := sharers[rest]; ok {
			owners.Adopt(uid, svc)
		}
		ns, name, _ := strings.Cut(rest, "-")
		out = append(out, provider.Leftover{Kind: "security group", ID: g.ID, Name: g.Name,
			Owner: owners.Of(uid, ns, name), Removable: true, Note: "its Service is gone"})
	}

	certs, err := st.certLeftovers(ctx, live, &owners)
	if err != nil {
		return nil, err
	}
	out = append(out, certs...)

	fips, err := st.index.fips.All(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range fips {
		uid, ok := strings.CutPrefix(f.Description, fipDescription)
		if !ok || uid == "" || live.HasUID(types.UID(uid)) {
			continue
		}
		l := provider.Leftover{Kind: "floating IP", ID: f.ID, Name: f.FloatingIP, Note: "its Service is gone"}
		if owners.Known(types.UID(uid)) || (f.PortID != "" && ourVIPs[f.PortID]) {
			l.Owner, l.Removable = owners.Of(types.UID(uid), "", ""), true
		} else {
			l.Owner = provider.GoneService(types.UID(uid), "", "")
			l.Note = "allocated by an overcast-ccm for a Service no cluster here knows (another cluster's in this project?): not removed"
		}
		out = append(out, l)
	}
	return out, nil
}

// lbLeftovers is what of one of this cluster's load balancers is left over:
// all of it when its owner and every Service sharing it are gone, else the
// part of each gone one (its listeners and its tag), removed by its Service's
// delete path, which leaves a load balancer others still use.
func (st *steps) lbLeftovers(lb *osapi.LoadBalancer, clusterName string, live provider.Live, owners *provider.Owners) []provider.Leftover {
	prefix := servicePrefix + clusterName + "_"
	nameOf := func(tag string) (string, string, bool) {
		rest, ok := strings.CutPrefix(tag, prefix)
		if !ok {
			return "", "", false
		}
		ns, name, ok := strings.Cut(rest, "_") // namespaces and names never hold "_"
		return ns, name, ok && ns != "" && name != ""
	}
	ownerUID := tagValue(lb.Tags, tagService)
	ownerNS, ownerName, _ := nameOf(lb.Name)
	// The UID decides: a Service of the same name made again since (a new
	// UID) has a load balancer of its own, found by its own UID.
	ownerGone := ownerUID != "" && !live.HasUID(ownerUID)
	var goneSharers []provider.Leftover
	liveSharers := 0
	for _, t := range lb.Tags {
		ns, name, ok := nameOf(t)
		if !ok || t == lb.Name {
			continue
		}
		if live.Has(ns + "/" + name) {
			liveSharers++
			continue
		}
		// A Service sharing it: its tag and listeners name it, by name.
		svc := owners.Of(types.UID("name:"+ns+"/"+name), ns, name)
		svc.UID = ""
		svc.Annotations[string(annotation.OpenStackLoadBalancerID)] = lb.ID
		goneSharers = append(goneSharers, provider.Leftover{Kind: "share of a load balancer", ID: lb.ID, Name: lb.Name,
			Owner: svc, Removable: true, Note: "its Service is gone; its listeners and tag leave the load balancer"})
	}
	if !ownerGone {
		return goneSharers
	}
	owner := owners.Of(ownerUID, ownerNS, ownerName)
	if liveSharers > 0 {
		return append(goneSharers, provider.Leftover{Kind: "share of a load balancer", ID: lb.ID, Name: lb.Name, Owner: owner, Removable: true,
			Note: fmt.Sprintf("its Service is gone; %d other Service(s) still use it: its listeners and tag leave it", liveSharers)})
	}
	note := fmt.Sprintf("its Service is gone (with %d listener(s), %d pool(s))", len(lb.Listeners), len(lb.Pools))
	if ownerName != "" && live.Has(ownerNS+"/"+ownerName) {
		note = fmt.Sprintf("its Service is gone; the Service of that name now is another one, with a load balancer of its own (with %d listener(s), %d pool(s))", len(lb.Listeners), len(lb.Pools))
	}
	l := provider.Leftover{Kind: "load balancer", ID: lb.ID, Name: lb.Name, Owner: owner, Removable: true, Note: note}
	return append(goneSharers, l)
}

// certLeftovers are the certificates in Barbican stored for Services that
// are gone; none when the cloud has no Barbican.
func (st *steps) certLeftovers(ctx context.Context, live provider.Live, owners *provider.Owners) ([]provider.Leftover, error) {
	missing, err := st.api.KeyManagerMissing(ctx)
	if missing {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	objs, err := st.storedObjects(ctx)
	if err != nil {
		return nil, err
	}
	var out []provider.Leftover
	var unsure []provider.Leftover
	for _, o := range objs {
		uid, cluster, ok := parseStoredName(o.name)
		if !ok || live.HasUID(uid) || (cluster != "" && cluster != st.cluster.Get()) {
			continue
		}
		l := provider.Leftover{Kind: o.kind, ID: lastSegment(o.ref), Name: o.name, Note: "its Service is gone"}
		if cluster == "" {
			unsure = append(unsure, l)
			continue
		}
		l.Owner, l.Removable = owners.Of(uid, "", ""), true
		l.Owner.Annotations[string(annotation.OpenStackTLSSecret)] = "(swept)"
		out = append(out, l)
	}
	// Names from before the cluster's UID was in them: this cluster's only
	// when its other objects say the Service was.
	for _, l := range unsure {
		uid, _, _ := parseStoredName(l.Name)
		if owners.Known(uid) {
			l.Owner, l.Removable = owners.Of(uid, "", ""), true
			l.Owner.Annotations[string(annotation.OpenStackTLSSecret)] = "(swept)"
		} else {
			l.Owner = provider.GoneService(uid, "", "")
			l.Note = "stored by an overcast-ccm for a Service no cluster here knows (another cluster's in this project?): not removed"
		}
		out = append(out, l)
	}
	return out, nil
}

// tagValue is the value of the first tag prefix+value.
func tagValue(tags []string, prefix string) types.UID {
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, prefix); ok && v != "" {
			return types.UID(v)
		}
	}
	return ""
}
