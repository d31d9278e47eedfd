// Package explain says what the cloud holds for one Service or one Node
// (`overcast explain`), read-only: the cloud's side comes from its
// provider.Explainer (gateway reads, the cloud's own spec and compare
// functions, never a write), Kubernetes' side (the eligible Nodes, the
// Service's conditions and record, recent Events) from the apiserver. It
// prints the result for a person, or as JSON.
package explain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
)

// Options of an explanation.
type Options struct {
	Cloud cloudprovider.Interface
	Kube  kubernetes.Interface
	// ClusterName is overcast-ccm's --cluster-name ("kubernetes" by
	// default): OpenStack names load balancers with it.
	ClusterName string
	// Home is the namespace overcast-ccm keeps its members ledger in (its
	// leader election's; "": the Services' annotations alone).
	Home string
	// Events is how many of the latest Events are shown (10 by default).
	Events int
}

// ErrUnknown is the error of a Service or Node the cluster does not have.
var ErrUnknown = errors.New("not in the cluster")

// Service explains the Service namespace/name: found or not (Found says),
// with its conditions, record and Events. An error is a Service the
// cluster does not have (ErrUnknown), or a cloud or cluster that could not
// be read.
func Service(ctx context.Context, o Options, namespace, name string) (provider.ServiceExplanation, error) {
	x, err := o.explainer(ctx)
	if err != nil {
		return provider.ServiceExplanation{}, err
	}
	svc, err := o.Kube.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return provider.ServiceExplanation{}, fmt.Errorf("%w: Service %s/%s (kubectl get services -A lists them)", ErrUnknown, namespace, name)
	}
	if err != nil {
		return provider.ServiceExplanation{}, fmt.Errorf("cannot read Service %s/%s: %w", namespace, name, err)
	}
	all, err := o.nodes(ctx)
	if err != nil {
		return provider.ServiceExplanation{}, err
	}
	eligible := slices.DeleteFunc(slices.Clone(all), func(n *v1.Node) bool { return !servicecontroller.Eligible(n) })
	e, err := x.ExplainService(ctx, o.ClusterName, svc, eligible)
	if err != nil {
		return e, fmt.Errorf("reading what %s holds for Service %s/%s: %w", o.Cloud.ProviderName(), namespace, name, err)
	}
	notAsked(&e, svc)
	for _, p := range e.Pools {
		slices.SortStableFunc(p.Members, func(a, b provider.Member) int { return cmp.Compare(a.Node+" "+a.Address, b.Node+" "+b.Address) })
	}
	for _, c := range svc.Status.Conditions {
		e.Conditions = append(e.Conditions, provider.Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			Since: c.LastTransitionTime.UTC().Format(time.RFC3339)})
	}
	e.Events, err = o.events(ctx, namespace, "Service", name, string(svc.UID))
	return e, err
}

// notAsked: a Service that asks for no load balancer of ours is explained
// with what the next pass does of what the cloud holds: delete it.
func notAsked(e *provider.ServiceExplanation, svc *v1.Service) {
	why := ""
	switch {
	case svc.DeletionTimestamp != nil:
		why = "the Service is being deleted"
	case svc.Spec.Type != v1.ServiceTypeLoadBalancer:
		why = "the Service is of type " + string(svc.Spec.Type)
	case svc.Spec.LoadBalancerClass != nil:
		why = "the Service names loadBalancerClass " + *svc.Spec.LoadBalancerClass + ", another implementation's"
	default:
		return
	}
	e.Drift, e.DriftChecked, e.SpecProblem = []provider.Difference{}, e.Found, ""
	if e.Found {
		e.Change(provider.ActionDelete, "load balancer", "%s: what was made for it is deleted", why)
		return
	}
	e.Note("%s: it asks for no load balancer", why)
}

// Node explains the Node name.
func Node(ctx context.Context, o Options, name string) (provider.NodeExplanation, error) {
	x, err := o.explainer(ctx)
	if err != nil {
		return provider.NodeExplanation{}, err
	}
	node, err := o.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return provider.NodeExplanation{}, fmt.Errorf("%w: Node %s (kubectl get nodes lists them)", ErrUnknown, name)
	}
	if err != nil {
		return provider.NodeExplanation{}, fmt.Errorf("cannot read Node %s: %w", name, err)
	}
	all, err := o.nodes(ctx)
	if err != nil {
		return provider.NodeExplanation{}, err
	}
	e, err := x.ExplainNode(ctx, node, all)
	if err != nil {
		return e, fmt.Errorf("reading what %s holds for Node %s: %w", o.Cloud.ProviderName(), name, err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			e.Conditions = append(e.Conditions, provider.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason,
				Message: c.Message, Since: c.LastTransitionTime.UTC().Format(time.RFC3339)})
		}
	}
	e.Events, err = o.events(ctx, "", "Node", name, "")
	return e, err
}

// explainer is the cloud as an Explainer, told the cluster's UID (which
// marks what it made) and given the client its spec reads Secrets with.
func (o *Options) explainer(ctx context.Context) (provider.Explainer, error) {
	x, ok := o.Cloud.(provider.Explainer)
	if !ok {
		return nil, fmt.Errorf("cloud %s cannot explain what it holds", o.Cloud.ProviderName())
	}
	if o.Kube == nil {
		return nil, errors.New("a cluster is needed: pass --kubeconfig, or run inside the CCM's pod")
	}
	o.ClusterName = cmp.Or(o.ClusterName, "kubernetes")
	if err := provider.Attach(ctx, o.Cloud, o.Kube, o.Home); err != nil {
		return nil, err
	}
	return x, nil
}

// nodes are every Node of the cluster, page by page.
func (o *Options) nodes(ctx context.Context) ([]*v1.Node, error) {
	var out []*v1.Node
	opts := metav1.ListOptions{Limit: 500}
	for range 10000 {
		list, err := o.Kube.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("cannot list the cluster's Nodes: %w", err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			slices.SortFunc(out, func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) })
			return out, nil
		}
	}
	return nil, errors.New("listing the cluster's Nodes did not end")
}

// events are the latest Events of an object (its uid when known), newest
// last.
func (o *Options) events(ctx context.Context, namespace, kind, name, uid string) ([]provider.Event, error) {
	sel := "involvedObject.kind=" + kind + ",involvedObject.name=" + name
	list, err := o.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("cannot list the Events of %s %s: %w", kind, name, err)
	}
	var evs []v1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name && (uid == "" || string(ev.InvolvedObject.UID) == uid) {
			evs = append(evs, ev)
		}
	}
	slices.SortStableFunc(evs, func(a, b v1.Event) int { return lastSeen(a).Compare(lastSeen(b)) })
	if n := cmp.Or(o.Events, 10); len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	out := []provider.Event{}
	for _, ev := range evs {
		out = append(out, provider.Event{Type: ev.Type, Reason: ev.Reason, Message: ev.Message, Count: max(ev.Count, 1),
			Last: lastSeen(ev).UTC().Format(time.RFC3339)})
	}
	return out, nil
}

// lastSeen is when an Event last happened, whichever way it was recorded.
func lastSeen(ev v1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case ev.Series != nil:
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}
