package e2e

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// alertRules writes the chart's alerts (its PrometheusRule's spec, rendered
// as release overcast-ccm in kube-system with every optional object on) as
// rules.yaml in a new directory, and says their names and descriptions.
func alertRules(t *testing.T) (dir string, alerts map[string]string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(env.RepoRoot, "hack/helm.sh")).Output()
	require.NoError(t, err)
	chart := filepath.Join(env.RepoRoot, "deploy/chart/overcast-ccm")
	rendered, err := exec.Command(strings.TrimSpace(string(out)), "template", "overcast-ccm", chart, "--namespace", "kube-system",
		"--kube-version", "1.37.1", "-f", filepath.Join(chart, "ci/monitoring-values.yaml"), "--show-only", "templates/prometheusrule.yaml").Output()
	require.NoError(t, err)
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(rendered, &rule))
	alerts = map[string]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = r.Annotations["description"]
		}
	}
	require.NotEmpty(t, alerts)
	var whole map[string]any
	require.NoError(t, yaml.Unmarshal(rendered, &whole))
	spec, err := yaml.Marshal(whole["spec"])
	require.NoError(t, err)
	dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), spec, 0o600))
	return dir, alerts
}

// promtool runs promtool test rules on a test file in dir.
func promtool(t *testing.T, dir, file string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(env.RepoRoot, "hack/prometheus.sh")).Output()
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(strings.TrimSpace(string(out)), "promtool"), "test", "rules", file)
	cmd.Dir = dir
	res, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool test rules:\n%s", res)
}

// Every alert of the chart fires on the series that should wake someone
// (testdata/alerts_test.yaml has a case for each) and stays silent beside
// them. A case says the summary it expects; the description, where the
// rule's has no template, is the rule's.
func TestAlertsFireOnTheirSeries(t *testing.T) {
	dir, alerts := alertRules(t)
	data, err := os.ReadFile("testdata/alerts_test.yaml")
	require.NoError(t, err)
	var file map[string]any
	require.NoError(t, yaml.Unmarshal(data, &file))
	var firing []string
	for _, tc := range file["tests"].([]any) {
		for _, a := range tc.(map[string]any)["alert_rule_test"].([]any) {
			name := a.(map[string]any)["alertname"].(string)
			exp, _ := a.(map[string]any)["exp_alerts"].([]any)
			if len(exp) > 0 && !slices.Contains(firing, name) {
				firing = append(firing, name)
			}
			for _, e := range exp {
				ann := e.(map[string]any)["exp_annotations"].(map[string]any)
				if _, ok := ann["description"]; !ok && !strings.Contains(alerts[name], "{{") {
					ann["description"] = alerts[name]
				}
			}
		}
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(alerts)), firing, "the chart's alerts, and those testdata/alerts_test.yaml sees fire")
	out, err := yaml.Marshal(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), out, 0o600))
	promtool(t, dir, "alerts_test.yaml")
}
