package cloudstack

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// addrOpenings are the firewall rules of one address.
type addrOpenings struct {
	addr     string
	openings []csapi.Opening
}

// newFirewallListing is the shared listing of every firewall rule, by
// address: what the drift check reads.
func newFirewallListing(gw csapi.API) *snapshot.Snapshot[addrOpenings] {
	return snapshot.New(ProviderName+"-firewall", listingMaxAge, listingMinMiss, func(ctx context.Context) ([]addrOpenings, error) {
		all, err := gw.FirewallRules(ctx, "")
		if err != nil {
			return nil, err
		}
		byAddr := map[string]*addrOpenings{}
		var out []addrOpenings
		for _, o := range all {
			if byAddr[o.AddressID] == nil {
				byAddr[o.AddressID] = &addrOpenings{addr: o.AddressID}
			}
			g := byAddr[o.AddressID]
			g.openings = append(g.openings, o)
		}
		for _, g := range byAddr {
			out = append(out, *g)
		}
		return out, nil
	}, func(g addrOpenings) []string { return []string{"addr/" + g.addr} })
}

// ruleGroup is the rules whose names begin with one load balancer name.
type ruleGroup struct {
	name  string
	rules []csapi.Rule
}

// newRuleListing is the shared listing of every load balancer rule, grouped
// by the load balancer name their names begin with, at most listingMaxAge old.
func newRuleListing(gw csapi.API) *snapshot.Snapshot[ruleGroup] {
	return snapshot.New(ProviderName, listingMaxAge, listingMinMiss, func(ctx context.Context) ([]ruleGroup, error) {
		all, err := gw.Rules(ctx, "")
		if err != nil {
			return nil, err
		}
		byName := map[string]int{}
		var groups []ruleGroup
		for _, r := range all {
			n := lbNameOf(r.Name)
			if n == "" {
				continue
			}
			i, ok := byName[n]
			if !ok {
				i = len(groups)
				byName[n] = i
				groups = append(groups, ruleGroup{name: n})
			}
			groups[i].rules = append(groups[i].rules, r)
		}
		return groups, nil
	}, func(g ruleGroup) []string { return []string{"lb/" + g.name} })
}

// listedRules is the rules of load balancer name in the shared listing.
func (s *steps) listedRules(ctx context.Context, name string) ([]csapi.Rule, error) {
	g, _, err := s.listing.Get(ctx, "lb/"+name)
	return g.rules, err
}

// GetLoadBalancer is the status of the Service's rules, from the shared
// listing.
func (c *Cloud) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	rules, err := c.lb.listedRules(ctx, lbName(svc))
	if err != nil || len(rules) == 0 {
		return nil, false, err
	}
	hostname, _ := annotation.CloudStackHostname.String(svc)
	return statusFor(lbSpec{hostname: strings.TrimSpace(hostname)}, rules[0].IP), true, nil
}
