package openstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/devenv"
)

// harness runs one of the harness's scripts (test/openstack/<script>.sh).
func harness(t *testing.T, script string) {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "bash", filepath.Join(env.RepoRoot, "test", "openstack", script+".sh"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s.sh:\n%s", script, out)
}

// converged waits until the Service's LoadBalancerReady condition is True for
// its current generation and returns its address.
func converged(t *testing.T, ns, name string, within time.Duration) string {
	t.Helper()
	var addr string
	require.NoError(t, devenv.Poll(within, time.Second, func() error {
		s, err := env.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, "LoadBalancerReady")
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != s.Generation || len(s.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("%s/%s has not converged: %+v", ns, name, c)
		}
		addr = s.Status.LoadBalancer.Ingress[0].IP
		return nil
	}), "%s/%s", ns, name)
	return addr
}

// The outage on the real OpenStack (issue 21, case 1; `make chaos` with the
// harness up): every service of the harness stopped (its own down.sh: the
// APIs, the database, the message bus) for OVERCAST_CHAOS_OPENSTACK_OUTAGE,
// with two replicas under leader election, while a Node stops reporting, a
// Service is created, one changed and one deleted; then up.sh. No Node is
// deleted or tainted, no address moves, one Warning per Service at most per
// kind of failure, and everything converges within 2 minutes of the cloud's
// return.
func TestOutageOfTheRealOpenStack(t *testing.T) {
	v := os.Getenv("OVERCAST_CHAOS_OPENSTACK_OUTAGE")
	if v == "" {
		t.Skip("set OVERCAST_CHAOS_OPENSTACK_OUTAGE (e.g. 10m) to stop the harness's OpenStack for that long (make chaos does)")
	}
	outage, err := time.ParseDuration(v)
	require.NoError(t, err)
	kubelets := twoReplicasAndTwoNodes(t)
	ns := lbNamespace(t)
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services(ns)
	createOutageService(t, ns, "kept")
	createOutageService(t, ns, "deleted")
	addr := converged(t, ns, "kept", 5*time.Minute)
	converged(t, ns, "deleted", 5*time.Minute)

	harness(t, "down")
	down := time.Now()
	t.Cleanup(func() {
		if t.Failed() { // leave the harness up for the tests after
			_ = exec.CommandContext(context.Background(), "bash", filepath.Join(env.RepoRoot, "test", "openstack", "up.sh")).Run()
		}
	})
	kubelets[0].StopHeartbeats(true)
	createOutageService(t, ns, "during")
	_, err = svcs.Patch(ctx, "kept", types.StrategicMergePatchType, []byte(`{"spec":{"ports":[{"name":"alt","protocol":"TCP","port":8080}]}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, svcs.Delete(ctx, "deleted", metav1.DeleteOptions{}))
	time.Sleep(time.Until(down.Add(outage)))
	require.NoError(t, kubelets[0].ResumeHeartbeats())
	harness(t, "up")
	back := time.Now()

	for _, name := range []string{"kept", "during"} {
		converged(t, ns, name, 2*time.Minute)
	}
	require.NoError(t, devenv.Poll(2*time.Minute, time.Second, func() error {
		if _, err := svcs.Get(ctx, "deleted", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Service deleted during the outage is still there (%w)", err)
		}
		return nil
	}))
	after := time.Since(back)

	deleted, tainted, err := env.NodesHarmed(ctx, kubelets)
	require.NoError(t, err)
	warnings, err := env.ServiceWarnings(ctx, ns)
	require.NoError(t, err)
	most := 0
	for _, n := range warnings {
		most = max(most, n)
	}
	moved := 0
	if got := converged(t, ns, "kept", time.Minute); got != addr {
		moved++
	}
	row := fmt.Sprintf("| outage | real OpenStack (all services stopped) | %s | - | %d | %d | %d | %d | %.0f s |",
		outage, deleted, tainted, moved, most, after.Seconds())
	t.Logf("chaos: %s; warnings %v", row, warnings)
	reportChaosRow(t, row)
	assert.Zero(t, deleted, "no Node is deleted during an outage")
	assert.Zero(t, tainted, "no Node is tainted shut down during an outage")
	assert.Zero(t, moved, "the address stays")
	assert.LessOrEqual(t, most, 3, "a few Warnings per Service, not one per retry: %v", warnings)
	assert.Less(t, after, 2*time.Minute, "converged within 2 minutes of the cloud's return")
}

// twoReplicasAndTwoNodes starts two overcast-ccm processes under leader
// election and two servers' Nodes, and waits until the Nodes are
// initialised. It returns their kubelets.
func twoReplicasAndTwoNodes(t *testing.T) []*devenv.Kubelet {
	var kubelets []*devenv.Kubelet
	for i := range 2 {
		name := fmt.Sprintf("os-outage-%d-%s", i, suffix())
		s := createServer(t, name)
		kubelets = append(kubelets, env.NewKubelet(t, name, s.fixedIP()))
	}
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF"))
	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "service"}
	opts.ExtraArgs = append(opts.ExtraArgs, "--leader-elect=true", "--leader-elect-lease-duration=4s",
		"--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms")
	env.StartCCMProcess(t, "outage-a", opts)
	env.StartCCMProcess(t, "outage-b", opts)
	for _, k := range kubelets {
		waitInitialised(t, k.Name)
	}
	return kubelets
}

// createOutageService creates the LoadBalancer Service ns/name; the test's
// end deletes it and waits, a while, until it is gone.
func createOutageService(t *testing.T, ns, name string) {
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services(ns)
	_, err := svcs.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.ServiceSpec{
		Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
		Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := svcs.Delete(context.Background(), name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			_ = devenv.Poll(3*time.Minute, time.Second, func() error {
				if _, err := svcs.Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s still there", name)
				}
				return nil
			})
		}
	})
}

// reportChaosRow appends the row to OVERCAST_CHAOS_REPORT, when set.
func reportChaosRow(t *testing.T, row string) {
	if path := os.Getenv("OVERCAST_CHAOS_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		_, err = fmt.Fprintln(f, row)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}
