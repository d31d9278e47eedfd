package oci

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// Delete removes the Service's security rules, then deletes its load
// balancer (found by its name), and one of the other kind if the Service
// had asked for that before: one call a step, then the Service is looked
// at again until they are gone.
func (st *steps) Delete(ctx context.Context, _ string, svc *v1.Service) (string, error) {
	ctx, err := st.as(ctx, svc)
	if err != nil {
		return "", err
	}
	if asking := st.asking(svc); asking != "" {
		return asking, nil
	}
	lbs, err := st.loadBalancersOf(ctx, svc)
	if err != nil {
		return "", err
	}
	subnets, busy := deletable(lbs)
	if busy != "" {
		return busy, nil
	}
	if len(lbs) == 0 {
		if cfg := st.cfg.LoadBalancer; cfg != nil && cfg.Subnet1 != "" {
			subnets = []string{cfg.Subnet1}
		}
	}
	if err := st.removeSecurityRules(ctx, svc, lbs, subnets); err != nil {
		return "", err
	}
	if len(lbs) == 0 {
		return st.deleteFrontendNSG(ctx, svc)
	}
	lb := lbs[0]
	wr, err := st.api.DeleteLoadBalancer(ctx, lb.Obj.Kind, lb.ID)
	st.listings[lb.Obj.Kind].Invalidate()
	if errors.Is(err, outcome.ErrNotFound) {
		return fmt.Sprintf("%s %s is gone", noun(lb.Obj.Kind), lb.ID), nil
	}
	if err != nil {
		return "", err
	}
	st.wrs.done(svc, 0) // DELETING says it is busy
	st.wrs.forgetSent(svc.UID)
	return fmt.Sprintf("%s %s is being deleted (work request %s)", noun(lb.Obj.Kind), lb.ID, wr), nil
}

// loadBalancersOf are the Service's load balancers: the one of the kind it
// asks for (found by its name, as Find finds it), then one of the other
// kind from the shared listing, if the Service had asked for that before.
func (st *steps) loadBalancersOf(ctx context.Context, svc *v1.Service) ([]ociLB, error) {
	kind := kindOf(svc)
	var lbs []ociLB
	lb, found, err := st.find(ctx, svc, kind)
	if err != nil {
		return nil, err
	}
	if found {
		lbs = append(lbs, lb)
	}
	other := map[string]string{ociapi.KindLB: ociapi.KindNLB, ociapi.KindNLB: ociapi.KindLB}[kind]
	old, found, err := st.listed(ctx, svc, other)
	if err != nil {
		return nil, err
	}
	if found {
		lbs = append(lbs, st.asLB(svc, old))
	}
	return lbs, nil
}

// deletable is the subnets of the load balancers, whose security lists hold
// the Service's rules; or, while one is busy, what it is doing (nothing is
// removed meanwhile: a load balancer being deleted had its rules removed
// before).
func deletable(lbs []ociLB) (subnets []string, busy string) {
	for _, lb := range lbs {
		switch {
		case lb.Obj.LifecycleState == "DELETING":
			// Its rules went before the delete was asked.
			return nil, fmt.Sprintf("%s %s is being deleted", noun(lb.Obj.Kind), lb.ID)
		case lb.State == lbcycle.Busy:
			return nil, fmt.Sprintf("%s %s is %s; deleting it next", noun(lb.Obj.Kind), lb.ID, lb.Status)
		}
		subnets = append(subnets, lb.Obj.SubnetIDs...)
	}
	return subnets, ""
}

// removeSecurityRules removes the Service's rules from the security lists
// of subnets, the peer's from the lists of the load balancers it built, and
// the Service's from the backend NSGs its annotation names.
func (st *steps) removeSecurityRules(ctx context.Context, svc *v1.Service, lbs []ociLB, subnets []string) error {
	if err := st.removeRules(ctx, svc, subnets); err != nil {
		return err
	}
	for _, lb := range lbs {
		if st.builtHere(lb.Obj) {
			continue
		}
		lists, err := st.lbLists(ctx, lb.Obj.SubnetIDs)
		if err != nil {
			return err
		}
		if err := st.removePeerRules(ctx, svc, lb.Obj, lists); err != nil {
			return err
		}
	}
	if backends, err := annotation.OCIBackendNetworkSecurityGroups.OCIDs(svc, "networksecuritygroup", 0); err == nil {
		if err := st.removeBackendNSGRules(ctx, svc, backends); err != nil {
			return err
		}
	}
	return nil
}

// deleteFrontendNSG deletes, last, the Service's frontend NSG (NSG mode),
// once no load balancer is in it.
func (st *steps) deleteFrontendNSG(ctx context.Context, svc *v1.Service) (string, error) {
	front, err := st.frontendNSG(ctx, svc)
	if err != nil || front == "" {
		return "", err
	}
	if err := st.api.DeleteNSG(ctx, front); err != nil && !errors.Is(err, outcome.ErrNotFound) {
		return "", err
	}
	return fmt.Sprintf("network security group %s deleted", front), nil
}
