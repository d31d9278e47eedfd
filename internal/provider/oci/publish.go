package oci

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

func privacy(internal bool) string {
	if internal {
		return "internal"
	}
	return "public"
}

// address is the load balancer's address the Service is given first: its
// public one, or its private one when internal; IPv4 before IPv6.
func address(lb ociapi.LB, internal bool) string {
	v6 := ""
	for _, a := range lb.IPAddresses {
		if a.IsPublic != internal {
			if addrFamily(a.IPAddress) != ipv6Version {
				return a.IPAddress
			}
			if v6 == "" {
				v6 = a.IPAddress
			}
		}
	}
	return v6
}

// ingress are the addresses the Service's status shows, its address first,
// then one of the other family of the same reach (a dual-stack load
// balancer's IPv6 one): a network load balancer's private addresses too
// (as the peer shows them) unless it is internal or externalOnly.
func ingress(lb ociapi.LB, internal, externalOnly bool) []string {
	first := address(lb, internal)
	if first == "" {
		return nil
	}
	out := []string{first}
	for _, a := range lb.IPAddresses {
		if a.IsPublic != internal && addrFamily(a.IPAddress) != addrFamily(first) {
			out = append(out, a.IPAddress)
			break
		}
	}
	if lb.Kind == ociapi.KindNLB && !internal && !externalOnly {
		for _, a := range lb.IPAddresses {
			if !a.IsPublic {
				out = append(out, a.IPAddress)
			}
		}
	}
	return out
}

func status(addrs []string, proxy bool) *v1.LoadBalancerStatus {
	st := &v1.LoadBalancerStatus{}
	for _, a := range addrs {
		ing := v1.LoadBalancerIngress{IP: a}
		if proxy {
			mode := v1.LoadBalancerIPModeProxy
			ing.IPMode = &mode
		}
		st.Ingress = append(st.Ingress, ing)
	}
	return st
}

// Publish opens the security lists as the Service's mode asks (and closes
// what it no longer asks), then gives the address.
func (st *steps) Publish(ctx context.Context, svc *v1.Service, spec lbSpec, lb ociLB) (*v1.LoadBalancerStatus, string, error) {
	ctx, err := st.as(ctx, svc)
	if err != nil {
		return nil, "", err
	}
	addrs := ingress(lb.Obj, spec.internal, spec.externalOnly)
	if len(addrs) == 0 {
		return nil, "", fmt.Errorf("%s %s has no %s address yet", noun(lb.Obj.Kind), lb.ID, privacy(spec.internal))
	}
	listSpec := spec
	if spec.mode == ModeNSG {
		listSpec.mode = ModeNone // no security list rule; those of a former mode go
		front, err := st.frontendNSG(ctx, svc)
		if err != nil {
			return nil, "", err
		}
		if front == "" {
			return nil, "", fmt.Errorf("the network security group of the Service is not there yet")
		}
		if err := st.publishNSGRules(ctx, svc, spec, front); err != nil {
			return nil, "", err
		}
	} else if err := st.removeBackendNSGRules(ctx, svc, spec.backendNSGs); err != nil {
		return nil, "", err
	}
	want, lists, err := st.wantedRules(ctx, svc, listSpec)
	if err != nil {
		return nil, "", err
	}
	if err := st.applyRules(ctx, svc, want, lists, !st.builtHere(lb.Obj)); err != nil {
		return nil, "", err
	}
	st.rebuilt.Forget(svc.UID) // serving: a later failure may be rebuilt again
	return status(addrs, spec.proxyMode), addrs[0], nil
}

func (st *steps) Published(_ context.Context, _ *v1.Service, spec lbSpec, rec lbcycle.Record, lb ociLB) (*v1.LoadBalancerStatus, bool, error) {
	addrs := ingress(lb.Obj, spec.internal, spec.externalOnly)
	if len(addrs) == 0 || addrs[0] != rec.Address {
		return nil, false, nil
	}
	return status(addrs, spec.proxyMode), true, nil
}
