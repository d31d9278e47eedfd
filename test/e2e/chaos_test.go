package e2e

// The chaos suite's cases on each cloud's emulator (issue 21). `make test`
// runs their short forms; `make chaos` runs them long (OVERCAST_CHAOS_OUTAGE,
// e.g. 10m) and writes a row per cloud to OVERCAST_CHAOS_REPORT, which
// docs/reliability.md quotes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/kit"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
	"github.com/overcast-ccm/overcast/test/framework"
)

// chaosCloud is a cloud's emulator as the chaos cases need it.
type chaosCloud struct {
	name    string
	server  *core.Server
	conf    string
	machine func(name string) (ip string)
	objects func() map[string]int
	// secrets are the credential's secret parts, as they appear in conf.
	secrets []string
}

// chaosClouds are the clouds with an emulator, from the registry: each
// starts its emulator with a machine subnet of its own (third) and public
// addresses apart from every other cloud's.
var chaosClouds = func() (out []chaosStart) {
	for i, name := range kit.EmulatedNames() {
		out = append(out, chaosStart{name, func(t *testing.T, third int) chaosCloud { return startChaosCloud(t, name, i, third) }})
	}
	return out
}()

// chaosStart starts a cloud's emulator for a case.
type chaosStart struct {
	name  string
	start func(t *testing.T, third int) chaosCloud
}

// startChaosCloud starts the emulator of cloud (the i-th emulated one) for a
// case, stopped at its end.
func startChaosCloud(t *testing.T, cloud string, i, third int) chaosCloud {
	t.Helper()
	k, err := kit.Emulated(cloud)
	require.NoError(t, err)
	e, err := k.Emulate(kit.EmulatorOptions{Provisioning: 300 * time.Millisecond,
		MachineCIDR: fmt.Sprintf("127.0.%d.0/24", third), PublicCIDR: fmt.Sprintf("127.%d.%d.0/24", 2+i, third)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return chaosCloud{name: cloud, server: e.Core(), conf: e.CloudConfig(), objects: e.Objects, secrets: e.Secrets(),
		machine: func(name string) string { _, ip := e.AddMachine(name); return ip }}
}

// outageFaults are the ways the cloud fails in turn during an outage: what
// an API down, overloaded, unreachable, or behind an IAM mistake answers.
var outageFaults = []struct {
	name string
	f    core.Fault
}{
	{"500", core.Fault{Status: 500}},
	{"503", core.Fault{Status: 503, RetryAfter: 5 * time.Second}},
	{"timeout", core.Fault{Hang: true}},
	{"reset", core.Fault{Mangle: core.MangleReset}},
	{"401", core.Fault{Status: 401}},
	{"403", core.Fault{Status: 403}},
	{"404", core.Fault{Status: 404}},
}

// chaosDuration is how long a case's fault lasts: short in `make test`,
// the value of env (e.g. 10m) under `make chaos`.
func chaosDuration(t *testing.T, env string, short time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return short
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "%s", env)
	return d
}

// chaosReport appends a row to OVERCAST_CHAOS_REPORT, when set.
var chaosReportMu sync.Mutex

func chaosReport(t *testing.T, row string) {
	t.Logf("chaos: %s", row)
	path := os.Getenv("OVERCAST_CHAOS_REPORT")
	if path == "" {
		return
	}
	chaosReportMu.Lock()
	defer chaosReportMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	defer f.Close()
	_, err = fmt.Fprintln(f, row)
	require.NoError(t, err)
}

// replicas starts two overcast-ccm processes on the cloud under leader
// election and n Nodes of machines named prefix-node-<i>, initialised.
func (c chaosCloud) replicas(t *testing.T, prefix string, n int) []*devenv.Kubelet {
	t.Helper()
	opts := c.ccmOptions(4*time.Second, 3*time.Second, 500*time.Millisecond)
	env.StartCCMProcess(t, c.name+"-a", opts)
	env.StartCCMProcess(t, c.name+"-b", opts)
	return c.nodes(t, prefix, n)
}

// ccmOptions runs overcast-ccm on the cloud under leader election with the
// given lease duration, renew deadline and retry period.
func (c chaosCloud) ccmOptions(lease, renew, retry time.Duration) framework.CCMOptions {
	return framework.CCMOptions{Cloud: c.name, CloudConfig: c.conf, ExtraArgs: []string{
		"--leader-elect=true", "--leader-elect-lease-duration=" + lease.String(), "--leader-elect-renew-deadline=" + renew.String(),
		"--leader-elect-retry-period=" + retry.String(), "--load-balancer-drift-period=5s",
	}}
}

// nodes adds n machines named prefix-node-<i> and their Nodes, and waits
// until the CCM has initialised them.
func (c chaosCloud) nodes(t *testing.T, prefix string, n int) []*devenv.Kubelet {
	t.Helper()
	var kubelets []*devenv.Kubelet
	for i := range n {
		name := fmt.Sprintf("%s-node-%d", prefix, i)
		kubelets = append(kubelets, env.NewKubelet(t, name, c.machine(name)))
	}
	for _, k := range kubelets {
		waitNodeInitialised(t, k.Name)
	}
	return kubelets
}

// nodesHarmed counts the kubelets' Nodes deleted, and those tainted out of
// service or shut down.
func nodesHarmed(t *testing.T, kubelets []*devenv.Kubelet) (deleted, tainted int) {
	t.Helper()
	deleted, tainted, err := env.NodesHarmed(context.Background(), kubelets)
	require.NoError(t, err)
	return deleted, tainted
}

// Case 1, the outage: every cloud call fails (500, 503, timeouts, resets,
// 401, 403, 404 for what exists, in turn) while half the Nodes are NotReady
// and Services are created, changed and deleted, with two replicas under
// leader election. No Node is deleted or tainted shut down, no address
// moves, calls are bounded by backoff, one Warning per Service at most per
// kind of failure, and everything converges soon after the cloud is back.
func TestChaosOutage(t *testing.T) {
	outage := chaosDuration(t, "OVERCAST_CHAOS_OUTAGE", 14*time.Second)
	for i, cloud := range chaosClouds {
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 85+i)
			kubelets := c.replicas(t, fmt.Sprintf("chaos%d", 85+i), 4)
			ns := namespace(t)
			addrs := map[string]string{}
			for _, name := range []string{"s1", "s2", "s3"} {
				lbService(t, ns, name, nil)
				addrs[name] = waitIngressIP(t, ns, name).String()
			}
			before := c.objects()
			ctx := context.Background()

			// The outage.
			perMinute := goThroughTheOutage(t, c, kubelets, ns, outage)

			// Recovery.
			back := time.Now()
			for _, name := range []string{"s1", "s2", "s4"} {
				waitCondition(t, ns, name, servicecontroller.ConditionReady, metav1.ConditionTrue, "")
			}
			require.NoError(t, devenv.Poll(2*time.Minute, tick, func() error {
				_, err := env.Client.CoreV1().Services(ns).Get(ctx, "s3", metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("s3 is still there: %w", err)
			}), "the Service deleted during the outage is deleted once the cloud is back")
			converged := time.Since(back)

			nodesDeleted, tainted := nodesHarmed(t, kubelets)
			moved := 0
			for _, name := range []string{"s1", "s2"} {
				if got := waitIngressIP(t, ns, name).String(); got != addrs[name] {
					moved++
				}
			}
			warnings, err := env.ServiceWarnings(ctx, ns)
			require.NoError(t, err)
			most := 0
			for _, n := range warnings {
				most = max(most, n)
			}
			after := c.objects()
			chaosReport(t, fmt.Sprintf("| outage | %s | %s | %.0f | %d | %d | %d | %d | %.0f s |",
				c.name, outage, perMinute, nodesDeleted, tainted, moved, most, converged.Seconds()))
			t.Logf("objects before %v, after %v; warnings per Service %v", before, after, warnings)

			assert.Zero(t, nodesDeleted, "no Node is deleted during an outage")
			assert.Zero(t, tainted, "no Node is tainted shut down during an outage")
			assert.Zero(t, moved, "no address moves")
			assert.LessOrEqual(t, most, len(outageFaults), "at most one Warning per Service per kind of failure, not one per retry")
			assert.Less(t, converged, 2*time.Minute, "every Service converged within 2 minutes of the recovery")
			for _, kind := range []string{"loadbalancers", "floatingips", "public-addresses", "loadBalancer"} {
				if n, ok := before[kind]; ok {
					// s3 went and s4 came: as many load balancers as before.
					assert.Equal(t, n, after[kind], "%s: as many as before the outage (s3 deleted, s4 created)", kind)
				}
			}
		})
	}
}

// goThroughTheOutage makes every cloud call fail, each of outageFaults in
// turn for an equal part of outage, while the first two Nodes are NotReady
// and Services of ns are created (s4), changed (s2) and deleted (s3). It
// returns the cloud calls made per minute meanwhile.
func goThroughTheOutage(t *testing.T, c chaosCloud, kubelets []*devenv.Kubelet, ns string, outage time.Duration) (perMinute float64) {
	ctx := context.Background()
	calls0, start := c.server.CallCount(), time.Now()
	kubelets[0].StopHeartbeats(true)
	kubelets[1].StopHeartbeats(true)
	phase := outage / time.Duration(len(outageFaults))
	for n, f := range outageFaults {
		c.server.ClearFaults()
		c.server.InjectFault(f.f)
		switch n {
		case 1:
			lbService(t, ns, "s4", nil)
		case 2:
			s2 := getService(t, ns, "s2")
			s2.Spec.Ports = append(s2.Spec.Ports, v1.ServicePort{Name: "alt", Protocol: v1.ProtocolTCP, Port: 8080})
			_, err := env.Client.CoreV1().Services(ns).Update(ctx, s2, metav1.UpdateOptions{})
			require.NoError(t, err)
		case 3:
			require.NoError(t, env.Client.CoreV1().Services(ns).Delete(ctx, "s3", metav1.DeleteOptions{}))
		}
		time.Sleep(phase)
	}
	c.server.ClearFaults()
	during := time.Since(start)
	perMinute = float64(c.server.CallCount()-calls0) / during.Minutes()
	for _, k := range kubelets[:2] {
		require.NoError(t, k.ResumeHeartbeats())
	}
	return perMinute
}

// Case 7, secrets: a run with the cloud's credential in its config, logs at
// -v=6, the cloud failing with 401 and 403 on the way; the credential's
// secret is in none of the logs, Events, Services, /metrics or doctor's
// output.
func TestChaosSecretsAreNeverShown(t *testing.T) {
	for i, cloud := range chaosClouds {
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 88+i)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			port := l.Addr().(*net.TCPAddr).Port
			require.NoError(t, l.Close())
			p := env.StartCCMProcess(t, c.name+"-secrets", framework.CCMOptions{Cloud: c.name, CloudConfig: c.conf, ExtraArgs: []string{
				"--v=6", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
				"--authentication-kubeconfig=" + env.CCMKubeconfig, "--authorization-kubeconfig=" + env.CCMKubeconfig,
				"--load-balancer-drift-period=2s",
			}})
			name := fmt.Sprintf("secrets%d-node", 88+i)
			k := env.NewKubelet(t, name, c.machine(name))
			waitNodeInitialised(t, k.Name)
			ns := namespace(t)
			lbService(t, ns, "s", nil)
			waitIngressIP(t, ns, "s")
			ctx := context.Background()
			for _, status := range []int{401, 403} {
				c.server.InjectFault(core.Fault{Status: status})
				lbService(t, ns, fmt.Sprintf("s%d", status), nil)
				time.Sleep(4 * time.Second)
				c.server.ClearFaults()
			}
			waitIngressIP(t, ns, "s401")
			deleteService(t, ns, "s403")

			tok := env.MetricsToken(t, ns)
			code, metrics, err := devenv.GetSecurePort(t.Context(), port, "/metrics", tok)
			require.NoError(t, err)
			require.Equal(t, 200, code)
			events, err := env.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			svcs, err := env.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			ej, err := json.Marshal(events)
			require.NoError(t, err)
			sj, err := json.Marshal(svcs)
			require.NoError(t, err)
			ccm, err := env.CCMBinary()
			require.NoError(t, err)
			doctor, _ := framework.RunDoctor(t, filepath.Join(filepath.Dir(ccm), "overcast"), c.name, c.conf, "--kubeconfig="+env.AdminKubeconfig, "--timeout=1m")
			logs := p.Output()
			require.Greater(t, len(logs), 10000, "the logs at -v=6 say a lot")
			require.NotEmpty(t, c.secrets)
			hits := 0
			for what, text := range map[string]string{"logs": logs, "Events": string(ej), "Services": string(sj), "/metrics": metrics, "doctor": doctor} {
				for _, secret := range c.secrets {
					if strings.Contains(text, secret) {
						hits++
						t.Errorf("the credential's secret is in the %s", what)
					}
				}
			}
			chaosReport(t, fmt.Sprintf("| secrets | %s | %d | %d KiB |", c.name, hits, (len(logs)+len(ej)+len(sj)+len(metrics)+len(doctor))>>10))
		})
	}
}

// Case 3, throttling: half of all cloud calls answered 429 with
// Retry-After, with two replicas under leader election. Services created
// and changed meanwhile converge while it lasts; the calls stay far within
// the client's budget (cloudapi's 100 reads and 50 writes a second).
func TestChaosThrottling(t *testing.T) {
	throttle := chaosDuration(t, "OVERCAST_CHAOS_THROTTLE", 15*time.Second)
	for i, cloud := range chaosClouds {
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 91+i)
			c.replicas(t, fmt.Sprintf("throttle%d", 91+i), 2)
			ns := namespace(t)
			calls0, start := c.server.CallCount(), time.Now()
			c.server.StartTrace()
			c.server.InjectFault(core.Fault{Status: 429, RetryAfter: time.Second, Rate: 0.5})
			for _, name := range []string{"t1", "t2", "t3"} {
				lbService(t, ns, name, nil)
			}
			for _, name := range []string{"t1", "t2", "t3"} {
				waitCondition(t, ns, name, servicecontroller.ConditionReady, metav1.ConditionTrue, "")
			}
			t2 := getService(t, ns, "t2")
			t2.Spec.Ports = append(t2.Spec.Ports, v1.ServicePort{Name: "alt", Protocol: v1.ProtocolTCP, Port: 8080})
			_, err := env.Client.CoreV1().Services(ns).Update(context.Background(), t2, metav1.UpdateOptions{})
			require.NoError(t, err)
			t2 = waitCondition(t, ns, "t2", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
			converged := time.Since(start)
			if rest := throttle - converged; rest > 0 {
				time.Sleep(rest)
			}
			throttled := 0
			for _, call := range c.server.Calls() {
				if call.Code == 429 {
					throttled += call.Count
				}
			}
			c.server.ClearFaults()
			during := time.Since(start)
			perMinute := float64(c.server.CallCount()-calls0) / during.Minutes()
			soonest, early := retriesAfter429(c.server.Trace())
			chaosReport(t, fmt.Sprintf("| throttling | %s | %s | %.0f | %d | %.2f s | %d | %.0f s |", c.name, throttle, perMinute, throttled,
				soonest.Seconds(), len(early), converged.Seconds()))
			assert.Positive(t, throttled, "calls were answered 429")
			assert.Empty(t, early, "no call answered 429 (Retry-After: 1) is made again within the second")
			assert.Less(t, perMinute, 150.0*60, "within the client's budget")
			assert.Len(t, t2.Status.LoadBalancer.Ingress, 1)
		})
	}
}

// retriesAfter429 reads a trace: for each call answered 429, the time until
// the same call (the same object, the same request) was made again. It
// returns the shortest such time, and the calls made again within 900 ms
// (the throttling case answers Retry-After: 1).
func retriesAfter429(trace []core.Traced) (soonest time.Duration, early []string) {
	last := map[string]core.Traced{}
	soonest = -1
	for _, c := range trace {
		if !attributable(c.Object) {
			continue
		}
		if prev, ok := last[c.Object]; ok && prev.Code == http.StatusTooManyRequests {
			gap := c.At.Sub(prev.At)
			if soonest < 0 || gap < soonest {
				soonest = gap
			}
			if gap < 900*time.Millisecond {
				early = append(early, fmt.Sprintf("%s after %s", c.Object, gap.Round(time.Millisecond)))
			}
		}
		last[c.Object] = c
	}
	return soonest, early
}

// attributable says whether a traced call names the object it is for, so
// that two calls of the same request are one object's. CloudStack's
// associateIpAddress names only the network: every Service's association
// is the same request (the server chooses the address), and two Services
// associating within a second of a 429 are not one retried too soon (seen
// in CI: three new Services' associations a few ms apart).
func attributable(object string) bool {
	return !strings.Contains(object, "command=associateIpAddress&")
}

// supervisor keeps replicas of overcast-ccm running as the kubelet keeps a
// Pod's container: one that exits (or is killed) is started again, and
// counted.
type supervisor struct {
	t       *testing.T
	name    string
	opts    framework.CCMOptions
	mu      sync.Mutex
	procs   []*framework.ProcessCCM
	started int
	exits   []string // "<replica>: exit <code> at <time since start>"
	begin   time.Time
	stop    chan struct{}
	done    chan struct{}
}

func supervise(t *testing.T, name string, n int, opts framework.CCMOptions) *supervisor {
	s := &supervisor{t: t, name: name, opts: opts, begin: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	for range n {
		s.procs = append(s.procs, s.start())
	}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-t.Context().Done(): // the test is ending: its cleanups stop the processes
				return
			case <-time.After(200 * time.Millisecond):
			}
			s.mu.Lock()
			for i, p := range s.procs {
				if done, code := p.Exited(); done {
					s.exits = append(s.exits, fmt.Sprintf("%s: exit %d after %s", filepath.Base(p.Log), code, time.Since(s.begin).Round(time.Second)))
					s.procs[i] = s.start()
				}
			}
			s.mu.Unlock()
		}
	}()
	t.Cleanup(s.halt)
	return s
}

func (s *supervisor) start() *framework.ProcessCCM {
	s.started++
	return env.StartCCMProcess(s.t, fmt.Sprintf("%s-%d", s.name, s.started), s.opts)
}

// halt stops restarting; the processes end with the test.
func (s *supervisor) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// Leader is the live replica that says it acquired the leader Lease, or nil.
func (s *supervisor) Leader() *framework.ProcessCCM {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if done, _ := p.Exited(); !done && strings.Contains(p.Output(), "Successfully acquired lease") {
			return p
		}
	}
	return nil
}

// Exits are the replicas' exits so far.
func (s *supervisor) Exits() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.exits)
}

// Case 8, the apiserver gone: both replicas reach the apiserver through a
// proxy that is cut (connections refused and closed) for a while, as when
// the control plane is down or being upgraded, while a Service is created,
// another deleted and a Node stops reporting. The leader cannot renew its
// Lease and exits once, as every controller manager does; the replica that
// comes back waits for the apiserver instead of exiting again (no crash
// loop). Once the apiserver is back, everything converges, and no Node was
// deleted or tainted.
func TestChaosAPIServerGone(t *testing.T) {
	gone := chaosDuration(t, "OVERCAST_CHAOS_APISERVER_GONE", 10*time.Second)
	long := os.Getenv("OVERCAST_CHAOS_APISERVER_GONE") != ""
	for i, cloud := range chaosClouds {
		t.Run(cloud.name, func(t *testing.T) {
			if !long && i > 0 {
				// What is tested is the manager's (leader election, informers),
				// the same on every cloud: the short form runs on the first.
				t.Skip("the short form runs on " + chaosClouds[0].name + "; make chaos runs every cloud")
			}
			c := cloud.start(t, 97+i)
			proxy := framework.NewProxy(t, env.APIServerAddr())
			opts := c.ccmOptions(4*time.Second, 3*time.Second, 500*time.Millisecond)
			opts.ExtraArgs = append(opts.ExtraArgs, "--kubeconfig="+env.KubeconfigVia(t, proxy.Addr()))
			s := supervise(t, c.name, 2, opts)
			kubelets := c.nodes(t, fmt.Sprintf("gone%d", 97+i), 3)
			ns := namespace(t)
			lbService(t, ns, "before", nil)
			addr := waitIngressIP(t, ns, "before").String()
			lbService(t, ns, "deleted", nil)
			waitIngressIP(t, ns, "deleted")
			ctx := context.Background()

			proxy.Cut()
			cut := time.Now()
			kubelets[0].StopHeartbeats(true)
			lbService(t, ns, "during", nil)
			require.NoError(t, env.Client.CoreV1().Services(ns).Delete(ctx, "deleted", metav1.DeleteOptions{}))
			time.Sleep(gone)
			exitsGone := s.Exits()
			require.NoError(t, proxy.Restore())
			back := time.Now()
			require.NoError(t, kubelets[0].ResumeHeartbeats())

			waitCondition(t, ns, "during", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
			require.NoError(t, devenv.Poll(2*time.Minute, tick, func() error {
				if _, err := env.Client.CoreV1().Services(ns).Get(ctx, "deleted", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("the Service deleted meanwhile is still there (%w)", err)
				}
				return nil
			}))
			converged := time.Since(back)
			time.Sleep(5 * time.Second) // a crash loop would show now
			exits := s.Exits()
			s.halt()

			deleted, tainted := nodesHarmed(t, kubelets)
			chaosReport(t, fmt.Sprintf("| apiserver gone | %s | %s | %d | %d | %d | %.0f s |", c.name, gone, len(exits), deleted, tainted, converged.Seconds()))
			t.Logf("exits while the apiserver was gone (%s): %v; in all: %v", time.Since(cut).Round(time.Second), exitsGone, exits)
			assert.LessOrEqual(t, len(exits), 1, "the leader exits once at most (its lease lost), no crash loop: %v", exits)
			assert.Equal(t, addr, waitIngressIP(t, ns, "before").String(), "the address stays")
			assert.Zero(t, deleted, "no Node deleted")
			assert.Zero(t, tainted, "no Node tainted")
			assert.Less(t, converged, 2*time.Minute)
		})
	}
}

// cloudWrites counts the calls that change the cloud (token requests aside).
func cloudWrites(s *core.Server) (n int) {
	for _, c := range s.Calls() {
		if c.Service != "identity" && c.Method != http.MethodGet && c.Method != http.MethodHead {
			n += c.Count
		}
	}
	return n
}

// settled waits until the cloud has seen no write for a few seconds.
func settled(t *testing.T, s *core.Server) {
	t.Helper()
	last, quiet := -1, 0
	require.NoError(t, devenv.Poll(time.Minute, time.Second, func() error {
		if n := cloudWrites(s); n != last {
			last, quiet = n, 0
		} else {
			quiet++
		}
		if quiet < 3 {
			return errors.New("the cloud is still being written")
		}
		return nil
	}))
}

// Case 8, an upgrade: what overcast-ccm of an earlier commit
// (OVERCAST_PREVIOUS_REV, default HEAD~1) built is adopted by this one as it
// is: the same addresses, and not one write to the cloud.
func TestChaosUpgradeAdoptsWhatThePreviousCommitBuilt(t *testing.T) {
	rev := os.Getenv("OVERCAST_PREVIOUS_REV")
	if rev == "" {
		rev = "HEAD~1"
	}
	prev, commit, err := env.CCMBinaryAt(t.Context(), rev)
	if err != nil {
		t.Skipf("no earlier overcast-ccm to upgrade from: %v", err)
	}
	for i, cloud := range chaosClouds {
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 100+i)
			opts := framework.CCMOptions{Cloud: c.name, CloudConfig: c.conf, ExtraArgs: []string{"--load-balancer-drift-period=2s"}}
			old := env.StartBinary(t, prev, c.name+"-previous", opts)
			c.nodes(t, fmt.Sprintf("upgrade%d", 100+i), 2)
			base := c.objects()
			ns := namespace(t)
			ann := mustKit(t, c.name).Churn
			lbService(t, ns, "plain", nil)
			lbService(t, ns, "full", func(s *v1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: "alt", Protocol: v1.ProtocolTCP, Port: 8080})
				s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
				s.Annotations = map[string]string{ann[0]: ann[1]}
			})
			addrs := map[string]string{}
			for _, name := range []string{"plain", "full"} {
				addrs[name] = waitIngressIP(t, ns, name).String()
			}
			settled(t, c.server)
			before := c.objects()
			old.Stop()

			c.server.ResetCalls()
			env.StartCCMProcess(t, c.name+"-current", opts)
			for _, name := range []string{"plain", "full"} {
				svc := waitCondition(t, ns, name, servicecontroller.ConditionReady, metav1.ConditionTrue, "")
				assert.Equal(t, addrs[name], svc.Status.LoadBalancer.Ingress[0].IP, "%s keeps its address", name)
			}
			time.Sleep(5 * time.Second) // two drift checks
			writes := cloudWrites(c.server)
			chaosReport(t, fmt.Sprintf("| upgrade | %s | %.12s | %d | %d |", c.name, commit, writes, len(addrs)))
			assert.Zero(t, writes, "the load balancers of %.12s are adopted without a change: %v", commit, c.server.Calls())
			assert.Equal(t, before, c.objects())
			// And deleted as this one's own (while it runs: the cleanups
			// stop it first).
			for _, name := range []string{"plain", "full"} {
				deleteService(t, ns, name)
			}
			assert.Equal(t, base, c.objects(), "nothing of them is left")
		})
	}
}
