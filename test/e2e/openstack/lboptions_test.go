package openstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/metricstest"
	"github.com/overcast-ccm/overcast/test/framework"
)

// octaviaPool is what the tests read of a listener's pool, its monitor and members.
type octaviaPool struct {
	listener listeners.Listener
	pool     pools.Pool
	monitor  *monitors.Monitor
	members  []string // "address:port/monitorPort", sorted
}

func poolOf(t *testing.T, octavia *gophercloud.ServiceClient, lbID string, port int) (octaviaPool, error) {
	t.Helper()
	ctx := context.Background()
	var out octaviaPool
	pages, err := listeners.List(octavia, listeners.ListOpts{LoadbalancerID: lbID, ProtocolPort: port}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	ls, err := listeners.ExtractListeners(pages)
	if err != nil {
		return out, err
	}
	if len(ls) != 1 {
		return out, fmt.Errorf("%d listeners on port %d", len(ls), port)
	}
	out.listener = ls[0]
	if out.listener.DefaultPoolID == "" {
		return out, fmt.Errorf("listener on port %d has no pool yet", port)
	}
	p, err := pools.Get(ctx, octavia, out.listener.DefaultPoolID).Extract()
	if err != nil {
		return out, err
	}
	out.pool = *p
	if p.MonitorID != "" {
		if out.monitor, err = monitors.Get(ctx, octavia, p.MonitorID).Extract(); err != nil {
			return out, err
		}
	}
	mp, err := pools.ListMembers(octavia, p.ID, pools.ListMembersOpts{}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	ms, err := pools.ExtractMembers(mp)
	if err != nil {
		return out, err
	}
	for _, m := range ms {
		out.members = append(out.members, fmt.Sprintf("%s:%d/%d", m.Address, m.ProtocolPort, m.MonitorPort))
	}
	sort.Strings(out.members)
	return out, nil
}

func getSvc(t *testing.T, ns, name string) *v1.Service {
	t.Helper()
	s, err := env.Client.CoreV1().Services(ns).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return s
}

func patchSvc(t *testing.T, ns, name, patch string) {
	t.Helper()
	_, err := env.Client.CoreV1().Services(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

func deleteSvcAndWait(t *testing.T, ns, name string) {
	t.Helper()
	require.NoError(t, env.Client.CoreV1().Services(ns).Delete(t.Context(), name, metav1.DeleteOptions{}))
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error {
		if _, err := env.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("service %s/%s still there (finalizer): %w", ns, name, err)
		}
		return nil
	}))
}

// TestLoadBalancerOptionsAndMembers: PROXY protocol, timeouts, connection limit,
// method and, with externalTrafficPolicy Local, an HTTP health monitor on the
// healthCheckNodePort; all converge when changed, and Nodes joining and leaving
// change the members.
func TestLoadBalancerOptionsAndMembers(t *testing.T) {
	octavia := octaviaClient(t)
	first := createServer(t, "os-lbopt-a-"+suffix())
	second := createServer(t, "os-lbopt-b-"+suffix())
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF"))
	opts.Controllers = []string{"cloud-node", "service"}
	ccm := env.StartCCM(t, opts)
	env.NewKubelet(t, first.Name, first.fixedIP())
	waitInitialised(t, first.Name)

	ns := lbNamespace(t)
	createTheOptionsService(t, ns)
	waitIngress(t, ns, "opts")
	svc := getSvc(t, ns, "opts")
	require.NotZero(t, svc.Spec.HealthCheckNodePort)
	nodePort, hc := svc.Spec.Ports[0].NodePort, svc.Spec.HealthCheckNodePort
	require.Len(t, svc.Status.LoadBalancer.Ingress, 1)
	require.NotNil(t, svc.Status.LoadBalancer.Ingress[0].IPMode)
	assert.Equal(t, v1.LoadBalancerIPModeProxy, *svc.Status.LoadBalancer.Ingress[0].IPMode, "PROXY protocol: ipMode Proxy")
	assert.Equal(t, svc.Status.LoadBalancer.Ingress[0].IP, svc.Annotations["loadbalancer.openstack.org/load-balancer-address"], "the address is recorded")
	lbs := lbOf(t, octavia, svc)
	require.Len(t, lbs, 1)
	lbID := lbs[0].ID

	got, err := poolOf(t, octavia, lbID, 9000)
	require.NoError(t, err)
	assert.Equal(t, 1000, got.listener.ConnLimit)
	assert.Equal(t, 60000, got.listener.TimeoutClientData)
	assert.Equal(t, 3000, got.listener.TimeoutMemberConnect)
	assert.Equal(t, "PROXYV2", got.pool.Protocol)
	assert.Equal(t, "LEAST_CONNECTIONS", got.pool.LBMethod)
	if assert.NotNil(t, got.monitor, "externalTrafficPolicy Local gets a health monitor by default") {
		assert.Equal(t, "HTTP", got.monitor.Type)
		assert.Equal(t, "/healthz", got.monitor.URLPath)
		assert.Equal(t, 7, got.monitor.Delay)
		assert.Equal(t, 2, got.monitor.MaxRetriesDown)
	}
	assert.Equal(t, []string{fmt.Sprintf("%s:%d/%d", first.fixedIP(), nodePort, hc)}, got.members,
		"the member is probed on the healthCheckNodePort")

	// A second Node joins: it becomes a member of every pool.
	k2 := env.NewKubelet(t, second.Name, second.fixedIP())
	waitInitialised(t, second.Name)
	want := []string{fmt.Sprintf("%s:%d/%d", first.fixedIP(), nodePort, hc), fmt.Sprintf("%s:%d/%d", second.fixedIP(), nodePort, hc)}
	sort.Strings(want)
	waitPool(t, octavia, lbID, 9000, func(p octaviaPool) error {
		if !slices.Equal(p.members, want) {
			return fmt.Errorf("members %v, want %v", p.members, want)
		}
		return nil
	})

	// A restarted CCM looks at every Service again.
	aRestartWritesNothing(t, ccm, opts, ns)

	// PROXY protocol off (the pool is replaced), monitor off, another limit.
	turnTheOptionsOff(t, octavia, ns, lbID)

	// The second Node leaves: its member goes.
	require.NoError(t, k2.Remove(t.Context()))
	waitPool(t, octavia, lbID, 9000, func(p octaviaPool) error {
		if len(p.members) != 1 || p.members[0] != fmt.Sprintf("%s:%d/0", first.fixedIP(), nodePort) {
			return fmt.Errorf("members %v, want only %s", p.members, first.fixedIP())
		}
		return nil
	})
	deleteSvcAndWait(t, ns, "opts")
}

// createTheOptionsService creates the Service opts of ns: internal, with
// PROXY protocol, timeouts, a connection limit, a method, a health
// monitor's delay and retries, and externalTrafficPolicy Local.
func createTheOptionsService(t *testing.T, ns string) {
	_, err := env.Client.CoreV1().Services(ns).Create(t.Context(), &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "opts", Namespace: ns, Annotations: map[string]string{
			"service.beta.kubernetes.io/openstack-internal-load-balancer": "true",
			"loadbalancer.openstack.org/proxy-protocol":                   "v2",
			"loadbalancer.openstack.org/connection-limit":                 "1000",
			"loadbalancer.openstack.org/timeout-client-data":              "60000",
			"loadbalancer.openstack.org/timeout-member-connect":           "3000",
			"loadbalancer.openstack.org/lb-method":                        "LEAST_CONNECTIONS",
			"loadbalancer.openstack.org/health-monitor-delay":             "7",
			"loadbalancer.openstack.org/health-monitor-max-retries-down":  "2",
		}},
		Spec: v1.ServiceSpec{
			Type:                  v1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal,
			Ports:                 []v1.ServicePort{{Name: "tcp", Protocol: v1.ProtocolTCP, Port: 9000}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// aRestartWritesNothing restarts the CCM: it looks at every Service again,
// and a converged load balancer costs reads, not one write.
// (An unchanged, ready load balancer gets no new Event: its pass is seen in
// the service controller's metric, kept across managers in this process.)
func aRestartWritesNothing(t *testing.T, ccm *framework.InProcessCCM, opts framework.CCMOptions, ns string) {
	writes := octaviaWrites(t)
	ensured := eventCount(t, ns, "opts", "EnsuredLoadBalancer")
	done := ensurePasses(t)
	ccm.Stop()
	env.StartCCM(t, opts)
	require.NoError(t, devenv.Poll(time.Minute, time.Second, func() error {
		if n := ensurePasses(t); n <= done {
			return fmt.Errorf("the restarted CCM has not ensured the load balancer yet (%v passes)", n)
		}
		return nil
	}))
	assert.Equal(t, writes, octaviaWrites(t), "no-op reconcile: no write call to Octavia")
	assert.Equal(t, ensured, eventCount(t, ns, "opts", "EnsuredLoadBalancer"), "a restart is not news: no new Event")
}

// turnTheOptionsOff turns PROXY protocol off (the pool is replaced), the
// monitor off and the connection limit to none, and waits until the pool
// and the Service's ipMode say so.
func turnTheOptionsOff(t *testing.T, octavia *gophercloud.ServiceClient, ns, lbID string) {
	patchSvc(t, ns, "opts", `{"metadata":{"annotations":{"loadbalancer.openstack.org/proxy-protocol":null,`+
		`"loadbalancer.openstack.org/enable-health-monitor":"false","loadbalancer.openstack.org/connection-limit":"-1"}}}`)
	waitPool(t, octavia, lbID, 9000, func(p octaviaPool) error {
		switch {
		case p.pool.Protocol != "TCP":
			return fmt.Errorf("pool protocol %s", p.pool.Protocol)
		case p.monitor != nil:
			return fmt.Errorf("monitor %s still there", p.monitor.ID)
		case p.listener.ConnLimit != -1:
			return fmt.Errorf("connection limit %d", p.listener.ConnLimit)
		case len(p.members) != 2:
			return fmt.Errorf("members %v", p.members)
		}
		return nil
	})
	require.NoError(t, devenv.Poll(time.Minute, time.Second, func() error {
		s := getSvc(t, ns, "opts")
		if len(s.Status.LoadBalancer.Ingress) == 0 || s.Status.LoadBalancer.Ingress[0].IPMode == nil || *s.Status.LoadBalancer.Ingress[0].IPMode != v1.LoadBalancerIPModeVIP {
			return fmt.Errorf("ingress %+v, want ipMode VIP", s.Status.LoadBalancer.Ingress)
		}
		return nil
	}))
}

// octaviaWrites counts the POST, PUT and DELETE requests in octavia-api's access log.
func octaviaWrites(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(stateDir(), "log", "octavia-api.log"))
	require.NoError(t, err)
	return len(regexp.MustCompile(`\] (POST|PUT|DELETE) /v2`).FindAll(data, -1))
}

func eventCount(t *testing.T, ns, name, reason string) int32 {
	t.Helper()
	evs, err := env.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
	require.NoError(t, err)
	var n int32
	for _, e := range evs.Items {
		n += max(e.Count, 1)
	}
	return n
}

func waitPool(t *testing.T, octavia *gophercloud.ServiceClient, lbID string, port int, check func(octaviaPool) error) {
	t.Helper()
	require.NoError(t, devenv.Poll(3*time.Minute, 2*time.Second, func() error {
		p, err := poolOf(t, octavia, lbID, port)
		if err != nil {
			return err
		}
		return check(p)
	}))
}

// TestFloatingIPsTheCCMDidNotAllocateAreNeverReleased: spec.loadBalancerIP names
// an existing floating IP, keep-floatingip keeps a new one; both stay in the
// project, detached, when their Service goes.
func TestFloatingIPsTheCCMDidNotAllocateAreNeverReleased(t *testing.T) {
	network := networkClient(t)
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF"))
	opts.Controllers = []string{"service"}
	env.StartCCM(t, opts)
	ns := lbNamespace(t)
	ctx := t.Context()

	mine, err := floatingips.Create(ctx, network, floatingips.CreateOpts{FloatingNetworkID: osEnv["OVERCAST_OS_PUBLIC_NETWORK_ID"], Description: "the user's own"}).Extract()
	require.NoError(t, err)
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), network, mine.ID).ExtractErr() })

	for _, s := range []*v1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "requested", Namespace: ns},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, LoadBalancerIP: mine.FloatingIP, Ports: []v1.ServicePort{{Protocol: v1.ProtocolTCP, Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns, Annotations: map[string]string{"loadbalancer.openstack.org/keep-floatingip": "true"}},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Protocol: v1.ProtocolTCP, Port: 80}}}},
	} {
		_, err := env.Client.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	assert.Equal(t, mine.FloatingIP, waitIngress(t, ns, "requested"), "spec.loadBalancerIP is the floating IP")
	kept := waitIngress(t, ns, "kept")
	pages, err := floatingips.List(network, floatingips.ListOpts{FloatingIP: kept}).AllPages(ctx)
	require.NoError(t, err)
	fips, err := floatingips.ExtractFloatingIPs(pages)
	require.NoError(t, err)
	require.Len(t, fips, 1)
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), network, fips[0].ID).ExtractErr() })

	deleteSvcAndWait(t, ns, "requested")
	deleteSvcAndWait(t, ns, "kept")
	for _, ip := range []string{mine.FloatingIP, kept} {
		pages, err := floatingips.List(network, floatingips.ListOpts{FloatingIP: ip}).AllPages(ctx)
		require.NoError(t, err)
		fips, err := floatingips.ExtractFloatingIPs(pages)
		require.NoError(t, err)
		if assert.Len(t, fips, 1, "%s stays in the project", ip) {
			assert.Empty(t, fips[0].PortID, "%s is detached", ip)
		}
	}
}

// TestASecondClusterWithTheSameNameLeavesTheFirstAlone: two clusters, both
// --cluster-name overcast-e2e, one project, a Service of the same namespace and
// name in each: two load balancers of the same name, and deleting one cluster's
// Service leaves the other's load balancer serving.
func TestASecondClusterWithTheSameNameLeavesTheFirstAlone(t *testing.T) {
	octavia := octaviaClient(t)
	other, err := framework.Start()
	require.NoError(t, err)
	t.Cleanup(other.Stop)
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF"))
	opts.Controllers = []string{"service"}
	env.StartCCM(t, opts)
	// One in-process manager at a time (process globals): the other cluster's
	// overcast-ccm runs as a process of its own.
	other.StartCCMProcess(t, "other-cluster", opts)

	ns := "os-twin-" + suffix()
	uids := twins(t, ns, env, other)
	ingress := func(e *framework.Env) error {
		s, err := e.Client.CoreV1().Services(ns).Get(context.Background(), "twin", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("no ingress yet")
		}
		return nil
	}
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error { return ingress(env) }))
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error { return ingress(other) }))
	first := lbOf(t, octavia, &v1.Service{ObjectMeta: metav1.ObjectMeta{UID: uids[0]}})
	second := lbOf(t, octavia, &v1.Service{ObjectMeta: metav1.ObjectMeta{UID: uids[1]}})
	require.Len(t, first, 1)
	require.Len(t, second, 1)
	assert.Equal(t, first[0].Name, second[0].Name, "same cluster name, same load balancer name")
	assert.NotEqual(t, first[0].ID, second[0].ID, "but two load balancers")

	require.NoError(t, other.Client.CoreV1().Services(ns).Delete(t.Context(), "twin", metav1.DeleteOptions{}))
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error {
		if _, err := other.Client.CoreV1().Services(ns).Get(context.Background(), "twin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("second cluster's Service still there: %w", err)
		}
		return nil
	}))
	still := lbOf(t, octavia, &v1.Service{ObjectMeta: metav1.ObjectMeta{UID: uids[0]}})
	require.Len(t, still, 1, "the first cluster's load balancer is still there")
	assert.Equal(t, "ACTIVE", still[0].ProvisioningStatus)
	require.NoError(t, ingress(env))
	deleteSvcAndWait(t, ns, "twin")
}

// ensurePasses is how many ensure passes of the service controllers run in
// this process ended with the load balancer as asked.
func ensurePasses(t *testing.T) float64 {
	t.Helper()
	return metricstest.Counter(t, "overcast_service_load_balancer_syncs_total", map[string]string{"operation": "ensure", "result": "done"})
}

// twins creates the Service twin (internal, TCP 80) in namespace ns of each
// cluster: a Service of the same namespace and name in each, their UIDs in
// that order.
func twins(t *testing.T, ns string, clusters ...*framework.Env) []types.UID {
	t.Helper()
	var uids []types.UID
	for _, e := range clusters {
		_, err := e.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		s, err := e.Client.CoreV1().Services(ns).Create(t.Context(), &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "twin", Namespace: ns, Annotations: map[string]string{"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"}},
			Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Protocol: v1.ProtocolTCP, Port: 80}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		uids = append(uids, s.UID)
	}
	return uids
}
