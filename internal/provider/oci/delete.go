package oci

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// Delete removes the Service's security rules, then deletes its load
// balancer (found by its name), and one of the other kind if the Service
// had asked for that before: one call a step, then the Service is looked
// at again until they are gone.
func (s steps) Delete(ctx context.Context, _ string, svc *v1.Service) (string, error) {
	if asking := s.asking(svc); asking != "" {
		return asking, nil
	}
	kind := kindOf(svc)
	var lbs []ociLB
	lb, found, err := s.find(ctx, svc, kind)
	if err != nil {
		return "", err
	}
	if found {
		lbs = append(lbs, lb)
	}
	other := map[string]string{kindLB: kindNLB, kindNLB: kindLB}[kind]
	old, found, err := s.listed(ctx, svc, other)
	if err != nil {
		return "", err
	}
	if found {
		lbs = append(lbs, s.asLB(svc, old))
	}
	var subnets []string
	for _, lb := range lbs {
		switch {
		case lb.Obj.LifecycleState == "DELETING":
			// Its rules went before the delete was asked.
			return fmt.Sprintf("%s %s is being deleted", noun(lb.Obj.Kind), lb.ID), nil
		case lb.State == lbcycle.Busy:
			return fmt.Sprintf("%s %s is %s; deleting it next", noun(lb.Obj.Kind), lb.ID, lb.Status), nil
		}
		subnets = append(subnets, lb.Obj.SubnetIDs...)
	}
	if len(lbs) == 0 {
		if cfg := s.cfg.LoadBalancer; cfg != nil && cfg.Subnet1 != "" {
			subnets = []string{cfg.Subnet1}
		}
	}
	if err := s.removeRules(ctx, svc, subnets); err != nil {
		return "", err
	}
	for _, lb := range lbs {
		if s.builtHere(lb.Obj) {
			continue
		}
		lists, err := s.lbLists(ctx, lb.Obj.SubnetIDs)
		if err != nil {
			return "", err
		}
		if err := s.removePeerRules(ctx, svc, lb.Obj, lists); err != nil {
			return "", err
		}
	}
	if backends, err := annotation.OCIBackendNetworkSecurityGroups.OCIDs(svc, "networksecuritygroup", 0); err == nil {
		if err := s.removeBackendNSGRules(ctx, svc, backends); err != nil {
			return "", err
		}
	}
	if len(lbs) == 0 {
		// Last, the Service's frontend NSG (NSG mode), now that no load
		// balancer is in it.
		front, err := s.frontendNSG(ctx, svc)
		if err != nil || front == "" {
			return "", err
		}
		if err := s.gw.deleteNSG(ctx, front); err != nil && !errors.Is(err, outcome.ErrNotFound) {
			return "", err
		}
		return fmt.Sprintf("network security group %s deleted", front), nil
	}
	lb = lbs[0]
	wr, err := s.gw.deleteLoadBalancer(ctx, lb.Obj.Kind, lb.ID)
	s.listings[lb.Obj.Kind].Invalidate()
	if errors.Is(err, outcome.ErrNotFound) {
		return fmt.Sprintf("%s %s is gone", noun(lb.Obj.Kind), lb.ID), nil
	}
	if err != nil {
		return "", err
	}
	s.wrs.done(svc, 0) // DELETING says it is busy
	return fmt.Sprintf("%s %s is being deleted (work request %s)", noun(lb.Obj.Kind), lb.ID, wr), nil
}
