package openstack

import (
	"cmp"
	"context"
	"net/url"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
)

// Octavia's calls: load balancers, listeners, pools, members and health
// monitors.

// octaviaVersions reads Octavia's version list (GET on the endpoint's root)
// into into.
func (gw *gateway) octaviaVersions(ctx context.Context, into any) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		_, err := sc.Get(ctx, sc.Endpoint, into, &gophercloud.RequestOpts{OkCodes: []int{200, 300}}) //nolint:bodyclose // gophercloud decodes and closes it
		return err
	})
}

// loadBalancer is the part of an Octavia load balancer the CCM uses (the
// names are Octavia's, as gophercloud spells them).
type loadBalancer struct {
	ID, Name           string
	ProvisioningStatus string
	Tags               []string
	// CreatedAt: of two made for one Service, the older is kept.
	CreatedAt time.Time
	// Where its VIP is, and its create-time choices.
	VipAddress, VipPortID, VipSubnetID string
	FlavorID, AvailabilityZone         string
	// AdditionalVips: a dual-stack load balancer's VIP of the other family.
	AdditionalVips []additionalVIP
	// Listeners and Pools name its children.
	Listeners, Pools []objectRef
}

// additionalVIP is a load balancer's additional VIP.
type additionalVIP struct{ SubnetID, IPAddress string }

// objectRef names a child of a load balancer.
type objectRef struct{ ID string }

// asLoadBalancer is the part of gophercloud's load balancer the CCM uses.
func asLoadBalancer(lb *loadbalancers.LoadBalancer) loadBalancer {
	out := loadBalancer{ID: lb.ID, Name: lb.Name, ProvisioningStatus: lb.ProvisioningStatus, Tags: lb.Tags, CreatedAt: lb.CreatedAt,
		VipAddress: lb.VipAddress, VipPortID: lb.VipPortID, VipSubnetID: lb.VipSubnetID,
		FlavorID: lb.FlavorID, AvailabilityZone: lb.AvailabilityZone}
	for _, v := range lb.AdditionalVips {
		out.AdditionalVips = append(out.AdditionalVips, additionalVIP{SubnetID: v.SubnetID, IPAddress: v.IPAddress})
	}
	for _, l := range lb.Listeners {
		out.Listeners = append(out.Listeners, objectRef{ID: l.ID})
	}
	for _, p := range lb.Pools {
		out.Pools = append(out.Pools, objectRef{ID: p.ID})
	}
	return out
}

// asLoadBalancerOrNil is asLoadBalancer of a call's answer.
func asLoadBalancerOrNil(lb *loadbalancers.LoadBalancer, err error) (*loadBalancer, error) {
	if err != nil || lb == nil {
		return nil, err
	}
	out := asLoadBalancer(lb)
	return &out, nil
}

func (gw *gateway) getLoadBalancer(ctx context.Context, id string) (*loadBalancer, error) {
	return call(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) (*loadBalancer, error) {
		return asLoadBalancerOrNil(loadbalancers.Get(ctx, sc, id).Extract())
	})
}

// listLoadBalancers lists the load balancers that carry tag.
func (gw *gateway) listLoadBalancers(ctx context.Context, tag string) ([]loadBalancer, error) {
	return call(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) ([]loadBalancer, error) {
		lbs, err := allPages(ctx, loadbalancers.List(sc, loadbalancers.ListOpts{Tags: []string{tag}}), loadbalancers.ExtractLoadBalancers)
		if err != nil {
			return nil, err
		}
		out := make([]loadBalancer, len(lbs))
		for i := range lbs {
			out[i] = asLoadBalancer(&lbs[i])
		}
		return out, nil
	})
}

// octaviaCreateTimeout bounds the attempt of a load balancer's create:
// Octavia's API allocates the VIP port in Neutron before it answers, and
// under load that took 45 s on a real Zed, past the transport's 30 s. A
// create cut short anyway is waited for (Cloud.unanswered) before another.
const octaviaCreateTimeout = 2 * time.Minute

func (gw *gateway) createLoadBalancer(ctx context.Context, opts lbCreate) (*loadBalancer, error) {
	ctx = cloudapi.WithAttemptTimeout(ctx, cmp.Or(gw.createTimeout, octaviaCreateTimeout))
	return call(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) (*loadBalancer, error) {
		return asLoadBalancerOrNil(createLoadBalancer(ctx, sc, loadBalancerCreateOpts(opts)))
	})
}

// setLoadBalancerTags replaces the load balancer's tags.
func (gw *gateway) setLoadBalancerTags(ctx context.Context, id string, tags []string) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return discard(loadbalancers.Update(ctx, sc, id, loadbalancers.UpdateOpts{Tags: &tags}).Extract())
	})
}

// deleteLoadBalancer deletes a load balancer with all it has (cascade).
func (gw *gateway) deleteLoadBalancer(ctx context.Context, id string) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return alreadyGone(loadbalancers.Delete(ctx, sc, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
	})
}

// loadBalancerStatuses reads the load balancer's status tree into into.
func (gw *gateway) loadBalancerStatuses(ctx context.Context, id string, into any) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return loadbalancers.GetStatuses(ctx, sc, id).ExtractInto(into)
	})
}

// listListeners lists the load balancer's listeners.
func (gw *gateway) listListeners(ctx context.Context, lbID string) ([]lbListener, error) {
	return call(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) ([]lbListener, error) {
		return asListeners(allPages(ctx, listeners.List(sc, listeners.ListOpts{LoadbalancerID: lbID}), listeners.ExtractListeners))
	})
}

// listAllListeners lists every listener of the project.
func (gw *gateway) listAllListeners(ctx context.Context) ([]lbListener, error) {
	return call(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) ([]lbListener, error) {
		return asListeners(listAll[listeners.Listener](ctx, sc, "listeners", nil, "lbaas", "listeners"))
	})
}

func (gw *gateway) createListener(ctx context.Context, opts listenerCreate) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return discard(listeners.Create(ctx, sc, listenerCreateOpts(opts)).Extract())
	})
}

func (gw *gateway) updateListener(ctx context.Context, id string, opts listenerUpdate) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return discard(listeners.Update(ctx, sc, id, listenerUpdateOpts(opts)).Extract())
	})
}

func (gw *gateway) deleteListener(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, svcOctavia, id, listeners.Delete)
}

func (gw *gateway) listPools(ctx context.Context, lbID string) ([]lbPool, error) {
	return call(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) ([]lbPool, error) {
		return asPools(listPools(ctx, sc, lbID))
	})
}

// listAllPools lists every pool of the project, with the fields the drift
// check reads (their members' and health monitor's ids among them).
func (gw *gateway) listAllPools(ctx context.Context) ([]lbPool, error) {
	return call(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) ([]lbPool, error) {
		return asPools(listAll[leanPool](ctx, sc, "pools", url.Values{"fields": {"id", "protocol", "lb_algorithm", "members", "healthmonitor_id", "listeners"}}, "lbaas", "pools"))
	})
}

func (gw *gateway) createPool(ctx context.Context, opts poolCreate) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return discard(pools.Create(ctx, sc, poolCreateOpts(opts)).Extract())
	})
}

// updatePool changes the pool's load-balancing method.
func (gw *gateway) updatePool(ctx context.Context, id string, u poolUpdate) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return discard(pools.Update(ctx, sc, id, pools.UpdateOpts{LBMethod: pools.LBMethod(u.LBMethod)}).Extract())
	})
}

func (gw *gateway) deletePool(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, svcOctavia, id, pools.Delete)
}

func (gw *gateway) listMembers(ctx context.Context, poolID string) ([]leanMember, error) {
	return call(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) ([]leanMember, error) {
		return listMembers(ctx, sc, poolID)
	})
}

func (gw *gateway) putMembers(ctx context.Context, poolID string, members []poolMember) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return putMembers(ctx, sc, poolID, memberBatchOpts(members))
	})
}

// addMember creates one member of the pool: a Node joining is one member
// sent, where the batch update says every member again. Octavia refuses a
// second member of one address and port (409).
func (gw *gateway) addMember(ctx context.Context, poolID string, m poolMember) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return discard(pools.CreateMember(ctx, sc, poolID, memberCreateOpts(m)).Extract())
	})
}

func (gw *gateway) getMonitor(ctx context.Context, id string) (lbMonitor, error) {
	return call(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) (lbMonitor, error) {
		m, err := monitors.Get(ctx, sc, id).Extract()
		if err != nil {
			return lbMonitor{}, err
		}
		return asMonitor(m), nil
	})
}

// listAllMonitors lists every health monitor of the project (the drift
// check's: every field the CCM sends of one).
func (gw *gateway) listAllMonitors(ctx context.Context) ([]lbMonitor, error) {
	return call(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) ([]lbMonitor, error) {
		all, err := listAll[monitors.Monitor](ctx, sc, "healthmonitors", nil, "lbaas", "healthmonitors")
		if err != nil {
			return nil, err
		}
		out := make([]lbMonitor, len(all))
		for i := range all {
			out[i] = asMonitor(&all[i])
		}
		return out, nil
	})
}

// asMonitor is the part of a health monitor the CCM compares.
func asMonitor(m *monitors.Monitor) lbMonitor {
	return lbMonitor{ID: m.ID, Name: m.Name, Type: m.Type, Delay: m.Delay, Timeout: m.Timeout, MaxRetries: m.MaxRetries,
		MaxRetriesDown: m.MaxRetriesDown, HTTPMethod: m.HTTPMethod, URLPath: m.URLPath, ExpectedCodes: m.ExpectedCodes}
}

func (gw *gateway) createMonitor(ctx context.Context, opts monitorCreate) error {
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return discard(monitors.Create(ctx, sc, monitorCreateOpts(opts)).Extract())
	})
}

func (gw *gateway) updateMonitor(ctx context.Context, id string, opts monitorUpdate) error {
	u := monitorUpdateOpts(opts)
	return do(ctx, gw, svcOctavia, func(sc *gophercloud.ServiceClient) error {
		return discard(monitors.Update(ctx, sc, id, u).Extract())
	})
}

func (gw *gateway) deleteMonitor(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, svcOctavia, id, monitors.Delete)
}

// listPools lists the load balancer's pools.
func listPools(ctx context.Context, octavia *gophercloud.ServiceClient, lbID string) ([]leanPool, error) {
	return listAll[leanPool](ctx, octavia, "pools", url.Values{"loadbalancer_id": {lbID}}, "lbaas", "pools")
}

// leanPool is what the CCM reads of a pool, decoded as it comes: a pool
// names each of its members, and gophercloud's Pool decodes each in full
// (5,000 at 5,000 Nodes, where the CCM needs their ids).
type leanPool struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Protocol  string      `json:"protocol"`
	LBMethod  string      `json:"lb_algorithm"`
	MonitorID string      `json:"healthmonitor_id"`
	Listeners []objectRef `json:"listeners"`
	Members   []objectRef `json:"members"`
}

// leanMember is what the CCM compares of a member.
type leanMember struct {
	Address      string `json:"address"`
	ProtocolPort int    `json:"protocol_port"`
	MonitorPort  *int   `json:"monitor_port"`
}

// listMembers lists the pool's members, with only the fields compared.
func listMembers(ctx context.Context, octavia *gophercloud.ServiceClient, poolID string) ([]leanMember, error) {
	return listAll[leanMember](ctx, octavia, "members", url.Values{"fields": {"address", "protocol_port", "monitor_port"}}, "lbaas", "pools", poolID, "members")
}

// putMembers replaces the pool's members in one batch update. The body is
// encoded straight from the typed list (gophercloud builds a generic map per
// member first).
func putMembers(ctx context.Context, octavia *gophercloud.ServiceClient, poolID string, members []pools.BatchUpdateMemberOpts) error {
	body := struct {
		Members []pools.BatchUpdateMemberOpts `json:"members"`
	}{Members: members}
	// gophercloud drains and closes the body (no KeepResponseBody).
	resp, err := octavia.Put(ctx, octavia.ServiceURL("lbaas", "pools", poolID, "members"), body, nil, &gophercloud.RequestOpts{OkCodes: []int{202}}) //nolint:bodyclose // closed by gophercloud
	_, _, err = gophercloud.ParseResponse(resp, err)
	return err
}

// createLoadBalancer POSTs a load balancer encoded straight from its typed
// options. gophercloud's Create first turns the whole graph into generic maps
// (one per member): with 2,000 Nodes in every pool and 20 workers creating at
// once, that was a large part of the CCM's transient memory.
func createLoadBalancer(ctx context.Context, octavia *gophercloud.ServiceClient, opts loadbalancers.CreateOpts) (*loadbalancers.LoadBalancer, error) {
	body := struct {
		LoadBalancer loadbalancers.CreateOpts `json:"loadbalancer"`
	}{opts}
	var r loadbalancers.CreateResult
	resp, err := octavia.Post(ctx, octavia.ServiceURL("lbaas", "loadbalancers"), body, &r.Body, nil) //nolint:bodyclose // closed by gophercloud
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
	return r.Extract()
}

// What the CCM reads of Octavia's listeners and pools, from gophercloud's.

// asListeners is the part of each listener the CCM reads (a list's answer).
func asListeners(all []listeners.Listener, err error) ([]lbListener, error) {
	if err != nil {
		return nil, err
	}
	out := make([]lbListener, len(all))
	for i := range all {
		l := &all[i]
		out[i] = lbListener{ID: l.ID, Name: l.Name, Protocol: l.Protocol, ProtocolPort: l.ProtocolPort,
			DefaultPoolID: l.DefaultPoolID, DefaultTLSContainerRef: l.DefaultTlsContainerRef,
			AllowedCIDRs: l.AllowedCIDRs, ConnLimit: l.ConnLimit,
			TimeoutClientData: l.TimeoutClientData, TimeoutMemberConnect: l.TimeoutMemberConnect,
			TimeoutMemberData: l.TimeoutMemberData, TimeoutTCPInspect: l.TimeoutTCPInspect, Tags: l.Tags, InsertHeaders: l.InsertHeaders}
	}
	return out, nil
}

// asPools is the part of each pool the CCM reads (a list's answer); a pool
// with no members has none (nil), as one that never had.
func asPools(all []leanPool, err error) ([]lbPool, error) {
	if err != nil {
		return nil, err
	}
	out := make([]lbPool, len(all))
	for i, p := range all {
		if len(p.Members) == 0 {
			p.Members = nil
		}
		if len(p.Listeners) == 0 {
			p.Listeners = nil
		}
		out[i] = lbPool(p)
	}
	return out, nil
}

// The CCM's options as gophercloud's: field for field, every pointer, nil
// and empty list as it was, so that the body sent is the one gophercloud's
// options, when the CCM built them itself, made (TestEveryRequestBodyIsAsPinned).

// loadBalancerCreateOpts is opts as gophercloud's.
func loadBalancerCreateOpts(o lbCreate) loadbalancers.CreateOpts {
	out := loadbalancers.CreateOpts{
		Name: o.Name, Description: o.Description,
		VipSubnetID: o.VipSubnetID, VipNetworkID: o.VipNetworkID, VipPortID: o.VipPortID, VipAddress: o.VipAddress,
		Provider: o.Provider, FlavorID: o.FlavorID, AvailabilityZone: o.AvailabilityZone, Tags: o.Tags,
	}
	if o.AdditionalVips != nil {
		out.AdditionalVips = make([]loadbalancers.AdditionalVip, len(o.AdditionalVips))
		for i, v := range o.AdditionalVips {
			out.AdditionalVips[i] = loadbalancers.AdditionalVip{SubnetID: v.SubnetID, IPAddress: v.IPAddress}
		}
	}
	if o.Listeners != nil {
		out.Listeners = make([]listeners.CreateOpts, len(o.Listeners))
		for i := range o.Listeners {
			out.Listeners[i] = listenerCreateOpts(o.Listeners[i])
		}
	}
	return out
}

// listenerCreateOpts is opts as gophercloud's.
func listenerCreateOpts(o listenerCreate) listeners.CreateOpts {
	out := listeners.CreateOpts{
		LoadbalancerID: o.LoadBalancerID, Name: o.Name,
		Protocol: listeners.Protocol(o.Protocol), ProtocolPort: o.ProtocolPort,
		AllowedCIDRs: o.AllowedCIDRs, ConnLimit: o.ConnLimit,
		TimeoutClientData: o.TimeoutClientData, TimeoutMemberConnect: o.TimeoutMemberConnect,
		TimeoutMemberData: o.TimeoutMemberData, TimeoutTCPInspect: o.TimeoutTCPInspect,
		InsertHeaders: o.InsertHeaders, DefaultTlsContainerRef: o.DefaultTLSContainerRef,
		DefaultPoolID: o.DefaultPoolID, Tags: o.Tags,
	}
	if o.DefaultPool != nil {
		pool := poolCreateOpts(*o.DefaultPool)
		out.DefaultPool = &pool
	}
	return out
}

// listenerUpdateOpts is opts as gophercloud's.
func listenerUpdateOpts(o listenerUpdate) listeners.UpdateOpts {
	return listeners.UpdateOpts{
		InsertHeaders: o.InsertHeaders, AllowedCIDRs: o.AllowedCIDRs, ConnLimit: o.ConnLimit, DefaultTlsContainerRef: o.DefaultTLSContainerRef,
		TimeoutClientData: o.TimeoutClientData, TimeoutMemberConnect: o.TimeoutMemberConnect,
		TimeoutMemberData: o.TimeoutMemberData, TimeoutTCPInspect: o.TimeoutTCPInspect,
	}
}

// poolCreateOpts is opts as gophercloud's; a monitor only when it has one
// (gophercloud's is an interface: a nil one is not sent).
func poolCreateOpts(o poolCreate) pools.CreateOpts {
	out := pools.CreateOpts{
		ListenerID: o.ListenerID, Name: o.Name,
		Protocol: pools.Protocol(o.Protocol), LBMethod: pools.LBMethod(o.LBMethod),
	}
	if o.Members != nil {
		out.Members = make([]pools.CreateMemberOpts, len(o.Members))
		for i, m := range o.Members {
			out.Members[i] = pools.CreateMemberOpts{Address: m.Address, ProtocolPort: m.ProtocolPort, SubnetID: m.SubnetID, MonitorPort: m.MonitorPort}
		}
	}
	if o.Monitor != nil {
		out.Monitor = monitorCreateOpts(*o.Monitor)
	}
	return out
}

// memberBatchOpts are members as a batch update of gophercloud's takes
// them: a subnet only when one is named.
func memberBatchOpts(members []poolMember) []pools.BatchUpdateMemberOpts {
	out := make([]pools.BatchUpdateMemberOpts, 0, len(members))
	for _, m := range members {
		o := pools.BatchUpdateMemberOpts{Address: m.Address, ProtocolPort: m.ProtocolPort, MonitorPort: m.MonitorPort}
		if m.SubnetID != "" {
			subnet := m.SubnetID
			o.SubnetID = &subnet
		}
		out = append(out, o)
	}
	return out
}

// memberCreateOpts is m as gophercloud's create takes it: the fields of
// the batch update's member, no more.
func memberCreateOpts(m poolMember) pools.CreateMemberOpts {
	return pools.CreateMemberOpts{Address: m.Address, ProtocolPort: m.ProtocolPort, SubnetID: m.SubnetID, MonitorPort: m.MonitorPort}
}

// monitorCreateOpts is opts as gophercloud's.
func monitorCreateOpts(o monitorCreate) monitors.CreateOpts {
	return monitors.CreateOpts{
		PoolID: o.PoolID, Name: o.Name, Type: o.Type,
		Delay: o.Delay, Timeout: o.Timeout, MaxRetries: o.MaxRetries, MaxRetriesDown: o.MaxRetriesDown,
		HTTPMethod: o.HTTPMethod, URLPath: o.URLPath, ExpectedCodes: o.ExpectedCodes,
	}
}

// monitorUpdateOpts is opts as gophercloud's.
func monitorUpdateOpts(o monitorUpdate) monitors.UpdateOpts {
	return monitors.UpdateOpts{Delay: o.Delay, Timeout: o.Timeout, MaxRetries: o.MaxRetries, MaxRetriesDown: o.MaxRetriesDown, URLPath: o.URLPath,
		HTTPMethod: o.HTTPMethod, ExpectedCodes: o.ExpectedCodes}
}
