package cloudstack

// The public address of a Service: adopted from the peer, moved when
// loadBalancerIP changes, released with the last Service on it.

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// adoptAddress tags an untagged address that the Service's rules are on and
// that the Service did not ask for by loadBalancerIP: the peer associated it,
// and released it with the Service; so will we. true: it started to.
func (s *steps) adoptAddress(ctx context.Context, svc *v1.Service, a csapi.Address) (bool, error) {
	got, found, err := s.api.Address(ctx, a.ID)
	if err != nil || !found || len(got.Tags) > 0 {
		return false, err
	}
	job, err := s.api.Tag(ctx, "PublicIpAddress", []string{a.ID}, s.newTags(svc))
	if err != nil {
		return false, fmt.Errorf("cannot adopt public address %s: %w", a.IP, err)
	}
	s.jobs.add(svc.UID, job, "adopting public address "+a.IP)
	klog.FromContext(ctx).Info("Adopted the public address of the Service's rules", "service", klog.KObj(svc), "address", a.IP)
	return true, nil
}

// moveAddress handles a loadBalancerIP changed to another address: the rules
// on the old one go, then the old address if it was associated for the
// Service; the new one is associated next.
func (s *steps) moveAddress(ctx context.Context, svc *v1.Service, st lbState) (string, error) {
	if len(st.rules) > 0 {
		if err := s.deleteRules(ctx, svc, st.rules); err != nil {
			return "", err
		}
		return fmt.Sprintf("moving to %s: the rules on %s are being deleted", svc.Spec.LoadBalancerIP, st.addr.IP), nil
	}
	return s.release(ctx, svc, st.addr, false)
}

// release gives back an address associated for the Service (by its tags, or
// by the peer's annotation) once no rule is on it; "" when there is nothing
// to release. going: the Service's load balancer is being deleted (not
// moved to another address).
func (s *steps) release(ctx context.Context, svc *v1.Service, a csapi.Address, going bool) (string, error) {
	if !s.addrOwnedBy(a, svc) {
		// Another Service's, through a shared loadBalancerIP: released by the
		// last of them, once the one it was associated for is gone.
		gone, err := s.ownerGone(ctx, a)
		if err != nil || !gone {
			return "", err
		}
		klog.FromContext(ctx).Info("The public address was associated for a Service that is gone; released with this one, which shared it", "service", klog.KObj(svc), "address", a.IP)
	}
	if strings.EqualFold(a.State, "Releasing") {
		return fmt.Sprintf("public address %s is being released", a.IP), nil
	}
	others, err := s.api.RulesOn(ctx, a.ID)
	if err != nil {
		return "", err
	}
	if len(others) > 0 {
		if len(a.Tags) == 0 && going {
			return s.handOver(ctx, svc, a)
		}
		klog.FromContext(ctx).Info("Keeping the public address: other rules are on it", "service", klog.KObj(svc), "address", a.IP, "rules", len(others))
		return "", nil
	}
	job, err := s.api.Disassociate(ctx, a.ID)
	if err != nil {
		if isNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("cannot release public address %s: %w", a.IP, err)
	}
	s.jobs.add(svc.UID, job, "releasing public address "+a.IP)
	klog.FromContext(ctx).Info("Releasing public address", "service", klog.KObj(svc), "address", a.IP)
	return fmt.Sprintf("public address %s is being released", a.IP), nil
}

// ownerGone says whether the address was associated by this CCM for a
// Service of the cluster that no longer exists (asked of the apiserver, not
// of a cache: an address is released on this answer).
func (s *steps) ownerGone(ctx context.Context, a csapi.Address) (bool, error) {
	uid := a.Tags[tagService]
	kube := s.kube()
	if uid == "" || a.Tags[tagCluster] != s.cluster.Get() || kube == nil {
		return false, nil
	}
	list, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("cannot tell whether the Service public address %s was associated for still exists: %w", a.IP, err)
	}
	for i := range list.Items {
		if string(list.Items[i].UID) == uid {
			return false, nil
		}
	}
	return true, nil
}

// addrOwnedBy: associated by this CCM for the Service (its tags), or by the
// peer at the Service's request (its annotation names that address).
func (s *steps) addrOwnedBy(a csapi.Address, svc *v1.Service) bool {
	if s.owns(a, svc) {
		return true
	}
	assoc, _ := annotation.CloudStackIPAssociatedByController.Bool(svc)
	return assoc && a.IP != "" && a.IP == strings.TrimSpace(svc.Spec.LoadBalancerIP) && len(a.Tags) == 0
}

// handOver tags the address the peer associated for svc (known by svc's
// annotation only) when svc goes while other Services' rules are on it, as
// this CCM tags the addresses it associates: the last of the Services that
// share it then releases it, its owner gone (ownerGone), whatever the order
// in which they go.
func (s *steps) handOver(ctx context.Context, svc *v1.Service, a csapi.Address) (string, error) {
	got, found, err := s.api.Address(ctx, a.ID)
	if err != nil || !found || len(got.Tags) > 0 {
		return "", err
	}
	job, err := s.api.Tag(ctx, "PublicIpAddress", []string{a.ID}, s.newTags(svc))
	if err != nil {
		return "", fmt.Errorf("cannot tag public address %s for the Services that share it: %w", a.IP, err)
	}
	s.jobs.add(svc.UID, job, "tagging public address "+a.IP)
	klog.FromContext(ctx).Info("Tagging the public address the peer associated, for the last of the Services that share it to release it",
		"service", klog.KObj(svc), "address", a.IP)
	return fmt.Sprintf("public address %s is being tagged for the Services that share it", a.IP), nil
}
