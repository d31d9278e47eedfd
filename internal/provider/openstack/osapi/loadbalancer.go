package osapi

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

// OctaviaVersions reads Octavia's version list (GET on the endpoint's root)
// into into.
func (gw *Client) OctaviaVersions(ctx context.Context, into any) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		_, err := sc.Get(ctx, sc.Endpoint, into, &gophercloud.RequestOpts{OkCodes: []int{200, 300}}) //nolint:bodyclose // gophercloud decodes and closes it
		return err
	})
}

// LoadBalancer is the part of an Octavia load balancer the CCM uses (the
// names are Octavia's, as gophercloud spells them).
type LoadBalancer struct {
	ID, Name           string
	ProvisioningStatus string
	Tags               []string
	// CreatedAt: of two made for one Service, the older is kept.
	CreatedAt time.Time
	// Where its VIP is, and its create-time choices.
	VipAddress, VipPortID, VipSubnetID string
	FlavorID, AvailabilityZone         string
	// AdditionalVips: a dual-stack load balancer's VIP of the other family.
	AdditionalVips []AdditionalVIP
	// Listeners and Pools name its children.
	Listeners, Pools []ObjectRef
}

// AdditionalVIP is a load balancer's additional VIP.
type AdditionalVIP struct{ SubnetID, IPAddress string }

// ObjectRef names a child of a load balancer.
type ObjectRef struct{ ID string }

// asLoadBalancer is the part of gophercloud's load balancer the CCM uses.
func asLoadBalancer(lb *loadbalancers.LoadBalancer) LoadBalancer {
	out := LoadBalancer{ID: lb.ID, Name: lb.Name, ProvisioningStatus: lb.ProvisioningStatus, Tags: lb.Tags, CreatedAt: lb.CreatedAt,
		VipAddress: lb.VipAddress, VipPortID: lb.VipPortID, VipSubnetID: lb.VipSubnetID,
		FlavorID: lb.FlavorID, AvailabilityZone: lb.AvailabilityZone}
	for _, v := range lb.AdditionalVips {
		out.AdditionalVips = append(out.AdditionalVips, AdditionalVIP{SubnetID: v.SubnetID, IPAddress: v.IPAddress})
	}
	for _, l := range lb.Listeners {
		out.Listeners = append(out.Listeners, ObjectRef{ID: l.ID})
	}
	for _, p := range lb.Pools {
		out.Pools = append(out.Pools, ObjectRef{ID: p.ID})
	}
	return out
}

// asLoadBalancerOrNil is asLoadBalancer of a call's answer.
func asLoadBalancerOrNil(lb *loadbalancers.LoadBalancer, err error) (*LoadBalancer, error) {
	if err != nil || lb == nil {
		return nil, err
	}
	out := asLoadBalancer(lb)
	return &out, nil
}

// GetLoadBalancer reads a load balancer: outcome.ErrNotFound when it is gone.
func (gw *Client) GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error) {
	return call(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) (*LoadBalancer, error) {
		return asLoadBalancerOrNil(loadbalancers.Get(ctx, sc, id).Extract())
	})
}

// ListLoadBalancers lists the load balancers that carry tag.
func (gw *Client) ListLoadBalancers(ctx context.Context, tag string) ([]LoadBalancer, error) {
	return call(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) ([]LoadBalancer, error) {
		return mapped(asLoadBalancer)(allPages(ctx, loadbalancers.List(sc, loadbalancers.ListOpts{Tags: []string{tag}}), loadbalancers.ExtractLoadBalancers))
	})
}

// OctaviaCreateTimeout bounds the attempt of a load balancer's create:
// Octavia's API allocates the VIP port in Neutron before it answers, and
// under load that took 45 s on a real Zed, past the transport's 30 s. A
// create cut short anyway is waited for (Cloud.unanswered) before another.
const OctaviaCreateTimeout = 2 * time.Minute

// CreateLoadBalancer creates a load balancer, bare or fully populated, its
// attempt bounded by OctaviaCreateTimeout (CreateTimeout when set): an
// answer lost past it is found again by its name (the provider's
// duplicates.go).
func (gw *Client) CreateLoadBalancer(ctx context.Context, opts LoadBalancerCreate) (*LoadBalancer, error) {
	ctx = cloudapi.WithAttemptTimeout(ctx, cmp.Or(gw.CreateTimeout, OctaviaCreateTimeout))
	return call(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) (*LoadBalancer, error) {
		return asLoadBalancerOrNil(createLoadBalancer(ctx, sc, loadBalancerCreateOpts(opts)))
	})
}

// SetLoadBalancerTags replaces the load balancer's tags.
func (gw *Client) SetLoadBalancerTags(ctx context.Context, id string, tags []string) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return discard(loadbalancers.Update(ctx, sc, id, loadbalancers.UpdateOpts{Tags: &tags}).Extract())
	})
}

// DeleteLoadBalancer deletes a load balancer with all it has (cascade).
func (gw *Client) DeleteLoadBalancer(ctx context.Context, id string) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return alreadyGone(loadbalancers.Delete(ctx, sc, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
	})
}

// LoadBalancerStatuses reads the load balancer's status tree into into.
func (gw *Client) LoadBalancerStatuses(ctx context.Context, id string, into any) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return loadbalancers.GetStatuses(ctx, sc, id).ExtractInto(into)
	})
}

// ListListeners lists the load balancer's listeners.
func (gw *Client) ListListeners(ctx context.Context, lbID string) ([]Listener, error) {
	return call(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) ([]Listener, error) {
		return mapped(asListener)(allPages(ctx, listeners.List(sc, listeners.ListOpts{LoadbalancerID: lbID}), listeners.ExtractListeners))
	})
}

// ListAllListeners lists every listener of the project.
func (gw *Client) ListAllListeners(ctx context.Context) ([]Listener, error) {
	return call(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) ([]Listener, error) {
		return mapped(asListener)(listAll[listeners.Listener](ctx, sc, "listeners", nil, "lbaas", "listeners"))
	})
}

// CreateListener creates a listener on a load balancer.
func (gw *Client) CreateListener(ctx context.Context, opts ListenerCreate) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return discard(listeners.Create(ctx, sc, listenerCreateOpts(opts)).Extract())
	})
}

// UpdateListener changes what opts sets of the listener.
func (gw *Client) UpdateListener(ctx context.Context, id string, opts ListenerUpdate) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return discard(listeners.Update(ctx, sc, id, listenerUpdateOpts(opts)).Extract())
	})
}

// DeleteListener deletes a listener (gone already: nil).
func (gw *Client) DeleteListener(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, Octavia, id, listeners.Delete)
}

// ListPools lists the load balancer's pools, with their listeners and
// members.
func (gw *Client) ListPools(ctx context.Context, lbID string) ([]Pool, error) {
	return call(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) ([]Pool, error) {
		return mapped(asPool)(listPools(ctx, sc, lbID))
	})
}

// ListAllPools lists every pool of the project, with the fields the drift
// check reads (their members' and health monitor's ids among them).
func (gw *Client) ListAllPools(ctx context.Context) ([]Pool, error) {
	return call(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) ([]Pool, error) {
		return mapped(asPool)(listAll[leanPool](ctx, sc, "pools", url.Values{"fields": {"id", "protocol", "lb_algorithm", "members", "healthmonitor_id", "listeners"}}, "lbaas", "pools"))
	})
}

// CreatePool creates a pool for a listener.
func (gw *Client) CreatePool(ctx context.Context, opts PoolCreate) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return discard(pools.Create(ctx, sc, poolCreateOpts(opts)).Extract())
	})
}

// UpdatePool changes the pool's load-balancing method.
func (gw *Client) UpdatePool(ctx context.Context, id string, u PoolUpdate) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return discard(pools.Update(ctx, sc, id, pools.UpdateOpts{LBMethod: pools.LBMethod(u.LBMethod)}).Extract())
	})
}

// DeletePool deletes a pool (gone already: nil).
func (gw *Client) DeletePool(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, Octavia, id, pools.Delete)
}

// ListMembers lists the pool's members, with the fields compared.
func (gw *Client) ListMembers(ctx context.Context, poolID string) ([]Member, error) {
	return call(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) ([]Member, error) {
		return listMembers(ctx, sc, poolID)
	})
}

// PutMembers makes the pool's members these, in one batch update.
func (gw *Client) PutMembers(ctx context.Context, poolID string, members []PoolMember) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return putMembers(ctx, sc, poolID, memberBatchOpts(members))
	})
}

// AddMember creates one member of the pool: a Node joining is one member
// sent, where the batch update says every member again. Octavia refuses a
// second member of one address and port (409).
func (gw *Client) AddMember(ctx context.Context, poolID string, m PoolMember) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return discard(pools.CreateMember(ctx, sc, poolID, memberCreateOpts(m)).Extract())
	})
}

// GetMonitor reads a health monitor: outcome.ErrNotFound when it is gone.
func (gw *Client) GetMonitor(ctx context.Context, id string) (Monitor, error) {
	return call(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) (Monitor, error) {
		return viewed(asMonitor)(monitors.Get(ctx, sc, id).Extract())
	})
}

// ListAllMonitors lists every health monitor of the project (the drift
// check's: every field the CCM sends of one).
func (gw *Client) ListAllMonitors(ctx context.Context) ([]Monitor, error) {
	return call(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) ([]Monitor, error) {
		return mapped(asMonitor)(listAll[monitors.Monitor](ctx, sc, "healthmonitors", nil, "lbaas", "healthmonitors"))
	})
}

// asMonitor is the part of a health monitor the CCM compares.
func asMonitor(m *monitors.Monitor) Monitor {
	return Monitor{ID: m.ID, Name: m.Name, Type: m.Type, Delay: m.Delay, Timeout: m.Timeout, MaxRetries: m.MaxRetries,
		MaxRetriesDown: m.MaxRetriesDown, HTTPMethod: m.HTTPMethod, URLPath: m.URLPath, ExpectedCodes: m.ExpectedCodes}
}

// CreateMonitor creates a pool's health monitor.
func (gw *Client) CreateMonitor(ctx context.Context, opts MonitorCreate) error {
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return discard(monitors.Create(ctx, sc, monitorCreateOpts(opts)).Extract())
	})
}

// UpdateMonitor changes what opts sets of the health monitor.
func (gw *Client) UpdateMonitor(ctx context.Context, id string, opts MonitorUpdate) error {
	u := monitorUpdateOpts(opts)
	return do(ctx, gw, Octavia, func(sc *gophercloud.ServiceClient) error {
		return discard(monitors.Update(ctx, sc, id, u).Extract())
	})
}

// DeleteMonitor deletes a health monitor (gone already: nil).
func (gw *Client) DeleteMonitor(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, Octavia, id, monitors.Delete)
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
	Listeners []ObjectRef `json:"listeners"`
	Members   []ObjectRef `json:"members"`
}

// Member is what the CCM compares of a member.
type Member struct {
	Address      string `json:"address"`
	ProtocolPort int    `json:"protocol_port"`
	MonitorPort  *int   `json:"monitor_port"`
}

// listMembers lists the pool's members, with only the fields compared.
func listMembers(ctx context.Context, octavia *gophercloud.ServiceClient, poolID string) ([]Member, error) {
	return listAll[Member](ctx, octavia, "members", url.Values{"fields": {"address", "protocol_port", "monitor_port"}}, "lbaas", "pools", poolID, "members")
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

// asListener is the part of a listener the CCM reads.
func asListener(l *listeners.Listener) Listener {
	return Listener{ID: l.ID, Name: l.Name, Protocol: l.Protocol, ProtocolPort: l.ProtocolPort,
		DefaultPoolID: l.DefaultPoolID, DefaultTLSContainerRef: l.DefaultTlsContainerRef,
		AllowedCIDRs: l.AllowedCIDRs, ConnLimit: l.ConnLimit,
		TimeoutClientData: l.TimeoutClientData, TimeoutMemberConnect: l.TimeoutMemberConnect,
		TimeoutMemberData: l.TimeoutMemberData, TimeoutTCPInspect: l.TimeoutTCPInspect, Tags: l.Tags, InsertHeaders: l.InsertHeaders}
}

// asPool is the part of a pool the CCM reads; a pool with no members has
// none (nil), as one that never had.
func asPool(p *leanPool) Pool {
	out := Pool(*p)
	if len(out.Members) == 0 {
		out.Members = nil
	}
	if len(out.Listeners) == 0 {
		out.Listeners = nil
	}
	return out
}

// The CCM's options as gophercloud's: field for field, every pointer, nil
// and empty list as it was, so that the body sent is the one gophercloud's
// options, when the CCM built them itself, made (TestEveryRequestBodyIsAsPinned).

// loadBalancerCreateOpts is opts as gophercloud's.
func loadBalancerCreateOpts(o LoadBalancerCreate) loadbalancers.CreateOpts {
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
func listenerCreateOpts(o ListenerCreate) listeners.CreateOpts {
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
func listenerUpdateOpts(o ListenerUpdate) listeners.UpdateOpts {
	return listeners.UpdateOpts{
		InsertHeaders: o.InsertHeaders, AllowedCIDRs: o.AllowedCIDRs, ConnLimit: o.ConnLimit, DefaultTlsContainerRef: o.DefaultTLSContainerRef,
		TimeoutClientData: o.TimeoutClientData, TimeoutMemberConnect: o.TimeoutMemberConnect,
		TimeoutMemberData: o.TimeoutMemberData, TimeoutTCPInspect: o.TimeoutTCPInspect,
	}
}

// poolCreateOpts is opts as gophercloud's; a monitor only when it has one
// (gophercloud's is an interface: a nil one is not sent).
func poolCreateOpts(o PoolCreate) pools.CreateOpts {
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
func memberBatchOpts(members []PoolMember) []pools.BatchUpdateMemberOpts {
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
func memberCreateOpts(m PoolMember) pools.CreateMemberOpts {
	return pools.CreateMemberOpts{Address: m.Address, ProtocolPort: m.ProtocolPort, SubnetID: m.SubnetID, MonitorPort: m.MonitorPort}
}

// monitorCreateOpts is opts as gophercloud's.
func monitorCreateOpts(o MonitorCreate) monitors.CreateOpts {
	return monitors.CreateOpts{
		PoolID: o.PoolID, Name: o.Name, Type: o.Type,
		Delay: o.Delay, Timeout: o.Timeout, MaxRetries: o.MaxRetries, MaxRetriesDown: o.MaxRetriesDown,
		HTTPMethod: o.HTTPMethod, URLPath: o.URLPath, ExpectedCodes: o.ExpectedCodes,
	}
}

// monitorUpdateOpts is opts as gophercloud's.
func monitorUpdateOpts(o MonitorUpdate) monitors.UpdateOpts {
	return monitors.UpdateOpts{Delay: o.Delay, Timeout: o.Timeout, MaxRetries: o.MaxRetries, MaxRetriesDown: o.MaxRetriesDown, URLPath: o.URLPath,
		HTTPMethod: o.HTTPMethod, ExpectedCodes: o.ExpectedCodes}
}
