package oci

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// The peer's rules of a Service whose load balancer Overcast took over.
// They carry no mark; Overcast added none beside them (they stand for its
// own: securityrules.go). When such a Service goes, its rules go as the peer
// would remove them (load_balancer_security_lists.go Delete): the unmarked
// stateful TCP rules opening one of its load balancer's ports, in its
// subnets' and the nodes' subnets' lists, unless another LoadBalancer
// Service of the cluster still uses that port (the peer's portInUse and
// healthCheckPortInUse). Without them, switching from the peer would leave
// every migrated Service's rules behind.

// peerPorts are the ports the peer's rules of load balancer lb open: its
// listeners', its backends' (the node ports) and its health checks'.
func peerPorts(lb ociapi.LB) map[int]bool {
	listeners, backends, _ := lbPorts(lb)
	maps.Copy(listeners, backends)
	return listeners
}

// lbPorts are the ports of load balancer lb's listeners, those of its
// backends and health checks, and its backends' addresses (those of the
// backend sets kept one by one: not of ManyBackends).
func lbPorts(lb ociapi.LB) (listeners, backends map[int]bool, ips []string) {
	listeners, backends = map[int]bool{}, map[int]bool{}
	for _, l := range lb.Listeners {
		listeners[l.Port] = true
	}
	for _, bs := range lb.BackendSets {
		backends[bs.HealthChecker.Port] = true
		for _, p := range backendPorts(bs) {
			backends[p] = true
		}
		for _, b := range bs.Backends {
			ips = append(ips, b.IPAddress)
		}
	}
	return listeners, backends, ips
}

// services are the cluster's Services, listed for why.
func (st *steps) services(ctx context.Context, why string) ([]v1.Service, error) {
	kube := st.kube()
	if kube == nil {
		return nil, fmt.Errorf("no Kubernetes client yet to %s", why)
	}
	list, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the Services, to %s: %w", why, err)
	}
	return list.Items, nil
}

// portsInUse are the ports every other LoadBalancer Service of the cluster
// uses: its ports, node ports and health check port.
func (st *steps) portsInUse(ctx context.Context, svc *v1.Service) (map[int]bool, error) {
	list, err := st.services(ctx, "keep the rules of the ports other Services use")
	if err != nil {
		return nil, err
	}
	used := map[int]bool{}
	for _, s := range list {
		if s.UID == svc.UID || s.Spec.Type != v1.ServiceTypeLoadBalancer || s.DeletionTimestamp != nil {
			continue
		}
		for _, p := range s.Spec.Ports {
			used[int(p.Port)], used[int(p.NodePort)] = true, true
		}
		if s.Spec.HealthCheckNodePort != 0 {
			used[int(s.Spec.HealthCheckNodePort)] = true
		} else {
			used[proxyHealthPort] = true
		}
	}
	return used, nil
}

// removePeerRules removes the peer's rules of the Service whose load
// balancer lb Overcast took over, from lists, sparing the ports other
// Services use.
func (st *steps) removePeerRules(ctx context.Context, svc *v1.Service, lb ociapi.LB, lists []string) error {
	drop := peerPorts(lb)
	used, err := st.portsInUse(ctx, svc)
	if err != nil {
		return err
	}
	for p := range used {
		delete(drop, p)
	}
	if len(drop) == 0 {
		return nil
	}
	for _, id := range lists {
		if err := st.updateList(ctx, id, listChange{mark: st.mark(svc) + " ", drop: drop}); err != nil {
			return fmt.Errorf("security list %s: %w", id, err)
		}
	}
	return nil
}

// peerRuleOn says whether r is a rule of the peer's shape (no mark of any
// CCM of ours, stateful TCP to one port) opening one of ports.
func peerRuleOn(r ociapi.SecurityRule, ports map[int]bool) bool {
	if len(ports) == 0 || strings.HasPrefix(r.Description, markPrefix) || r.IsStateless || r.Protocol != "6" || r.TCPOptions == nil {
		return false
	}
	d := r.TCPOptions.DestinationPortRange
	return d != nil && r.TCPOptions.SourcePortRange == nil && d.Min == d.Max && ports[d.Min]
}

// lbLists are the security lists of the subnets and of every node subnet.
func (st *steps) lbLists(ctx context.Context, subnets []string) ([]string, error) {
	all, err := st.allNodeSubnets(ctx)
	if err != nil {
		return nil, err
	}
	var lists []string
	for _, id := range append(slices.Clone(subnets), all...) {
		_, sl, err := st.subnetList(ctx, id)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(lists, sl) {
			lists = append(lists, sl)
		}
	}
	return lists, nil
}
