package quickstart

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/overcast-ccm/overcast/internal/admission"
	"github.com/overcast-ccm/overcast/internal/kit"
)

const chart = "deploy/chart/overcast-ccm"

func TestChartLintsWithEveryExampleValues(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, chart, "ci", "*-values.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		run(t, env.RepoRoot, fmt.Sprintf("helm lint --strict %s -f %s", chart, f))
	}
}

// chartCloud is a cloud's file of the chart, clouds/<cloud>.yaml.
type chartCloud struct {
	ConfigKey   string   `json:"configKey"`
	HostNetwork bool     `json:"hostNetwork"`
	Controllers []string `json:"controllers"`
	// ManifestHeader heads deploy/<cloud>/deployment.yaml (hack/gen-manifests.sh).
	ManifestHeader string `json:"manifestHeader"`
	// ManifestSecret is the Secret deploy/<cloud>/deployment.yaml mounts.
	ManifestSecret string `json:"manifestSecret"`
}

// For each cloud of the chart (clouds/*.yaml), helm template with its example
// values (ci/<cloud>-values.yaml, which every cloud must have), applied
// server-side to the real apiserver (created, not dry-run): the objects are
// valid as the API server validates them, in a namespace of their own.
func TestChartOfEveryCloudAppliesToTheAPIServer(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, chart, "clouds", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		cloud := strings.TrimSuffix(filepath.Base(file), ".yaml")
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var want chartCloud
		require.NoError(t, yaml.UnmarshalStrict(data, &want), file)
		t.Run(cloud, func(t *testing.T) {
			ns := "chart-" + cloud
			_, err := env.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
			release := "ccm-" + cloud
			out, err := shell(t, env.RepoRoot, fmt.Sprintf("helm template %s %s --namespace %s --kube-version 1.37.1 -f %s/ci/%s-values.yaml",
				release, chart, ns, chart, cloud))
			require.NoError(t, err, out)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "chart.yaml"), []byte(out), 0o600))
			require.NoError(t, env.ApplyDir(t.Context(), dir))
			t.Cleanup(func() {
				_, _ = shellCtx(context.Background(), t, dir, "kubectl delete --ignore-not-found -f chart.yaml")
			})

			fullname := release + "-overcast-ccm"
			d, err := env.Client.AppsV1().Deployments(ns).Get(t.Context(), fullname, metav1.GetOptions{})
			require.NoError(t, err)
			spec := d.Spec.Template.Spec
			c := spec.Containers[0]
			assert.Equal(t, int32(2), *d.Spec.Replicas)
			assert.Equal(t, "system-cluster-critical", spec.PriorityClassName)
			assert.Equal(t, want.HostNetwork, spec.HostNetwork, "hostNetwork only where the cloud needs it")
			if len(want.Controllers) > 0 {
				assert.Contains(t, c.Args, "--controllers="+strings.Join(want.Controllers, ","))
			}
			assert.Contains(t, c.Args, "--cloud-provider="+cloud)
			assert.Contains(t, c.Args, "--leader-elect=true")
			assert.Contains(t, c.Args, "--leader-elect-resource-namespace="+ns)
			assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
			assert.Equal(t, []v1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
			require.NotNil(t, c.Resources.Limits.Memory())
			assert.Equal(t, "512Mi", c.Resources.Limits.Memory().String())
			assert.Contains(t, c.Env, v1.EnvVar{Name: "GOMEMLIMIT", Value: "460MiB"}, "GOMEMLIMIT at 90%% of the limit")
			tolerated := map[string]bool{}
			for _, tol := range spec.Tolerations {
				tolerated[tol.Key] = true
			}
			for _, k := range []string{"node.cloudprovider.kubernetes.io/uninitialized", "node-role.kubernetes.io/control-plane", "node.kubernetes.io/not-ready"} {
				assert.True(t, tolerated[k], "tolerates %s", k)
			}
			_, err = env.Client.PolicyV1().PodDisruptionBudgets(ns).Get(t.Context(), fullname, metav1.GetOptions{})
			require.NoError(t, err)
			s, err := env.Client.CoreV1().Secrets(ns).Get(t.Context(), fullname+"-cloud-config", metav1.GetOptions{})
			require.NoError(t, err)
			key := want.ConfigKey
			require.NotEmpty(t, key, "%s: configKey", file)
			assert.NotEmpty(t, s.Data[key], "the inline config in the Secret under %s", key)
			assert.Contains(t, c.Args, "--cloud-config=/etc/overcast/"+key)
			_, err = env.Client.RbacV1().RoleBindings("kube-system").Get(t.Context(), fullname+":extension-apiserver-authentication-reader", metav1.GetOptions{})
			require.NoError(t, err, "delegated authentication reads its CA in kube-system")
			_, err = env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(t.Context(), admission.Name, metav1.GetOptions{})
			require.NoError(t, err, "the admission policy is on by default")
		})
	}
}

func TestChartWithoutACloudConfigSaysWhatIsMissing(t *testing.T) {
	out, err := shell(t, env.RepoRoot, "helm template overcast-ccm "+chart+" --kube-version 1.37.1 --set cloud=ostack")
	require.Error(t, err)
	clouds := kit.Names() // every cloud of the registry is one of the chart's
	slices.Sort(clouds)
	assert.Contains(t, out, `cloud: "ostack" is not a cloud of this chart (`+strings.Join(clouds, ", ")+`)`)
	assert.Contains(t, out, "cloudConfig: set existingSecret")
	out, err = shell(t, env.RepoRoot, "helm template overcast-ccm "+chart+" --kube-version 1.37.1 --set-string cloudConfig.inline=x --set resources.limits.memory=0.5G")
	require.Error(t, err)
	assert.Contains(t, out, `resources.limits.memory "0.5G": write a whole number of Mi or Gi`)
}

// admissionPolicy.enabled=false leaves the policy out.
func TestChartAdmissionPolicyCanBeTurnedOff(t *testing.T) {
	out, err := shell(t, env.RepoRoot, "helm template overcast-ccm "+chart+" --kube-version 1.37.1 --set-string cloudConfig.inline=x --set admissionPolicy.enabled=false")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "kind: ValidatingAdmissionPolicy")
}

// The optional monitoring objects render, and their alerts name metrics with the
// ServiceMonitor's job.
func TestChartMonitoringObjects(t *testing.T) {
	out, err := shell(t, env.RepoRoot, "helm template overcast-ccm "+chart+" --kube-version 1.37.1 --namespace kube-system -f "+chart+"/ci/monitoring-values.yaml")
	require.NoError(t, err, out)
	kinds := map[string]map[string]any{}
	var dashboard map[string]any
	for _, doc := range strings.Split(out, "\n---\n") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		if k, ok := obj["kind"].(string); ok {
			kinds[k] = obj
		}
		if strings.HasSuffix(fmt.Sprint(obj["metadata"].(map[string]any)["name"]), "-dashboard") {
			dashboard = obj
		}
	}
	for _, k := range []string{"ServiceMonitor", "PrometheusRule", "Service", "Deployment"} {
		assert.Contains(t, kinds, k)
	}
	rules, err := yaml.Marshal(kinds["PrometheusRule"])
	require.NoError(t, err)
	assert.Contains(t, string(rules), `job="overcast-ccm-metrics"`)
	// The dashboard, for Grafana's sidecar: the generated JSON whole.
	require.NotNil(t, dashboard, "the dashboard's ConfigMap")
	assert.Equal(t, "1", dashboard["metadata"].(map[string]any)["labels"].(map[string]any)["grafana_dashboard"])
	want, err := os.ReadFile(filepath.Join(env.RepoRoot, chart, "dashboards/overcast-ccm.json"))
	require.NoError(t, err)
	assert.JSONEq(t, string(want), dashboard["data"].(map[string]any)["overcast-ccm.json"].(string))
}
