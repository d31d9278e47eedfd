package openstack

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// The drift check sees every object of a Service's load balancer (lbcycle's
// Inventory): its listeners and pools from the load balancer's listing, each
// with what is converged of it from two project-wide listings shared by
// every Service (listeners; pools, which carry their members' and health
// monitor's ids), so a pass costs the same for 20 Services as for 1,000.

var (
	_ lbcycle.Inventory[osapi.LoadBalancer] = (*steps)(nil)
	_ lbcycle.DriftListener                 = (*steps)(nil)
)

// newObjectIndex lists every listener, pool and health monitor of the
// project, by id.
func newObjectIndex(c *steps) (*snapshot.Snapshot[osapi.Listener], *snapshot.Snapshot[osapi.Pool], *snapshot.Snapshot[osapi.Monitor]) {
	ls := snapshot.New("openstack", indexMaxAge, indexMinMiss,
		listing(c.api, osapi.Octavia, "the project's listeners", c.api.ListAllListeners),
		func(l osapi.Listener) []string { return []string{"listener/" + l.ID} })
	ps := snapshot.New("openstack", indexMaxAge, indexMinMiss,
		listing(c.api, osapi.Octavia, "the project's pools", c.api.ListAllPools),
		func(p osapi.Pool) []string { return []string{"pool/" + p.ID} })
	ms := snapshot.New("openstack", indexMaxAge, indexMinMiss,
		listing(c.api, osapi.Octavia, "the project's health monitors", c.api.ListAllMonitors),
		func(m osapi.Monitor) []string { return []string{"monitor/" + m.ID} })
	return ls, ps, ms
}

// Objects are the load balancer's listeners, pools, members and health
// monitors, and the rules of the Service's security group (managed ones),
// each keyed by what is converged of it.
func (st *steps) Objects(ctx context.Context, svc *v1.Service, l octaviaLB) ([]string, error) {
	out, err := st.sgObjects(ctx, svc)
	if err != nil {
		return nil, err
	}
	ls, err := describeListed(ctx, st.index.listeners, "listener", l.Obj.Listeners,
		func(li osapi.Listener) []string { return []string{listenerKey(li)} })
	if err != nil {
		return nil, err
	}
	var monitorErr error
	ps, err := describeListed(ctx, st.index.pools, "pool", l.Obj.Pools,
		func(p osapi.Pool) []string {
			out := []string{fmt.Sprintf("pool/%s %s lb_algorithm=%s of %d listener(s)", p.ID, p.Protocol, p.LBMethod, len(p.Listeners))}
			if p.MonitorID != "" {
				key, err := st.monitorKey(ctx, p)
				monitorErr = cmp.Or(monitorErr, err)
				out = append(out, key)
			}
			for _, m := range p.Members {
				out = append(out, lbcycle.MemberPrefix+m.ID+" of pool "+p.ID)
			}
			return out
		})
	if err = cmp.Or(err, monitorErr); err != nil {
		return nil, err
	}
	return append(append(out, ls...), ps...), nil
}

// listenerKey is a listener by every field the CCM sends of one but its
// tags (which say whose it is: sharing.go) and its name (the peer's
// listeners have names of their own, kept when adopted), each by its name
// in the API.
func listenerKey(li osapi.Listener) string {
	cidrs := slices.Sorted(slices.Values(li.AllowedCIDRs))
	var headers []string
	for _, k := range slices.Sorted(maps.Keys(li.InsertHeaders)) {
		headers = append(headers, k+":"+li.InsertHeaders[k])
	}
	return fmt.Sprintf("listener/%s %s/%d default_pool_id=%s default_tls_container_ref=%s allowed_cidrs=%s connection_limit=%d "+
		"timeout_client_data=%d timeout_member_connect=%d timeout_member_data=%d timeout_tcp_inspect=%d insert_headers=%s",
		li.ID, li.Protocol, li.ProtocolPort, li.DefaultPoolID, li.DefaultTLSContainerRef, strings.Join(cidrs, ","), li.ConnLimit,
		li.TimeoutClientData, li.TimeoutMemberConnect, li.TimeoutMemberData, li.TimeoutTCPInspect, strings.Join(headers, ","))
}

// monitorKey is the pool's health monitor by every field the CCM sends of
// one, from the project's listing.
func (st *steps) monitorKey(ctx context.Context, p osapi.Pool) (string, error) {
	m, found, err := st.index.monitors.Get(ctx, "monitor/"+p.MonitorID)
	if err != nil || !found {
		return "monitor/" + p.MonitorID + " (not listed) of pool " + p.ID, err
	}
	return fmt.Sprintf("monitor/%s %s delay=%d timeout=%d max_retries=%d max_retries_down=%d http_method=%s url_path=%s expected_codes=%s of pool %s",
		m.ID, m.Type, m.Delay, m.Timeout, m.MaxRetries, m.MaxRetriesDown, m.HTTPMethod, m.URLPath, m.ExpectedCodes, p.ID), nil
}

// describeListed describes each of refs (the load balancer's children) as
// the shared listing of kind has it, "(not listed)" when it has it not.
func describeListed[T any](ctx context.Context, listing *snapshot.Snapshot[T], kind string, refs []osapi.ObjectRef, describe func(T) []string) ([]string, error) {
	var out []string
	for _, ref := range refs {
		obj, found, err := listing.Get(ctx, kind+"/"+ref.ID)
		if err != nil {
			return nil, err
		}
		if !found {
			out = append(out, kind+"/"+ref.ID+" (not listed)")
			continue
		}
		out = append(out, describe(obj)...)
	}
	return out, nil
}

// sgObjects are the rules of the Service's security group as its last
// convergence in this process placed it (none before one).
func (st *steps) sgObjects(ctx context.Context, svc *v1.Service) ([]string, error) {
	p, ok := st.sgs.placement(svc.UID)
	if !ok || p.group == "" {
		return nil, nil
	}
	all, err := st.index.sgRules.All(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{"security-group/" + p.group}
	for _, r := range all {
		if r.SecGroupID == p.group {
			out = append(out, fmt.Sprintf("security-group-rule/%s %s %s %s %d-%d from %s", r.ID, r.Direction, r.EtherType, r.Protocol, r.PortRangeMin, r.PortRangeMax, r.RemoteIPPrefix))
		}
	}
	return out, nil
}

// newRuleIndex lists every security group rule of the project.
func newRuleIndex(c *steps) *snapshot.Snapshot[osapi.SecurityRule] {
	return snapshot.New("openstack", indexMaxAge, indexMinMiss,
		listing(c.api, osapi.Neutron, "the project's security group rules", c.api.ListRules),
		func(r osapi.SecurityRule) []string { return []string{"rule/" + r.ID} })
}

// Drifting: a Service whose objects drifted has its security group
// converged by the walk, however recently it last was.
func (st *steps) Drifting(svc *v1.Service) { st.sgs.expire(svc.UID) }

// Drift sees, in the shared listings, a load balancer short of a listener or a
// pool, and a floating IP no longer on it; and a TLS Secret that changed.
func (st *steps) Drift(ctx context.Context, svc *v1.Service, rec lbcycle.Record, l octaviaLB) (string, error) {
	if why := st.secretRotated(ctx, svc); why != "" {
		return why, nil
	}
	lb := l.Obj
	switch {
	case len(lb.Listeners) < len(svc.Spec.Ports):
		return fmt.Sprintf("load balancer %s has %d listener(s) for %d port(s)", lb.ID, len(lb.Listeners), len(svc.Spec.Ports)), nil
	case len(lb.Pools) < len(lb.Listeners):
		return fmt.Sprintf("load balancer %s has %d pool(s) for %d listener(s)", lb.ID, len(lb.Pools), len(lb.Listeners)), nil
	}
	if rec.Address == "" || rec.Address == lb.VipAddress {
		return "", nil // internal: its address is the VIP
	}
	fip, has, err := st.index.fips.Get(ctx, "port/"+lb.VipPortID)
	if err != nil {
		return "", err
	}
	if !has || fip.FloatingIP != rec.Address {
		return fmt.Sprintf("floating IP %s is no longer on load balancer %s", rec.Address, lb.ID), nil
	}
	return "", nil
}
