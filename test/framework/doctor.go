package framework

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RunDoctor runs `<bin> doctor --cloud-provider=<cloud> --cloud-config=<a file
// holding conf> args...` and returns its output and exit status.
func RunDoctor(t testing.TB, bin, cloud, conf string, args ...string) (string, int) {
	t.Helper()
	return RunCLI(t, bin, "doctor", cloud, conf, args...)
}

// RunCLI runs `<bin> <command> --cloud-provider=<cloud> --cloud-config=<a
// file holding conf> args...` and returns its output and exit status.
func RunCLI(t testing.TB, bin, command, cloud, conf string, args ...string) (string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{command, "--cloud-provider=" + cloud, "--cloud-config=" + path}, args...)
	out, err := exec.CommandContext(t.Context(), bin, argv...).CombinedOutput()
	t.Logf("overcast %s:\n%s", command, out)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("%s %s: %v", bin, command, err)
	}
	return string(out), 0
}

// DoctorRow returns the row of check in doctor's table: its line and the
// indented lines under it (further lines of the detail, the fix).
func DoctorRow(out, check string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, check+" ") {
			continue
		}
		end := i + 1
		for end < len(lines) && strings.HasPrefix(lines[end], " ") {
			end++
		}
		return strings.Join(lines[i:end], "\n")
	}
	return ""
}

// RunClusterCLI runs `overcast <command>` (the binary built beside the
// CCM's) on the cloud's config against e's cluster, as an operator would
// from a workstation: the admin's kubeconfig, the suites' cluster name. The
// test is skipped when the binary was not built.
func (e *Env) RunClusterCLI(t *testing.T, command, cloud, conf string, args ...string) (string, int) {
	t.Helper()
	ccm, err := e.CCMBinary()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(ccm), "overcast")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s: run `make test-e2e`, which builds it", bin)
	}
	return RunCLI(t, bin, command, cloud, conf,
		append([]string{"--kubeconfig=" + e.AdminKubeconfig, "--cluster-name=overcast-e2e", "--timeout=2m"}, args...)...)
}
