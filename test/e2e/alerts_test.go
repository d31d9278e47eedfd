package e2e

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
	"github.com/overcast-ccm/overcast/test/framework"
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

// A healthy run, watched as an operator would: a real overcast-ccm process
// on the OpenStack emulator (a Node, a load balancer built, the leader),
// scraped by a real Prometheus. Every query of the dashboard returns data,
// and the run's series, recorded and held for three hours, fire no alert.
func TestMonitoringOnAHealthyRun(t *testing.T) {
	port, tok := healthyCCM(t)
	prom := startPrometheus(t, port, tok)
	scrapes := scrape(t, port, tok, 8)
	t.Run("the alerts stay silent", func(t *testing.T) { alertsStaySilent(t, scrapes) })
	t.Run("every query of the dashboard returns data", func(t *testing.T) { dashboardReturnsData(t, prom) })
}

// alertsStaySilent: the scrapes' series, held for three hours, fire no
// alert at any time.
func alertsStaySilent(t *testing.T, scrapes []string) {
	dir, alerts := alertRules(t)
	rules, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	require.NoError(t, err)
	series := recordedSeries(t, scrapes, string(rules))
	recorded := fmt.Sprint(series)
	for _, name := range []string{"leader_election_master_status", "overcast_cloud_api_requests_total", "overcast_service_load_balancers",
		"overcast_service_load_balancer_unconverged_seconds", "overcast_node_deletions_held"} {
		require.Contains(t, recorded, name+"{", "a healthy run's series the alerts read")
	}
	var checks []any
	for _, name := range slices.Sorted(maps.Keys(alerts)) {
		for _, at := range []string{"30m", "90m", "3h"} {
			checks = append(checks, map[string]any{"alertname": name, "eval_time": at, "exp_alerts": []any{}})
		}
	}
	file := map[string]any{"rule_files": []string{"rules.yaml"}, "evaluation_interval": "1m",
		"tests": []any{map[string]any{"interval": "1m", "input_series": series, "alert_rule_test": checks}}}
	out, err := yaml.Marshal(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "healthy_test.yaml"), out, 0o600))
	promtool(t, dir, "healthy_test.yaml")
}

// healthyCCM is a CCM process on the OpenStack emulator whose Node is
// initialised and whose Service has its load balancer: its secure port, and
// a token that may read /metrics.
func healthyCCM(t *testing.T) (port int, token string) {
	t.Helper()
	// Healthy means this CCM's Service alone: another test's left behind
	// would be its problem too.
	require.NoError(t, devenv.Poll(waitShort, tick, func() error {
		list, err := env.Client.CoreV1().Services("").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var others []string
		for _, s := range list.Items {
			if s.Spec.Type == v1.ServiceTypeLoadBalancer {
				others = append(others, s.Namespace+"/"+s.Name)
			}
		}
		if len(others) > 0 {
			return fmt.Errorf("LoadBalancer Services other tests left: %v", others)
		}
		return nil
	}))
	e := coretest.Serve(t, emulator.New(emulator.Options{ProvisioningDelay: 300 * time.Millisecond,
		PrivateCIDR: "127.0.83.0/24", PublicCIDR: "127.2.83.0/24"}), nil)
	port = freePort(t)
	p := env.StartCCMProcess(t, "healthy", framework.CCMOptions{Cloud: "openstack", CloudConfig: e.CloudConf(),
		ExtraArgs: []string{"--leader-elect=true", "--leader-elect-retry-period=1s", "--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port), "--authentication-kubeconfig=" + env.CCMKubeconfig,
			"--authorization-kubeconfig=" + env.CCMKubeconfig}})
	_, ip := e.AddServer(emulator.ServerSpec{Name: "healthy-node"})
	env.NewKubelet(t, "healthy-node", ip)
	waitNodeInitialised(t, "healthy-node")
	ns := namespace(t)
	lbService(t, ns, "web", nil)
	waitIngressIP(t, ns, "web")
	if exited, code := p.Exited(); exited {
		t.Fatalf("overcast-ccm exited with %d", code)
	}
	return port, env.MetricsToken(t, ns)
}

// scrape is n scrapes of /metrics, a second apart.
func scrape(t *testing.T, port int, token string, n int) []string {
	t.Helper()
	var out []string
	for range n {
		code, body, err := devenv.GetSecurePort(t.Context(), port, "/metrics", token)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, body)
		out = append(out, body)
		time.Sleep(time.Second)
	}
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// recordedSeries are promtool's input series of the samples of scrapes whose
// metric the rules name, labelled with the job the chart's ServiceMonitor
// gives them, one value a minute and then the last held for three hours.
func recordedSeries(t *testing.T, scrapes []string, rules string) []any {
	t.Helper()
	values := map[string][]float64{}
	for _, body := range scrapes {
		p := expfmt.NewTextParser(model.UTF8Validation)
		families, err := p.TextToMetricFamilies(strings.NewReader(body))
		require.NoError(t, err)
		for name, f := range families {
			if !regexp.MustCompile(`\b` + name + `\b`).MatchString(rules) {
				continue
			}
			for _, m := range f.GetMetric() {
				key := seriesOf(name, m)
				values[key] = append(values[key], valueOf(m))
			}
		}
	}
	var out []any
	for _, key := range slices.Sorted(maps.Keys(values)) {
		vs := values[key]
		var b strings.Builder
		for _, v := range vs {
			fmt.Fprintf(&b, "%g ", v)
		}
		fmt.Fprintf(&b, "%g+0x180", vs[len(vs)-1])
		out = append(out, map[string]any{"series": key, "values": b.String()})
	}
	return out
}

// seriesOf is a sample's series in promtool's notation, with the job.
func seriesOf(name string, m *dto.Metric) string {
	labels := []string{`job="overcast-ccm-metrics"`}
	for _, l := range m.GetLabel() {
		labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return name + "{" + strings.Join(labels, ", ") + "}"
}

func valueOf(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}
