// Package doctor checks that overcast-ccm can work in a cluster and a cloud, and
// says how to fix what cannot: the cloud config, the cloud's API and credentials
// (through each provider's Diagnose), the RBAC of the CCM's ServiceAccount, the
// kubelets' --cloud-provider=external, the mapping of Nodes to instances, and the
// leader Lease. `overcast doctor` prints its results as a table.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/deletionguard"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// Status of one check.
type Status int

// The statuses, worst last.
const (
	OK Status = iota
	Warn
	Fail
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Warn:
		return "warn"
	default:
		return "FAIL"
	}
}

// Result is one row of the report.
type Result struct {
	Check  string
	Status Status
	Detail string
	Fix    string // what to do, for Warn and Fail
}

// Diagnoser is what a cloud provider offers the doctor: checks of its API, one
// harmless read per service the CCM uses, with a fix for each failure.
type Diagnoser interface {
	Diagnose(ctx context.Context) []Result
}

// ServiceDiagnoser is a cloud with checks of the cluster's LoadBalancer
// Services against what it holds (what a switch back to the peer would
// rebuild), when doctor has a kubeconfig.
type ServiceDiagnoser interface {
	DiagnoseServices(ctx context.Context, svcs []v1.Service) []Result
}

// Options of a run.
type Options struct {
	Cloud       string // --cloud-provider
	CloudConfig string // --cloud-config
	// Kube is the cluster; nil skips the cluster's checks.
	Kube kubernetes.Interface
	// InCluster: running as the CCM's ServiceAccount (in its pod), so RBAC is
	// checked with SelfSubjectAccessReview; else with SubjectAccessReview of
	// Namespace/ServiceAccount.
	InCluster      bool
	Namespace      string // of the ServiceAccount and the Lease
	ServiceAccount string
	Lease          string
}

// Run makes every check and returns the results in order.
func Run(ctx context.Context, o Options) []Result {
	var out []Result
	cloud, res := checkConfig(o)
	out = append(out, res)
	if cloud != nil {
		if d, ok := cloud.(Diagnoser); ok {
			out = append(out, d.Diagnose(ctx)...)
		}
	}
	if o.Kube == nil {
		return out
	}
	out = append(out, checkRBAC(ctx, o))
	nodes, err := o.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		out = append(out, Result{Check: "kubernetes: nodes", Status: Fail, Detail: "cannot list Nodes: " + err.Error(),
			Fix: "run doctor with a kubeconfig that may list Nodes (or inside the CCM's pod)"})
	} else {
		out = append(out, checkKubelets(nodes.Items))
		if cloud != nil {
			out = append(out, checkNodeInstances(ctx, cloud, nodes.Items))
		}
	}
	if d, ok := cloud.(ServiceDiagnoser); ok {
		out = append(out, diagnoseServices(ctx, o, d)...)
	}
	return append(out, checkLease(ctx, o))
}

// diagnoseServices lists the LoadBalancer Services for the cloud's checks.
func diagnoseServices(ctx context.Context, o Options, d ServiceDiagnoser) []Result {
	list, err := o.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return []Result{{Check: "kubernetes: services", Status: Fail, Detail: "cannot list Services: " + err.Error(),
			Fix: "run doctor with a kubeconfig that may list Services (or inside the CCM's pod)"}}
	}
	var lbs []v1.Service
	for _, s := range list.Items {
		if s.Spec.Type == v1.ServiceTypeLoadBalancer {
			lbs = append(lbs, s)
		}
	}
	return d.DiagnoseServices(ctx, lbs)
}

// Failed says whether any check failed.
func Failed(results []Result) bool {
	return slices.ContainsFunc(results, func(r Result) bool { return r.Status == Fail })
}

// Print writes the results as a table, each fix under its row.
func Print(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	failed := 0
	for _, r := range results {
		// Each line of the detail (one problem per line) gets a line of its own.
		lines := strings.Split(strings.TrimSpace(r.Detail), "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Check, r.Status, oneLine(lines[0]))
		for _, l := range lines[1:] {
			fmt.Fprintf(tw, "\t\t%s\n", oneLine(l))
		}
		if r.Status != OK && r.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", oneLine(r.Fix))
		}
		if r.Status == Fail {
			failed++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		_, err := fmt.Fprintf(w, "\n%d of %d checks failed.\n", failed, len(results))
		return err
	}
	_, err := fmt.Fprintf(w, "\nAll %d checks passed.\n", len(results))
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func checkConfig(o Options) (cloudprovider.Interface, Result) {
	r := Result{Check: "cloud config"}
	if o.CloudConfig != "" {
		f, err := os.Open(o.CloudConfig)
		if err != nil {
			// The framework would end the process with a stack trace.
			r.Status, r.Detail = Fail, fmt.Sprintf("--cloud-config=%s: %v", o.CloudConfig, err)
			r.Fix = "give the path of the cloud config the CCM reads (a readable file)"
			return nil, r
		}
		_ = f.Close()
	}
	cloud, err := cloudprovider.InitCloudProvider(o.Cloud, o.CloudConfig)
	switch {
	case err != nil:
		r.Status, r.Detail = Fail, fmt.Sprintf("--cloud-provider=%s --cloud-config=%s: %v", o.Cloud, o.CloudConfig, err)
		r.Fix = "correct each key named above (docs/reference lists every key)"
		return nil, r
	case cloud == nil:
		r.Status, r.Detail = Fail, fmt.Sprintf("unknown --cloud-provider %q", o.Cloud)
		r.Fix = "use one of the clouds overcast-ccm serves"
		return nil, r
	}
	r.Detail = fmt.Sprintf("%s parses (%s)", o.CloudConfig, o.Cloud)
	return cloud, r
}

// permission is one thing the CCM's controllers do. The list mirrors the
// chart's ClusterRole and Role (deploy/chart/overcast-ccm/templates/rbac.yaml);
// the quick-start test runs doctor against them.
type permission struct {
	group, resource, subresource, verb, name string
	namespaced                               bool // in Options.Namespace
}

func (p permission) String() string {
	r := p.resource
	if p.subresource != "" {
		r += "/" + p.subresource
	}
	if p.group != "" {
		r += "." + p.group
	}
	if p.name != "" {
		r += " " + p.name
	}
	return p.verb + " " + r
}

func permissions(lease string) []permission {
	var ps []permission
	for _, v := range []string{"get", "list", "watch", "update", "patch", "delete"} {
		ps = append(ps, permission{resource: "nodes", verb: v})
	}
	ps = append(ps, permission{resource: "nodes", subresource: "status", verb: "patch"})
	for _, v := range []string{"get", "list", "watch", "update", "patch"} {
		ps = append(ps, permission{resource: "services", verb: v})
	}
	ps = append(ps,
		permission{resource: "services", subresource: "status", verb: "patch"},
		permission{resource: "events", verb: "create"},
		permission{resource: "events", verb: "patch"},
		permission{group: "events.k8s.io", resource: "events", verb: "create"},
		permission{resource: "namespaces", verb: "get", name: "kube-system"},
		permission{group: "coordination.k8s.io", resource: "leases", verb: "create", namespaced: true},
		permission{group: "coordination.k8s.io", resource: "leases", verb: "get", name: lease, namespaced: true},
		permission{group: "coordination.k8s.io", resource: "leases", verb: "update", name: lease, namespaced: true},
		// The members ledger (without it, every Service is written when Nodes change).
		permission{resource: "configmaps", verb: "create", namespaced: true},
		permission{resource: "configmaps", verb: "get", name: lbcycle.LedgerName, namespaced: true},
		permission{resource: "configmaps", verb: "update", name: lbcycle.LedgerName, namespaced: true},
	)
	return ps
}

func checkRBAC(ctx context.Context, o Options) Result {
	user := fmt.Sprintf("system:serviceaccount:%s:%s", o.Namespace, o.ServiceAccount)
	r := Result{Check: "kubernetes: RBAC"}
	var missing []string
	for _, p := range permissions(o.Lease) {
		attrs := &authzv1.ResourceAttributes{Group: p.group, Resource: p.resource, Subresource: p.subresource, Verb: p.verb, Name: p.name}
		if p.namespaced {
			attrs.Namespace = o.Namespace
		}
		var allowed bool
		var err error
		if o.InCluster {
			var res *authzv1.SelfSubjectAccessReview
			res, err = o.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
				Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
			if err == nil {
				allowed = res.Status.Allowed
			}
		} else {
			var res *authzv1.SubjectAccessReview
			res, err = o.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
				Spec: authzv1.SubjectAccessReviewSpec{ResourceAttributes: attrs, User: user,
					Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + o.Namespace, "system:authenticated"}}}, metav1.CreateOptions{})
			if err == nil {
				allowed = res.Status.Allowed
			}
		}
		if err != nil {
			r.Status, r.Detail = Fail, "cannot review access: "+err.Error()
			r.Fix = "run doctor with a kubeconfig allowed to create SubjectAccessReviews (cluster-admin), or inside the CCM's pod"
			return r
		}
		if !allowed {
			missing = append(missing, p.String())
		}
	}
	if n := len(permissions(o.Lease)); len(missing) == n {
		r.Status = Fail
		r.Detail = fmt.Sprintf("%s may do none of the %d things the CCM does (no RBAC installed for it)", user, n)
		r.Fix = "install the RBAC of this release: kubectl apply -f deploy/rbac.yaml, or helm upgrade with rbac.create=true"
		return r
	}
	if len(missing) > 0 {
		r.Status = Fail
		r.Detail = fmt.Sprintf("%s may not: %s", user, strings.Join(missing, ", "))
		r.Fix = "install the RBAC of this release: kubectl apply -f deploy/rbac.yaml, or helm upgrade with rbac.create=true"
		return r
	}
	r.Detail = fmt.Sprintf("%s may do all %d things the CCM does", user, len(permissions(o.Lease)))
	return r
}

func checkKubelets(nodes []v1.Node) Result {
	r := Result{Check: "kubernetes: kubelets"}
	if len(nodes) == 0 {
		r.Status, r.Detail = Warn, "no Nodes registered yet"
		r.Fix = "start kubelets with --cloud-provider=external; doctor checks them once they register"
		return r
	}
	var bad []string
	for _, n := range nodes {
		if n.Spec.ProviderID != "" {
			continue
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider }) {
			continue
		}
		bad = append(bad, n.Name)
	}
	if len(bad) > 0 {
		r.Status = Fail
		r.Detail = fmt.Sprintf("%d of %d Nodes have neither a providerID nor the uninitialized taint, so their kubelet runs without --cloud-provider=external: %s",
			len(bad), len(nodes), list(bad))
		r.Fix = "restart those kubelets with --cloud-provider=external (the CCM then initialises their Nodes)"
		return r
	}
	r.Detail = fmt.Sprintf("%s external-cloud (providerID or uninitialized taint)", nodesAre(len(nodes)))
	return r
}

// checkNodeInstances asks the provider itself, as the node controller would, for
// each Node's instance (from its shared snapshot: one listing, not one call per Node).
func checkNodeInstances(ctx context.Context, cloud cloudprovider.Interface, nodes []v1.Node) Result {
	r := Result{Check: "nodes ↔ instances"}
	inst, ok := cloud.InstancesV2()
	if !ok {
		r.Detail = "this cloud has no instances"
		return r
	}
	if len(nodes) == 0 {
		r.Status, r.Detail = Warn, "no Nodes to match"
		return r
	}
	var none []string
	byErr := map[string][]string{} // error text → Nodes
	for i := range nodes {
		n := &nodes[i]
		_, err := inst.InstanceMetadata(ctx, n)
		switch {
		case err == nil:
		case errors.Is(err, cloudprovider.InstanceNotFound):
			none = append(none, n.Name)
		default:
			if ctx.Err() != nil {
				r.Status, r.Detail = Fail, "timed out matching Nodes to instances"
				return r
			}
			byErr[err.Error()] = append(byErr[err.Error()], n.Name)
		}
	}
	if len(none) == 0 && len(byErr) == 0 {
		r.Detail = fmt.Sprintf("%s exactly one instance each", nodesMap(len(nodes)))
		return r
	}
	r.Status = Fail
	var parts []string
	guard := deletionguard.Default
	held := guard.Holds(len(none), len(nodes))
	if len(none) > 0 {
		parts = append(parts, fmt.Sprintf("%d match no instance: %s", len(none), list(none)))
	}
	if held {
		parts = append(parts, fmt.Sprintf("more than the Node deletion guard lets go at once (%.0f%% of the Nodes, at least %d, by default): the CCM deletes none of them (Warning %s) until they stay gone for %s or a person allows each",
			guard.Share*100, guard.Min+1, deletionguard.ReasonHeld, guard.Window))
	}
	errs := slices.Sorted(maps.Keys(byErr))
	for _, e := range errs {
		names := byErr[e]
		if len(names) == len(nodes) {
			parts = append(parts, "no Node can be looked up: "+e)
			continue
		}
		parts = append(parts, fmt.Sprintf("%d cannot be looked up (%s): %s", len(names), list(names), e))
	}
	r.Detail = strings.Join(parts, "; ")
	r.Fix = "name each Node as its instance, or set its providerID; the CCM's credentials must see the instances' project"
	if held {
		r.Fix = "if the credentials, project or policy changed, restore them (the instances come back); if the machines are really gone, annotate each Node " +
			deletionguard.AllowAnnotation + "=true"
	}
	if len(byErr) == 1 && len(byErr[errs[0]]) == len(nodes) {
		r.Fix = "fix the cloud's API access (the rows above) first"
	}
	return r
}

func checkLease(ctx context.Context, o Options) Result {
	r := Result{Check: "leader lease"}
	l, err := o.Kube.CoordinationV1().Leases(o.Namespace).Get(ctx, o.Lease, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		r.Detail = fmt.Sprintf("%s/%s does not exist yet: no CCM leads", o.Namespace, o.Lease)
		return r
	case err != nil:
		r.Status, r.Detail = Warn, "cannot read the Lease: "+err.Error()
		return r
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	held := holder != "" && l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil &&
		time.Since(l.Spec.RenewTime.Time) < time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
	if !held {
		r.Detail = fmt.Sprintf("%s/%s is free: no CCM leads now", o.Namespace, o.Lease)
		return r
	}
	// A leader's identity is <hostname>_<uuid>; in a pod the hostname is the pod's name.
	podName, _, _ := strings.Cut(holder, "_")
	pod, err := o.Kube.CoreV1().Pods(o.Namespace).Get(ctx, podName, metav1.GetOptions{})
	switch {
	case err == nil && isOvercast(pod):
		r.Detail = fmt.Sprintf("held by overcast-ccm pod %s", pod.Name)
	case err == nil:
		r.Status = Fail
		r.Detail = fmt.Sprintf("held by pod %s (image %s), which is not overcast-ccm", pod.Name, image(pod))
		r.Fix = "stop the other cloud-controller-manager (scale it to 0 or delete it) before overcast-ccm takes over; two CCMs fight over Nodes and load balancers"
	default:
		r.Status = Warn
		r.Detail = fmt.Sprintf("held by %q, which is no pod in %s that doctor can see", holder, o.Namespace)
		r.Fix = "make sure no other cloud-controller-manager runs with the same Lease"
	}
	return r
}

func isOvercast(p *v1.Pod) bool {
	if p.Labels["app.kubernetes.io/name"] == "overcast-ccm" {
		return true
	}
	return strings.Contains(image(p), "overcast-ccm")
}

func image(p *v1.Pod) string {
	if len(p.Spec.Containers) == 0 {
		return ""
	}
	return p.Spec.Containers[0].Image
}

func nodesAre(n int) string {
	if n == 1 {
		return "the one Node is"
	}
	return fmt.Sprintf("all %d Nodes are", n)
}

func nodesMap(n int) string {
	if n == 1 {
		return "the one Node maps to"
	}
	return fmt.Sprintf("the %d Nodes map to", n)
}

// list names at most 10 items, then says how many more.
func list(items []string) string {
	slices.Sort(items)
	if len(items) <= 10 {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:10], ", "), len(items)-10)
}
