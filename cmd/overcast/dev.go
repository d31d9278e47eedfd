//go:build !nodev

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
	"github.com/overcast-ccm/overcast/test/framework"
)

// devNode is a simulated node of the dev cluster.
type devNode struct{ name, ip, typ, zone string }

// The dev cluster's addresses: all loopback.
var devNodes = []devNode{
	{"node-1", "127.0.50.1", "local.small", "dc1-a"},
	{"node-2", "127.0.50.2", "local.small", "dc1-b"},
	{"node-3", "127.0.50.3", "local.large", "dc1-c"},
}

const devPool = "127.0.240.0/28"

func runDev(args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	once := fs.Bool("once", false, "stop after the demo instead of waiting for Ctrl-C (a smoke test)")
	dir := fs.String("dir", "tmp/dev", "where the kubeconfig, cloud config, inventory and CCM log go")
	ccmBin := fs.String("ccm", "bin/overcast-ccm", "the overcast-ccm binary to run")
	cloud := fs.String("cloud", "local", "the cloud: local (a real L4 proxy serves the load balancer) or openstack (the OpenStack emulator, whose load balancers carry traffic on loopback)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cloud != "local" && *cloud != "openstack" {
		return fmt.Errorf("--cloud %q: local or openstack", *cloud)
	}
	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(absDir, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// This process's own logs (client-go, envtest) go to a file: the terminal shows
	// the demo's steps and nothing else.
	devLogPath := filepath.Join(absDir, "dev.log")
	devLog, err := os.Create(devLogPath)
	if err != nil {
		return err
	}
	defer devLog.Close()
	framework.LogOutput = devLog

	step("Starting etcd and kube-apiserver (the first run on a machine builds them from source: about 15 minutes on 2 cores; later runs take seconds)")
	start := time.Now()
	env, err := framework.Start()
	if err != nil {
		return err
	}
	defer func() {
		step("Stopping etcd and kube-apiserver")
		env.Stop()
	}()
	kubeconfig := filepath.Join(absDir, "admin.kubeconfig")
	if err := copyFile(env.AdminKubeconfig, kubeconfig); err != nil {
		return err
	}
	done("control plane up in %s; deploy/rbac.yaml applied server-side; log %s", time.Since(start).Round(100*time.Millisecond), devLogPath)

	nodes := devNodes
	var cloudConfig string
	if *cloud == "openstack" {
		step("Starting the OpenStack emulator (Keystone, Nova, Neutron, Octavia) with a server per node")
		var closeEmu func()
		cloudConfig, nodes, closeEmu, err = startDevOpenStack(absDir)
		if err != nil {
			return err
		}
		defer closeEmu()
	} else if cloudConfig, err = writeDevCloud(absDir); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	step("Starting overcast-ccm --cloud-provider=%s (as the overcast-ccm ServiceAccount, RBAC from deploy/rbac.yaml)", *cloud)
	logPath := filepath.Join(absDir, "overcast-ccm.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	ccm := exec.CommandContext(context.Background(), *ccmBin, // stopped by SIGTERM below, not by ctx
		"--cloud-provider="+*cloud,
		"--cloud-config="+cloudConfig,
		"--kubeconfig="+env.CCMKubeconfig,
		"--authentication-kubeconfig="+env.CCMKubeconfig,
		"--authorization-kubeconfig="+env.CCMKubeconfig,
		"--cluster-name=overcast-dev",
		"--leader-elect=true",
		"--configure-cloud-routes=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--node-monitor-period=2s",
		"--v=2",
	)
	ccm.Stdout, ccm.Stderr = logFile, logFile
	if err := ccm.Start(); err != nil {
		return fmt.Errorf("starting %s (run `make build` first): %w", *ccmBin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- ccm.Wait() }()
	defer func() {
		step("Stopping overcast-ccm (pid %d)", ccm.Process.Pid)
		_ = ccm.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			_ = err // a signalled process exits non-zero
		case <-time.After(15 * time.Second):
			_ = ccm.Process.Kill()
			err := <-exited
			_ = err // killed: a non-zero exit is expected
		}
	}()
	done("pid %d, log %s, https://127.0.0.1:%d/healthz", ccm.Process.Pid, logPath, port)

	step("Registering %d simulated nodes (uninitialized taint, Ready heartbeats, NodePort backends)", len(nodes))
	var kubelets []*framework.Kubelet
	defer func() {
		for _, k := range kubelets {
			_ = k.Remove(context.Background())
		}
	}()
	for _, n := range nodes {
		k, err := env.RegisterKubelet(ctx, n.name, n.ip)
		if err != nil {
			return err
		}
		kubelets = append(kubelets, k)
	}
	if err := framework.Poll(60*time.Second, 200*time.Millisecond, func() error {
		if err := ccmAlive(exited, logPath); err != nil {
			return framework.Permanent(err)
		}
		return nodesInitialised(ctx, env, nodes)
	}); err != nil {
		return err
	}
	if err := printNodes(ctx, env, nodes); err != nil {
		return err
	}

	step("Creating the demo LoadBalancer Service demo/hello (TCP 8080)")
	svc, err := createDemoService(ctx, env)
	if err != nil {
		return err
	}
	for _, k := range kubelets {
		if err := k.Serve(svc, true); err != nil {
			return err
		}
	}
	var ip netip.Addr
	if err := framework.Poll(3*time.Minute, 200*time.Millisecond, func() error {
		if err := ccmAlive(exited, logPath); err != nil {
			return framework.Permanent(err)
		}
		s, err := env.Client.CoreV1().Services("demo").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return errors.New("no external IP yet")
		}
		ip, err = netip.ParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
		return err
	}); err != nil {
		return err
	}
	bin, _ := framework.BinaryDir(env.RepoRoot)
	if *cloud == "openstack" {
		done("EXTERNAL-IP %s (the floating IP of an Octavia load balancer of the emulator)", ip)
	} else {
		done("EXTERNAL-IP %s (from pool %s)", ip, devPool)
	}

	vip := netip.AddrPortFrom(ip, 8080)
	step("Sending requests through the load balancer %s", vip)
	for i := range 3 {
		var answer string
		err := framework.Poll(20*time.Second, 200*time.Millisecond, func() error {
			var err error
			answer, err = framework.RequestTCP(netip.Addr{}, vip)
			return err
		})
		if err != nil {
			return fmt.Errorf("request %d through %s: %w", i+1, vip, err)
		}
		done("request %d: answered by %s", i+1, answer)
	}

	cloudLine := filepath.Join(absDir, "inventory.yaml") + " lists the instances; overcast-ccm re-reads it while running."
	if *cloud == "openstack" {
		cloudLine = "cloud.conf: " + cloudConfig
	}
	fmt.Printf(`
The cluster is yours:
  export KUBECONFIG=%s
  %s/kubectl get nodes -L node.kubernetes.io/instance-type,topology.kubernetes.io/zone
  %s/kubectl -n demo get service hello
  printf 'hi\n' | nc -q1 %s %d      # through the load balancer
  %s
  overcast-ccm log: %s
`, kubeconfig, bin, bin, ip, 8080, cloudLine, logPath)
	return waitDev(ctx, *once, exited, logPath)
}

// waitDev returns at once with --once, else when Ctrl-C comes or the CCM dies.
func waitDev(ctx context.Context, once bool, exited chan error, logPath string) error {
	if once {
		step("--once: stopping")
		return nil
	}
	fmt.Println("\nPress Ctrl-C to stop everything this command started.")
	select {
	case <-ctx.Done():
		fmt.Println()
		return nil
	case err := <-exited:
		exited <- err
		return fmt.Errorf("overcast-ccm exited (%w); see %s", err, logPath)
	}
}

func ccmAlive(exited chan error, log string) error {
	select {
	case err := <-exited:
		exited <- err
		return fmt.Errorf("overcast-ccm exited (%w); see %s", err, log)
	default:
		return nil
	}
}

func writeDevCloud(dir string) (string, error) {
	var inv strings.Builder
	inv.WriteString("# Instances of the local cloud; overcast-ccm re-reads this file every 2s.\ninstances:\n")
	for _, n := range devNodes {
		fmt.Fprintf(&inv, "- name: %s\n  instanceType: %s\n  zone: %s\n  addresses:\n  - {type: InternalIP, address: %s}\n  - {type: Hostname, address: %s}\n", n.name, n.typ, n.zone, n.ip, n.name)
	}
	invPath := filepath.Join(dir, "inventory.yaml")
	if err := os.WriteFile(invPath, []byte(inv.String()), 0o644); err != nil {
		return "", err
	}
	cfg := fmt.Sprintf(`inventoryFile: %s
region: dc1
loadBalancer:
  pools:
  - name: default
    addresses: [%q]
`, invPath, devPool)
	cfgPath := filepath.Join(dir, "cloud-config.yaml")
	return cfgPath, os.WriteFile(cfgPath, []byte(cfg), 0o644)
}

func nodesInitialised(ctx context.Context, env *framework.Env, nodes []devNode) error {
	for _, n := range nodes {
		node, err := env.Client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, t := range node.Spec.Taints {
			if t.Key == framework.UninitializedTaint {
				return fmt.Errorf("%s not initialised yet", n.name)
			}
		}
	}
	return nil
}

func printNodes(ctx context.Context, env *framework.Env, nodes []devNode) error {
	fmt.Printf("    %-8s %-50s %-12s %-8s %-12s %s\n", "NODE", "PROVIDER-ID", "TYPE", "ZONE", "INTERNAL-IP", "UNINITIALIZED-TAINT")
	for _, n := range nodes {
		node, err := env.Client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ip := ""
		for _, a := range node.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				ip = a.Address
			}
		}
		taint := "removed"
		for _, t := range node.Spec.Taints {
			if t.Key == framework.UninitializedTaint {
				taint = "present"
			}
		}
		fmt.Printf("    %-8s %-50s %-12s %-8s %-12s %s\n", node.Name, node.Spec.ProviderID,
			node.Labels[v1.LabelInstanceTypeStable], node.Labels[v1.LabelTopologyZone], ip, taint)
	}
	return nil
}

func createDemoService(ctx context.Context, env *framework.Env) (*v1.Service, error) {
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	return env.Client.CoreV1().Services("demo").Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo"},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "hello"},
			Ports:    []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 8080}},
		},
	}, metav1.CreateOptions{})
}

func step(format string, a ...any) { fmt.Printf("==> "+format+"\n", a...) }
func done(format string, a ...any) { fmt.Printf("    "+format+"\n", a...) }

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}

func freePort() (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startDevOpenStack starts the OpenStack emulator with a server per dev node, on a
// loopback tenant subnet so the simulated kubelets can use the servers' addresses,
// and writes its cloud.conf.
func startDevOpenStack(dir string) (string, []devNode, func(), error) {
	// Loopback subnets, so that the load balancers carry traffic: VIPs from the
	// tenant subnet, floating IPs from the public one.
	e := emulator.New(emulator.Options{ProvisioningDelay: 2 * time.Second, PrivateCIDR: "127.0.60.0/24",
		PublicCIDR: "127.0.61.0/24", ServeTraffic: true})
	if err := e.Start("127.0.0.1:0"); err != nil {
		return "", nil, nil, err
	}
	var nodes []devNode
	for _, n := range devNodes {
		_, ip := e.AddServer(emulator.ServerSpec{Name: n.name})
		nodes = append(nodes, devNode{name: n.name, ip: ip})
	}
	path := filepath.Join(dir, "cloud.conf")
	if err := os.WriteFile(path, []byte(e.CloudConf()), 0o600); err != nil {
		_ = e.Close()
		return "", nil, nil, err
	}
	var list []string
	for _, n := range nodes {
		list = append(list, n.name+"="+n.ip)
	}
	done("emulator at %s (calls: GET %s/_emulator/calls); servers %s", e.URL(), e.URL(), strings.Join(list, " "))
	return path, nodes, func() { step("Stopping the OpenStack emulator"); _ = e.Close() }, nil
}
