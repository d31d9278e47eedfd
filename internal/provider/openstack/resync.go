package openstack

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
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
	lbs  *snapshot.Snapshot[loadbalancers.LoadBalancer]
	fips *snapshot.Snapshot[floatingips.FloatingIP]
}

func newLBIndex(c *Cloud) *lbIndex {
	return &lbIndex{
		lbs: snapshot.New("openstack", indexMaxAge, indexMinMiss, func(ctx context.Context) ([]loadbalancers.LoadBalancer, error) {
			uid := c.clusterUID()
			if uid == "" {
				return nil, fmt.Errorf("the cluster UID is not known yet")
			}
			octavia, err := c.clients.octaviaClient(ctx)
			if err != nil {
				return nil, err
			}
			pages, err := loadbalancers.List(octavia, loadbalancers.ListOpts{Tags: []string{tagCluster + uid}}).AllPages(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing the cluster's load balancers: %w", redact(err))
			}
			return loadbalancers.ExtractLoadBalancers(pages)
		}, func(lb loadbalancers.LoadBalancer) []string {
			keys := []string{"lb/" + lb.ID} // its identity, then its Services
			for _, t := range lb.Tags {
				if uid, ok := strings.CutPrefix(t, tagService); ok {
					keys = append(keys, "svc/"+uid)
				}
			}
			return keys
		}),
		fips: snapshot.New("openstack", indexMaxAge, indexMinMiss, func(ctx context.Context) ([]floatingips.FloatingIP, error) {
			network, err := c.clients.networkClient(ctx)
			if err != nil {
				return nil, err
			}
			pages, err := floatingips.List(network, floatingips.ListOpts{}).AllPages(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing floating IPs: %w", redact(err))
			}
			return floatingips.ExtractFloatingIPs(pages)
		}, func(f floatingips.FloatingIP) []string {
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

// unchanged answers for a Service whose load balancer was converged to exactly
// what it asks now (its converged record matches the spec's fingerprint), from
// the shared listings: the load balancer must be the recorded one, ACTIVE and
// this cluster's, and its floating IP the recorded address (an internal one must
// have none). Anything else, or any doubt (a listing failed, the hourly full
// check is due), sends the Service down the direct path, which reads and repairs.
func (c *Cloud) unchanged(ctx context.Context, svc *v1.Service, s lbSpec) (*v1.LoadBalancerStatus, bool) {
	id, config, members, ok := convergedRecord(svc)
	if !ok || config+"."+members != s.fingerprint() {
		return nil, false
	}
	lb, ok := c.recordedLB(ctx, svc, id)
	if !ok {
		return nil, false
	}
	addr := lb.VipAddress
	fip, hasFIP, err := c.index.fips.Get(ctx, "port/"+lb.VipPortID)
	switch {
	case err != nil:
		return nil, false
	case s.internal && hasFIP:
		return nil, false // to be given back: the direct path does it
	case !s.internal:
		if !hasFIP || (s.floatingIP != "" && s.floatingIP != fip.FloatingIP) {
			return nil, false
		}
		addr = fip.FloatingIP
	}
	// The address must be the one recorded when the load balancer converged.
	if svc.Annotations[string(annotation.OpenStackLoadBalancerAddress)] != addr {
		return nil, false
	}
	return c.statusFor(s, addr, lb.VipAddress), true
}

// convergedRecord is the Service's converged record: its load balancer and the
// two parts of the fingerprint of the spec it was converged to. ok is false when
// there is none (or one of an older form), and for a Service on a shared load
// balancer, which is always walked.
func convergedRecord(svc *v1.Service) (lbID, config, members string, ok bool) {
	if _, shared := svc.Annotations[string(annotation.OpenStackLoadBalancerID)]; shared {
		return "", "", "", false
	}
	lbID, fp, _ := strings.Cut(svc.Annotations[string(annotation.OpenStackConverged)], "/")
	config, members, ok = strings.Cut(fp, ".")
	return lbID, config, members, ok && lbID != ""
}

// recordedLB is the Service's load balancer from the cluster's shared listing,
// when it is the recorded one, ACTIVE and this cluster's, and its hourly full
// check is not due.
func (c *Cloud) recordedLB(ctx context.Context, svc *v1.Service, id string) (loadbalancers.LoadBalancer, bool) {
	lb, found, err := c.index.lbs.Get(ctx, "svc/"+string(svc.UID))
	if err != nil || !found || lb.ID != id || lb.ProvisioningStatus != "ACTIVE" || !c.owned(&lb, svc) || c.fullCheckDue(lb.ID) {
		return loadbalancers.LoadBalancer{}, false
	}
	return lb, true
}
