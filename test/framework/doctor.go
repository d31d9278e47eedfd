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
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"doctor", "--cloud-provider=" + cloud, "--cloud-config=" + path}, args...)
	out, err := exec.CommandContext(t.Context(), bin, argv...).CombinedOutput()
	t.Logf("overcast doctor:\n%s", out)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("%s doctor: %v", bin, err)
	}
	return string(out), 0
}

// DoctorRow returns the row of check in doctor's table, with its fix line.
func DoctorRow(out, check string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, check+" ") {
			if i+1 < len(lines) && strings.Contains(lines[i+1], "fix: ") {
				return l + "\n" + lines[i+1]
			}
			return l
		}
	}
	return ""
}
