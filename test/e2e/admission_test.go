package e2e

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/overcast-ccm/overcast/internal/annotation"
)

// Every cloud's admission policy, as the chart ships it, on the real
// kube-apiserver: every invalid sample of every checked annotation refused
// in its scope with the Event's message, every valid one accepted, and out
// of the check's scope, in a Service of another class or type, unchanged
// on an update, or where the policy is not bound, nothing refused.
func TestAdmissionPolicyOfEveryCloud(t *testing.T) {
	for _, cloud := range annotation.CheckedClouds() {
		t.Run(cloud, func(t *testing.T) {
			checks := annotation.ChecksOf(cloud)
			ns, unbound := namespace(t), namespace(t)
			before := createService(t, ns, "before", anInvalid(checks)) // ratcheted: made before the policy
			bindPolicy(t, cloud, ns)
			waitRefused(t, ns, anInvalid(checks))
			for _, n := range checks.Names() {
				if c := checks[n]; c.AtApply() {
					admitsAsChecked(t, ns, n, c)
				}
			}
			bad := anInvalid(checks)
			require.NoError(t, dryCreate(ns, admissionService("other-class", bad, func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/other") })))
			require.NoError(t, dryCreate(ns, admissionService("cluster-ip", bad, func(s *v1.Service) { s.Spec.Type, s.Spec.AllocateLoadBalancerNodePorts = v1.ServiceTypeClusterIP, nil })))
			require.NoError(t, dryCreate(unbound, admissionService("unbound", bad)), "no binding in the namespace: nothing refused")
			before.Labels = map[string]string{"touched": "yes"}
			_, err := env.Client.CoreV1().Services(ns).Update(t.Context(), before, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			require.NoError(t, err, "an update that leaves an invalid value as it was")
		})
	}
}

// admitsAsChecked: n's samples are admitted as its check says.
func admitsAsChecked(t *testing.T, ns string, n annotation.Name, c annotation.Check) {
	t.Helper()
	in := func(ctx map[string]string, v string) map[string]string {
		a := maps.Clone(ctx)
		if a == nil {
			a = map[string]string{}
		}
		a[string(n)] = v
		return a
	}
	for _, v := range c.Invalid {
		err := dryCreate(ns, admissionService("invalid", in(c.Scope.Set, v)))
		want := (&annotation.InvalidError{Name: n, Value: v, Accepted: c.Accepted}).Error()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%q: want refused with %q, got %v", n, v, want, err)
		}
		if c.Scope.Out != nil {
			if err := dryCreate(ns, admissionService("out-of-scope", in(c.Scope.Out, v))); err != nil {
				t.Errorf("%s=%q out of its scope (%v): refused: %v", n, v, c.Scope.Out, err)
			}
		}
	}
	for _, v := range append(append([]string{}, c.Valid...), c.EventOnly...) {
		if err := dryCreate(ns, admissionService("valid", in(c.Scope.Set, v))); err != nil {
			t.Errorf("%s=%q: refused: %v", n, v, err)
		}
	}
}

// anInvalid is annotations with the first invalid sample of the first
// unscoped check.
func anInvalid(checks annotation.Checks) map[string]string {
	for _, n := range checks.Names() {
		if c := checks[n]; c.AtApply() && c.Scope.CEL == "" {
			return map[string]string{string(n): c.Invalid[0]}
		}
	}
	panic("no unscoped check")
}

// bindPolicy creates the cloud's policy as the chart ships it, named for
// the cloud, and its binding, for ns alone (the suite's other tests make
// invalid Services on purpose).
func bindPolicy(t *testing.T, cloud, ns string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "deploy/chart/overcast-ccm/admission", cloud+".yaml"))
	require.NoError(t, err)
	docs := bytes.Split(data, []byte("\n---\n"))
	require.Len(t, docs, 2)
	var policy admissionv1.ValidatingAdmissionPolicy
	var binding admissionv1.ValidatingAdmissionPolicyBinding
	require.NoError(t, yaml.UnmarshalStrict(docs[0], &policy))
	require.NoError(t, yaml.UnmarshalStrict(docs[1], &binding))
	policy.Name += "-" + ns
	binding.Name, binding.Spec.PolicyName = policy.Name, policy.Name
	binding.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}
	api := env.Client.AdmissionregistrationV1()
	_, err = api.ValidatingAdmissionPolicies().Create(t.Context(), &policy, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = api.ValidatingAdmissionPolicies().Delete(t.Context(), policy.Name, metav1.DeleteOptions{}) })
	_, err = api.ValidatingAdmissionPolicyBindings().Create(t.Context(), &binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(t.Context(), binding.Name, metav1.DeleteOptions{})
	})
}

// waitRefused waits until the policy is in force (the kube-apiserver loads
// it from a watch).
func waitRefused(t *testing.T, ns string, annotations map[string]string) {
	t.Helper()
	require.Eventually(t, func() bool { return dryCreate(ns, admissionService("probe", annotations)) != nil },
		waitShort, tick, "the policy is never in force")
	time.Sleep(time.Second) // the binding's informer too, on every path
}

func admissionService(name string, annotations map[string]string, mutate ...func(*v1.Service)) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Annotations: annotations},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: ptr.To(false),
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}}}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// dryCreate creates svc in ns as a dry run: admitted or refused, nothing
// kept (no cluster IP used up).
func dryCreate(ns string, svc *v1.Service) error {
	_, err := env.Client.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

func createService(t *testing.T, ns, name string, annotations map[string]string) *v1.Service {
	t.Helper()
	s, err := env.Client.CoreV1().Services(ns).Create(t.Context(), admissionService(name, annotations), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { deleteService(t, ns, s.Name) }) // the suite's next CCM would see it
	return s
}
