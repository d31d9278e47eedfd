package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/dashboard"
	"github.com/overcast-ccm/overcast/internal/devenv"
)

// startPrometheus runs Debian's Prometheus (hack/prometheus.sh) scraping the
// CCM's /metrics every second as the chart's ServiceMonitor would (its job
// name, a bearer token), and says where it answers.
func startPrometheus(t *testing.T, ccmPort int, token string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(env.RepoRoot, "hack/prometheus.sh")).Output()
	require.NoError(t, err)
	dir := t.TempDir()
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
- job_name: overcast-ccm-metrics
  scheme: https
  tls_config: {insecure_skip_verify: true}
  authorization: {credentials: %q}
  static_configs: [{targets: ["127.0.0.1:%d"]}]
`, token, ccmPort)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600))
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(filepath.Join(strings.TrimSpace(string(out)), "prometheus"), "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	logs, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the process this test started, by its PID
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("prometheus:\n%s", b)
		}
	})
	require.NoError(t, devenv.Poll(waitShort, tick, func() error {
		_, err := promQuery(addr, "up")
		return err
	}))
	return addr
}

// promQuery is an instant query's result.
func promQuery(addr, expr string) ([]any, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answer struct {
		Status, Error string
		Data          struct{ Result []any }
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, err
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("%s: %s", expr, answer.Error)
	}
	return answer.Data.Result, nil
}

// dashboardReturnsData: every query of the dashboard, as Grafana would send
// it for this job, returns at least one series.
func dashboardReturnsData(t *testing.T, prom string) {
	for _, q := range dashboard.Queries() {
		expr := dashboard.Expand(q.Expr, "overcast-ccm-metrics", "10s")
		var result []any
		err := devenv.Poll(waitShort, time.Second, func() error {
			var err error
			if result, err = promQuery(prom, expr); err == nil && len(result) == 0 {
				err = fmt.Errorf("no data")
			}
			return err
		})
		require.NoError(t, err, "%s", expr)
	}
}
