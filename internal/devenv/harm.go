package devenv

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodesHarmed counts the kubelets' Nodes that were deleted, and those tainted
// out of service or shut down: what a chaos case must never see.
func (e *Env) NodesHarmed(ctx context.Context, kubelets []*Kubelet) (deleted, tainted int, err error) {
	for _, k := range kubelets {
		n, err := e.Client.CoreV1().Nodes().Get(ctx, k.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			deleted++
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == v1.TaintNodeOutOfService || t.Key == ShutdownTaint }) {
			tainted++
		}
	}
	return deleted, tainted, nil
}

// ServiceWarnings counts the Warning Events of each Service of ns (an
// Event repeated counts as often as it was).
func (e *Env) ServiceWarnings(ctx context.Context, ns string) (map[string]int, error) {
	events, err := e.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	warnings := map[string]int{}
	for _, ev := range events.Items {
		if ev.Type == v1.EventTypeWarning && ev.InvolvedObject.Kind == "Service" {
			warnings[ev.InvolvedObject.Name] += int(max(ev.Count, 1))
		}
	}
	return warnings, nil
}
