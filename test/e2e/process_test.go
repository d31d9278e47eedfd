package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/test/framework"
)

func TestInvalidConfigExitsListingEveryProblem(t *testing.T) {
	p := env.StartCCMProcess(t, "bad-config", framework.CCMOptions{CloudConfig: `instances:
- name: Not_A_Node
  state: sleeping
- name: ok
  addresses: [{type: InternalIP, address: 300.1.1.1}]
reloadInterval: 1ms
loadBalancer:
  pols: []
  pools:
  - name: a
    addresses: ["127.0.0.0/8", "127.0.0.5-127.0.0.1"]
`})
	code := p.Wait(30 * time.Second)
	out := p.Output()
	assert.Equal(t, 2, code, "exit code of an invalid cloud config; output:\n%s", out)
	for _, want := range []string{
		"loadBalancer.pols: unknown key",
		"instances[0].name",
		"instances[0].state",
		"instances[1].addresses[0].address",
		"reloadInterval",
		"loadBalancer.pools[0].addresses[1]",
	} {
		assert.Contains(t, out, want)
	}
}

func TestManifestsAreValidAgainstTheAPIServer(t *testing.T) {
	// TestMain applied deploy/ server-side; check what the CCM relies on is there.
	_, err := env.Client.RbacV1().ClusterRoles().Get(t.Context(), "system:overcast-ccm", metav1.GetOptions{})
	require.NoError(t, err)
	d, err := env.Client.AppsV1().Deployments("kube-system").Get(t.Context(), "overcast-ccm", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	assert.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--leader-elect=true")
}

// Two replicas with leader election: only the leader serves a VIP, and when it dies
// the other takes over the same VIP. At no time do two processes listen on it.
func TestLeaderElectionNeverServesAVIPTwice(t *testing.T) {
	ns := namespace(t)
	opts := framework.CCMOptions{
		CloudConfig: autoConfig(`  - name: p
    addresses: ["127.1.31.0/28"]`),
		ExtraArgs: []string{
			"--leader-elect=true",
			"--leader-elect-lease-duration=4s",
			"--leader-elect-renew-deadline=3s",
			"--leader-elect-retry-period=500ms",
		},
	}
	a := env.StartCCMProcess(t, "replica-a", opts)
	b := env.StartCCMProcess(t, "replica-b", opts)
	pids := []int{a.Cmd.Process.Pid, b.Cmd.Process.Pid}

	k := env.NewKubelet(t, "le-node", "127.0.31.1")
	waitNodeInitialised(t, k.Name)
	svc := lbService(t, ns, "ha", nil)
	k.ServeService(t, svc, true)
	ip := waitIngressIP(t, ns, "ha")
	vip := netip.AddrPortFrom(ip, 80)
	waitTCP(t, netip.Addr{}, vip)

	holders := listeners(t, vip, pids)
	require.Len(t, holders, 1, "exactly one process listens on %s", vip)
	leader, standby := a, b
	if holders[0] == b.Cmd.Process.Pid {
		leader, standby = b, a
	}

	// Watch the VIP while the leader dies: never two listeners.
	stopWatch := make(chan struct{})
	maxHolders := make(chan int, 1)
	go func() {
		most := 0
		for {
			select {
			case <-stopWatch:
				maxHolders <- most
				return
			case <-time.After(50 * time.Millisecond):
				most = max(most, len(listeners(t, vip, pids)))
			}
		}
	}()
	leader.Kill()
	assert.Equal(t, k.Name, waitTCPLong(t, vip), "the standby serves the VIP after the leader died")
	close(stopWatch)
	assert.LessOrEqual(t, <-maxHolders, 1, "two processes listened on %s at once", vip)
	assert.Equal(t, []int{standby.Cmd.Process.Pid}, listeners(t, vip, pids))
	assert.Equal(t, ip, waitIngressIP(t, ns, "ha"), "the new leader keeps the address")

	deleteService(t, ns, "ha")
}

func waitTCPLong(t *testing.T, dst netip.AddrPort) string {
	t.Helper()
	var got string
	err := devenv.Poll(waitLong, tick, func() error {
		var err error
		got, err = devenv.RequestTCP(netip.Addr{}, dst)
		return err
	})
	require.NoError(t, err)
	return got
}

// listeners returns which of pids have a TCP socket listening on addr, read from
// /proc: the socket's inode in /proc/net/tcp, then each process's fds.
func listeners(t *testing.T, addr netip.AddrPort, pids []int) []int {
	t.Helper()
	inodes := map[string]bool{}
	f, err := os.Open("/proc/net/tcp")
	require.NoError(t, err)
	defer f.Close()
	a4 := addr.Addr().As4()
	want := fmt.Sprintf("%02X%02X%02X%02X:%04X", a4[3], a4[2], a4[1], a4[0], addr.Port())
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1] == want && fields[3] == "0A" { // 0A: LISTEN
			inodes["socket:["+fields[9]+"]"] = true
		}
	}
	var out []int
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd"
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // exited
		}
		for _, e := range entries {
			if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && inodes[l] {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func TestSecurePortServesHealthzAndMetrics(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	p := env.StartCCMProcess(t, "secure-port", framework.CCMOptions{
		CloudConfig: autoConfig(`  - name: p
    addresses: ["127.1.32.0/28"]`),
		ExtraArgs: []string{
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--authentication-kubeconfig=" + env.CCMKubeconfig,
			"--authorization-kubeconfig=" + env.CCMKubeconfig,
		},
	})
	// Scrape as Prometheus would: a ServiceAccount token allowed GET /metrics,
	// checked by the CCM through TokenReview and SubjectAccessReview.
	tok := env.MetricsToken(t, namespace(t))
	token := ""
	get := func(path string) (int, string, error) {
		return devenv.GetSecurePort(t.Context(), port, path, token)
	}
	require.NoError(t, devenv.Poll(waitShort, tick, func() error {
		if exited, code := p.Exited(); exited {
			return devenv.Permanent(fmt.Errorf("overcast-ccm exited with %d", code))
		}
		code, body, err := get("/healthz")
		if err != nil {
			return err
		}
		if code != http.StatusOK || body != "ok" {
			return fmt.Errorf("/healthz: %d %q", code, body)
		}
		return nil
	}))
	code, _, err := get("/metrics")
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, code, "anonymous users may not read /metrics")
	token = tok
	code, body, err := get("/metrics")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "rest_client_requests_total", "client-go metrics are on /metrics")
	assert.Contains(t, body, "workqueue_adds_total", "controller workqueue metrics are on /metrics")
	if _, set := os.LookupEnv("GOGC"); !set {
		assert.Regexp(t, `(?m)^go_gc_gogc_percent 50$`, body, "the collector runs at 50 % heap growth unless GOGC says otherwise")
	}
}

// SIGTERM (a Pod deleted, a rollout) stops the leader cleanly: it exits 0 and
// gives its Lease up, so the standby leads at its next retry instead of after
// the lease duration (60 s here, to make the difference plain).
func TestSIGTERMReleasesTheLeaderLease(t *testing.T) {
	opts := framework.CCMOptions{
		CloudConfig: autoConfig(`  - name: p
    addresses: ["127.1.32.0/28"]`),
		ExtraArgs: []string{
			"--leader-elect=true",
			"--leader-elect-lease-duration=60s",
			"--leader-elect-renew-deadline=40s",
			"--leader-elect-retry-period=1s",
		},
	}
	a := env.StartCCMProcess(t, "replica-a", opts)
	b := env.StartCCMProcess(t, "replica-b", opts)
	holder := func() string {
		l, err := env.Client.CoordinationV1().Leases("kube-system").Get(t.Context(), "cloud-controller-manager", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var leader, standby *framework.ProcessCCM
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		for _, p := range []*framework.ProcessCCM{a, b} {
			if strings.Contains(p.Output(), "Successfully acquired lease") {
				leader, standby = p, map[*framework.ProcessCCM]*framework.ProcessCCM{a: b, b: a}[p]
				return nil
			}
		}
		return fmt.Errorf("no leader yet")
	}))
	first := holder()
	require.NotEmpty(t, first)

	start := time.Now()
	require.NoError(t, leader.Cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, leader.Wait(15*time.Second), "the leader exits 0 on SIGTERM")
	assert.Contains(t, leader.Output(), "Released the leader Lease")
	require.NoError(t, devenv.Poll(30*time.Second, 100*time.Millisecond, func() error {
		if h := holder(); h == "" || h == first {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	}), "the standby leads well before the 60 s lease would have expired")
	t.Logf("failover after SIGTERM: %s (lease duration 60 s, retry period 1 s)", time.Since(start).Round(100*time.Millisecond))

	// The new leader, stopped the moment it has the Lease (before the
	// framework has initialised its cloud and controllers, as in a rollout
	// that ends a replica just after it took over), gives it up too: else
	// the next one waits out the 60 s.
	require.NoError(t, devenv.Poll(10*time.Second, 5*time.Millisecond, func() error {
		if strings.Contains(standby.Output(), "Successfully acquired lease") {
			return nil
		}
		return errors.New("the standby does not lead yet")
	}))
	require.NoError(t, standby.Cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, standby.Wait(15*time.Second), "the new leader exits 0 on SIGTERM")
	assert.Empty(t, holder(), "a leader stopped as it took the Lease releases it")
}
