package cloudstack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// Create checks what could refuse the Service (its loadBalancerIP must be a
// free public address of the zone), then associates its public address and
// tags it as the Service's.
func (s *steps) Create(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	if spec.network == "" {
		return "waiting for a Node whose virtual machine is known (its guest network is the load balancer's)", nil
	}
	n, err := s.network(ctx, spec.network)
	if err != nil {
		return "", err
	}
	if spec.ip != "" {
		a, found, err := s.api.AddressOf(ctx, spec.ip)
		switch {
		case err != nil:
			return "", err
		case !found:
			return "", outcome.Refuse(outcome.ReasonAddressUnavailable,
				"spec.loadBalancerIP %s is not a public address of the zone that the CCM's account can use; nothing was created", spec.ip)
		case strings.EqualFold(a.State, "Releasing"):
			return fmt.Sprintf("public address %s is being released", spec.ip), nil
		}
	}
	lost := "address/" + string(svc.UID)
	if since, waiting := s.unanswered.Waiting(lost); waiting {
		// Its address may yet appear, untagged: the next passes take it up
		// (associating.go) rather than associate another.
		return fmt.Sprintf("waiting for the address whose association got no answer %s ago", since.Round(time.Second)), nil
	}
	ask := spec.ip
	if ask == "" {
		ask = s.keptAddress(ctx, svc)
	}
	id, job, tagJob, tagErr, err := s.associateTagged(ctx, svc, n, ask)
	if outcome.MayHaveActed(err) && !errors.Is(err, errNotAssociated) {
		s.unanswered.Lost(lost)
	}
	if err != nil && ask != spec.ip && refusedAddress(err) {
		klog.FromContext(ctx).Info("The Service's former address cannot be had again; associating another", "service", klog.KObj(svc), "address", ask, "err", err.Error())
		id, job, tagJob, tagErr, err = s.associateTagged(ctx, svc, n, "")
	}
	if err != nil {
		if spec.ip != "" {
			return "", outcome.RefusedProblem(outcome.ReasonAddressUnavailable, fmt.Errorf("cannot associate spec.loadBalancerIP %s: %w", spec.ip, err))
		}
		return "", fmt.Errorf("cannot associate a public address: %w", err)
	}
	if tagErr != nil {
		// An address without its tags would be nobody's: give it back.
		fctx, cancel := followUp(ctx)
		defer cancel()
		if _, rerr := s.api.Disassociate(fctx, id); rerr != nil {
			klog.FromContext(ctx).Error(rerr, "Cannot release the public address that could not be tagged; release it by hand", "service", klog.KObj(svc), "address", id)
		}
		return "", fmt.Errorf("cannot tag public address %s: %w", id, tagErr)
	}
	// The rules need the address alone: its tags do not hold the next look.
	s.jobs.addTrailing(svc.UID, tagJob, "tagging public address "+id)
	s.fresh.set(svc.UID, id+" "+job)
	if spec.ip != "" {
		s.markAssociated(ctx, svc)
	}
	klog.FromContext(ctx).Info("Associating public address", "service", klog.KObj(svc), "id", id, "requested", ask)
	return fmt.Sprintf("public address %s is being associated", id), nil
}

// refusedAddress says whether an association failed for the address it
// asked for (the server answered, and not "slow down", "who are you" or
// "busy"): another is then asked for at once. Any other failure is the
// pass's, retried later as the cloud asks, never with a second call now.
func refusedAddress(err error) bool {
	var e *csapi.APIError
	return errors.As(err, &e) && !errors.Is(err, outcome.ErrThrottled) && !errors.Is(err, outcome.ErrAuth) && !errors.Is(err, outcome.ErrBusy)
}

// keptAddress is the address the Service was last published with, when it
// is free again (its association was released behind our back): associated
// again, so that the Service keeps its address. "" when there is none.
func (s *steps) keptAddress(ctx context.Context, svc *v1.Service) string {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP == "" {
			continue
		}
		a, found, err := s.api.AddressOf(ctx, in.IP)
		if err != nil || !found || !strings.EqualFold(a.State, "Free") {
			return ""
		}
		klog.FromContext(ctx).Info("The Service's address is free again: associating it for the Service", "service", klog.KObj(svc), "address", in.IP)
		return in.IP
	}
	return ""
}
