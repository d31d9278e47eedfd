package quickstart

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/test/framework"
)

// imageConfig is the part of an OCI image config a runtime uses to start it.
type imageConfig struct {
	Config struct {
		User       string   `json:"User"`
		Entrypoint []string `json:"Entrypoint"`
		Cmd        []string `json:"Cmd"`
		Env        []string `json:"Env"`
		WorkingDir string   `json:"WorkingDir"`
	} `json:"config"`
}

// pod runs the first container of a Deployment as the kubelet and a container
// runtime would: the image's root file system (a copy per pod), the volumes the
// pod spec mounts written at their mount paths (Secrets from the apiserver, the
// ServiceAccount's token from TokenRequest), the image's entrypoint with the
// container's args, the image's env then the container's, the user of the
// security context, and in-cluster API access through KUBERNETES_SERVICE_*.
// It shares the host's network, so the apiserver and the emulator on loopback
// are reachable as a pod reaches them.
type pod struct {
	t       *testing.T
	root    string
	environ []string
	uid     uint32
	gid     uint32
	cmd     *exec.Cmd
	out     *syncBuffer
	exited  chan struct{}
	port    int // the container's first port (the secure port)
}

func startPod(t *testing.T, env *framework.Env, rootfs, configPath, namespace, deployment string) *pod {
	t.Helper()
	d, err := env.Client.AppsV1().Deployments(namespace).Get(t.Context(), deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the quick start made no Deployment %s/%s: %v", namespace, deployment, err)
	}
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	ic := readImageConfig(t, configPath)
	root := podRoot(t, rootfs, c.SecurityContext)
	mountVolumes(t, env, root, namespace, spec.Volumes, c.VolumeMounts)
	mountServiceAccountToken(t, env, root, namespace, spec.ServiceAccountName)

	// The process.
	environ := podEnviron(t, env, ic, c, deployment)
	argv := append([]string{}, ic.Config.Entrypoint...)
	if len(c.Command) > 0 {
		argv = append([]string{}, c.Command...)
	}
	argv = append(argv, c.Args...)
	uid, gid := runAs(t, ic.Config.User, spec.SecurityContext, c.SecurityContext)

	p := &pod{t: t, root: root, environ: environ, uid: uid, gid: gid, out: &syncBuffer{}, exited: make(chan struct{})}
	if len(c.Ports) > 0 {
		p.port = int(c.Ports[0].ContainerPort)
	}
	p.cmd = exec.CommandContext(context.Background(), argv[0], argv[1:]...) // stopped by SIGTERM in stop()
	p.cmd.Env = environ
	p.cmd.Dir = "/"
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     root,
		Credential: &syscall.Credential{Uid: uid, Gid: gid},
		Setpgid:    true,
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %v in the image's root file system: %v", argv, err)
	}
	t.Logf("pod of %s/%s: pid %d, uid %d, %v", namespace, deployment, p.cmd.Process.Pid, uid, argv)
	go func() {
		_ = p.cmd.Wait() // a signalled process exits non-zero
		close(p.exited)
	}()
	t.Cleanup(p.stop)
	return p
}

// readImageConfig reads the image's config at path.
func readImageConfig(t *testing.T, path string) imageConfig {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ic imageConfig
	if err := json.Unmarshal(raw, &ic); err != nil {
		t.Fatal(err)
	}
	return ic
}

// podRoot makes the pod's root file system, a copy of the image's rootfs,
// read-only if the container's security context says so.
func podRoot(t *testing.T, rootfs string, sc *v1.SecurityContext) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := linkTree(rootfs, root); err != nil {
		t.Fatal(err)
	}
	if sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		// Nothing of the image is writable for the container's user (root still
		// could: a limit of this stand-in for a read-only mount).
		if err := readOnlyDirs(root); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// mountVolumes writes the volumes the container mounts under root, as the
// kubelet writes them (Secret volumes only).
func mountVolumes(t *testing.T, env *framework.Env, root, namespace string, podVolumes []v1.Volume, mounts []v1.VolumeMount) {
	t.Helper()
	volumes := map[string]v1.Volume{}
	for _, v := range podVolumes {
		volumes[v.Name] = v
	}
	for _, m := range mounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Fatalf("volumeMount %s names no volume of the pod", m.Name)
		}
		dir := filepath.Join(root, m.MountPath)
		switch {
		case v.Secret != nil:
			s, err := env.Client.CoreV1().Secrets(namespace).Get(t.Context(), v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("volume %s: Secret %s/%s: %v (the pod would not start)", m.Name, namespace, v.Secret.SecretName, err)
			}
			files := map[string][]byte{}
			if len(v.Secret.Items) > 0 {
				for _, it := range v.Secret.Items {
					files[it.Path] = s.Data[it.Key]
				}
			} else {
				for k, b := range s.Data {
					files[k] = b
				}
			}
			writeVolume(t, dir, files)
		default:
			t.Fatalf("volume %s: only Secret volumes are supported by this test's kubelet", m.Name)
		}
	}
}

// mountServiceAccountToken writes the ServiceAccount sa's token (from a
// TokenRequest), the apiserver's CA and the namespace under root, where the
// kubelet mounts them.
func mountServiceAccountToken(t *testing.T, env *framework.Env, root, namespace, sa string) {
	t.Helper()
	tok, err := env.Client.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), sa, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for ServiceAccount %s/%s: %v", namespace, sa, err)
	}
	writeVolume(t, filepath.Join(root, "/var/run/secrets/kubernetes.io/serviceaccount"), map[string][]byte{
		"token":     []byte(tok.Status.Token),
		"ca.crt":    env.Admin.CAData,
		"namespace": []byte(namespace),
	})
}

// podEnviron is the container's environment: the image's env, the
// in-cluster API access (KUBERNETES_SERVICE_*) and the hostname, then the
// container's env.
func podEnviron(t *testing.T, env *framework.Env, ic imageConfig, c v1.Container, deployment string) []string {
	t.Helper()
	apiserver, err := url.Parse(env.Admin.Host)
	if err != nil {
		t.Fatal(err)
	}
	environ := append([]string{}, ic.Config.Env...)
	environ = append(environ,
		"KUBERNETES_SERVICE_HOST="+apiserver.Hostname(),
		"KUBERNETES_SERVICE_PORT="+apiserver.Port(),
		"HOSTNAME="+deployment+"-quickstart",
	)
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Fatalf("env %s: valueFrom is not supported by this test's kubelet", e.Name)
		}
		environ = append(environ, e.Name+"="+e.Value)
	}
	return environ
}

// runAs resolves the user as the runtime does: the container's runAsUser, else
// the pod's, else the image's USER (numeric here: runAsNonRoot needs that).
func runAs(t *testing.T, imageUser string, psc *v1.PodSecurityContext, csc *v1.SecurityContext) (uint32, uint32) {
	t.Helper()
	u, g, _ := strings.Cut(imageUser, ":")
	uid, err := strconv.ParseUint(u, 10, 32)
	if err != nil {
		t.Fatalf("image USER %q is not numeric", imageUser)
	}
	gid := uid
	if g != "" {
		if gid, err = strconv.ParseUint(g, 10, 32); err != nil {
			t.Fatalf("image USER %q: group is not numeric", imageUser)
		}
	}
	nonRoot := false
	if psc != nil {
		if psc.RunAsUser != nil {
			uid = uint64(*psc.RunAsUser)
		}
		if psc.RunAsGroup != nil {
			gid = uint64(*psc.RunAsGroup)
		}
		if psc.RunAsNonRoot != nil {
			nonRoot = *psc.RunAsNonRoot
		}
	}
	if csc != nil {
		if csc.RunAsUser != nil {
			uid = uint64(*csc.RunAsUser)
		}
		if csc.RunAsGroup != nil {
			gid = uint64(*csc.RunAsGroup)
		}
		if csc.RunAsNonRoot != nil {
			nonRoot = *csc.RunAsNonRoot
		}
	}
	if nonRoot && uid == 0 {
		t.Fatal("runAsNonRoot with user 0: the kubelet would refuse to start this container")
	}
	return uint32(uid), uint32(gid)
}

// exec runs a command in the pod, as kubectl exec does: same root file system,
// user and environment. It returns the command's output and exit code.
func (p *pod) exec(argv ...string) (string, int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = p.environ
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: p.root, Credential: &syscall.Credential{Uid: p.uid, Gid: p.gid}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		p.t.Fatalf("exec %v: %v", argv, err)
	}
	return string(out), 0
}

// alive fails if the process has exited.
func (p *pod) alive() error {
	select {
	case <-p.exited:
		return devenv.Permanent(fmt.Errorf("overcast-ccm exited: %v\n%s", p.cmd.ProcessState, tailLines(p.out.String(), 40)))
	default:
		return nil
	}
}

// get requests the container's secure port, as a probe or Prometheus would.
func (p *pod) get(path, token string) (int, string, error) {
	return devenv.GetSecurePort(p.t.Context(), p.port, path, token)
}

func (p *pod) stop() {
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	}
	if p.t.Failed() {
		p.t.Logf("overcast-ccm output (last 80 lines):\n%s", tailLines(p.out.String(), 80))
	}
}

// writeVolume writes a volume's files as the kubelet does: root-owned, mode 0644
// (a Secret volume's defaultMode), in a directory the container can read.
func writeVolume(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// linkTree copies the directory tree of src to dst, hard-linking files (the pod
// never writes them: its root file system is read-only), keeping modes and owners.
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, _ := info.Sys().(*syscall.Stat_t)
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(target, info.Mode()&(fs.ModePerm|fs.ModeSticky)); err != nil {
				return err
			}
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		default:
			if err := os.Link(p, target); err != nil {
				// Another file system: copy.
				if err := copyFile(p, target, info.Mode().Perm()); err != nil {
					return err
				}
			}
		}
		if st != nil {
			return os.Lchown(target, int(st.Uid), int(st.Gid))
		}
		return nil
	})
}

// readOnlyDirs makes every directory of root (a copy: its files are shared hard
// links and stay untouched) root-owned and 0755.
func readOnlyDirs(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if err := os.Lchown(p, 0, 0); err != nil {
			return err
		}
		return os.Chmod(p, 0o755)
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func ptr[T any](v T) *T { return &v }

var errNotYet = errors.New("not yet")
