package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"regexp"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/kit"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
	"github.com/overcast-ccm/overcast/test/framework"
)

// mustKit is the kit of cloud: its churn annotation, its load balancers'
// kinds.
func mustKit(t *testing.T, cloud string) kit.Kit {
	t.Helper()
	k, err := kit.Get(cloud)
	require.NoError(t, err)
	return k
}

// chaosCount is a count of a case: short in `make test`, the value of env
// under `make chaos`.
func chaosCount(t *testing.T, env string, short int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return short
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s", env)
	return n
}

// churn puts Services name-0 … name-<n-1> of ns through cycles of create,
// change of ports, of source ranges, of the annotation ann (its name and
// two values), and delete, each at
// its own pace, until stop is closed. It returns the number of steps done
// and the first error the apiserver gave that a client would not retry.
func churn(ns string, ann [3]string, n int, stop <-chan struct{}) (steps *int64, wait func() error) {
	var mu sync.Mutex
	var done int64
	var failed error
	var wg sync.WaitGroup
	ctx := context.Background()
	services := env.Client.CoreV1().Services(ns)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("churn-%d", i)
			for step := 0; ; step++ {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(rand.IntN(2000)) * time.Millisecond):
				}
				var err error
				switch step % 5 {
				case 0:
					_, err = services.Create(ctx, &v1.Service{
						ObjectMeta: metav1.ObjectMeta{Name: name},
						Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
							Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}}},
					}, metav1.CreateOptions{})
					if apierrors.IsAlreadyExists(err) {
						step-- // the last delete is still under way: create it again later
						err = nil
					}
				case 1, 2, 3:
					err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
						svc, err := services.Get(ctx, name, metav1.GetOptions{})
						if err != nil {
							return err
						}
						switch step % 5 {
						case 1:
							if len(svc.Spec.Ports) == 1 {
								svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "alt", Protocol: v1.ProtocolTCP, Port: 8080})
							} else {
								svc.Spec.Ports = svc.Spec.Ports[:1]
							}
						case 2:
							svc.Spec.LoadBalancerSourceRanges = [][]string{{"10.0.0.0/8"}, {"192.168.0.0/16", "172.16.0.0/12"}}[rand.IntN(2)]
						case 3:
							if svc.Annotations == nil {
								svc.Annotations = map[string]string{}
							}
							svc.Annotations[ann[0]] = ann[1+rand.IntN(2)]
						}
						_, err = services.Update(ctx, svc, metav1.UpdateOptions{})
						return err
					})
				case 4:
					err = services.Delete(ctx, name, metav1.DeleteOptions{})
				}
				if apierrors.IsNotFound(err) {
					err = nil // deleted while being changed: the next create makes it again
				}
				mu.Lock()
				done++
				if err != nil && failed == nil {
					failed = fmt.Errorf("%s, step %d: %w", name, step%5, err)
				}
				mu.Unlock()
			}
		}()
	}
	return &done, func() error {
		wg.Wait()
		return failed
	}
}

// deleteAllServices deletes every Service of ns at once, waits a little for
// a CCM to let them go, and then drops the finalizers of those left (no CCM
// runs any more when a failed test cleans up).
func deleteAllServices(t *testing.T, ns string) {
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services(ns)
	if l, err := svcs.List(ctx, metav1.ListOptions{}); err == nil {
		for _, s := range l.Items {
			_ = svcs.Delete(ctx, s.Name, metav1.DeleteOptions{})
		}
	}
	_ = devenv.Poll(30*time.Second, tick, func() error {
		l, err := svcs.List(ctx, metav1.ListOptions{})
		if err == nil && len(l.Items) > 0 {
			err = fmt.Errorf("%d Services left", len(l.Items))
		}
		return err
	})
	l, err := svcs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, s := range l.Items {
		_, _ = svcs.Patch(ctx, s.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	}
}

// leaseHolder is who holds the CCM's leader Lease ("" when nobody does).
func leaseHolder() string {
	l, err := env.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), "cloud-controller-manager", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

var leftoversLine = regexp.MustCompile(`(?m)^(\d+) leftover\(s\): .*; (\d+) removable\.$`)

// sweepCount is how many leftovers `overcast sweep` (a dry run) lists.
func sweepCount(t *testing.T, c chaosCloud) int {
	t.Helper()
	listed, _ := sweepCountOf(t, env, c)
	return listed
}

// sweepCountOf is how many leftovers it lists on the cluster of e, and how
// many of them it would remove (--delete).
func sweepCountOf(t *testing.T, e *framework.Env, c chaosCloud) (listed, removable int) {
	t.Helper()
	out, code := sweepOf(t, e, c.name, c.conf)
	require.Equal(t, 0, code, out)
	if strings.Contains(out, "No leftovers") {
		return 0, 0
	}
	m := leftoversLine.FindStringSubmatch(out)
	require.NotNil(t, m, "sweep's output has a count:\n%s", out)
	listed, _ = strconv.Atoi(m[1])
	removable, _ = strconv.Atoi(m[2])
	t.Logf("overcast sweep:\n%s", out)
	return listed, removable
}

// Case 2, crash and failover: the leader of two replicas is killed
// (SIGKILL) at random points, again and again, while Services go through
// create / change / delete cycles; the killed one comes back, as its Pod
// would. Then half the Services are kept and half deleted: each kept one
// has exactly one load balancer and address (no duplicate), nothing is left
// of the deleted ones (counted by listing the emulator and by `overcast
// sweep`, which must agree), and once the rest are deleted every kind of
// object is back to what it was before the first Service (listeners, pools,
// members, security groups and rules, tags, addresses).
func TestChaosCrashAndFailover(t *testing.T) {
	kills := chaosCount(t, "OVERCAST_CHAOS_KILLS", 3)
	services := chaosCount(t, "OVERCAST_CHAOS_SERVICES", 4)
	for i, cloud := range chaosClouds {
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 94+i)
			opts := c.ccmOptions(2*time.Second, 1500*time.Millisecond, 250*time.Millisecond)
			replicas := supervise(t, c.name, 2, opts)
			c.nodes(t, fmt.Sprintf("crash%d", 94+i), 3)
			baseline := c.objects()
			ns := namespace(t)
			t.Cleanup(func() { deleteAllServices(t, ns) })

			stop := make(chan struct{})
			steps, wait := churn(ns, mustKit(t, c.name).Churn, services, stop)
			failovers := killTheLeaderAgainAndAgain(t, replicas, kills)
			selfExits := len(replicas.Exits()) - kills // ended by themselves (e.g. a lost lease)
			replicas.halt()
			close(stop)
			require.NoError(t, wait(), "the churn's apiserver calls")
			lastKill := time.Now()

			// The end state: even Services kept (changed once more), odd ones deleted.
			kept, addrs := keepTheEvenDeleteTheOdd(t, ns, services)
			converged := time.Since(lastKill)

			// Count what is in the cloud against what the kept Services need.
			objects := c.objects()
			// More than one per kept Service is an orphan of a deleted one
			// or a duplicate of a kept one: the sweep lists the first.
			orphans := 0
			for _, kind := range mustKit(t, c.name).LoadBalancerKinds {
				orphans += max(objects[kind]-baseline[kind]-len(kept), 0)
			}
			duplicates := len(kept) - len(addrs) // two Services on one address
			swept := sweepCount(t, c)

			// Delete the rest: every kind is back to what it was.
			ctx := context.Background()
			for _, name := range kept {
				require.NoError(t, env.Client.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}))
			}
			for _, name := range kept {
				waitServiceGone(t, env, ns, name, 2*time.Minute)
			}
			after := c.objects()
			left := 0
			for kind, n := range after {
				left += max(n-baseline[kind], 0)
			}
			sweptAfter := sweepCount(t, c)

			slices.Sort(failovers)
			median, most := failovers[len(failovers)/2], failovers[len(failovers)-1]
			chaosReport(t, fmt.Sprintf("| crash | %s | %d | %d | %d | %d | %d | %.1f s | %.1f s | %d | %d | %d | %d | %.0f s |",
				c.name, kills, selfExits, services, *steps, len(kept), median.Seconds(), most.Seconds(),
				orphans, swept, duplicates, left, converged.Seconds()))
			t.Logf("objects: before %v, with %d kept %v, after %v", baseline, len(kept), objects, after)

			assert.Zero(t, orphans, "nothing is left of the deleted Services (by the emulator's listing)")
			assert.Equal(t, orphans, swept, "overcast sweep and the emulator's listing agree")
			assert.Zero(t, duplicates, "each kept Service has its own address")
			assert.Equal(t, baseline, after, "once every Service is deleted the cloud is as it was")
			assert.Zero(t, sweptAfter, "and the sweep finds nothing")
			assert.Less(t, converged, 2*time.Minute, "every Service converged within 2 minutes of the last kill")
		})
	}
}

// killTheLeaderAgainAndAgain kills the leader of the replicas (SIGKILL)
// kills times, each at a random point of its work, and waits each time for
// another to take the lease; the supervisor starts the killed one again,
// as its Pod would be. It returns how long each failover took.
func killTheLeaderAgainAndAgain(t *testing.T, replicas *supervisor, kills int) (failovers []time.Duration) {
	for k := range kills {
		var leader *framework.ProcessCCM
		require.NoError(t, devenv.Poll(time.Minute, 50*time.Millisecond, func() error {
			if leader = replicas.Leader(); leader == nil {
				return errors.New("no leader yet")
			}
			return nil
		}), "kill %d", k)
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Millisecond) // a random point of its work
		holder := leaseHolder()
		killed := time.Now()
		leader.Kill() // and the supervisor starts it again, as its Pod would be
		require.NoError(t, devenv.Poll(time.Minute, 20*time.Millisecond, func() error {
			if h := leaseHolder(); h == "" || h == holder {
				return fmt.Errorf("the lease is still %q's", h)
			}
			return nil
		}), "failover after kill %d", k)
		failovers = append(failovers, time.Since(killed))
	}
	return failovers
}

// keepTheEvenDeleteTheOdd brings the churned Services of ns to their end
// state: it deletes the odd ones, keeps the even ones (making them again if
// the churn had deleted them), waits until each kept one is Ready with one
// address and each deleted one is gone. It returns the kept Services and
// the Service of each address.
func keepTheEvenDeleteTheOdd(t *testing.T, ns string, services int) (kept []string, addrs map[string]string) {
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services(ns)
	for j := range services {
		name := fmt.Sprintf("churn-%d", j)
		if j%2 == 1 {
			err := svcs.Delete(ctx, name, metav1.DeleteOptions{})
			require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)
			continue
		}
		kept = append(kept, name)
		require.NoError(t, devenv.Poll(2*time.Minute, tick, func() error {
			svc, err := svcs.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				_, err = svcs.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.ServiceSpec{
					Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
					Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}}}}, metav1.CreateOptions{})
				return err
			case err != nil:
				return err
			case svc.DeletionTimestamp != nil:
				return fmt.Errorf("%s is being deleted", name)
			}
			return nil
		}), "keeping %s", name)
	}
	addrs = map[string]string{}
	for _, name := range kept {
		svc := waitCondition(t, ns, name, servicecontroller.ConditionReady, metav1.ConditionTrue, "")
		require.Len(t, svc.Status.LoadBalancer.Ingress, 1, name)
		addrs[svc.Status.LoadBalancer.Ingress[0].IP] = name
	}
	for j := 1; j < services; j += 2 {
		waitServiceGone(t, env, ns, fmt.Sprintf("churn-%d", j), 2*time.Minute)
	}
	return kept, addrs
}

// waitServiceGone waits, up to within, until the Service ns/name is gone
// from the cluster of e.
func waitServiceGone(t *testing.T, e *framework.Env, ns, name string, within time.Duration) {
	t.Helper()
	require.NoError(t, devenv.Poll(within, tick, func() error {
		if _, err := e.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s is still there (%w)", name, err)
		}
		return nil
	}))
}

// Case 4, isolation: two clusters of the same --cluster-name in one cloud
// account, each with a Service of the same namespace and name (two ports,
// source ranges). Each gets its own load balancer; neither sweep lists the
// other's objects; deleting one cluster's Service leaves the cloud exactly
// as it was with only the other's (its rules and security rules too), and
// the other's keeps its address.
func TestChaosIsolationOfTwoClustersOfOneName(t *testing.T) {
	other, err := framework.Start()
	require.NoError(t, err)
	t.Cleanup(other.Stop)
	for i, cloud := range chaosClouds {
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 103+i)
			opts := framework.CCMOptions{Cloud: c.name, CloudConfig: c.conf, ExtraArgs: []string{"--load-balancer-drift-period=2s"}}
			env.StartCCMProcess(t, c.name+"-first", opts)
			other.StartCCMProcess(t, c.name+"-second", opts)
			clusters := []*framework.Env{env, other}
			var kubelets []*devenv.Kubelet
			for j, e := range clusters {
				for k := range 2 {
					name := fmt.Sprintf("iso%d-%c-%d", 103+i, 'a'+j, k)
					kubelets = append(kubelets, e.NewKubelet(t, name, c.machine(name)))
				}
			}
			ctx := context.Background()
			for j, k := range kubelets {
				e := clusters[j/2]
				require.NoError(t, devenv.Poll(waitLong, tick, func() error {
					n, err := e.Client.CoreV1().Nodes().Get(ctx, k.Name, metav1.GetOptions{})
					if err != nil || n.Spec.ProviderID == "" {
						return fmt.Errorf("%s not initialised (%w)", k.Name, err)
					}
					return nil
				}))
			}
			base := c.objects()
			ns := fmt.Sprintf("iso-%d-%d", 103+i, time.Now().UnixNano()%100000)

			second := makeTheTwin(t, other, ns)
			settled(t, c.server)
			onlySecond := c.objects()
			first := makeTheTwin(t, env, ns)
			settled(t, c.server)
			both := c.objects()
			require.NotEqual(t, first, second, "two load balancers, two addresses")
			for _, kind := range mustKit(t, c.name).LoadBalancerKinds {
				assert.Equal(t, base[kind]+2, both[kind], "%s: one per cluster", kind)
			}
			// Listed is allowed (an OpenStack floating IP names only its
			// Service, so the other cluster's is listed as not removable);
			// removed is not.
			_, firstRemoves := sweepCountOf(t, env, c)
			_, secondRemoves := sweepCountOf(t, other, c)
			swept := firstRemoves + secondRemoves

			deleteTheTwin(t, env, ns)
			settled(t, c.server)
			afterFirst := c.objects()
			s, err := other.Client.CoreV1().Services(ns).Get(ctx, "twin", metav1.GetOptions{})
			require.NoError(t, err)
			kept := len(s.Status.LoadBalancer.Ingress) == 1 && s.Status.LoadBalancer.Ingress[0].IP == second
			deleteTheTwin(t, other, ns)
			settled(t, c.server)
			chaosReport(t, fmt.Sprintf("| isolation | %s | %d | %t | %t |", c.name, swept, maps.Equal(onlySecond, afterFirst), kept))
			assert.Zero(t, swept, "neither cluster's sweep would remove anything of the other's")
			assert.Equal(t, onlySecond, afterFirst, "deleting the first cluster's Service leaves the second's objects as they were")
			assert.True(t, kept, "the second cluster's Service keeps its address")
			assert.Equal(t, base, c.objects(), "and deleting the second's leaves nothing")
		})
	}
}

// makeTheTwin makes the namespace ns and its Service twin (two ports,
// source ranges) in the cluster of e, and returns the address it gets.
func makeTheTwin(t *testing.T, e *framework.Env, ns string) string {
	ctx := context.Background()
	_, err := e.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.Client.CoreV1().Services(ns).Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "twin"}, Spec: v1.ServiceSpec{
		Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "twin"}, LoadBalancerSourceRanges: []string{"10.0.0.0/8"},
		Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}, {Name: "alt", Protocol: v1.ProtocolTCP, Port: 8080}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	var addr string
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		s, err := e.Client.CoreV1().Services(ns).Get(ctx, "twin", metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("no address yet (%w)", err)
		}
		addr = s.Status.LoadBalancer.Ingress[0].IP
		return nil
	}))
	return addr
}

// deleteTheTwin deletes the Service twin of ns in the cluster of e and
// waits until it is gone.
func deleteTheTwin(t *testing.T, e *framework.Env, ns string) {
	require.NoError(t, e.Client.CoreV1().Services(ns).Delete(context.Background(), "twin", metav1.DeleteOptions{}))
	waitServiceGone(t, e, ns, "twin", waitLong)
}
