package cloudstack

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

var _ provider.Sweeper = (*Cloud)(nil)

// Leftovers lists what this cluster made for Services that are gone: the
// public addresses tagged with its UID and a gone Service's (and no live
// Service's rules on them), and the load
// balancer rules on this cluster's addresses named for a gone Service (one
// that shared another's loadBalancerIP leaves only rules). Addresses on the
// cluster's guest networks with no tag, no rule and no NAT are listed too:
// a crash between associating an address and tagging it leaves one, but
// nothing says it is this cluster's, so it is never removed. Three listings;
// nothing is changed.
func (c *Cloud) Leftovers(ctx context.Context, _ string, live provider.Live) ([]provider.Leftover, error) {
	cluster, err := c.Cluster.Known()
	if err != nil {
		return nil, err
	}
	ours, err := c.api.AddressesTagged(ctx, map[string]string{tagCluster: cluster})
	if err != nil {
		return nil, err
	}
	rules, err := c.api.Rules(ctx, "")
	if err != nil {
		return nil, err
	}
	liveNames := map[string]bool{}
	for _, uid := range live.UIDs() {
		liveNames[lbNameOfUID(uid)] = true
	}
	// An address whose Service is gone but that a live Service's rules are
	// on (it shared it by loadBalancerIP) is that Service's now: released
	// with the last of them, never a leftover.
	inUse := map[string]bool{}
	for _, r := range rules {
		if liveNames[lbNameOf(r.Name)] {
			inUse[r.AddressID] = true
		}
	}
	var owners provider.Owners
	var out []provider.Leftover
	byID := map[string]csapi.Address{}
	networks := map[string]bool{}
	for _, a := range ours {
		byID[a.ID] = a
		networks[a.Network] = true
		uid := types.UID(a.Tags[tagService])
		if uid == "" || live.HasUID(uid) || inUse[a.ID] {
			continue
		}
		ns, name, _ := strings.Cut(a.Tags[tagServiceName], "/")
		out = append(out, provider.Leftover{Kind: "public address", ID: a.ID, Name: a.IP,
			Owner: owners.Of(uid, ns, name), Removable: true, Note: "its Service is gone"})
	}
	withRules := map[string]bool{}
	for _, r := range rules {
		withRules[r.AddressID] = true
		a, onOurs := byID[r.AddressID]
		name := lbNameOf(r.Name)
		if !onOurs || name == "" || liveNames[name] {
			continue
		}
		// The rule's Service: the address's own, else one that shared it;
		// a Service's rules are found by the name its UID gives, so the
		// name's hex digits stand for a UID the rules alone name.
		uid := types.UID(a.Tags[tagService])
		if lbNameOfUID(uid) != name {
			uid = types.UID(strings.TrimPrefix(name, "a"))
		}
		out = append(out, provider.Leftover{Kind: "load balancer rule", ID: r.ID, Name: r.Name,
			Owner: owners.Of(uid, "", ""), Removable: true, Note: fmt.Sprintf("its Service is gone (on %s)", a.IP)})
	}
	if len(networks) > 0 {
		all, err := c.api.AddressesTagged(ctx, nil)
		if err != nil {
			return nil, err
		}
		for _, a := range all {
			if len(a.Tags) > 0 || a.SourceNAT || a.StaticNAT || withRules[a.ID] || !networks[a.Network] ||
				!strings.EqualFold(a.State, "Allocated") {
				continue
			}
			out = append(out, provider.Leftover{Kind: "public address", ID: a.ID, Name: a.IP,
				Note: "untagged, with no rule, on this cluster's guest network: a crash between associating and tagging leaves such an address (its Service takes it up, unless the Service is gone with its finalizer removed), but nothing says it is this cluster's; not removed (disassociateIpAddress by hand once known)"})
		}
	}
	return out, nil
}

// lbNameOfUID is the load balancer name of the Service with this UID.
func lbNameOfUID(uid types.UID) string {
	return lbName(provider.GoneService(uid, "", ""))
}
