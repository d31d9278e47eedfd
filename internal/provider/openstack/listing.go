package openstack

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// Looks at unchanged Services (a restarted or newly elected CCM syncs every
// Service at once) are answered from two listings shared by all of them: this
// cluster's load balancers, and the project's floating IPs. Without them each
// such look costs a listing of its own load balancer and of its floating IP, and
// 1,000 Services cost 2,000 reads; with them a few.
const (
	// indexMaxAge is how old the listings may be; they are made only while
	// Services are being looked at, never in the steady state.
	indexMaxAge = 30 * time.Second
	// indexMinMiss: a Service missing from the listing takes the direct path; the
	// listing is not refreshed for it.
	indexMinMiss = indexMaxAge
)

type lbIndex struct {
	lbs  *snapshot.Snapshot[osapi.LoadBalancer]
	fips *snapshot.Snapshot[osapi.FloatingIP]
	// listeners and pools: the drift check's (inventory.go).
	listeners *snapshot.Snapshot[osapi.Listener]
	pools     *snapshot.Snapshot[osapi.Pool]
	monitors  *snapshot.Snapshot[osapi.Monitor]
	sgRules   *snapshot.Snapshot[osapi.SecurityRule]
}

func newLBIndex(c *steps) *lbIndex {
	ls, ps, ms := newObjectIndex(c)
	return &lbIndex{listeners: ls, pools: ps, monitors: ms, sgRules: newRuleIndex(c),
		lbs: snapshot.New("openstack", indexMaxAge, indexMinMiss, func(ctx context.Context) ([]osapi.LoadBalancer, error) {
			uid := c.cluster.Get()
			if uid == "" {
				return nil, fmt.Errorf("the cluster UID is not known yet")
			}
			return listing(c.api, osapi.Octavia, "the cluster's load balancers", func(ctx context.Context) ([]osapi.LoadBalancer, error) {
				return c.api.ListLoadBalancers(ctx, tagCluster+uid)
			})(ctx)
		}, func(lb osapi.LoadBalancer) []string {
			keys := []string{"lb/" + lb.ID} // its identity, then its Services
			for _, t := range lb.Tags {
				if uid, ok := strings.CutPrefix(t, tagService); ok {
					keys = append(keys, "svc/"+uid)
				}
			}
			return keys
		}),
		fips: snapshot.New("openstack", indexMaxAge, indexMinMiss, listing(c.api, osapi.Neutron, "floating IPs", func(ctx context.Context) ([]osapi.FloatingIP, error) {
			return c.api.ListFloatingIPs(ctx, osapi.FloatingIPQuery{})
		}), func(f osapi.FloatingIP) []string {
			// Its identity, then its port: a port with two floating IPs is
			// found by neither, and takes the direct path.
			keys := []string{"fip/" + f.ID}
			if f.PortID != "" {
				keys = append(keys, "port/"+f.PortID)
			}
			return keys
		}),
	}
}

// listing is a shared listing's source: the service found, then list, its
// error told as listing what.
func listing[T any](api osapi.API, s osapi.Service, what string, list func(context.Context) ([]T, error)) func(context.Context) ([]T, error) {
	return func(ctx context.Context) ([]T, error) {
		if err := api.Session(ctx, s); err != nil {
			return nil, err
		}
		all, err := list(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", what, err)
		}
		return all, nil
	}
}
