package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/cloud-provider/app"
	"k8s.io/component-base/configz"

	"github.com/overcast-ccm/overcast/internal/ccm"
	"github.com/overcast-ccm/overcast/internal/devenv"
)

// CCMOptions configure one overcast-ccm.
type CCMOptions struct {
	Cloud       string // --cloud-provider, default "local"
	CloudConfig string // contents of --cloud-config
	// Controllers, default cloud-node, cloud-node-lifecycle and service.
	Controllers []string
	ExtraArgs   []string
	// Env is added to a process's environment (e.g. HTTPS_PROXY for a peer
	// that cannot be given an endpoint).
	Env []string
}

func (e *Env) ccmArgs(t testing.TB, o CCMOptions) []string {
	if o.Cloud == "" {
		o.Cloud = "local"
	}
	if len(o.Controllers) == 0 {
		o.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "service"}
	}
	cfg := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(cfg, []byte(o.CloudConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--cloud-provider=" + o.Cloud,
		"--cloud-config=" + cfg,
		"--kubeconfig=" + e.CCMKubeconfig,
		"--cluster-name=overcast-e2e",
		"--controllers=" + strings.Join(o.Controllers, ","),
		"--node-monitor-period=1s",
		"--node-status-update-frequency=5s",
		"--configure-cloud-routes=false",
		fmt.Sprintf("--v=%d", devenv.LogVerbosity),
	}
	hasFlag := func(name string) bool {
		for _, a := range o.ExtraArgs {
			if strings.HasPrefix(a, name) {
				return true
			}
		}
		return false
	}
	if !hasFlag("--leader-elect") {
		args = append(args, "--leader-elect=false")
	}
	if !hasFlag("--secure-port") {
		args = append(args, "--secure-port=0")
	}
	return append(args, o.ExtraArgs...)
}

// InProcessCCM is overcast-ccm running inside the test binary.
type InProcessCCM struct {
	stop chan struct{}
	done chan error
	once sync.Once
}

// inProcessMu serialises in-process managers: the framework's /configz and flag
// state are process globals.
var inProcessMu sync.Mutex

// StartCCM runs overcast-ccm in-process until the test ends (or Stop).
func (e *Env) StartCCM(t testing.TB, o CCMOptions) *InProcessCCM {
	t.Helper()
	inProcessMu.Lock()
	// The manager's /configz is a process global: free it for this manager.
	configz.Delete(app.ConfigzName)
	c := &InProcessCCM{stop: make(chan struct{}), done: make(chan error, 1)}
	cmd, err := ccm.NewCommand(c.stop, os.Stderr)
	if err != nil {
		inProcessMu.Unlock()
		t.Fatal(err)
	}
	cmd.SetArgs(e.ccmArgs(t, o))
	go func() {
		err := cmd.Execute()
		c.done <- err
		inProcessMu.Unlock()
	}()
	t.Cleanup(c.Stop)
	return c
}

// Stop ends the manager and waits (bounded) for it to return.
func (c *InProcessCCM) Stop() {
	c.once.Do(func() {
		close(c.stop)
		select {
		case err := <-c.done:
			_ = err // the manager's own error was logged by it
		case <-time.After(30 * time.Second):
			panic("overcast-ccm did not stop within 30s")
		}
	})
}

// ProcessCCM is overcast-ccm running as a child process (for leader election,
// restarts and exit codes).
type ProcessCCM struct {
	Cmd  *exec.Cmd
	Log  string // path of its combined output
	done chan struct{}
	err  error
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// CCMBinary returns $OVERCAST_CCM_BINARY, else builds cmd/overcast-ccm once per run.
func (e *Env) CCMBinary() (string, error) {
	if p := os.Getenv("OVERCAST_CCM_BINARY"); p != "" {
		return p, nil
	}
	buildOnce.Do(func() {
		buildOnce.path = filepath.Join(e.Dir, "overcast-ccm")
		cmd := exec.CommandContext(context.Background(), "go", "build", "-o", buildOnce.path, "./cmd/overcast-ccm")
		cmd.Dir = e.RepoRoot
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build ./cmd/overcast-ccm: %w\n%s", err, out)
		}
	})
	return buildOnce.path, buildOnce.err
}

// StartCCMProcess starts overcast-ccm as a child process; it is stopped (SIGTERM,
// then SIGKILL) when the test ends. Its output is dumped if the test failed.
func (e *Env) StartCCMProcess(t testing.TB, name string, o CCMOptions) *ProcessCCM {
	t.Helper()
	bin, err := e.CCMBinary()
	if err != nil {
		t.Fatal(err)
	}
	return e.startProcess(t, bin, name, e.ccmArgs(t, o), o.Env...)
}

// StartBinary runs another CCM's binary (a peer's) as a process with the
// flags of o, until the test ends (or Stop).
func (e *Env) StartBinary(t testing.TB, bin, name string, o CCMOptions) *ProcessCCM {
	t.Helper()
	return e.startProcess(t, bin, name, e.ccmArgs(t, o), o.Env...)
}

func (e *Env) startProcess(t testing.TB, bin, name string, args []string, env ...string) *ProcessCCM {
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &ProcessCCM{Cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		devenv.KeepLog(name, cmd.Process.Pid, logPath)
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- output of %s (pid %d) ---\n%s", name, cmd.Process.Pid, tail(withoutFlags(p.Output()), 200))
		}
	})
	return p
}

// Stop sends SIGTERM to the process this test started, SIGKILL after 15s.
func (p *ProcessCCM) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}

// Kill ends the process at once (a crash, as far as the cluster can tell).
func (p *ProcessCCM) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// Exited returns whether the process has ended, and its exit code.
func (p *ProcessCCM) Exited() (bool, int) {
	select {
	case <-p.done:
		return true, p.Cmd.ProcessState.ExitCode()
	default:
		return false, 0
	}
}

// Wait waits up to d for the process to end and returns its exit code (-1 if it did not).
func (p *ProcessCCM) Wait(d time.Duration) int {
	select {
	case <-p.done:
		return p.Cmd.ProcessState.ExitCode()
	case <-time.After(d):
		return -1
	}
}

// Output is everything the process printed so far.
func (p *ProcessCCM) Output() string {
	b, _ := os.ReadFile(p.Log)
	return string(b)
}

// withoutFlags is a log without the FLAG lines every process starts with
// (the options are the test's own; they would hide what happened).
func withoutFlags(s string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return strings.Contains(l, "] FLAG: --") }), "\n")
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
