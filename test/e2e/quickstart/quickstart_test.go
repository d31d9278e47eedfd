// Package quickstart runs the README's install instructions as written against a
// real kube-apiserver: the commands of each marked block (kubectl, helm), then the
// installed Deployment's container started from the image's root file system the
// way the kubelet would start it (see pod.go), against the OpenStack emulator or
// the local cloud. A wrong path, flag, permission or value in the manifests or
// the chart fails here.
package quickstart

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
	"github.com/overcast-ccm/overcast/test/framework"
)

var env *framework.Env

func TestMain(m *testing.M) {
	var err error
	// Bare: the README's commands install deploy/ or the chart themselves.
	env, err = framework.StartWith(devenv.StartOptions{Bare: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "quickstart: cannot start the control plane: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

// The image the README's IMAGE stands for; never pulled here.
const testImage = "registry.example.org/overcast-ccm:quickstart"

// image returns the unpacked root file system of the image and its config,
// which make test-e2e prepares from make image's output.
func image(t *testing.T) (rootfs, config string) {
	t.Helper()
	rootfs = os.Getenv("OVERCAST_IMAGE_ROOTFS")
	if rootfs == "" {
		t.Skip("OVERCAST_IMAGE_ROOTFS is not set: run `make test-e2e`, which builds and unpacks the image")
	}
	if os.Geteuid() != 0 {
		t.Skip("runs the container as the kubelet would (chroot, its user): needs root")
	}
	return rootfs, rootfs + ".config.json"
}

// readmeBlock returns the commands of the README's code block marked
// <!-- quickstart: name -->.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(env.RepoRoot, "README.md"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	marker := "<!-- quickstart: " + name + " -->"
	state := 0 // 0 before the marker, 1 before the fence, 2 inside
	var block strings.Builder
	for sc.Scan() {
		l := sc.Text()
		switch {
		case state == 0 && strings.TrimSpace(l) == marker:
			state = 1
		case state == 1 && strings.HasPrefix(l, "```"):
			state = 2
		case state == 2 && strings.HasPrefix(l, "```"):
			return block.String()
		case state == 2:
			block.WriteString(l + "\n")
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("README.md has no code block marked %s", marker)
	return ""
}

// run runs shell commands in dir as an operator would: kubectl and helm on PATH,
// KUBECONFIG of the cluster's admin, IMAGE set.
func run(t *testing.T, dir, commands string) {
	t.Helper()
	out, err := shell(t, dir, commands)
	require.NoError(t, err, "commands:\n%s\noutput:\n%s", commands, out)
	t.Logf("ran:\n%s%s", commands, out)
}

func shell(t *testing.T, dir, commands string) (string, error) {
	return shellCtx(t.Context(), t, dir, commands)
}

// shellCtx is shell with a context of its own (cleanups run after the test's
// context has ended).
func shellCtx(ctx context.Context, t *testing.T, dir, commands string) (string, error) {
	helm := os.Getenv("OVERCAST_HELM")
	if helm == "" {
		t.Skip("OVERCAST_HELM is not set: run `make test-e2e` (it builds helm with hack/helm.sh)")
	}
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", commands)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"PATH="+env.Binaries+":"+filepath.Dir(helm)+":"+os.Getenv("PATH"),
		"KUBECONFIG="+env.AdminKubeconfig,
		"IMAGE="+testImage,
		"HELM_CACHE_HOME="+filepath.Join(dir, ".helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, ".helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(dir, ".helm", "data"),
	)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// workdir is the operator's directory: the repository's deploy/ and the cloud's
// config file.
func workdir(t *testing.T, file, content string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(env.RepoRoot, "deploy"), filepath.Join(dir, "deploy")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o600))
	return dir
}

// uninstall removes what the quick start installed, and the leader's Lease.
func uninstall(t *testing.T, dir, commands string) {
	t.Cleanup(func() {
		if out, err := shellCtx(context.Background(), t, dir, commands); err != nil {
			t.Errorf("uninstall: %v\n%s", err, out)
		}
		err := env.Client.CoordinationV1().Leases("kube-system").Delete(context.Background(), "cloud-controller-manager", metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
}

const (
	helmUninstall      = "helm uninstall overcast-ccm --namespace kube-system\n"
	manifestsUninstall = `kubectl delete --ignore-not-found -f deploy/openstack/deployment.yaml -f deploy/rbac.yaml
kubectl -n kube-system delete --ignore-not-found secret overcast-ccm-openstack
`
)

func TestQuickStartOpenStackWithHelm(t *testing.T) {
	quickStartOpenStack(t, "openstack-helm", helmUninstall, "127.0.62")
}

func TestQuickStartOpenStackWithManifests(t *testing.T) {
	quickStartOpenStack(t, "openstack-manifests", manifestsUninstall, "127.0.63")
}

func quickStartOpenStack(t *testing.T, block, remove, net string) {
	rootfs, config := image(t)
	emu := coretest.Serve(t, emulator.New(emulator.Options{ProvisioningDelay: time.Second, PrivateCIDR: net + ".0/24"}), nil)
	dir := workdir(t, "cloud.conf", emu.CloudConf())

	run(t, dir, readmeBlock(t, block))
	uninstall(t, dir, remove)
	d, err := env.Client.AppsV1().Deployments("kube-system").Get(t.Context(), "overcast-ccm", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, testImage, d.Spec.Template.Spec.Containers[0].Image, "the Deployment runs the operator's image")

	p := startPod(t, env, rootfs, config, "kube-system", "overcast-ccm")
	var kubelets []*devenv.Kubelet
	for i := range 2 {
		name := fmt.Sprintf("qs-%s-%d", strings.ReplaceAll(net, ".", "-"), i)
		_, ip := emu.AddServer(emulator.ServerSpec{Name: name})
		kubelets = append(kubelets, env.NewKubelet(t, name, ip))
	}
	waitNodes(t, p, kubelets, "openstack:///")
	checkProbeAndVersion(t, p, rootfs)

	// overcast doctor inside the pod (kubectl exec): in-cluster credentials, the
	// mounted cloud.conf. A good setup passes every check.
	args := d.Spec.Template.Spec.Containers[0].Args
	out, code := p.exec("/usr/local/bin/overcast", "doctor", flagValue(t, args, "--cloud-provider"), flagValue(t, args, "--cloud-config"))
	t.Logf("overcast doctor in the pod:\n%s", out)
	require.Equal(t, 0, code, "doctor passes on the quick start's setup:\n%s", out)
	for _, row := range []string{"cloud config", "openstack: credentials", "openstack: load-balancer (Octavia)", "kubernetes: RBAC", "kubernetes: kubelets", "nodes ↔ instances", "leader lease"} {
		assert.Contains(t, out, row)
	}
	assert.Contains(t, out, "the 2 Nodes map to exactly one instance each")

	ns := namespace(t)
	svc := lbService(t, ns, 8080)
	ip := waitIngress(t, p, ns, svc.Name)
	t.Logf("ingress %s", ip)
	deleteService(t, p, ns, svc.Name)
}

func TestQuickStartLocalWithHelm(t *testing.T) {
	rootfs, config := image(t)
	const pool = "127.0.242.0/28"
	dir := workdir(t, "cloud-config.yaml", fmt.Sprintf(`autoInventory: true
region: qs
zone: qs-a
loadBalancer:
  pools:
  - name: default
    addresses: [%q]
`, pool))
	run(t, dir, readmeBlock(t, "local-helm"))
	uninstall(t, dir, helmUninstall)

	p := startPod(t, env, rootfs, config, "kube-system", "overcast-ccm")
	k := env.NewKubelet(t, "qs-local-0", "127.0.64.1")
	waitNodes(t, p, []*devenv.Kubelet{k}, "local://")
	checkProbeAndVersion(t, p, rootfs)

	ns := namespace(t)
	svc := lbService(t, ns, 80) // below 1024: the chart's local default may bind it
	k.ServeService(t, svc, true)
	ip := waitIngress(t, p, ns, svc.Name)
	require.True(t, netip.MustParsePrefix(pool).Contains(ip), "%s from the pool %s", ip, pool)
	vip := netip.AddrPortFrom(ip, 80)
	var answer string
	require.NoError(t, devenv.Poll(30*time.Second, 200*time.Millisecond, func() error {
		if err := p.alive(); err != nil {
			return err
		}
		var err error
		answer, err = devenv.RequestTCP(netip.Addr{}, vip)
		return err
	}), "a request through %s", vip)
	assert.Contains(t, answer, k.Name, "answered by the node behind the load balancer")
	deleteService(t, p, ns, svc.Name)
}

// flagValue returns the "--name=value" argument of args.
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for _, a := range args {
		if strings.HasPrefix(a, name+"=") {
			return a
		}
	}
	t.Fatalf("the container has no %s argument: %v", name, args)
	return ""
}

func waitNodes(t *testing.T, p *pod, kubelets []*devenv.Kubelet, providerPrefix string) {
	t.Helper()
	require.NoError(t, devenv.Poll(90*time.Second, 250*time.Millisecond, func() error {
		if err := p.alive(); err != nil {
			return err
		}
		for _, k := range kubelets {
			n, err := env.Client.CoreV1().Nodes().Get(t.Context(), k.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !strings.HasPrefix(n.Spec.ProviderID, providerPrefix) {
				return fmt.Errorf("node %s: providerID %q: %w", k.Name, n.Spec.ProviderID, errNotYet)
			}
			for _, taint := range n.Spec.Taints {
				if taint.Key == devenv.UninitializedTaint {
					return fmt.Errorf("node %s still has the uninitialized taint: %w", k.Name, errNotYet)
				}
			}
		}
		return nil
	}), "Nodes initialised by the installed CCM")
}

var buildInfo = regexp.MustCompile(`(?m)^overcast_build_info\{[^}]*version="([^"]+)"[^}]*\} 1$`)

// checkProbeAndVersion probes /healthz as the Deployment's livenessProbe does and
// reads /metrics as Prometheus would, with a token allowed GET /metrics: the
// version there is the one `overcast-ccm --version` prints.
func checkProbeAndVersion(t *testing.T, p *pod, rootfs string) {
	t.Helper()
	code, body, err := p.get("/healthz", "")
	require.NoError(t, err)
	require.Equal(t, 200, code, "livenessProbe /healthz: %s", body)

	tok := env.MetricsToken(t, env.Namespace(t))
	var metrics string
	require.NoError(t, devenv.Poll(30*time.Second, 500*time.Millisecond, func() error {
		code, body, err := p.get("/metrics", tok)
		if err != nil {
			return err
		}
		if code != 200 {
			return fmt.Errorf("GET /metrics: %d %s", code, body) // RBAC may take a moment
		}
		metrics = body
		return nil
	}))
	m := buildInfo.FindStringSubmatch(metrics)
	require.NotNil(t, m, "overcast_build_info in /metrics")
	out, err := exec.CommandContext(t.Context(), filepath.Join(rootfs, "usr/local/bin/overcast-ccm"), "--version").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), "overcast-ccm "+m[1]+" "), "--version %q and overcast_build_info{version=%q} agree", out, m[1])
}

func namespace(t *testing.T) string { return env.Namespace(t) }

func lbService(t *testing.T, ns string, port int32) *v1.Service {
	t.Helper()
	svc, err := env.Client.CoreV1().Services(ns).Create(t.Context(), &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: port}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return svc
}

func waitIngress(t *testing.T, p *pod, ns, name string) netip.Addr {
	t.Helper()
	var ip netip.Addr
	require.NoError(t, devenv.Poll(90*time.Second, 250*time.Millisecond, func() error {
		if err := p.alive(); err != nil {
			return err
		}
		s, err := env.Client.CoreV1().Services(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("service %s/%s has no ingress: %w", ns, name, errNotYet)
		}
		ip, err = netip.ParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
		return err
	}), "an ingress for the Service")
	return ip
}

// deleteService deletes the Service and waits until the CCM has removed its load
// balancer (its finalizer) and the Service is gone.
func deleteService(t *testing.T, p *pod, ns, name string) {
	t.Helper()
	require.NoError(t, env.Client.CoreV1().Services(ns).Delete(t.Context(), name, metav1.DeleteOptions{}))
	require.NoError(t, devenv.Poll(90*time.Second, 250*time.Millisecond, func() error {
		if err := p.alive(); err != nil {
			return err
		}
		_, err := env.Client.CoreV1().Services(ns).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return errors.New("the Service still has its load-balancer finalizer")
	}), "the load balancer removed when the Service is deleted")
}
