package cloudstack

import (
	"context"
	"errors"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// Publish says the status: the address, or the hostname annotation's name.
func (s *steps) Publish(_ context.Context, _ *v1.Service, spec lbSpec, lb csLB) (*v1.LoadBalancerStatus, string, error) {
	if lb.Obj.addr.IP == "" {
		return nil, "", errors.New("the load balancer has no public address yet")
	}
	return statusFor(spec, lb.Obj.addr.IP), lb.Obj.addr.IP, nil
}

func statusFor(spec lbSpec, ip string) *v1.LoadBalancerStatus {
	if spec.hostname != "" {
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: spec.hostname}}}
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip}}}
}

// Published answers from the shared listing: every rule of the spec there,
// on the recorded address.
func (s *steps) Published(_ context.Context, _ *v1.Service, spec lbSpec, rec lbcycle.Record, lb csLB) (*v1.LoadBalancerStatus, bool, error) {
	if rec.Address == "" || lb.Obj.addr.IP != rec.Address || !hasRules(lb.Obj, spec) {
		return nil, false, nil
	}
	return statusFor(spec, rec.Address), true, nil
}

// hasRules says whether the state has exactly the spec's rules, on its address.
func hasRules(st lbState, spec lbSpec) bool {
	if len(st.rules) != len(spec.ports) {
		return false
	}
	for _, p := range spec.ports {
		name := p.ruleName(spec.name)
		if !slices.ContainsFunc(st.rules, func(r csapi.Rule) bool {
			return r.Name == name && r.AddressID == st.addr.ID && r.PublicPort == p.port && r.PrivatePort == p.nodePort
		}) {
			return false
		}
	}
	return true
}
