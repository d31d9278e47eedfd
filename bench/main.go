// Command bench measures what operators of big clusters care about: cloud API
// calls and time as the cluster grows. It runs a real kube-apiserver (test
// binaries of hack/tools), N simulated Nodes, M LoadBalancer Services and a
// cloud's emulator (-cloud, OpenStack by default; 50 ms a call, 2 s load
// balancer provisioning by default), with the CCM under test as a process of its
// own: -ccm takes any binary that accepts the k8s.io/cloud-provider flags and the
// cloud's config, so another CCM can be measured on the same bench.
//
//	go run ./bench -scenarios init,steady -nodes 500,2000 -runs 3 -report docs/benchmarks.md
//
// It is not a pass/fail test: it prints each figure and, with -report, writes the
// Markdown report (medians of the runs with their min and max, and the command).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/kit"
	"github.com/overcast-ccm/overcast/internal/selfsigned"
)

type options struct {
	// annotations are the LoadBalancer Services' (e.g. a load balancer type).
	annotations  map[string]string
	cloud        string
	ccm          string
	scenarios    []string
	nodes        []int
	services     []int
	runs         int
	steady       time.Duration
	steadySvcs   int
	steadySettle time.Duration
	notReady     time.Duration
	latency      time.Duration
	provisioning time.Duration
	heartbeat    time.Duration
	report       string
	chart        string
	serviceNodes int
	dir          string
	ccmArgs      []string
	ccmEnv       []string
	global       []string // extra [Global] keys of the cloud.conf
	confAppend   string   // a file whose text ends the cloud config
	confExtra    string   // text a scenario adds at the end of the cloud config
	ports        int      // ports of each LoadBalancer Service (0: one, http)
	portCounts   []int    // the ports scenario's Services
	adminKeys    bool     // the cloud.conf carries the emulator's administrator keys
	tls          bool     // every Service terminates TLS with a certificate stored in the emulator
	throughProxy bool     // the CCM reaches the emulator as an HTTPS proxy
	providerIDs  bool     // kubelets register with their providerID
	requests     bool     // count the CCM's apiserver requests per Node (an audit log)
}

func main() {
	var o options
	var scen, nodes, services, portCounts string
	flag.StringVar(&o.cloud, "cloud", "openstack", "the cloud whose emulator the CCM runs against ("+strings.Join(kit.EmulatedNames(), ", ")+")")
	flag.StringVar(&o.ccm, "ccm", "bin/overcast-ccm", "the CCM binary under test")
	flag.StringVar(&scen, "scenarios", "init,steady,notready,resync,addnode,create,rss", "scenarios to run")
	flag.StringVar(&nodes, "nodes", "500,2000", "Node counts N (add 5000 for the big run)")
	flag.StringVar(&services, "services", "200,1000", "LoadBalancer Service counts M for resync and addnode")
	flag.StringVar(&portCounts, "port-counts", "1,8,24", "ports scenario: the ports of its one Service, built in OpenStack's serial mode")
	flag.IntVar(&o.runs, "runs", 3, "runs of each figure (the report gives the median, min and max)")
	flag.DurationVar(&o.steady, "steady", 10*time.Minute, "steady-state measuring window")
	flag.IntVar(&o.steadySvcs, "steady-services", 0, "LoadBalancer Services that exist (converged) through the steady-state window: their drift checks are in its calls")
	flag.DurationVar(&o.steadySettle, "steady-settle", 0, "wait this long after the steady Services converged before measuring (two drift periods leave out the quiet walk that checks what each creation left)")
	flag.DurationVar(&o.notReady, "notready", 10*time.Minute, "how long 100 Nodes stay NotReady")
	flag.DurationVar(&o.latency, "latency", 50*time.Millisecond, "emulator latency per call")
	flag.DurationVar(&o.provisioning, "provisioning", 2*time.Second, "emulator load balancer provisioning delay")
	flag.DurationVar(&o.heartbeat, "heartbeat", time.Minute, "how often each simulated kubelet posts NodeReady")
	flag.StringVar(&o.report, "report", "", "write the Markdown report here (in a file with the markers "+beginMark+" and "+endMark+", only between them)")
	flag.StringVar(&o.chart, "chart", "", "write an SVG chart of steady-state calls/hour against N here (needs the steady scenario)")
	flag.IntVar(&o.serviceNodes, "service-nodes", 100, "Node count of the resync and addnode runs (and of rss with Services)")
	flag.StringVar(&o.dir, "dir", "tmp/bench", "scratch directory (CCM logs)")
	ccmEnv := flag.String("ccm-env", "", "extra environment of the CCM only, space-separated (e.g. GOMEMLIMIT=150MiB)")
	ccmArgs := flag.String("ccm-args", "", "extra flags for the CCM, space-separated (e.g. --concurrent-service-syncs=20)")
	flag.BoolVar(&o.tls, "tls", false, "OpenStack: every Service terminates TLS with a Barbican container stored in the emulator beforehand (default-tls-container-ref); the CCM authenticates with a password, as Octavia needs")
	flag.BoolVar(&o.adminKeys, "admin-keys", false, "give the CCM the emulator's administrator keys instead of a user's (for a CCM that needs them, as cloudstack-kubernetes-provider does)")
	flag.BoolVar(&o.throughProxy, "through-proxy", false, "the CCM reaches the emulator at the cloud's real host names, through it as an HTTPS proxy (HTTPS_PROXY, SSL_CERT_FILE): for a CCM that cannot be given an endpoint, as oci-cloud-controller-manager")
	flag.BoolVar(&o.providerIDs, "provider-ids", false, "the simulated kubelets register their Nodes with the providerID, as kubelets started with --provider-id do (OKE's; oci-cloud-controller-manager needs it)")
	flag.BoolVar(&o.requests, "count-requests", false, "init: count the CCM's apiserver requests per Node by client, verb and resource, from an audit log of its user (the audit slows the apiserver: take the time from a run without it)")
	global := flag.String("global", "", "extra [Global] keys of the cloud.conf, space-separated (e.g. api-write-qps=20)")
	flag.StringVar(&o.confAppend, "config-append", "", "a file whose text is added at the end of the cloud config (e.g. a YAML rateLimiter: block for OCI)")
	annotations := flag.String("service-annotations", "", "annotations of the LoadBalancer Services, comma-separated key=value (e.g. oci.oraclecloud.com/load-balancer-type=nlb)")
	pprofAddr := flag.String("pprof", "", "serve the bench's own profiles (its emulator's) at this loopback address, e.g. 127.0.0.1:6061")
	chartData := flag.String("chart-data", "", "with -chart: draw these medians (N=reads/h,…, e.g. 500=36,2000=36) from earlier runs instead of running anything")
	flag.Parse()
	if *pprofAddr != "" {
		servePprof(*pprofAddr)
	}
	if *chartData != "" {
		if err := chartFrom(*chartData, o.chart); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	o.ccmArgs = strings.Fields(*ccmArgs)
	o.ccmEnv = strings.Fields(*ccmEnv)
	o.global = strings.Fields(*global)
	for _, kv := range strings.Split(*annotations, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "bench: -service-annotations: %q is not key=value\n", kv)
			os.Exit(2)
		}
		if o.annotations == nil {
			o.annotations = map[string]string{}
		}
		o.annotations[k] = v
	}
	o.scenarios = strings.Split(scen, ",")
	var err error
	if o.nodes, err = ints(nodes); err == nil {
		o.services, err = ints(services)
	}
	if err == nil {
		o.portCounts, err = ints(portCounts)
	}
	if err == nil {
		closeOnInterrupt()
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// figure is one measured quantity over the runs.
type figure struct {
	scenario, name, unit, target string
	values                       []float64
	detail                       string // e.g. calls by operation of the last run
	nodes                        int    // N of a steady-state reads figure (for the chart)
}

func (f *figure) median() (med, lo, hi float64) {
	v := append([]float64(nil), f.values...)
	sort.Float64s(v)
	if len(v) == 0 {
		return 0, 0, 0
	}
	return v[len(v)/2], v[0], v[len(v)-1]
}

func run(o options) error {
	ccm, err := filepath.Abs(o.ccm)
	if err != nil {
		return err
	}
	o.ccm = ccm
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	var figures []*figure
	add := func(f *figure) { figures = append(figures, f) }
	want := map[string]bool{}
	for _, s := range o.scenarios {
		want[strings.TrimSpace(s)] = true
	}
	for _, n := range o.nodes {
		if want["init"] || want["status"] || want["steady"] || want["notready"] {
			figs, err := nodeScenarios(o, n, want)
			if err != nil {
				return err
			}
			for _, f := range figs {
				add(f)
			}
		}
	}
	for _, m := range o.services {
		if want["resync"] || want["addnode"] || (want["rss"] && !want["init"]) {
			figs, err := serviceScenarios(o, o.serviceNodes, m, want)
			if err != nil {
				return err
			}
			for _, f := range figs {
				add(f)
			}
		}
	}
	for _, sc := range []struct {
		name string
		run  func(options) ([]*figure, error)
	}{{"ports", portsScenario}, {"create", createScenario}} {
		if !want[sc.name] {
			continue
		}
		f, err := sc.run(o)
		if err != nil {
			return err
		}
		for _, x := range f {
			add(x)
		}
	}
	if o.chart != "" && want["steady"] { // a run without steady-state figures leaves the chart alone
		if err := os.WriteFile(o.chart, []byte(chart(figures)), 0o644); err != nil {
			return err
		}
	}
	report := render(o, figures)
	fmt.Print(report)
	if o.report != "" {
		return writeReport(o.report, report)
	}
	return nil
}

// bed is one run's cluster: control plane, emulator, kubelets, CCM.
type bed struct {
	o        options
	env      *devenv.Env
	emu      kit.Emulator
	conf     string
	kubelets []*devenv.Kubelet
	ccm      *exec.Cmd
	ccmDone  chan error
	log      string
	audit    string // the audit log of the CCM's requests, with -count-requests
}

func newBed(o options, nodes int) (*bed, error) {
	var audit string
	if o.requests {
		audit = filepath.Join(o.dir, fmt.Sprintf("audit-%d.log", time.Now().UnixNano()))
	}
	env, err := devenv.StartWith(devenv.StartOptions{AuditCCMTo: audit})
	if err != nil {
		return nil, err
	}
	env.HeartbeatInterval = o.heartbeat
	b := &bed{o: o, env: env, audit: audit}
	opened(b)
	if err := b.setUp(nodes); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// setUp starts the cloud's emulator, writes the CCM's config and registers
// the Nodes.
func (b *bed) setUp(nodes int) error {
	k, err := kit.Emulated(b.o.cloud)
	if err != nil {
		return err
	}
	if b.o.providerIDs && k.ProviderID == nil {
		return fmt.Errorf("-provider-ids: the %s cloud's kubelets are not started with a providerID", b.o.cloud)
	}
	// Room for thousands of servers, VIPs and floating IPs (198.18.0.0/15 is the
	// benchmarking range; the addresses are data, never contacted).
	if b.emu, err = k.Emulate(kit.EmulatorOptions{Latency: b.o.latency, Provisioning: b.o.provisioning,
		MachineCIDR: "10.0.0.0/16", PublicCIDR: "198.18.0.0/16"}); err != nil {
		return err
	}
	if err := b.writeConfig(); err != nil {
		return err
	}
	return b.registerNodes(k, nodes)
}

// writeConfig writes the CCM's cloud config: the emulator's, with the
// administrator's keys, a password and a stored certificate for TLS, extra
// [Global] keys or an appended file, as the options say.
func (b *bed) writeConfig() error {
	o := b.o
	b.conf = filepath.Join(o.dir, "cloud.conf")
	conf := b.emu.CloudConfig()
	if o.adminKeys {
		a, ok := b.emu.(interface{ AdminCloudConfig() string })
		if !ok {
			return fmt.Errorf("-admin-keys: the %s emulator has no administrator keys to give", o.cloud)
		}
		conf = a.AdminCloudConfig()
	}
	if o.tls {
		var err error
		if conf, err = b.tlsConfig(); err != nil {
			return err
		}
	}
	if len(o.global) > 0 {
		conf = strings.Replace(conf, "[Global]\n", "[Global]\n"+strings.Join(o.global, "\n")+"\n", 1)
	}
	if o.confAppend != "" {
		extra, err := os.ReadFile(o.confAppend)
		if err != nil {
			return err
		}
		conf = strings.TrimRight(conf, "\n") + "\n" + string(extra)
	}
	if o.confExtra != "" {
		conf = strings.TrimRight(conf, "\n") + "\n" + o.confExtra
	}
	return os.WriteFile(b.conf, []byte(conf), 0o600)
}

// tlsConfig stores a certificate in the emulator, makes every Service
// terminate TLS with it, and returns the password config Octavia needs.
func (b *bed) tlsConfig() (string, error) {
	t, ok := b.emu.(interface {
		PasswordCloudConfig() string
		StoreCertificate(name string, cert, key []byte) string
	})
	if !ok {
		return "", fmt.Errorf("-tls: the %s emulator has no certificate store", b.o.cloud)
	}
	cert, key, err := selfsigned.Pair("bench.example")
	if err != nil {
		return "", err
	}
	b.o.annotations = maps.Clone(b.o.annotations)
	if b.o.annotations == nil {
		b.o.annotations = map[string]string{}
	}
	b.o.annotations["loadbalancer.openstack.org/default-tls-container-ref"] = t.StoreCertificate("bench", cert, key)
	return t.PasswordCloudConfig(), nil
}

// registerNodes registers every Node (tainted, Ready) before the CCM
// starts, 32 at a time: "N Nodes registered at once".
func (b *bed) registerNodes(k kit.Kit, nodes int) error {
	type reg struct {
		k   *devenv.Kubelet
		err error
	}
	results := make(chan reg, nodes)
	sem := make(chan struct{}, 32)
	for i := range nodes {
		name := fmt.Sprintf("bench-node-%05d", i)
		id, ip := b.emu.AddMachine(name)
		var providerID []string
		if b.o.providerIDs {
			providerID = []string{k.ProviderID(id)}
		}
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			k, err := b.env.RegisterKubelet(context.Background(), name, ip, providerID...)
			results <- reg{k, err}
		}()
	}
	var errs []error
	for range nodes {
		r := <-results
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		b.kubelets = append(b.kubelets, r.k)
	}
	return errors.Join(errs...)
}

func (b *bed) startCCM(extra ...string) error {
	b.log = filepath.Join(b.o.dir, fmt.Sprintf("ccm-%d.log", time.Now().UnixNano()))
	f, err := os.Create(b.log)
	if err != nil {
		return err
	}
	args := append([]string{
		"--cloud-provider=" + b.o.cloud,
		"--cloud-config=" + b.conf,
		"--kubeconfig=" + b.env.CCMKubeconfig,
		"--cluster-name=bench",
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=cloud-node,cloud-node-lifecycle,service",
		"--configure-cloud-routes=false",
		"--v=1",
	}, append(extra, b.o.ccmArgs...)...)
	b.ccm = exec.CommandContext(context.Background(), b.o.ccm, args...) // stopped by SIGTERM in stopCCM
	b.ccm.Stdout, b.ccm.Stderr = f, f
	b.ccm.Env = append(os.Environ(), b.o.ccmEnv...)
	if b.o.throughProxy {
		ca, ok := b.emu.(interface{ CA() []byte })
		if !ok {
			f.Close()
			return fmt.Errorf("-through-proxy: the %s emulator serves no HTTPS", b.o.cloud)
		}
		caFile := filepath.Join(b.o.dir, "emulator-ca.pem")
		if err := os.WriteFile(caFile, ca.CA(), 0o600); err != nil {
			f.Close()
			return err
		}
		b.ccm.Env = append(b.ccm.Env, "HTTPS_PROXY="+b.emu.URL(), "SSL_CERT_FILE="+caFile)
	}
	if err := b.ccm.Start(); err != nil {
		f.Close()
		return err
	}
	b.ccmDone = make(chan error, 1)
	go func() { b.ccmDone <- b.ccm.Wait(); f.Close() }()
	return nil
}

func (b *bed) stopCCM() {
	if b.ccm == nil {
		return
	}
	_ = b.ccm.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-b.ccmDone:
		_ = err // a signalled process exits non-zero
	case <-time.After(20 * time.Second):
		_ = b.ccm.Process.Kill()
		err := <-b.ccmDone
		_ = err // killed: non-zero is expected
	}
	b.ccm = nil
}

// peakRSS is the CCM's VmHWM in MiB.
func (b *bed) peakRSS() (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.ccm.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "RssAnon:") || strings.HasPrefix(line, "RssFile:") {
			fmt.Printf("   %s\n", strings.Join(strings.Fields(line), " "))
		}
	}
	if cpu, err := b.cpuSeconds(); err == nil {
		fmt.Printf("   CPU %.1f s (user and system, since the start)\n", cpu)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024, err
		}
	}
	return 0, errors.New("no VmHWM")
}

// cpuSeconds is the CPU time the CCM has used (utime + stime of
// /proc/PID/stat, in the kernel's USER_HZ ticks of 1/100 s on Linux).
func (b *bed) cpuSeconds() (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.ccm.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, errors.New("malformed /proc/PID/stat")
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (utime + stime) / 100, nil
}

func (b *bed) close() {
	defer closed(b)
	b.stopCCM()
	for _, k := range b.kubelets {
		k.StopHeartbeats(false)
	}
	if b.emu != nil {
		_ = b.emu.Close()
	}
	b.env.Stop()
}

// waitInitialised waits until no Node has the uninitialized taint.
func (b *bed) waitInitialised(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		nodes, err := b.env.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
		if err == nil {
			left := 0
			for _, n := range nodes.Items {
				for _, t := range n.Spec.Taints {
					if t.Key == devenv.UninitializedTaint {
						left++
					}
				}
			}
			if left == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d Nodes still uninitialised after %s (CCM log %s)", left, timeout, b.log)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// timeline waits d, printing the cloud calls made meanwhile as they happen (to
// the nearest 5 s), e.g. "   +301s GET /compute/v2.1/servers/detail ×2": it
// shows which periodic work a steady-state call belongs to.
func timeline(e kit.Emulator, d time.Duration) {
	start := time.Now()
	seen := map[string]int{}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	report := func() {
		_, _, byOp := calls(e)
		ops := make([]string, 0, len(byOp))
		for op := range byOp {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		for _, op := range ops {
			if n := byOp[op] - seen[op]; n > 0 {
				fmt.Printf("   %+6.0fs %s ×%d\n", time.Since(start).Seconds(), op, n)
				seen[op] = byOp[op]
			}
		}
	}
	for {
		select {
		case <-tick.C:
			report()
		case <-end.C:
			report()
			return
		}
	}
}

// calls sums the emulator's calls: reads and writes, and by operation.
func calls(e kit.Emulator) (reads, writes int, byOp map[string]int) {
	byOp = map[string]int{}
	for _, c := range e.Calls() {
		if c.Service == "identity" {
			continue // token requests are not cloud API calls of the CCM's work
		}
		byOp[c.Route] += c.Count
		if c.Method == http.MethodGet || c.Method == http.MethodHead {
			reads += c.Count
		} else {
			writes += c.Count
		}
	}
	return reads, writes, byOp
}

func topOps(byOp map[string]int, scale float64) string {
	type kv struct {
		k string
		v int
	}
	var list []kv
	for k, v := range byOp {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v || (list[i].v == list[j].v && list[i].k < list[j].k) })
	var parts []string
	for _, e := range list {
		parts = append(parts, fmt.Sprintf("`%s` %.0f", e.k, float64(e.v)*scale))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// withBed runs f on a fresh bed of n Nodes with the CCM started and every Node
// initialised, and closes the bed afterwards.
func withBed(o options, n int, f func(b *bed) error) error {
	b, err := newBed(o, n)
	if err != nil {
		return err
	}
	defer b.close()
	if err := b.startCCM(); err != nil {
		return err
	}
	if err := b.waitInitialised(10 * time.Minute); err != nil {
		return err
	}
	return f(b)
}

// lbService is a LoadBalancer Service with the options' annotations and
// ports: one (http), or o.ports of which every sixth is UDP (24: 20 TCP, 4
// UDP).
func lbService(ns, name string, o options) *v1.Service {
	ports := []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}}
	if o.ports > 1 {
		ports = nil
		for i := range o.ports {
			p := v1.ServicePort{Name: fmt.Sprintf("p%d", i), Protocol: v1.ProtocolTCP, Port: int32(8000 + i)}
			if i%6 == 5 {
				p.Protocol = v1.ProtocolUDP
			}
			ports = append(ports, p)
		}
	}
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: o.annotations},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: ports},
	}
}

// createServices creates m Services in namespace ns and waits for every ingress.
func (b *bed) createServices(ns string, m int, timeout time.Duration) (time.Duration, error) {
	ctx := context.Background()
	if _, err := b.env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := range m {
		if _, err := b.env.Client.CoreV1().Services(ns).Create(ctx, lbService(ns, fmt.Sprintf("svc-%05d", i), b.o), metav1.CreateOptions{}); err != nil {
			return 0, err
		}
	}
	deadline := start.Add(timeout)
	for {
		list, err := b.env.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			ready := 0
			for _, s := range list.Items {
				if len(s.Status.LoadBalancer.Ingress) > 0 {
					ready++
				}
			}
			if ready == m {
				return time.Since(start), nil
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("%d of %d Services have an ingress after %s (CCM log %s)", ready, m, timeout, b.log)
			}
		}
		time.Sleep(servicePoll(m))
	}
}

// servicePoll is how often createServices lists the Services: every 50 ms
// up to 100 of them, since the figure is a time and a coarser poll would add
// up to its period to it (500 ms made one CloudStack load balancer's 4.75 s
// read 5.1 s); every second for more, where 20 listings a second of
// thousands of Services would take the CPU the CCM is measured on.
func servicePoll(m int) time.Duration {
	if m <= 100 {
		return 50 * time.Millisecond
	}
	return time.Second
}

// waitSynced waits until the CCM's log says the service controller finished
// syncing m distinct Services of namespace ns (Events would not do: the event
// broadcaster drops what does not fit its queue), and says when.
func (b *bed) waitSynced(ns string, m int, timeout time.Duration) (time.Time, error) {
	// The framework's controller logs `Finished syncing service "ns/name"`,
	// Overcast's `"Finished syncing service" service="ns/name"`.
	re := regexp.MustCompile(`Finished syncing service"? (?:service=)?"` + regexp.QuoteMeta(ns) + `/([^"]+)"`)
	deadline := time.Now().Add(timeout)
	for {
		data, err := os.ReadFile(b.log)
		if err != nil {
			return time.Time{}, err
		}
		seen := map[string]bool{}
		for _, match := range re.FindAllSubmatch(data, -1) {
			seen[string(match[1])] = true
		}
		if len(seen) >= m {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("the service controller synced %d of %d Services in %s (CCM log %s)", len(seen), m, timeout, b.log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// quiet waits until the emulator has seen no call for d, and returns when the
// last call came (relative to start).
func (b *bed) quiet(start time.Time, d, timeout time.Duration) (time.Duration, error) {
	last, lastAt := -1, time.Now()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		r, w, _ := calls(b.emu)
		if r+w != last {
			last, lastAt = r+w, time.Now()
		} else if time.Since(lastAt) >= d {
			return lastAt.Sub(start), nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return 0, fmt.Errorf("the CCM never went quiet within %s", timeout)
}

// serviceScenarios: 4 (no-op resync of M Services) and 5 (one Node added).
// serviceFigures are the figures of the Service scenarios at N Nodes and M
// Services.
type serviceFigures struct {
	m                         int
	resyncT, resyncR, resyncW *figure
	addT, addW, rss           *figure
}

func newServiceFigures(n, m int) *serviceFigures {
	return &serviceFigures{m: m,
		resyncT: &figure{scenario: "4", name: fmt.Sprintf("no-op resync (CCM restart), M = %d: time", m), unit: "s", target: "≤ 60 s for 1,000"},
		resyncR: &figure{scenario: "4", name: fmt.Sprintf("no-op resync, M = %d: reads per Service", m), unit: "calls", target: "≤ 2"},
		resyncW: &figure{scenario: "4", name: fmt.Sprintf("no-op resync, M = %d: writes", m), unit: "calls", target: "0"},
		addT:    &figure{scenario: "5", name: fmt.Sprintf("one Node added, M = %d: time until every pool has it", m), unit: "s", target: "≤ 60 s"},
		addW:    &figure{scenario: "5", name: fmt.Sprintf("one Node added, M = %d: writes per pool", m), unit: "calls", target: "1 (a batch member update)"},
		rss:     &figure{scenario: "7", name: fmt.Sprintf("overcast-ccm peak RSS, N = %d, M = %d (creating the load balancers, or resyncing them)", n, m), unit: "MiB", target: "≤ 150 MiB at N = 2,000, M = 1,000"},
	}
}

func serviceScenarios(o options, n, m int, want map[string]bool) ([]*figure, error) {
	f := newServiceFigures(n, m)
	for r := range o.runs {
		fmt.Printf("== M=%d run %d/%d\n", m, r+1, o.runs)
		if err := withBed(o, n, func(b *bed) error { return f.run(b, want) }); err != nil {
			return nil, err
		}
	}
	var out []*figure
	if want["resync"] {
		out = append(out, f.resyncT, f.resyncR, f.resyncW)
	}
	if want["addnode"] {
		out = append(out, f.addT, f.addW)
	}
	if want["rss"] {
		out = append(out, f.rss)
	}
	return out, nil
}

// run is one run: M Services created, then the wanted scenarios, the peak
// RSS taken after each.
func (f *serviceFigures) run(b *bed, want map[string]bool) error {
	took, err := b.createServices("bench", f.m, 30*time.Minute)
	if err != nil {
		return err
	}
	fmt.Printf("   created %d Services in %.1fs\n", f.m, took.Seconds())
	peak := 0.0
	measure := func() {
		if v, err := b.peakRSS(); err == nil {
			peak = max(peak, v)
		}
	}
	defer func() {
		if want["rss"] {
			f.rss.values = append(f.rss.values, peak)
			fmt.Printf("   peak RSS %.1f MiB\n", peak)
		}
	}()
	if want["resync"] {
		if _, err := b.quiet(time.Now(), 5*time.Second, 10*time.Minute); err != nil {
			return err
		}
		measure()
		if err := f.resync(b); err != nil {
			return err
		}
	}
	if want["addnode"] {
		if err := f.addNode(b); err != nil {
			return err
		}
	}
	if _, err := b.quiet(time.Now(), 5*time.Second, 10*time.Minute); err != nil {
		return err
	}
	measure()
	return nil
}

// resync restarts the CCM and measures its no-op resync of every Service.
func (f *serviceFigures) resync(b *bed) error {
	b.stopCCM()
	b.emu.ResetCalls()
	start := time.Now()
	// The service controller logs each Service it has synced at V(4)
	// (its file is controller.go): done when every Service has been
	// synced again and the cloud calls stopped.
	if err := b.startCCM("--vmodule=controller=4"); err != nil {
		return err
	}
	synced, err := b.waitSynced("bench", f.m, 20*time.Minute)
	if err != nil {
		return err
	}
	lastCall, err := b.quiet(start, 10*time.Second, 20*time.Minute)
	if err != nil {
		return err
	}
	took := max(synced.Sub(start), lastCall)
	reads, writes, byOp := calls(b.emu)
	f.resyncT.values = append(f.resyncT.values, took.Seconds())
	f.resyncR.values = append(f.resyncR.values, float64(reads)/float64(f.m))
	f.resyncW.values = append(f.resyncW.values, float64(writes))
	f.resyncR.detail = topOps(byOp, 1)
	fmt.Printf("   resync %.1fs, %d reads, %d writes\n", took.Seconds(), reads, writes)
	return nil
}

// addNode registers one more Node and measures until every pool has it.
func (f *serviceFigures) addNode(b *bed) error {
	if _, err := b.quiet(time.Now(), 5*time.Second, 10*time.Minute); err != nil {
		return err
	}
	b.emu.ResetCalls()
	name := "bench-node-added"
	_, ip := b.emu.AddMachine(name)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	changed, err := b.serviceChanges(ctx, "bench")
	if err != nil {
		return err
	}
	start := time.Now()
	k, err := b.env.RegisterKubelet(context.Background(), name, ip)
	if err != nil {
		return err
	}
	b.kubelets = append(b.kubelets, k)
	took, err := b.quiet(start, 10*time.Second, 20*time.Minute)
	if err != nil {
		return err
	}
	_, writes, byOp := calls(b.emu)
	f.addT.values = append(f.addT.values, took.Seconds())
	f.addW.values = append(f.addW.values, float64(writes)/float64(f.m))
	f.addW.detail = fmt.Sprintf("%s; Services changed in Kubernetes: %d", topOps(byOp, 1), changed.Load())
	fmt.Printf("   add node %.1fs, %d writes, %d Service changes\n", took.Seconds(), writes, changed.Load())
	return nil
}

// serviceChanges counts the changes of the Services of namespace ns (each
// sent to every Service watcher: kube-proxy on every Node) until ctx ends.
func (b *bed) serviceChanges(ctx context.Context, ns string) (*atomic.Int64, error) {
	// From now (the Services as they are come as ADDED events, not counted).
	w, err := b.env.Client.CoreV1().Services(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var n atomic.Int64
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified {
				n.Add(1)
			}
		}
	}()
	return &n, nil
}

// timed creates m Services in namespace ns, waits for every ingress, and
// notes the cloud calls they made in cost (a value, and by operation in its
// detail).
func (b *bed) timed(ns string, m int, timeout time.Duration, cost *figure) (time.Duration, error) {
	b.emu.ResetCalls()
	t, err := b.createServices(ns, m, timeout)
	if err != nil {
		return 0, err
	}
	reads, writes, byOp := calls(b.emu)
	cost.values = append(cost.values, float64(reads+writes))
	cost.detail = fmt.Sprintf("%d reads, %d writes: %s", reads, writes, topOps(byOp, 1))
	return t, nil
}

// createScenario: 6 (100 Services at once vs one).
func createScenario(o options) ([]*figure, error) {
	one := &figure{scenario: "6", name: "one LB Service: time to ingress", unit: "s", target: "≤ 3.0 s (the peer's)"}
	oneCalls := &figure{scenario: "6", name: "one LB Service: cloud API calls", unit: "calls", target: "≤ 10"}
	hundred := &figure{scenario: "6", name: "100 LB Services at once: time until all have an ingress", unit: "s"}
	ratio := &figure{scenario: "6", name: "100 at once ÷ one", unit: "×", target: "≤ 2"}
	for r := range o.runs {
		fmt.Printf("== create run %d/%d\n", r+1, o.runs)
		err := withBed(o, 3, func(b *bed) error {
			t1, err := b.timed("one", 1, 10*time.Minute, oneCalls)
			if err != nil {
				return err
			}
			b.emu.ResetCalls()
			t100, err := b.createServices("hundred", 100, 30*time.Minute)
			if err != nil {
				return err
			}
			reads, writes, byOp := calls(b.emu)
			hundred.detail = fmt.Sprintf("%d reads (%.1f a second), %d writes: %s", reads, float64(reads)/t100.Seconds(), writes, topOps(byOp, 1))
			one.values = append(one.values, t1.Seconds())
			hundred.values = append(hundred.values, t100.Seconds())
			ratio.values = append(ratio.values, t100.Seconds()/t1.Seconds())
			fmt.Printf("   one %.1fs, 100 %.1fs\n", t1.Seconds(), t100.Seconds())
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return []*figure{one, oneCalls, hundred, ratio}, nil
}

func render(o options, figures []*figure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| # | Figure | Median | Min | Max | Target |\n|---|---|---|---|---|---|\n")
	for _, f := range figures {
		med, lo, hi := f.median()
		fmt.Fprintf(&b, "| %s | %s | %s %s | %s | %s | %s |\n", f.scenario, f.name, num(med), f.unit, num(lo), num(hi), f.target)
	}
	for _, f := range figures {
		if f.detail != "" {
			fmt.Fprintf(&b, "\n%s (%s), by operation in the last run: %s\n", f.name, f.unit, f.detail)
		}
	}
	fmt.Fprintf(&b, "\nRuns: %d each. Emulator: %s a call, %s provisioning. Kubelets post NodeReady every %s. CCM: %s %s %s; extra [Global]: %s.\n",
		o.runs, o.latency, o.provisioning, o.heartbeat, strings.Join(o.ccmEnv, " "), o.ccm, strings.Join(o.ccmArgs, " "), strings.Join(o.global, " "))
	fmt.Fprintf(&b, "Command: `go run ./bench %s`\n", strings.Join(os.Args[1:], " "))
	return b.String()
}

const (
	beginMark = "<!-- bench:begin -->"
	endMark   = "<!-- bench:end -->"
)

// writeReport puts the report between the markers of an existing file, leaving
// the prose around them, or writes the whole file when it has no markers.
func writeReport(path, report string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	before, rest, ok := strings.Cut(string(old), beginMark)
	if !ok {
		return os.WriteFile(path, []byte(report), 0o644)
	}
	_, after, ok := strings.Cut(rest, endMark)
	if !ok {
		return fmt.Errorf("%s has %s but no %s", path, beginMark, endMark)
	}
	return os.WriteFile(path, []byte(before+beginMark+"\n"+report+endMark+after), 0o644)
}

// num prints a figure with one decimal, or three significant digits below 1
// (0.009 reads per Service is not 0.0).
func num(v float64) string {
	if v != 0 && v < 1 && v > -1 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
