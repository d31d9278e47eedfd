package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	ociemulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
	"github.com/overcast-ccm/overcast/internal/kit"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
	"github.com/overcast-ccm/overcast/test/framework"
)

// The service controller's contract (k8s.io/cloud-provider's, which ours
// replaces under the name "service") is tested on each cloud: the local cloud
// and the OpenStack emulator reached through gophercloud.

// lbCloud is a cloud with a CCM and Nodes, and a way to see what it holds for
// a Service.
type lbCloud struct {
	name  string
	nodes []*devenv.Kubelet
	// holds lists what the cloud holds for the Service (whose last address
	// was addr): load balancers, listeners, floating IPs. Empty: nothing.
	holds func(t *testing.T, svc *v1.Service, addr string) []string
	// members lists the backend addresses of the Service's load balancer (nil
	// where the cloud cannot tell without traffic).
	members func(t *testing.T, svc *v1.Service) []string

	// The OpenStack emulator and clients of its APIs.
	emu              *emulator.Emulator
	octavia, network *gophercloud.ServiceClient
	// The OCI emulator.
	ociEmu *ociemulator.Emulator
	// ccm is the CCM on the cloud; conf its cloud config (none for local).
	ccm  *framework.InProcessCCM
	conf string
}

// localLBCloud: the local cloud with n Nodes on 127.0.third.x and a pool on
// 127.1.third.0/28. It holds a load balancer while its address listens.
func localLBCloud(t *testing.T, third, n int) *lbCloud {
	t.Helper()
	nodes := lbCluster(t, third, fmt.Sprintf(`  - name: p
    addresses: ["127.1.%d.0/28"]`, third), n)
	return &lbCloud{name: "local", nodes: nodes, holds: func(t *testing.T, svc *v1.Service, addr string) []string {
		if addr == "" {
			return nil
		}
		var out []string
		for _, p := range svc.Spec.Ports {
			a := net.JoinHostPort(addr, fmt.Sprint(p.Port))
			c, err := net.DialTimeout("tcp", a, time.Second)
			switch {
			case err == nil:
				_ = c.Close()
				out = append(out, "listener "+a)
			case errors.Is(err, syscall.ECONNRESET):
				// Listening, with no healthy backend yet: the proxy resets
				// the connection, at times before the dial returns.
				out = append(out, "listener "+a)
			}
		}
		return out
	}}
}

// openStackLBCloud: the OpenStack emulator (load balancers take provisioning
// seconds as Octavia's do), a CCM on it, and n servers with Nodes.
func openStackLBCloud(t *testing.T, third, n int) *lbCloud {
	t.Helper()
	return openStackLBCloudWith(t, third, n, "--load-balancer-drift-period=2s")
}

// openStackLBCloudWith is openStackLBCloud with the CCM's args.
func openStackLBCloudWith(t *testing.T, third, n int, args ...string) *lbCloud {
	t.Helper()
	e := coretest.Serve(t, emulator.New(emulator.Options{ProvisioningDelay: 300 * time.Millisecond, ServeTraffic: true,
		PrivateCIDR: fmt.Sprintf("127.0.%d.0/24", third), PublicCIDR: fmt.Sprintf("127.2.%d.0/24", third)}), nil)
	ccm := env.StartCCM(t, framework.CCMOptions{Cloud: "openstack", CloudConfig: e.CloudConf(), ExtraArgs: args})
	c := &lbCloud{name: "openstack", ccm: ccm, conf: e.CloudConf()}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("os%d-node-%d", third, i)
		_, ip := e.AddServer(emulator.ServerSpec{Name: name})
		c.nodes = append(c.nodes, env.NewKubelet(t, name, ip))
	}
	for _, k := range c.nodes {
		waitNodeInitialised(t, k.Name)
	}
	octavia, network := emulatorClients(t, e)
	c.emu, c.octavia, c.network = e, octavia, network
	c.holds = func(t *testing.T, svc *v1.Service, _ string) []string {
		var out []string
		for _, lb := range listLBs(t, octavia, svc.UID) {
			out = append(out, "load balancer "+lb.ID+" "+lb.ProvisioningStatus)
		}
		pages, err := floatingips.List(network, floatingips.ListOpts{}).AllPages(context.Background())
		require.NoError(t, err)
		fips, err := floatingips.ExtractFloatingIPs(pages)
		require.NoError(t, err)
		for _, f := range fips {
			if strings.Contains(f.Description, string(svc.UID)) {
				out = append(out, "floating IP "+f.FloatingIP)
			}
		}
		return out
	}
	c.members = func(t *testing.T, svc *v1.Service) []string {
		lbs := listLBs(t, octavia, svc.UID)
		if len(lbs) != 1 {
			return nil
		}
		pages, err := pools.List(octavia, pools.ListOpts{LoadbalancerID: lbs[0].ID}).AllPages(context.Background())
		require.NoError(t, err)
		ps, err := pools.ExtractPools(pages)
		require.NoError(t, err)
		var out []string
		for _, p := range ps {
			pages, err := pools.ListMembers(octavia, p.ID, pools.ListMembersOpts{}).AllPages(context.Background())
			require.NoError(t, err)
			ms, err := pools.ExtractMembers(pages)
			require.NoError(t, err)
			for _, m := range ms {
				out = append(out, m.Address)
			}
		}
		slices.Sort(out)
		return out
	}
	return c
}

func emulatorClients(t *testing.T, e *emulator.Emulator) (octavia, network *gophercloud.ServiceClient) {
	t.Helper()
	fx := e.Fixture()
	p, err := gopenstack.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{
		IdentityEndpoint:            e.URL() + "/identity/v3",
		ApplicationCredentialID:     fx.AppCredentialID,
		ApplicationCredentialSecret: fx.AppCredentialSecret,
	})
	require.NoError(t, err)
	octavia, err = gopenstack.NewLoadBalancerV2(p, gophercloud.EndpointOpts{Region: "RegionOne"})
	require.NoError(t, err)
	network, err = gopenstack.NewNetworkV2(p, gophercloud.EndpointOpts{Region: "RegionOne"})
	require.NoError(t, err)
	return octavia, network
}

func listLBs(t *testing.T, octavia *gophercloud.ServiceClient, uid types.UID) []loadbalancers.LoadBalancer {
	t.Helper()
	pages, err := loadbalancers.List(octavia, loadbalancers.ListOpts{Tags: []string{"overcast-service-uid=" + string(uid)}}).AllPages(context.Background())
	require.NoError(t, err)
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	require.NoError(t, err)
	return lbs
}

var lbClouds = []struct {
	name  string
	start func(t *testing.T, third, n int) *lbCloud
}{
	{"local", localLBCloud},
	{"openstack", openStackLBCloud},
	{"cloudstack", cloudStackLBCloud},
	{"oci", ociLBCloud},
}

// lbClouds is every registered cloud: a new one's load balancers are put
// through the Service controller's cases as soon as it registers.
func TestLBCloudsAreEveryCloud(t *testing.T) {
	var names []string
	for _, c := range lbClouds {
		names = append(names, c.name)
	}
	assert.ElementsMatch(t, kit.Names(), names, "add the new cloud's lbCloud to lbClouds")
}

// waitCondition waits until the Service's condition has status (and reason,
// when not empty) for its current generation, and returns the Service.
func waitCondition(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason string) *v1.Service {
	t.Helper()
	var svc *v1.Service
	err := devenv.Poll(waitLong, tick, func() error {
		var err error
		if svc, err = env.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return err
		}
		c := meta.FindStatusCondition(svc.Status.Conditions, typ)
		if c == nil || c.Status != status || (reason != "" && c.Reason != reason) || c.ObservedGeneration != svc.Generation {
			return fmt.Errorf("condition %s of %s/%s is %+v, want %s %s", typ, ns, name, c, status, reason)
		}
		return nil
	})
	require.NoError(t, err)
	return svc
}

// warnings are the Warning Events in ns, but the apiserver's own: its
// ClusterIP and NodePort repair controllers warn of a Service whose
// allocation they saw before it was recorded (under load), which is not the
// CCM's doing.
func warnings(t *testing.T, ns string) []string {
	t.Helper()
	evs, err := env.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []string
	for _, ev := range evs.Items {
		if strings.HasSuffix(ev.ReportingController, "-repair-controller") || strings.HasSuffix(ev.Source.Component, "-repair-controller") {
			continue
		}
		if ev.Type == v1.EventTypeWarning {
			out = append(out, ev.InvolvedObject.Name+": "+ev.Reason+": "+ev.Message)
		}
	}
	return out
}

func events(t *testing.T, ns, object string) []string {
	t.Helper()
	evs, err := env.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	slices.SortFunc(evs.Items, func(a, b v1.Event) int { return a.FirstTimestamp.Compare(b.FirstTimestamp.Time) })
	var out []string
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Name == object {
			out = append(out, ev.Type+" "+ev.Reason)
		}
	}
	return out
}

func ingressAddr(svc *v1.Service) string {
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		return ""
	}
	return svc.Status.LoadBalancer.Ingress[0].IP
}

func TestServiceControllerKeepsTheFrameworksContract(t *testing.T) {
	for i, cloud := range lbClouds {
		t.Run(cloud.name, func(t *testing.T) {
			ns := namespace(t)
			c := cloud.start(t, 51+i, 2)

			// A Service of another class, made first: the controller sees it
			// before the one it serves, and must leave it alone.
			lbService(t, ns, "other-class", func(s *v1.Service) { s.Spec.LoadBalancerClass = new("example.com/another-implementation") })
			svc := lbService(t, ns, "web", nil)

			// Progress, then Ready, with the finalizer on, and no Warning.
			got := waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
			addr := ingressAddr(got)
			require.NotEmpty(t, addr)
			assert.True(t, servicehelper.HasLBFinalizer(got), "the cleanup finalizer")
			prog := meta.FindStatusCondition(got.Status.Conditions, servicecontroller.ConditionProgressing)
			require.NotNil(t, prog)
			assert.Equal(t, metav1.ConditionFalse, prog.Status)
			assert.Equal(t, "Converged", prog.Reason)
			assert.NotEmpty(t, c.holds(t, got, addr))
			// Traffic to the address reaches the Nodes' NodePort.
			for _, k := range c.nodes {
				k.ServeService(t, got, true)
			}
			dst := netip.AddrPortFrom(netip.MustParseAddr(addr), uint16(got.Spec.Ports[0].Port))
			answer := waitTCP(t, netip.Addr{}, dst)
			assert.True(t, slices.ContainsFunc(c.nodes, func(k *devenv.Kubelet) bool { return k.Name == answer }), "answered by a Node: %q", answer)
			// Events are recorded asynchronously, after the status.
			require.NoError(t, devenv.Poll(waitShort, tick, func() error {
				evs := events(t, ns, "web")
				for _, want := range []string{"Normal " + servicecontroller.ReasonEnsuring, "Normal " + servicecontroller.ReasonEnsured} {
					if !slices.Contains(evs, want) {
						return fmt.Errorf("events %v lack %q", evs, want)
					}
				}
				return nil
			}))
			assert.Empty(t, warnings(t, ns), "no Warning for a load balancer that is built")

			other := getService(t, ns, "other-class")
			assert.Empty(t, other.Finalizers, "a Service of another class gets no finalizer")
			assert.Empty(t, other.Status.LoadBalancer.Ingress)
			assert.Empty(t, other.Status.Conditions)
			assert.Empty(t, c.holds(t, other, ""), "nothing is built for a Service of another class")

			// No longer a LoadBalancer: the cloud lets go, then the finalizer and
			// the status go.
			got.Spec.Type = v1.ServiceTypeClusterIP
			got.Spec.Ports[0].NodePort = 0
			got.Spec.ExternalTrafficPolicy = ""
			_, err := env.Client.CoreV1().Services(ns).Update(t.Context(), got, metav1.UpdateOptions{})
			require.NoError(t, err)
			require.NoError(t, devenv.Poll(waitLong, tick, func() error {
				s := getService(t, ns, "web")
				if servicehelper.HasLBFinalizer(s) || len(s.Status.LoadBalancer.Ingress) > 0 || len(s.Status.Conditions) > 0 {
					return fmt.Errorf("finalizers %v, ingress %v, conditions %v", s.Finalizers, s.Status.LoadBalancer.Ingress, s.Status.Conditions)
				}
				return nil
			}))
			assert.Empty(t, c.holds(t, svc, addr), "the load balancer of a Service turned ClusterIP is deleted")

			// A LoadBalancer again, then deleted: the Service waits for its load
			// balancer to go.
			got = getService(t, ns, "web")
			got.Spec.Type = v1.ServiceTypeLoadBalancer
			_, err = env.Client.CoreV1().Services(ns).Update(t.Context(), got, metav1.UpdateOptions{})
			require.NoError(t, err)
			got = waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
			addr = ingressAddr(got)
			require.NotEmpty(t, c.holds(t, got, addr))
			deleteService(t, ns, "web")
			assert.Empty(t, c.holds(t, got, addr), "a deleted Service leaves nothing in the cloud")
			assert.Contains(t, events(t, ns, "web"), "Normal "+servicecontroller.ReasonDeleted)
			assert.Empty(t, warnings(t, ns))
		})
	}
}

func TestInvalidAnnotationIsOneWarningAndBuildsNothing(t *testing.T) {
	for i, cloud := range lbClouds {
		t.Run(cloud.name, func(t *testing.T) {
			ns := namespace(t)
			c := cloud.start(t, 55+i, 1)
			invalid := mustKit(t, cloud.name).Invalid
			annotations := map[string]string{invalid[0]: invalid[1]}
			lbService(t, ns, "bad", func(s *v1.Service) { s.Annotations = annotations })
			got := waitCondition(t, ns, "bad", servicecontroller.ConditionReady, metav1.ConditionFalse, "")
			cond := meta.FindStatusCondition(got.Status.Conditions, servicecontroller.ConditionReady)
			assert.NotEqual(t, servicecontroller.ReasonEnsuring, cond.Reason, "the condition names the problem")
			var ws []string
			require.NoError(t, devenv.Poll(waitShort, tick, func() error {
				if ws = warnings(t, ns); len(ws) == 0 {
					return fmt.Errorf("no Warning yet")
				}
				return nil
			}))
			require.Len(t, ws, 1, "one Warning: %v", ws)
			assert.Contains(t, ws[0], cond.Message)
			assert.Empty(t, c.holds(t, got, ""), "nothing is built for a refused Service")
			assert.False(t, servicehelper.HasLBFinalizer(got) && len(got.Status.LoadBalancer.Ingress) > 0)
		})
	}
}

// Node eligibility as the framework decides it, seen in the members of an
// Octavia load balancer.
func TestLoadBalancerMembersFollowNodeEligibility(t *testing.T) {
	ns := namespace(t)
	c := openStackLBCloud(t, 45, 3)
	lbService(t, ns, "web", func(s *v1.Service) {
		// Two pools: Octavia takes one change at a time, so a members
		// update is in progress between them.
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: "https", Protocol: v1.ProtocolTCP, Port: 443})
	})
	waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
	svc := getService(t, ns, "web")
	ips := func(ks ...*devenv.Kubelet) []string { // each in every pool
		var out []string
		for _, k := range ks {
			for range svc.Spec.Ports {
				out = append(out, k.IP.String())
			}
		}
		slices.Sort(out)
		return out
	}
	waitMembers := func(want []string, why string) {
		t.Helper()
		waitForMembers(t, c, svc, want, why)
	}
	a, b, d := c.nodes[0], c.nodes[1], c.nodes[2]
	waitMembers(ips(a, b, d), "every Node backs the load balancer")
	record := getService(t, ns, "web").Annotations[string(annotation.OpenStackConverged)]
	require.NotEmpty(t, record)

	// A NotReady Node stays: the load balancer's health check takes it out.
	b.StopHeartbeats(true)
	patchNode(t, a.Name, `{"metadata":{"labels":{"`+v1.LabelNodeExcludeBalancers+`":"true"}}}`)
	waitMembers(ips(b, d), "an excluded Node leaves; a NotReady one stays")

	// The Cluster Autoscaler's taint alone makes no sync (as the framework);
	// the Node leaves with the next one.
	patchNode(t, d.Name, `{"spec":{"taints":[{"key":"`+servicecontroller.ToBeDeletedTaint+`","effect":"NoSchedule"}]}}`)
	patchNode(t, a.Name, `{"metadata":{"labels":{"`+v1.LabelNodeExcludeBalancers+`":"false"}}}`)
	waitMembers(ips(a, b), "a Node tainted for removal leaves; one no longer excluded comes back")
	assert.Empty(t, warnings(t, ns))

	// The members alone changed: the members ledger says so, not a write of
	// the Service (sent to every Service watcher, kube-proxy on every Node).
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		cm, err := env.Client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(t.Context(), provider.LedgerName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !strings.Contains(strings.Join(slices.Collect(maps.Values(cm.Data)), ""), string(svc.UID)) {
			return errors.New("no ledger entry yet")
		}
		return nil
	}), "the members recorded in the ledger")
	assert.Equal(t, record, getService(t, ns, "web").Annotations[string(annotation.OpenStackConverged)], "the record annotation is as first written")
	// Nor is the members update's progress shown on the Service (an Event,
	// its Progressing condition): it serves meanwhile.
	evs, err := env.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range evs.Items {
		assert.NotContains(t, e.Message, "embers of load balancer", "background work")
	}
	deleteService(t, ns, "web")
	assert.NotContains(t, ledger(t), string(svc.UID), "a deleted load balancer's entry goes")
}

// A Node entering or leaving a node selector's choice moves the members at
// once (the framework does not sync it): not at the drift check (3 minutes
// here), as a repair of what someone else did. (A Node's new address is held
// by the unit test: here the CCM's node controller puts the cloud's address
// back every 5 s.)
func TestANodeSelectorsChoiceIsFollowedAtOnce(t *testing.T) {
	ns := namespace(t)
	c := openStackLBCloudWith(t, 48, 3)
	a, b, d := c.nodes[0], c.nodes[1], c.nodes[2]
	patchNode(t, a.Name, `{"metadata":{"labels":{"pool":"x"}}}`)
	patchNode(t, b.Name, `{"metadata":{"labels":{"pool":"x"}}}`)
	lbService(t, ns, "web", func(s *v1.Service) {
		s.Annotations = map[string]string{string(annotation.OpenStackNodeSelector): "pool=x"}
	})
	waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
	svc := getService(t, ns, "web")
	waitMembers := func(why string, want ...string) {
		t.Helper()
		slices.Sort(want)
		waitForMembers(t, c, svc, want, why)
	}
	waitMembers("the selector's Nodes", a.IP.String(), b.IP.String())

	patchNode(t, d.Name, `{"metadata":{"labels":{"pool":"x"}}}`)
	patchNode(t, a.Name, `{"metadata":{"labels":{"pool":"y"}}}`)
	waitMembers("one Node enters the selector's choice, one leaves", b.IP.String(), d.IP.String())

	evs, err := env.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range evs.Items {
		assert.NotEqual(t, servicecontroller.ReasonRepairing, e.Reason, "%s: the CCM's own change told as a repair", e.Message)
	}
	assert.Empty(t, warnings(t, ns))
	deleteService(t, ns, "web")
}

// waitForMembers waits until svc's load balancer on c has the members want
// (sorted).
func waitForMembers(t *testing.T, c *lbCloud, svc *v1.Service, want []string, why string) {
	t.Helper()
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		if got := c.members(t, svc); !slices.Equal(got, want) {
			return fmt.Errorf("members %v, want %v", got, want)
		}
		return nil
	}), why)
}

// ledger is the members ledger's text (overcast-ccm's ConfigMap in
// kube-system, shared by the CCMs of the suite).
func ledger(t *testing.T) string {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(t.Context(), provider.LedgerName, metav1.GetOptions{})
	require.NoError(t, err)
	return strings.Join(slices.Collect(maps.Values(cm.Data)), "")
}

func patchNode(t *testing.T, name, patch string) {
	t.Helper()
	_, err := env.Client.CoreV1().Nodes().Patch(t.Context(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// A load balancer lost behind the controller's back (deleted, or in ERROR) is
// found by the drift check and rebuilt with the Service's address, with no
// change to the Service and no Warning; deleting the Service then leaves no
// floating IP behind.
func TestLostLoadBalancerIsRebuiltWithTheSameAddress(t *testing.T) {
	for _, lose := range []struct {
		name string
		do   func(t *testing.T, c *lbCloud, id string)
	}{
		{"deleted", func(t *testing.T, c *lbCloud, id string) {
			require.NoError(t, loadbalancers.Delete(t.Context(), c.octavia, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
		}},
		{"in ERROR", func(t *testing.T, c *lbCloud, id string) { require.NoError(t, c.emu.SetLoadBalancerError(id)) }},
	} {
		t.Run(lose.name, func(t *testing.T) {
			ns := namespace(t)
			c := openStackLBCloud(t, 46, 1)
			lbService(t, ns, "web", nil)
			got := waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
			addr, gen := ingressAddr(got), got.Generation
			lbs := listLBs(t, c.octavia, got.UID)
			require.Len(t, lbs, 1)
			lose.do(t, c, lbs[0].ID)

			require.NoError(t, devenv.Poll(waitLong, tick, func() error {
				lbs := listLBs(t, c.octavia, got.UID)
				if len(lbs) != 1 || lbs[0].ProvisioningStatus != "ACTIVE" {
					return fmt.Errorf("load balancers %v", lbs)
				}
				s := getService(t, ns, "web")
				if !isReadyNow(s) || ingressAddr(s) != addr || len(listLBs(t, c.octavia, got.UID)) != 1 {
					return fmt.Errorf("service %v %v", ingressAddr(s), s.Status.Conditions)
				}
				return nil
			}))
			now := listLBs(t, c.octavia, got.UID)
			assert.NotEqual(t, lbs[0].ID, now[0].ID, "a new load balancer")
			assert.Equal(t, gen, getService(t, ns, "web").Generation, "the Service was not changed")
			assert.Contains(t, events(t, ns, "web"), "Normal "+servicecontroller.ReasonRepairing)
			assert.Equal(t, []string{"load balancer " + now[0].ID + " ACTIVE", "floating IP " + addr}, c.holds(t, got, addr), "one load balancer and the one floating IP")
			assert.Empty(t, warnings(t, ns))

			deleteService(t, ns, "web")
			assert.Empty(t, c.holds(t, got, addr), "nothing of the Service is left")
		})
	}
}

func isReadyNow(s *v1.Service) bool {
	c := meta.FindStatusCondition(s.Status.Conditions, servicecontroller.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue
}

// A Service that asks for a floating IP another holds is refused before
// anything is created for it.
func TestServiceRefusedForATakenAddressCreatesNothing(t *testing.T) {
	ns := namespace(t)
	c := openStackLBCloud(t, 47, 1)
	lbService(t, ns, "first", nil)
	first := waitCondition(t, ns, "first", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
	lbService(t, ns, "second", func(s *v1.Service) { s.Spec.LoadBalancerIP = ingressAddr(first) })
	second := waitCondition(t, ns, "second", servicecontroller.ConditionReady, metav1.ConditionFalse, "LoadBalancerIPUnavailable")
	assert.Contains(t, meta.FindStatusCondition(second.Status.Conditions, servicecontroller.ConditionReady).Message, "nothing was created")
	assert.Empty(t, c.holds(t, second, ""), "no load balancer for the refused Service")
}
