package openstack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// `overcast explain` on OpenStack: a Service's Octavia load balancer (its
// VIP and floating IP, listeners with their allowed CIDRs, pools, members
// and health monitors) and its security group (managed ones), read through
// the API; and what the next walk would change, found by Converge's and
// Publish's own comparisons (ownListeners, unwantedListeners, strayPools,
// listenerChanges, poolChanges, memberKeys, monitorChanges, ruleChanges,
// placementChanges, immutableDiffs), none of them acted on.

var _ provider.Explainer = (*Cloud)(nil)

// explained is what describe read of the load balancer, for the drift.
type explained struct {
	lb        octaviaLB
	fip       *osapi.FloatingIP
	listeners []osapi.Listener
	pools     []osapi.Pool
	members   map[string][]osapi.Member
	monitors  map[string]osapi.Monitor
	sg        *osapi.SecurityGroup
}

// ExplainService says what OpenStack holds for the Service.
func (c *Cloud) ExplainService(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (provider.ServiceExplanation, error) {
	return c.lb.explainService(ctx, clusterName, svc, nodes)
}

func (st *steps) explainService(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (provider.ServiceExplanation, error) {
	e, spec, err := provider.BeginExplanation(ctx, ProviderName, annotation.OpenStackConverged, st.cycle, st, clusterName, svc, nodes)
	if err != nil {
		return e, err
	}
	if err := st.api.Session(ctx, osapi.Octavia, osapi.Neutron); err != nil {
		return e, err
	}
	lb, err := st.findLB(ctx, svc)
	if err != nil || lb == nil {
		if err == nil && st.cfg.LoadBalancer.ManageSecurityGroups {
			return e, st.describeSG(ctx, &e, svc, &explained{})
		}
		return e, err
	}
	e.Found = true
	x := explained{lb: st.asLB(lb, svc), members: map[string][]osapi.Member{}, monitors: map[string]osapi.Monitor{}}
	if err := st.describe(ctx, &e, svc, clusterName, &x, nodes); err != nil {
		return e, err
	}
	switch {
	case e.SpecProblem != "":
	case x.lb.State != lbcycle.Ready:
		e.Note("load balancer %s is %s: the next pass waits for Octavia, then compares", lb.ID, lb.ProvisioningStatus)
	default:
		e.DriftChecked = true
		err = st.explainDrift(ctx, &e, svc, spec, &x)
	}
	return e, err
}

// describe fills in the load balancer, its addresses, its listeners and
// pools (the Service's, on a load balancer it shares), and its security
// group.
func (st *steps) describe(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, clusterName string, x *explained, nodes []*v1.Node) error {
	lb := &x.lb.Obj
	name := lbName(clusterName, svc)
	owner := "the Service's own"
	switch {
	case st.peerOwned(lb, svc, name):
		owner = "the peer's (cloud-provider-openstack), for the Service"
	case x.lb.Shared:
		owner = fmt.Sprintf("shared (load-balancer-id), with %d other Service(s)", len(sharers(lb, name)))
	}
	if st.owned(lb, svc) && lb.Name != name {
		e.Note("load balancer %s is named %s, not %s: is --cluster-name overcast-ccm's?", lb.ID, lb.Name, name)
	}
	e.LoadBalancer = &provider.LoadBalancer{ID: lb.ID, Name: lb.Name, State: lb.ProvisioningStatus,
		Details: provider.Details{"owner": owner, "VIP subnet": lb.VipSubnetID, "flavor": lb.FlavorID, "availability zone": lb.AvailabilityZone}}
	fip, err := st.vipFloatingIP(ctx, lb)
	if err != nil {
		return err
	}
	if x.fip = fip; fip != nil {
		e.Addresses = append(e.Addresses, provider.Address{IP: fip.FloatingIP, Kind: "floating IP", ID: fip.ID})
	}
	e.Addresses = append(e.Addresses, provider.Address{IP: lb.VipAddress, Kind: "VIP", ID: lb.VipPortID})
	for _, v := range lb.AdditionalVips {
		e.Addresses = append(e.Addresses, provider.Address{IP: v.IPAddress, Kind: "additional VIP"})
	}
	if x.listeners, err = st.api.ListListeners(ctx, lb.ID); err != nil {
		return fmt.Errorf("listing listeners: %w", err)
	}
	if len(lb.Pools) > 0 {
		if x.pools, err = st.api.ListPools(ctx, lb.ID); err != nil {
			return fmt.Errorf("listing pools: %w", err)
		}
	}
	if err := st.describeListeners(ctx, e, svc, name, x, nodes); err != nil {
		return err
	}
	return st.describeSG(ctx, e, svc, x)
}

// describeListeners fills in the Service's listeners (their allowed CIDRs
// as security rules) and pools, with their members and health monitors.
func (st *steps) describeListeners(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, name string, x *explained, nodes []*v1.Node) error {
	lb := &x.lb.Obj
	owner := st.isOwner(lb, svc, name)
	poolName := map[string]string{}
	for _, p := range x.pools {
		poolName[p.ID] = p.Name
	}
	mine, others := map[string]bool{}, 0
	for _, l := range x.listeners {
		if !mineListener(l, svc, name, owner) {
			others++
			continue
		}
		mine[l.DefaultPoolID] = true
		e.Listeners = append(e.Listeners, provider.Listener{ID: l.ID, Name: l.Name, Protocol: l.Protocol, Port: l.ProtocolPort,
			Pool: poolName[l.DefaultPoolID], Details: listenerDetails(l)})
		e.SecurityRules = append(e.SecurityRules, provider.SecurityRule{Kind: "allowed CIDRs", In: fmt.Sprintf("listener %s/%d", l.Protocol, l.ProtocolPort),
			ID: l.ID, Direction: "ingress", Protocol: l.Protocol, Ports: strconv.Itoa(l.ProtocolPort), Peer: cidrList(l.AllowedCIDRs), Mark: st.lbMark(lb, svc, name)})
	}
	if others > 0 {
		e.Note("load balancer %s has %d listener(s) of other Services, not shown", lb.ID, others)
	}
	byIP := nodesByIP(nodes)
	for _, p := range x.pools {
		if !mine[p.ID] && !strings.HasPrefix(p.Name, name+"_") {
			continue
		}
		pool := provider.Pool{ID: p.ID, Name: p.Name, Protocol: p.Protocol, Policy: p.LBMethod, Members: []provider.Member{}}
		if len(p.Members) > 0 {
			ms, err := st.api.ListMembers(ctx, p.ID)
			if err != nil {
				return fmt.Errorf("listing the members of pool %s: %w", p.ID, err)
			}
			x.members[p.ID] = ms
			for _, m := range ms {
				pool.Members = append(pool.Members, provider.Member{Address: m.Address, Port: m.ProtocolPort, Node: byIP[m.Address]})
			}
		}
		if p.MonitorID != "" {
			m, err := st.api.GetMonitor(ctx, p.MonitorID)
			if err != nil {
				return fmt.Errorf("reading health monitor %s: %w", p.MonitorID, err)
			}
			x.monitors[p.ID] = m
			pool.Health = describeMonitor(m)
		}
		e.Pools = append(e.Pools, pool)
	}
	return nil
}

func listenerDetails(l osapi.Listener) provider.Details {
	d := provider.Details{}
	if l.ConnLimit != -1 {
		d["connection limit"] = strconv.Itoa(l.ConnLimit)
	}
	if l.DefaultTLSContainerRef != "" {
		d["certificate"] = l.DefaultTLSContainerRef
	}
	return d
}

func describeMonitor(m osapi.Monitor) string {
	out := fmt.Sprintf("%s every %ds, timeout %ds, %d up / %d down", m.Type, m.Delay, m.Timeout, m.MaxRetries, m.MaxRetriesDown)
	if m.URLPath != "" {
		out = m.Type + " " + m.URLPath + strings.TrimPrefix(out, m.Type)
	}
	return out
}

// nodesByIP are the Nodes by their addresses.
func nodesByIP(nodes []*v1.Node) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			out[a.Address] = n.Name
		}
	}
	return out
}

// lbMark is whose the load balancer's tags say it is.
func (st *steps) lbMark(lb *osapi.LoadBalancer, svc *v1.Service, name string) string {
	switch {
	case st.owned(lb, svc):
		return provider.MarkThisCluster
	case st.peerOwned(lb, svc, name):
		return provider.MarkPeer
	}
	for _, t := range lb.Tags {
		if strings.HasPrefix(t, tagCluster) && t != tagCluster+st.cluster.Get() {
			return provider.MarkOtherCluster
		}
		if strings.HasPrefix(t, tagCluster) {
			return provider.MarkOtherService
		}
	}
	return provider.MarkNone
}

// describeSG fills in the Service's security group, its rules and how many
// ports hold it.
func (st *steps) describeSG(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, x *explained) error {
	g, err := st.findSG(ctx, svc)
	if err != nil || g == nil {
		return err
	}
	x.sg = g
	e.Found = true
	mark := provider.MarkPeer // the peer's name, untagged
	switch {
	case slices.Contains(g.Tags, tagService+string(svc.UID)) && slices.Contains(g.Tags, tagCluster+st.cluster.Get()):
		mark = provider.MarkThisCluster
	case slices.ContainsFunc(g.Tags, func(t string) bool { return strings.HasPrefix(t, tagCluster) }):
		mark = provider.MarkOtherCluster
	}
	for _, r := range g.Rules {
		peer := r.RemoteIPPrefix
		if peer == "" {
			peer = "everyone (" + r.EtherType + ")"
		}
		ports := "all"
		if r.PortRangeMin != 0 {
			ports = fmt.Sprintf("%d-%d", r.PortRangeMin, r.PortRangeMax)
			if r.PortRangeMin == r.PortRangeMax {
				ports = strconv.Itoa(r.PortRangeMin)
			}
		}
		e.SecurityRules = append(e.SecurityRules, provider.SecurityRule{Kind: "security group rule", In: "security group " + g.ID, ID: r.ID,
			Direction: r.Direction, Protocol: cmp.Or(r.Protocol, "any"), Ports: ports, Peer: peer, Mark: mark})
	}
	holding, err := st.api.ListPortViews(ctx, url.Values{"security_groups": {g.ID}})
	if err != nil {
		return err
	}
	e.Note("security group %s (%s) is on %d Node port(s)", g.ID, g.Name, len(holding))
	e.SortRules()
	return nil
}

// explainDrift is what the next walk would change: the load balancer taken
// over or shared, what Octavia cannot change, its listeners, pools, members
// and monitors (converge's comparisons), its security group, its floating
// IP (Publish's).
func (st *steps) explainDrift(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, spec lbSpec, x *explained) error {
	lb := &x.lb.Obj
	switch {
	case x.lb.Shared && st.peerOwned(lb, svc, spec.name):
		e.Change(provider.ActionChange, "load balancer "+lb.ID, "the peer's: tagged as the Service's and taken over as it is")
	case x.lb.Shared && spec.internal:
		e.Change(provider.ActionRefuse, "load balancer "+lb.ID, "an internal Service cannot share a load balancer")
	case !x.lb.Shared:
		for _, d := range st.immutableDiffs(lb, spec) {
			e.Change(provider.ActionRefuse, "load balancer "+lb.ID, "keeps its %s: Octavia cannot change it; recreate the Service to apply", d)
		}
	}
	if err := st.explainTLS(ctx, e, svc, &spec); err != nil {
		return err
	}
	mine, err := ownListeners(x.listeners, svc, spec, lb.ID, x.lb.Shared)
	if p, ok := outcome.AsProblem(err); ok {
		e.Change(provider.ActionRefuse, "load balancer "+lb.ID, "%s", p.Message)
		return nil
	} else if err != nil {
		return err
	}
	if x.lb.Shared && len(spec.ports) > 0 && !slices.Contains(lb.Tags, spec.name) {
		e.Change(provider.ActionChange, "load balancer "+lb.ID, "tagged %s: the Service shares it", spec.name)
	}
	for _, k := range unwantedListeners(mine, spec) {
		e.Change(provider.ActionDelete, "listener "+portName(k), "no port of the Service asks for it (with its pool)")
	}
	for _, p := range st.strayPools(x.pools, spec) {
		e.Change(provider.ActionDelete, "pool "+p.Name, "no listener uses it and no port asks for it")
	}
	poolByID := map[string]osapi.Pool{}
	for _, p := range x.pools {
		poolByID[p.ID] = p
	}
	for _, p := range spec.ports {
		l, ok := mine[spec.listenerKey(p)]
		if !ok {
			e.Change(provider.ActionCreate, "listener "+portName(spec.listenerKey(p)), "with its pool of %d member(s)", len(spec.members))
			continue
		}
		st.portDrift(e, spec, p, l, poolByID, x)
	}
	if err := st.sgDrift(ctx, e, svc, spec, x.sg); err != nil {
		return err
	}
	fipDrift(e, spec, x)
	return nil
}

// portName is a listener key ("TCP/00080") as a person reads it.
func portName(key string) string {
	proto, port, _ := strings.Cut(key, "/")
	n, _ := strconv.Atoi(port)
	return fmt.Sprintf("%s/%d", proto, n)
}

// portDrift is what convergePort would change of the listener of p and its
// pool.
func (st *steps) portDrift(e *provider.ServiceExplanation, spec lbSpec, p v1.ServicePort, l osapi.Listener, poolByID map[string]osapi.Pool, x *explained) {
	k := portName(spec.listenerKey(p))
	if _, diffs := listenerChanges(l, spec, p); len(diffs) > 0 {
		e.Change(provider.ActionChange, "listener "+k, "%s", strings.Join(diffs, "; "))
	}
	pool, ok := poolByID[l.DefaultPoolID]
	switch {
	case !ok:
		e.Change(provider.ActionCreate, "pool of listener "+k, "%s %s, with %d member(s)", spec.poolProtocol(p), spec.method, len(spec.members))
		return
	case pool.Protocol != spec.poolProtocol(p):
		e.Change(provider.ActionChange, "pool "+pool.Name, "speaks %s, the Service asks %s: deleted and made anew", pool.Protocol, spec.poolProtocol(p))
		return
	}
	if _, diffs := poolChanges(pool, spec); len(diffs) > 0 {
		e.Change(provider.ActionChange, "pool "+pool.Name, "%s", strings.Join(diffs, "; "))
	}
	have, want := memberKeys(x.members[pool.ID]), spec.memberKeys(p)
	for _, m := range want {
		if !slices.Contains(have, m) {
			e.Change(provider.ActionCreate, "member "+memberName(m)+" of pool "+pool.Name, "an eligible Node's address the pool lacks")
		}
	}
	for _, m := range have {
		if !slices.Contains(want, m) {
			e.Change(provider.ActionDelete, "member "+memberName(m)+" of pool "+pool.Name, "not an eligible Node's address (or its port differs)")
		}
	}
	var wantMonitor osapi.MonitorCreate
	if spec.monitor != nil {
		wantMonitor = monitorOpts(spec, p)
	}
	monitorDrift(e, spec, pool, x.monitors[pool.ID], wantMonitor)
}

// memberName is a member key (memberKeys) as a person reads it.
func memberName(key string) string {
	addr, monitor, _ := strings.Cut(key, "/")
	if monitor == "0" {
		return addr
	}
	return addr + " (monitor port " + monitor + ")"
}

// monitorDrift is what convergeMonitor would change of the pool's health
// monitor.
func monitorDrift(e *provider.ServiceExplanation, spec lbSpec, pool osapi.Pool, have osapi.Monitor, want osapi.MonitorCreate) {
	object := "health monitor of pool " + pool.Name
	switch {
	case spec.monitor == nil && pool.MonitorID != "":
		e.Change(provider.ActionDelete, object, "the Service asks for none")
	case spec.monitor == nil:
	case pool.MonitorID == "":
		e.Change(provider.ActionCreate, object, "%s", describeMonitor(osapi.Monitor{Type: want.Type, Delay: want.Delay, Timeout: want.Timeout,
			MaxRetries: want.MaxRetries, MaxRetriesDown: want.MaxRetriesDown, URLPath: want.URLPath}))
	case have.Type != want.Type:
		e.Change(provider.ActionChange, object, "type %s, the Service asks %s: deleted and made anew", have.Type, want.Type)
	default:
		if _, diffs := monitorChanges(have, want); len(diffs) > 0 {
			e.Change(provider.ActionChange, object, "%s", strings.Join(diffs, "; "))
		}
	}
}

// explainTLS finds the certificate a TLS Secret's listeners are to present,
// as prepareTLS would, but only where it is stored already (explain stores
// nothing): one not stored yet is a difference.
func (st *steps) explainTLS(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, spec *lbSpec) error {
	t := spec.tls
	if t == nil || t.secret == nil || !slices.ContainsFunc(spec.ports, spec.isTLS) {
		return nil
	}
	if have, ok := st.tlsCerts.get(svc.UID); ok && have.hash == t.secret.hash {
		t.ref = have.ref
		return nil
	}
	found, err := st.api.ListContainers(ctx, storedName(svc.UID, t.secret.hash, st.cluster.Get()), 10)
	if err != nil {
		return fmt.Errorf("listing Barbican containers: %w", err)
	}
	if len(found) == 0 {
		e.Change(provider.ActionCreate, "certificate of Secret "+t.secret.name, "stored in Barbican for the listeners")
		return nil
	}
	t.ref = found[0].Ref
	return nil
}

// sgDrift is what convergeSG would change of the Service's security group
// (g: nil for none).
func (st *steps) sgDrift(ctx context.Context, e *provider.ServiceExplanation, svc *v1.Service, spec lbSpec, g *osapi.SecurityGroup) error {
	if spec.sg == nil {
		if g != nil {
			e.Change(provider.ActionDelete, "security group "+g.ID, "security groups are not managed ([LoadBalancer] manage-security-groups)")
		}
		return nil
	}
	if g == nil {
		e.Change(provider.ActionCreate, "security group "+sgName(svc), "with a rule per node port, on %d Node port(s)", len(spec.sg.servers))
		return nil
	}
	if !slices.Contains(g.Tags, tagService+string(svc.UID)) || !slices.Contains(g.Tags, tagCluster+st.cluster.Get()) {
		e.Change(provider.ActionChange, "security group "+g.ID, "tagged as the Service's (the peer's group, adopted)")
	}
	remotes, err := st.sgRemotes(ctx, spec)
	if err != nil {
		return err
	}
	create, extra := ruleChanges(g, spec.sg.wantedRules(remotes))
	for _, k := range create {
		e.Change(provider.ActionCreate, fmt.Sprintf("security group rule %s %d from %s", k.Proto, k.Min, k.Remote), "in group %s", g.ID)
	}
	for _, r := range extra {
		e.Change(provider.ActionDelete, "security group rule "+r.ID, "%s %d-%d from %s, not as the Service asks", r.Protocol, r.PortRangeMin, r.PortRangeMax, r.RemoteIPPrefix)
	}
	var members, holding []osapi.PortView
	if len(spec.sg.servers) > 0 {
		if members, err = st.api.ListPortViews(ctx, url.Values{"device_id": spec.sg.servers}); err != nil {
			return err
		}
	}
	if holding, err = st.api.ListPortViews(ctx, url.Values{"security_groups": {g.ID}}); err != nil {
		return err
	}
	_, attach, detach := placementChanges(members, holding, g.ID, spec.members)
	for _, p := range attach {
		e.Change(provider.ActionChange, "port "+p.ID, "of server %s, a member: security group %s put on it", p.DeviceID, g.ID)
	}
	for _, p := range detach {
		e.Change(provider.ActionChange, "port "+p.ID, "of server %s, no member: security group %s taken off it", p.DeviceID, g.ID)
	}
	return nil
}

// fipDrift is what Publish would change of the floating IP.
func fipDrift(e *provider.ServiceExplanation, spec lbSpec, x *explained) {
	switch {
	case x.lb.Shared:
	case spec.noFloatingIP() && x.fip != nil && !spec.keepFIP:
		e.Change(provider.ActionDelete, "floating IP "+x.fip.FloatingIP, "the Service is internal: given back")
	case spec.noFloatingIP() && x.fip != nil:
		e.Change(provider.ActionChange, "floating IP "+x.fip.FloatingIP, "the Service is internal: taken off the VIP, kept (keep-floating-ip)")
	case spec.noFloatingIP():
	case x.fip == nil && spec.floatingIP != "":
		e.Change(provider.ActionCreate, "floating IP "+spec.floatingIP, "put on the VIP %s", x.lb.Obj.VipAddress)
	case x.fip == nil:
		e.Change(provider.ActionCreate, "floating IP", "on the VIP %s", x.lb.Obj.VipAddress)
	case spec.floatingIP != "" && spec.floatingIP != x.fip.FloatingIP:
		e.Change(provider.ActionChange, "floating IP "+x.fip.FloatingIP, "the Service asks for %s", spec.floatingIP)
	}
}

// ExplainNode says what OpenStack holds for the Node.
func (c *Cloud) ExplainNode(ctx context.Context, node *v1.Node, nodes []*v1.Node) (provider.NodeExplanation, error) {
	srv, found, err := c.find(ctx, node, snapshot.MaxAge)
	if errors.Is(err, outcome.ErrNotFound) {
		err = cloudprovider.InstanceNotFound
	}
	md := provider.LookedUp(srv, found, err, func(srv osapi.Server) (*provider.Machine, *cloudprovider.InstanceMetadata) {
		m := c.metadataOf(ctx, srv)
		return &provider.Machine{ID: srv.ID, Name: srv.Name, State: srv.Status, Type: m.InstanceType, Zone: m.Zone, Region: m.Region,
			Addresses: provider.NodeAddresses(m.NodeAddresses)}, m
	})
	return provider.ExplainedNode(ctx, ProviderName, node, nodes, md, c.InstanceExists)
}
