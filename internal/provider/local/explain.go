package local

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/l4proxy"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// `overcast explain` on the local cloud. Its load balancers live in the
// leader's process (the L4 proxy) and their allocation in the Services'
// status: a process that serves the Service shows its listeners and their
// backends' health, and compares them with what serve would make of the
// Service now (listenerSpecs); any other process (the command line) shows
// the address of the Service's status and what the proxy serves for it,
// from the Service and its Nodes, and cannot see the proxy.

var _ provider.Explainer = (*Cloud)(nil)

// ExplainService says what the local cloud holds for the Service.
func (c *Cloud) ExplainService(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (provider.ServiceExplanation, error) {
	return c.lb.explainService(ctx, clusterName, svc, nodes)
}

func (st *steps) explainService(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (provider.ServiceExplanation, error) {
	e, spec, err := provider.BeginExplanation(ctx, ProviderName, "", st.cycle, st, clusterName, svc, nodes)
	if err != nil {
		return e, err
	}
	lb, served := st.current(svc)
	ip := statusIP(svc)
	if served {
		ip = lb.Obj.ip
	}
	if !ip.IsValid() || !st.inPools(ip) {
		return e, nil
	}
	e.Found = true
	e.LoadBalancer = &provider.LoadBalancer{ID: string(svc.UID), Name: cloudprovider.DefaultLoadBalancerName(svc),
		State: "served by the L4 proxy of overcast-ccm's leader", Details: provider.Details{"pool": st.poolOf(ip)}}
	e.Addresses = append(e.Addresses, provider.Address{IP: ip.String(), Kind: "pool address"})
	for _, r := range spec.opts.sourceRanges {
		e.SecurityRules = append(e.SecurityRules, provider.SecurityRule{Kind: "source range", In: "L4 proxy", Direction: "ingress",
			Protocol: "any", Ports: "the Service's", Peer: r.String(), Mark: provider.MarkThisCluster})
	}
	want := st.listenerSpecs(svc, ip, spec.opts, nodes)
	if !served {
		e.LoadBalancer.State = "served in overcast-ccm's leader (this process cannot see its proxy)"
		e.Note("the local cloud's load balancers live in the leader's L4 proxy: shown here is what it serves for the Service as it asks now")
		describeListeners(&e, want, nil)
		return e, nil
	}
	e.LoadBalancer.State = lb.Status
	have := st.proxy.Status(string(svc.UID))
	describeListeners(&e, nil, have)
	if e.SpecProblem == "" {
		e.DriftChecked = true
		listenerDrift(&e, want, have)
		if spec.opts.ip.IsValid() && spec.opts.ip != ip {
			e.Change(provider.ActionChange, "address "+ip.String(), "the Service asks for %s", spec.opts.ip)
		}
	}
	return e, nil
}

// poolOf names the pool that holds ip.
func (st *steps) poolOf(ip netip.Addr) string {
	for _, p := range st.pools {
		if p.Contains(ip) {
			return p.Name
		}
	}
	return ""
}

// describeListeners fills in the listeners and their backends: those the
// proxy serves (have), else those it is to serve (want).
func describeListeners(e *provider.ServiceExplanation, want []l4proxy.ListenerSpec, have []l4proxy.ListenerStatus) {
	add := func(proto l4proxy.Protocol, addr netip.AddrPort, members []provider.Member) {
		name := fmt.Sprintf("%s/%d", proto, addr.Port())
		e.Listeners = append(e.Listeners, provider.Listener{Name: name, Protocol: string(proto), Port: int(addr.Port()), Pool: name})
		e.Pools = append(e.Pools, provider.Pool{Name: name, Protocol: string(proto), Members: members})
	}
	for _, l := range want {
		members := []provider.Member{}
		for _, b := range l.Backends {
			members = append(members, provider.Member{Address: b.Addr.Addr().String(), Port: int(b.Addr.Port()), Node: b.Name})
		}
		add(l.Protocol, l.Address, members)
	}
	for _, l := range have {
		members := []provider.Member{}
		for _, b := range l.Backends {
			members = append(members, provider.Member{ID: map[bool]string{true: "healthy", false: "unhealthy"}[b.Healthy],
				Address: b.Addr.Addr().String(), Port: int(b.Addr.Port()), Node: b.Name})
		}
		add(l.Protocol, l.Address, members)
	}
}

// listenerDrift is what the proxy's Ensure would change: listeners
// opened or closed, backends added or removed.
func listenerDrift(e *provider.ServiceExplanation, want []l4proxy.ListenerSpec, have []l4proxy.ListenerStatus) {
	key := func(p l4proxy.Protocol, a netip.AddrPort) string { return string(p) + " " + a.String() }
	served := map[string]l4proxy.ListenerStatus{}
	for _, l := range have {
		served[key(l.Protocol, l.Address)] = l
	}
	asked := map[string]bool{}
	for _, l := range want {
		k := key(l.Protocol, l.Address)
		asked[k] = true
		got, ok := served[k]
		if !ok {
			e.Change(provider.ActionCreate, "listener "+k, "with %d backend(s)", len(l.Backends))
			continue
		}
		var g, w []string
		for _, b := range got.Backends {
			g = append(g, b.Name+" "+b.Addr.String())
		}
		for _, b := range l.Backends {
			w = append(w, b.Name+" "+b.Addr.String())
		}
		for _, b := range w {
			if !slices.Contains(g, b) {
				e.Change(provider.ActionCreate, "backend "+b+" of listener "+k, "an eligible Node")
			}
		}
		for _, b := range g {
			if !slices.Contains(w, b) {
				e.Change(provider.ActionDelete, "backend "+b+" of listener "+k, "not an eligible Node (or its address changed)")
			}
		}
	}
	for _, l := range have {
		if k := key(l.Protocol, l.Address); !asked[k] {
			e.Change(provider.ActionDelete, "listener "+k, "no port of the Service asks for it")
		}
	}
}

// ExplainNode says what the local cloud's inventory holds for the Node.
func (c *Cloud) ExplainNode(ctx context.Context, node *v1.Node, nodes []*v1.Node) (provider.NodeExplanation, error) {
	in, found, err := c.inv.lookup(node)
	md := provider.LookedUp(in, found, err, func(in Instance) (*provider.Machine, *cloudprovider.InstanceMetadata) {
		m := metadataOf(in)
		machine := &provider.Machine{ID: in.ProviderID, Name: in.Name, State: string(in.State), Type: in.InstanceType, Zone: in.Zone,
			Region: in.Region, Addresses: provider.NodeAddresses(m.NodeAddresses), Details: provider.Details{"inventory": c.inventorySource()}}
		if in.State == StateTerminated {
			return machine, nil
		}
		return machine, m
	})
	return provider.ExplainedNode(ctx, ProviderName, node, nodes, md, c.InstanceExists)
}

// inventorySource says where the instances come from.
func (c *Cloud) inventorySource() string {
	var from []string
	if c.cfg.InventoryFile != "" {
		from = append(from, "file "+c.cfg.InventoryFile)
	}
	if len(c.cfg.Instances) > 0 {
		from = append(from, strconv.Itoa(len(c.cfg.Instances))+" instance(s) of the config")
	}
	if c.cfg.AutoInventory {
		from = append(from, "autoInventory (every Node)")
	}
	return strings.Join(from, ", ")
}
