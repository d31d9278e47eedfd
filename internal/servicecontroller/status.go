package servicecontroller

import (
	"context"
	"encoding/json"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	servicehelper "k8s.io/cloud-provider/service/helpers"
)

// The Service's conditions, as a Deployment's Available and Progressing:
//
//   - LoadBalancerReady is True while the Service has a load balancer that
//     serves its address. It stays True while a change is being made to it,
//     and turns False while there is none (being created, rebuilt after it was
//     lost, deleted) or none could be made.
//   - LoadBalancerProgressing is True while the cloud works on what the Service
//     asks; False with reason Converged once the load balancer is as asked, or
//     with the reason of the failure that stops it.
//
// Both carry the Service's generation they were written for.
const (
	ConditionReady       = "LoadBalancerReady"
	ConditionProgressing = "LoadBalancerProgressing"

	reasonConverged = "Converged"
)

type condition = metav1.Condition

func readyConditions(gen int64, msg string) []condition {
	return []condition{
		{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonEnsured, Message: msg, ObservedGeneration: gen},
		{Type: ConditionProgressing, Status: metav1.ConditionFalse, Reason: reasonConverged, Message: "The load balancer is as the Service asks", ObservedGeneration: gen},
	}
}

// progressingConditions: the cloud is working. A Service that has an address
// keeps its Ready condition (its load balancer still serves) unless lost says
// it has none any more.
func progressingConditions(svc *v1.Service, reason, msg string, lost bool) []condition {
	out := []condition{{Type: ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: svc.Generation}}
	if lost || !hasIngress(svc) {
		out = append(out, condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: svc.Generation})
	}
	return out
}

// failedConditions: the pass failed; the load balancer (if any) serves as it was.
func failedConditions(svc *v1.Service, reason, msg string) []condition {
	out := []condition{{Type: ConditionProgressing, Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: svc.Generation}}
	if !hasIngress(svc) {
		out = append(out, condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: svc.Generation})
	}
	return out
}

func hasIngress(svc *v1.Service) bool { return len(svc.Status.LoadBalancer.Ingress) > 0 }

// isReady: the Service's Ready condition is True for its current generation.
// sameStatus says whether a and b are the same load balancer status once
// defaulted as the apiserver stores it: an address's ipMode is VIP unless
// set (the LoadBalancerIPMode feature, on since Kubernetes 1.30). A cloud
// says none for VIP: compared as they are, every Service would read as
// changed on a new leader's first pass, and be written again.
func sameStatus(a, b *v1.LoadBalancerStatus) bool {
	return servicehelper.LoadBalancerStatusEqual(withIPMode(a), withIPMode(b))
}

func withIPMode(st *v1.LoadBalancerStatus) *v1.LoadBalancerStatus {
	out := st.DeepCopy()
	for i, ing := range out.Ingress {
		if ing.IP != "" && ing.IPMode == nil {
			vip := v1.LoadBalancerIPModeVIP
			out.Ingress[i].IPMode = &vip
		}
	}
	return out
}

func isReady(svc *v1.Service) bool {
	c := meta.FindStatusCondition(svc.Status.Conditions, ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == svc.Generation
}

func setConditions(svc *v1.Service, conds []condition) {
	for _, c := range conds {
		meta.SetStatusCondition(&svc.Status.Conditions, c)
	}
}

func removeConditions(svc *v1.Service) {
	meta.RemoveStatusCondition(&svc.Status.Conditions, ConditionReady)
	meta.RemoveStatusCondition(&svc.Status.Conditions, ConditionProgressing)
	if len(svc.Status.Conditions) == 0 {
		svc.Status.Conditions = nil
	}
}

func addFinalizer(svc *v1.Service) {
	if !servicehelper.HasLBFinalizer(svc) {
		svc.Finalizers = append(svc.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
	}
}

func removeFinalizer(svc *v1.Service) {
	svc.Finalizers = slices.DeleteFunc(svc.Finalizers, func(f string) bool { return f == servicehelper.LoadBalancerCleanupFinalizer })
	if len(svc.Finalizers) == 0 {
		svc.Finalizers = nil
	}
}

// patch applies mutate's changes of the finalizers and the status to the
// Service with one strategic merge patch of its status subresource (which
// takes metadata changes too, as the framework relies on), and nothing when
// mutate changed nothing. svc becomes the server's answer, so that a later patch
// of the same pass starts from it.
func (c *Controller) patch(ctx context.Context, svc *v1.Service, mutate func(*v1.Service)) error {
	updated := svc.DeepCopy()
	mutate(updated)
	if equality.Semantic.DeepEqual(svc.Finalizers, updated.Finalizers) && equality.Semantic.DeepEqual(svc.Status, updated.Status) {
		return nil
	}
	updated.Spec = svc.Spec
	oldData, err := json.Marshal(svc)
	if err != nil {
		return err
	}
	newData, err := json.Marshal(updated)
	if err != nil {
		return err
	}
	data, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Service{})
	if err != nil {
		return err
	}
	res, err := c.kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	if err != nil {
		return err
	}
	*svc = *res
	return nil
}
