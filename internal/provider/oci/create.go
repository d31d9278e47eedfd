package oci

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

func (st *steps) Create(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	ctx, err := st.as(ctx, svc)
	if err != nil {
		return "", err
	}
	var reserved []ociapi.ReservedIP
	if spec.ip != "" {
		id, err := st.reservedIP(ctx, spec.ip)
		if err != nil {
			return "", err
		}
		reserved = []ociapi.ReservedIP{{ID: id}}
	}
	if err := st.checkAssigned(ctx, spec, ociapi.LB{}); err != nil {
		return "", err
	}
	front, made, err := st.ensureFrontendNSG(ctx, svc, spec)
	if made != "" || err != nil {
		return made, err
	}
	nsgs := wantedNSGs(spec, front)
	// Busy (CREATING) until the shared listing shows it otherwise.
	select {
	case st.asks <- struct{}{}:
		// A place among the creations asked for at once: asked now.
		wr, err := st.createWhole(ctx, svc, spec, reserved, nsgs)
		<-st.asks
		if err != nil {
			return "", err
		}
		st.wrs.start(svc, spec.kind, wr, whatCreate)
		return fmt.Sprintf("%s %s is being created (work request %s)", noun(spec.kind), spec.name, wr), nil
	default:
	}
	// Every place taken (a burst of Services): the creation is asked for
	// without a worker waiting for its turn of the client-side write limit
	// (the burst would hold every worker there, and none would see the first
	// load balancers ready). The Service is busy until it is answered, and
	// its next look tells how that went.
	st.wrs.start(svc, spec.kind, "", whatCreate)
	logger := klog.FromContext(ctx)
	waiting := spec.withoutBackends()
	create := func(ctx context.Context) (string, error) {
		spec := waiting
		spec.fillBackends()
		return st.createWhole(ctx, svc, spec, reserved, nsgs)
	}
	go func() {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createAskTimeout)
		defer cancel()
		var wr string
		var err error
		select {
		case st.asks <- struct{}{}:
			wr, err = create(actx)
			<-st.asks
		case <-actx.Done():
			err = actx.Err()
		}
		if err != nil {
			logger.V(2).Info("A load balancer's creation was refused", "service", klog.KObj(svc), "err", err.Error())
		}
		st.wrs.asked(svc, wr, err)
	}()
	return fmt.Sprintf("%s %s is being asked for", noun(spec.kind), spec.name), nil
}

// createWhole asks for the Service's load balancer whole, with a retry
// token of the Service and the create's body (lostanswers.go).
func (st *steps) createWhole(ctx context.Context, svc *v1.Service, spec lbSpec, reserved []ociapi.ReservedIP, nsgs []string) (string, error) {
	salt := st.salts.get(svc.UID, spec.kind)
	var wr string
	var err error
	if spec.kind == ociapi.KindNLB {
		d := ociapi.CreateNetworkLoadBalancer{CompartmentID: st.cfg.CompartmentID, DisplayName: spec.name,
			SubnetID: spec.subnets[0], IsPrivate: spec.internal, Listeners: spec.listeners, BackendSets: spec.backendSets,
			FreeformTags: spec.freeform, DefinedTags: spec.defined, ReservedIPs: reserved, NSGs: nsgs,
			NLBIPVersion: spec.ipv.createVersion(ociapi.KindNLB), AssignedPrivateIPv4: spec.assigned4, AssignedIPv6: spec.assigned6}
		wr, err = st.api.CreateNetworkLoadBalancer(ctx, d, retryToken(svc.UID, spec.kind, salt, d))
	} else {
		d := ociapi.CreateLoadBalancer{CompartmentID: st.cfg.CompartmentID, DisplayName: spec.name,
			ShapeName: spec.shape, ShapeDetails: spec.flex, SubnetIDs: spec.subnets, IsPrivate: spec.internal, Listeners: spec.listeners,
			BackendSets: spec.backendSets, FreeformTags: spec.freeform, DefinedTags: spec.defined, ReservedIPs: reserved,
			Certificates: spec.certs, RuleSets: spec.ruleSets, NSGs: nsgs, IPMode: spec.ipv.createVersion(ociapi.KindLB)}
		wr, err = st.api.CreateLoadBalancer(ctx, d, retryToken(svc.UID, spec.kind, salt, d))
	}
	st.createAnswered(svc, spec.kind, err)
	return wr, err
}

// asking says, while a creation for the Service is being asked for, that
// it is (it may yet be made: what is deleted or replaced waits for it).
func (st *steps) asking(svc *v1.Service) string {
	if p, ok := st.wrs.get(svc); ok && p.id == "" && p.err == nil {
		return fmt.Sprintf("the creation of %s %s is being asked for", noun(p.kind), nameOf(svc, p.kind))
	}
	return ""
}

// createAskTimeout bounds the asking for one creation, the wait for the
// client-side write limit included.
const createAskTimeout = 5 * time.Minute

// reservedIP is the OCID of the reserved public IP of address ip, when it
// is free for a new load balancer; otherwise a Problem saying why.
func (st *steps) reservedIP(ctx context.Context, ip string) (string, error) {
	p, err := st.api.PublicIPByAddress(ctx, ip)
	switch {
	case errors.Is(err, outcome.ErrNotFound):
		return "", outcome.Refuse(outcome.ReasonUnsupportedService,
			"spec.loadBalancerIP %s is not a reserved public IP this CCM may use: reserve it (oci network public-ip create --lifetime RESERVED) in a compartment the CCM's policies cover", ip)
	case err != nil:
		return "", err
	case p.Lifetime != "RESERVED":
		return "", outcome.Refuse(outcome.ReasonUnsupportedService, "spec.loadBalancerIP %s is an ephemeral public IP; a load balancer takes a reserved one", ip)
	case p.LifecycleState != "AVAILABLE":
		return "", outcome.Refuse(outcome.ReasonUnsupportedService, "spec.loadBalancerIP %s is %s (to %s): it is not free", ip, p.LifecycleState, p.AssignedEntityID)
	}
	return p.ID, nil
}
