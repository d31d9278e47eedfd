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
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/kit"
)

// The dev cluster's nodes, with loopback addresses (a cloud whose machines get
// addresses of their own gives them others).
var devNodes = []kit.Node{
	{Name: "node-1", IP: "127.0.50.1", InstanceType: "local.small", Zone: "dc1-a"},
	{Name: "node-2", IP: "127.0.50.2", InstanceType: "local.small", Zone: "dc1-b"},
	{Name: "node-3", IP: "127.0.50.3", InstanceType: "local.large", Zone: "dc1-c"},
}

func runDev(args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	once := fs.Bool("once", false, "stop after the demo instead of waiting for Ctrl-C (a smoke test)")
	dir := fs.String("dir", "tmp/dev", "where the kubeconfig, cloud config, inventory and CCM log go")
	ccmBin := fs.String("ccm", "bin/overcast-ccm", "the overcast-ccm binary to run")
	cloud := fs.String("cloud", "local", "the cloud: "+strings.Join(kit.DevNames(), ", ")+" (local: a real L4 proxy serves the load balancer; the others run on their emulator, whose load balancers carry traffic on loopback)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cloudKit, err := kit.DevCloud(*cloud)
	if err != nil {
		return fmt.Errorf("--cloud: %w", err)
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
	s := &devSession{ctx: ctx, dir: absDir, cloud: *cloud, ccmBin: *ccmBin, kit: cloudKit}
	defer s.close()
	for _, start := range []func() error{s.startControlPlane, s.startCloud, s.startCCM, s.registerNodes, s.demoService, s.sendRequests} {
		if err := start(); err != nil {
			return err
		}
	}
	s.printCluster()
	return waitDev(ctx, *once, s.exited, s.ccmLog)
}

// devSession is one run of the dev cluster: what it started, stopped in the
// reverse order by close.
type devSession struct {
	ctx        context.Context
	dir, cloud string
	ccmBin     string
	kit        kit.Kit
	env        *devenv.Env
	dev        *kit.Dev
	exited     chan error // the CCM's exit
	ccmLog     string
	kubeconfig string
	kubelets   []*devenv.Kubelet
	ip         netip.Addr // the demo Service's external IP
	stops      []func()
}

// onClose runs f when the session closes, before what was started earlier.
func (s *devSession) onClose(f func()) { s.stops = append(s.stops, f) }

func (s *devSession) close() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

// startControlPlane starts etcd and kube-apiserver, this process's own logs
// (client-go, envtest) going to a file: the terminal shows the demo's steps
// and nothing else.
func (s *devSession) startControlPlane() error {
	devLogPath := filepath.Join(s.dir, "dev.log")
	devLog, err := os.Create(devLogPath)
	if err != nil {
		return err
	}
	s.onClose(func() { _ = devLog.Close() })
	devenv.LogOutput = devLog
	step("Starting etcd and kube-apiserver (the first run on a machine builds them from source: about 10 minutes on 2 cores; later runs take seconds)")
	start := time.Now()
	if s.env, err = devenv.Start(); err != nil {
		return err
	}
	s.onClose(func() {
		step("Stopping etcd and kube-apiserver")
		s.env.Stop()
	})
	s.kubeconfig = filepath.Join(s.dir, "admin.kubeconfig")
	if err := copyFile(s.env.AdminKubeconfig, s.kubeconfig); err != nil {
		return err
	}
	done("control plane up in %s; deploy/rbac.yaml applied server-side; log %s", time.Since(start).Round(100*time.Millisecond), devLogPath)
	return nil
}

// startCloud readies the cloud (an emulator with a machine per node, or the
// local cloud's inventory).
func (s *devSession) startCloud() error {
	if s.kit.Emulator != "" {
		step("Starting the %s with a machine per node", s.kit.Emulator)
	}
	dev, err := s.kit.Dev(s.dir, devNodes)
	if err != nil {
		return err
	}
	s.dev = dev
	s.onClose(func() {
		if s.kit.Emulator != "" {
			step("Stopping the %s", s.kit.Emulator)
		}
		dev.Close()
	})
	if dev.Started != "" {
		done("%s", dev.Started)
	}
	return nil
}

// startCCM runs overcast-ccm as its ServiceAccount, stopped by SIGTERM (then
// killed after 15 s) when the session closes.
func (s *devSession) startCCM() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	step("Starting overcast-ccm --cloud-provider=%s (as the overcast-ccm ServiceAccount, RBAC from deploy/rbac.yaml)", s.cloud)
	s.ccmLog = filepath.Join(s.dir, "overcast-ccm.log")
	logFile, err := os.Create(s.ccmLog)
	if err != nil {
		return err
	}
	s.onClose(func() { _ = logFile.Close() })
	ccm := exec.CommandContext(context.Background(), s.ccmBin, s.ccmArgs(port)...) // stopped by SIGTERM, not by ctx
	ccm.Stdout, ccm.Stderr = logFile, logFile
	if err := ccm.Start(); err != nil {
		return fmt.Errorf("starting %s (run `make build` first): %w", s.ccmBin, err)
	}
	s.exited = make(chan error, 1)
	go func() { s.exited <- ccm.Wait() }()
	s.onClose(func() { stopCCM(ccm, s.exited) })
	done("pid %d, log %s, https://127.0.0.1:%d/healthz", ccm.Process.Pid, s.ccmLog, port)
	return nil
}

func (s *devSession) ccmArgs(port int) []string {
	kubeconfig := s.env.CCMKubeconfig
	return []string{
		"--cloud-provider=" + s.cloud,
		"--cloud-config=" + s.dev.Config,
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--cluster-name=overcast-dev",
		"--leader-elect=true",
		"--configure-cloud-routes=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--node-monitor-period=2s",
		"--v=2",
	}
}

// stopCCM sends SIGTERM and waits 15 s for the exit, then kills.
func stopCCM(ccm *exec.Cmd, exited chan error) {
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
}

// registerNodes registers the simulated kubelets and waits until the CCM
// has initialised their Nodes.
func (s *devSession) registerNodes() error {
	nodes := s.dev.Nodes
	step("Registering %d simulated nodes (uninitialized taint, Ready heartbeats, NodePort backends)", len(nodes))
	s.onClose(func() {
		for _, k := range s.kubelets {
			_ = k.Remove(context.Background())
		}
	})
	for _, n := range nodes {
		k, err := s.env.RegisterKubelet(s.ctx, n.Name, n.IP)
		if err != nil {
			return err
		}
		s.kubelets = append(s.kubelets, k)
	}
	if err := s.poll(60*time.Second, func() error { return nodesInitialised(s.ctx, s.env, nodes) }); err != nil {
		return err
	}
	return printNodes(s.ctx, s.env, nodes)
}

// poll is devenv.Poll that gives up at once when the CCM has died.
func (s *devSession) poll(timeout time.Duration, f func() error) error {
	return devenv.Poll(timeout, 200*time.Millisecond, func() error {
		if err := ccmAlive(s.exited, s.ccmLog); err != nil {
			return devenv.Permanent(err)
		}
		return f()
	})
}

// demoService creates the demo Service, served by every kubelet, and waits
// for its external IP.
func (s *devSession) demoService() error {
	step("Creating the demo LoadBalancer Service demo/hello (TCP 8080)")
	svc, err := createDemoService(s.ctx, s.env)
	if err != nil {
		return err
	}
	for _, k := range s.kubelets {
		if err := k.Serve(svc, true); err != nil {
			return err
		}
	}
	err = s.poll(3*time.Minute, func() error {
		got, err := s.env.Client.CoreV1().Services("demo").Get(s.ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.LoadBalancer.Ingress) == 0 {
			return errors.New("no external IP yet")
		}
		s.ip, err = netip.ParseAddr(got.Status.LoadBalancer.Ingress[0].IP)
		return err
	})
	if err == nil {
		done("EXTERNAL-IP %s (%s)", s.ip, s.dev.Address)
	}
	return err
}

// sendRequests sends three requests through the load balancer.
func (s *devSession) sendRequests() error {
	vip := netip.AddrPortFrom(s.ip, 8080)
	step("Sending requests through the load balancer %s", vip)
	for i := range 3 {
		var answer string
		err := devenv.Poll(20*time.Second, 200*time.Millisecond, func() error {
			var err error
			answer, err = devenv.RequestTCP(netip.Addr{}, vip)
			return err
		})
		if err != nil {
			return fmt.Errorf("request %d through %s: %w", i+1, vip, err)
		}
		done("request %d: answered by %s", i+1, answer)
	}
	return nil
}

// printCluster says how to reach the cluster.
func (s *devSession) printCluster() {
	bin, _ := devenv.BinaryDir(s.env.RepoRoot)
	fmt.Printf(`
The cluster is yours:
  export KUBECONFIG=%s
  %s/kubectl get nodes -L node.kubernetes.io/instance-type,topology.kubernetes.io/zone
  %s/kubectl -n demo get service hello
  printf 'hi\n' | nc -q1 %s %d      # through the load balancer
  %s
  overcast-ccm log: %s
`, s.kubeconfig, bin, bin, s.ip, 8080, s.dev.Note, s.ccmLog)
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

func nodesInitialised(ctx context.Context, env *devenv.Env, nodes []kit.Node) error {
	for _, n := range nodes {
		node, err := env.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, t := range node.Spec.Taints {
			if t.Key == devenv.UninitializedTaint {
				return fmt.Errorf("%s not initialised yet", n.Name)
			}
		}
	}
	return nil
}

func printNodes(ctx context.Context, env *devenv.Env, nodes []kit.Node) error {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "    NODE\tPROVIDER-ID\tTYPE\tZONE\tINTERNAL-IP\tUNINITIALIZED-TAINT")
	for _, n := range nodes {
		node, err := env.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
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
			if t.Key == devenv.UninitializedTaint {
				taint = "present"
			}
		}
		fmt.Fprintf(w, "    %s\t%s\t%s\t%s\t%s\t%s\n", node.Name, node.Spec.ProviderID,
			node.Labels[v1.LabelInstanceTypeStable], node.Labels[v1.LabelTopologyZone], ip, taint)
	}
	return w.Flush()
}

func createDemoService(ctx context.Context, env *devenv.Env) (*v1.Service, error) {
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
