// Package devenv runs a development cluster: etcd and kube-apiserver built
// from source by hack/test-binaries.sh, the RBAC shipped in deploy/, and
// simulated kubelets that register Nodes, heartbeat and serve NodePorts the way
// kube-proxy would. `overcast dev`, the bench and the tests (through
// test/framework, which adds what only a test needs) all run on it. No fake
// clientset anywhere.
package devenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TB is what the harness needs of a test: testing.TB has it, and so can a
// program (overcast dev and the bench do without the testing package).
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Error(args ...any)
	Fatal(args ...any)
	Cleanup(func())
}

// CCMUser is the identity overcast-ccm runs as in tests: the ServiceAccount that
// deploy/rbac.yaml binds, so a missing RBAC rule fails the tests.
const CCMUser = "system:serviceaccount:kube-system:overcast-ccm"

// Env is a running control plane, shared by the tests of one package.
type Env struct {
	RepoRoot        string
	Binaries        string // the directory of kube-apiserver, etcd, kubectl
	Dir             string // scratch files of this run
	Admin           *rest.Config
	Client          kubernetes.Interface // admin
	AdminKubeconfig string
	CCMKubeconfig   string
	// HeartbeatInterval is how often simulated kubelets renew NodeReady; 0 means
	// the package default. Benchmarks with thousands of Nodes set it to minutes,
	// as a real kubelet posts its status only every few minutes.
	HeartbeatInterval time.Duration

	testEnv *envtest.Environment
}

// RepoRoot finds the repository root (the directory with go.mod) above the working
// directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "hack", "test-binaries.sh")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found above the working directory")
		}
		dir = parent
	}
}

// BinaryDir returns the directory with kube-apiserver, etcd and kubectl:
// $OVERCAST_TEST_BINARIES if set, else whatever hack/test-binaries.sh builds (cached).
func BinaryDir(root string) (string, error) {
	if d := os.Getenv("OVERCAST_TEST_BINARIES"); d != "" {
		return d, nil
	}
	cmd := exec.CommandContext(context.Background(), "bash", filepath.Join(root, "hack", "test-binaries.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/test-binaries.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Start starts etcd and kube-apiserver, applies deploy/ (server-side) and writes an
// admin and a CCM kubeconfig. Call it once per package, from TestMain.
func Start() (*Env, error) { return StartWith(StartOptions{}) }

// StartOptions change what Start sets up.
type StartOptions struct {
	// Bare leaves deploy/ unapplied: the quick-start tests install it themselves,
	// as an operator would.
	Bare bool
	// AuditCCMTo, when set, is a file the apiserver writes one audit line to
	// for each request of the CCM's user (its metadata: the client, verb,
	// resource): the bench counts the requests per Node from it.
	AuditCCMTo string
}

// StartWith is Start with options.
func StartWith(o StartOptions) (*Env, error) {
	if err := applyLogging(); err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	bin, err := BinaryDir(root)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "overcast-e2e-")
	if err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	// The apiserver adds the service-account token controller's needs; nothing else.
	te.ControlPlane.GetAPIServer().Configure().
		Set("service-cluster-ip-range", "10.96.0.0/16").
		Set("endpoint-reconciler-type", "none")
	if err := auditTo(te, dir, o.AuditCCMTo); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cfg, err := te.Start()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the control plane from %s: %w", bin, err)
	}
	e := &Env{RepoRoot: root, Dir: dir, Admin: cfg, Binaries: bin, testEnv: te}
	if err := e.setup(!o.Bare); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) setup(applyDeploy bool) error {
	var err error
	e.Admin.QPS, e.Admin.Burst = 200, 400
	if e.Client, err = kubernetes.NewForConfig(e.Admin); err != nil {
		return err
	}
	admin, err := e.testEnv.AddUser(envtest.User{Name: "overcast-e2e-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	if e.AdminKubeconfig, err = e.writeKubeconfig("admin.kubeconfig", admin); err != nil {
		return err
	}
	user, err := e.testEnv.AddUser(envtest.User{Name: CCMUser, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}, nil)
	if err != nil {
		return err
	}
	if e.CCMKubeconfig, err = e.writeKubeconfig("ccm.kubeconfig", user); err != nil {
		return err
	}
	if !applyDeploy {
		return nil
	}
	return e.ApplyDir(context.Background(), filepath.Join(e.RepoRoot, "deploy"))
}

// ApplyCloud applies deploy/<cloud>/ (its Deployment and example config).
func (e *Env) ApplyCloud(ctx context.Context, cloud string) error {
	return e.ApplyDir(ctx, filepath.Join(e.RepoRoot, "deploy", cloud))
}

func (e *Env) writeKubeconfig(name string, u *envtest.AuthenticatedUser) (string, error) {
	data, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	p := filepath.Join(e.Dir, name)
	return p, os.WriteFile(p, data, 0o600)
}

// Stop stops the control plane and removes the scratch directory.
func (e *Env) Stop() {
	if e.testEnv != nil {
		_ = e.testEnv.Stop()
	}
	_ = os.RemoveAll(e.Dir)
}

// ApplyDir applies every YAML file of dir (not of its subdirectories) server-side,
// as kubectl apply --server-side would, so manifests are proven valid against the
// real API. Start applies deploy/ (RBAC); each suite applies its cloud's directory.
func (e *Env) ApplyDir(ctx context.Context, dir string) error {
	dc, err := discovery.NewDiscoveryClientForConfig(e.Admin)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj unstructured.Unstructured
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("%s: %w", path, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", path, gvk, err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if ns := obj.GetNamespace(); ns != "" {
				ri = dyn.Resource(m.Resource).Namespace(ns)
			}
			if _, err := ri.Apply(ctx, obj.GetName(), &obj, metav1.ApplyOptions{FieldManager: "overcast-e2e", Force: true}); err != nil {
				return fmt.Errorf("applying %s %s/%s from %s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), path, err)
			}
		}
	})
}
