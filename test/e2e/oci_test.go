package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	ocicore "github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/loadbalancer"
	nlb "github.com/oracle/oci-go-sdk/v65/networkloadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
	"github.com/overcast-ccm/overcast/test/framework"
)

// The OCI cloud on the real apiserver, against the OCI emulator, with the
// peer's cloud-provider.yaml and a user's API key (every request signed).

// ociEmulator starts the emulator with its node subnet on 127.0.third.0/24
// and its public addresses on 127.4.third.0/24, its load balancers carrying
// traffic and built in 300 ms.
func ociEmulator(t *testing.T, third int) *emulator.Emulator {
	t.Helper()
	e, err := emulator.New(emulator.Options{MachineCIDR: fmt.Sprintf("127.0.%d.0/24", third), PublicCIDR: fmt.Sprintf("127.4.%d.0/24", third),
		ServeTraffic: true, Provisioning: 300 * time.Millisecond})
	return coretest.Serve(t, e, err)
}

// nodeGone waits for the Node named name to be deleted.
func nodeGone(name string) func() error {
	return func() error {
		_, err := env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("node %s still exists (err %w)", name, err)
	}
}

func TestOCINodesFollowTheirInstances(t *testing.T) {
	e := ociEmulator(t, 66)
	ccm := env.StartCCMProcess(t, "oci-nodes", framework.CCMOptions{Cloud: "oci", CloudConfig: e.CloudConfig() + "lifecycleMaxAge: 1s\n"})
	ids := map[string]string{}
	kubelets := map[string]*devenv.Kubelet{}
	for _, name := range []string{"oci-a", "oci-down", "oci-gone", "oci-purged", "oci-doubt"} {
		id, ip := e.AddMachine(name)
		ids[name] = id
		kubelets[name] = env.NewKubelet(t, name, ip)
	}
	// A Node the peer initialised, whose instance is in a compartment this
	// CCM cannot read (a 404 that may be a missing policy): kept.
	hidden := "ocid1.instance.oc1.iad.aaaaelsewhere"
	_, err := env.Client.CoreV1().Nodes().Create(t.Context(), &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "oci-hidden"},
		Spec:       v1.NodeSpec{ProviderID: "oci://" + hidden},
		Status:     v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Nodes().Delete(context.Background(), "oci-hidden", metav1.DeleteOptions{})
	})

	for name, id := range ids {
		n := waitNodeAddressed(t, name)
		assert.Equal(t, "oci://"+id, n.Spec.ProviderID, name)
		assert.Equal(t, "VM.Standard.E4.Flex", n.Labels[v1.LabelInstanceTypeStable], name)
		assert.Regexp(t, `^US-ASHBURN-AD-[123]$`, n.Labels[v1.LabelTopologyZone], name)
		assert.Equal(t, "iad", n.Labels[v1.LabelTopologyRegion], name)
		assert.Regexp(t, `^FAULT-DOMAIN-[123]$`, n.Labels["oci.oraclecloud.com/fault-domain"], name)
		assert.Len(t, n.Status.Addresses, 2, name)
	}

	// OCI answers 503: a NotReady Node whose instance cannot be read stays.
	e.InjectFault(core.Fault{Status: 503})
	kubelets["oci-doubt"].StopHeartbeats(true)
	time.Sleep(5 * time.Second) // five lifecycle periods, the listing 1 s old at most
	_, err = env.Client.CoreV1().Nodes().Get(t.Context(), "oci-doubt", metav1.GetOptions{})
	require.NoError(t, err, "a Node must not be deleted while OCI does not answer")
	e.ClearFaults()
	require.NoError(t, kubelets["oci-doubt"].ResumeHeartbeats())

	// Terminated, and purged (404 confirmed by the compartment's listing):
	// deleted. Stopped: tainted, and kept.
	require.NoError(t, e.SetInstanceState(ids["oci-gone"], emulator.StateTerminated))
	require.NoError(t, e.SetInstanceState(ids["oci-purged"], emulator.StateTerminated))
	e.PurgeInstance(ids["oci-purged"])
	require.NoError(t, e.SetInstanceState(ids["oci-down"], emulator.StateStopped))
	for _, name := range []string{"oci-gone", "oci-purged", "oci-down"} {
		kubelets[name].StopHeartbeats(true)
	}
	require.NoError(t, devenv.Poll(waitLong, tick, nodeGone("oci-gone")), "the Node of a terminated instance is deleted")
	require.NoError(t, devenv.Poll(waitLong, tick, nodeGone("oci-purged")), "the Node of a purged instance is deleted")
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), "oci-down", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !hasTaint(n, devenv.ShutdownTaint) {
			return fmt.Errorf("no shutdown taint yet")
		}
		return nil
	}), "the Node of a stopped instance is tainted")
	for _, name := range []string{"oci-a", "oci-down", "oci-doubt", "oci-hidden"} {
		_, err = env.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err, name)
	}
	assert.Contains(t, ccm.Output(), "instance "+hidden+" answers 404 NotAuthorizedOrNotFound and its compartment is unknown",
		"the lifecycle controller asked about oci-hidden and was told why it stays")
}

// ociUser is oci-go-sdk's configuration of the emulator's user, the SDK's
// circuit breaker off (a test wants errors as they come).
func ociUser(t *testing.T, e *emulator.Emulator) common.ConfigurationProvider {
	t.Helper()
	t.Setenv("OCI_SDK_DEFAULT_CIRCUITBREAKER_ENABLED", "false")
	f := e.Fixture()
	return common.NewRawConfigurationProvider(f.TenancyID, f.UserID, e.Region(), f.Fingerprint, f.PrivateKeyPEM, nil)
}

// ociLBClient is oci-go-sdk's load balancer client of e.
func ociLBClient(t *testing.T, e *emulator.Emulator) loadbalancer.LoadBalancerClient {
	c, err := loadbalancer.NewLoadBalancerClientWithConfigurationProvider(ociUser(t, e))
	require.NoError(t, err)
	c.Host = e.URL()
	return c
}

// ociLBs are the load balancers of the emulator's compartment named name.
func ociLBs(t *testing.T, c loadbalancer.LoadBalancerClient, e *emulator.Emulator, name string) []loadbalancer.LoadBalancer {
	t.Helper()
	r, err := c.ListLoadBalancers(context.Background(), loadbalancer.ListLoadBalancersRequest{
		CompartmentId: common.String(e.Fixture().CompartmentID), DisplayName: common.String(name)})
	require.NoError(t, err)
	return r.Items
}

// ociLBCloud: the emulator, a CCM on it, and n instances with Nodes. It
// holds the load balancer named by the Service's UID (the peer's name).
func ociLBCloud(t *testing.T, third, n int) *lbCloud {
	t.Helper()
	e := ociEmulator(t, third)
	ccm := env.StartCCM(t, framework.CCMOptions{Cloud: "oci", CloudConfig: e.CloudConfig(),
		ExtraArgs: []string{"--load-balancer-drift-period=2s"}})
	c := &lbCloud{name: "oci", ociEmu: e, ccm: ccm, conf: e.CloudConfig()}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("oci%d-node-%d", third, i)
		_, ip := e.AddMachine(name)
		c.nodes = append(c.nodes, env.NewKubelet(t, name, ip))
	}
	for _, k := range c.nodes {
		waitNodeInitialised(t, k.Name)
	}
	client := ociLBClient(t, e)
	c.holds = func(t *testing.T, svc *v1.Service, _ string) []string {
		var out []string
		for _, lb := range ociLBs(t, client, e, string(svc.UID)) {
			out = append(out, "load balancer "+*lb.Id+" "+string(lb.LifecycleState))
		}
		return out
	}
	c.members = func(t *testing.T, svc *v1.Service) []string {
		var out []string
		for _, lb := range ociLBs(t, client, e, string(svc.UID)) {
			for _, bs := range lb.BackendSets {
				for _, b := range bs.Backends {
					out = append(out, *b.IpAddress)
				}
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return c
}

func TestOCILoadBalancersAreRepairedAndFollowTheNodes(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 67, 2)
	e, client := c.ociEmu, ociLBClient(t, c.ociEmu)
	before := e.Objects()
	svc := lbService(t, ns, "web", nil)
	got := waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	require.NotEmpty(t, ingressAddr(got))
	assert.Len(t, c.members(t, got), 2)

	// A third Node joins: its instance's address becomes a backend.
	_, ip := e.AddMachine("oci67-node-3")
	c.nodes = append(c.nodes, env.NewKubelet(t, "oci67-node-3", ip))
	waitNodeInitialised(t, "oci67-node-3")
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		if m := c.members(t, got); len(m) != 3 || !slices.Contains(m, ip) {
			return fmt.Errorf("members %v", m)
		}
		return nil
	}), "the new Node is a backend")

	// FAILED: deleted and built anew.
	lbs := ociLBs(t, client, e, string(svc.UID))
	require.Len(t, lbs, 1)
	failed := *lbs[0].Id
	require.NoError(t, e.SetLoadBalancerState(failed, emulator.LBFailed))
	waitReplaced(t, c, svc, failed, "", "a FAILED load balancer is replaced")

	// Deleted behind the CCM's back: built again.
	lbs = ociLBs(t, client, e, string(svc.UID))
	_, err := client.DeleteLoadBalancer(t.Context(), loadbalancer.DeleteLoadBalancerRequest{LoadBalancerId: lbs[0].Id})
	require.NoError(t, err)
	waitReplaced(t, c, svc, *lbs[0].Id, "", "a deleted load balancer is built again")
	got = waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		got = getService(t, ns, "web")
		lbs := ociLBs(t, client, e, string(svc.UID))
		if len(lbs) != 1 || len(lbs[0].IpAddresses) == 0 || ingressAddr(got) != *lbs[0].IpAddresses[0].IpAddress {
			return fmt.Errorf("ingress %q", ingressAddr(got))
		}
		return nil
	}), "the Service shows the new load balancer's address")

	deleteService(t, ns, "web")
	assert.Empty(t, c.holds(t, svc, ""))
	assert.Equal(t, before, e.Objects(), "nothing left in the emulator: no load balancer, no security rule")
}

// The peer's load balancer of a Service (its name, the Service's UID; its
// fixed 100Mbps shape; no ownership tags) is adopted as it is: no new load
// balancer, no change, the same address.
func TestOCIAdoptsThePeersLoadBalancer(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 68, 1)
	e, client := c.ociEmu, ociLBClient(t, c.ociEmu)
	// A NodePort Service first, so that the peer's load balancer can point at its node port.
	lbService(t, ns, "web", func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeNodePort })
	svc := getService(t, ns, "web")
	port := svc.Spec.Ports[0]
	f := e.Fixture()
	name := fmt.Sprintf("%s-%d", port.Protocol, port.Port)
	created, err := client.CreateLoadBalancer(t.Context(), loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: loadbalancer.CreateLoadBalancerDetails{
		CompartmentId: common.String(f.CompartmentID), DisplayName: common.String(string(svc.UID)), ShapeName: common.String("100Mbps"),
		SubnetIds: []string{f.SubnetID},
		BackendSets: map[string]loadbalancer.BackendSetDetails{name: {Policy: common.String("ROUND_ROBIN"),
			Backends: []loadbalancer.BackendDetails{{IpAddress: common.String(c.nodes[0].IP.String()), Port: common.Int(int(port.NodePort)), Weight: common.Int(1)}},
			HealthChecker: &loadbalancer.HealthCheckerDetails{Protocol: common.String("HTTP"), Port: common.Int(10256), UrlPath: common.String("/healthz"),
				ReturnCode: common.Int(200), Retries: common.Int(3), TimeoutInMillis: common.Int(3000), IntervalInMillis: common.Int(10000)}}},
		Listeners: map[string]loadbalancer.ListenerDetails{name: {DefaultBackendSetName: common.String(name), Port: common.Int(int(port.Port)),
			Protocol: common.String("TCP"), ConnectionConfiguration: &loadbalancer.ConnectionConfiguration{IdleTimeout: common.Int64(300)}}},
	}})
	require.NoError(t, err)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		if lbs := ociLBs(t, client, e, string(svc.UID)); len(lbs) != 1 || lbs[0].LifecycleState != loadbalancer.LoadBalancerLifecycleStateActive {
			return fmt.Errorf("the peer's load balancer is not ACTIVE yet")
		}
		return nil
	}))
	peer := ociLBs(t, client, e, string(svc.UID))[0]
	// The peer's security rules (mode All, its shapes: no description); the
	// load balancer and the node share the subnet here.
	network := ociNetworkClient(t, e)
	list, err := network.GetSecurityList(t.Context(), ocicore.GetSecurityListRequest{SecurityListId: common.String(f.SecurityListID)})
	require.NoError(t, err)
	tcp := func(port int) *ocicore.TcpOptions {
		return &ocicore.TcpOptions{DestinationPortRange: &ocicore.PortRange{Min: common.Int(port), Max: common.Int(port)}}
	}
	subnetCIDR := "127.0.68.0/24"
	ingress := append(slices.Clone(list.IngressSecurityRules),
		ocicore.IngressSecurityRule{Protocol: common.String("6"), Source: common.String("0.0.0.0/0"), IsStateless: common.Bool(false), TcpOptions: tcp(int(port.Port))},
		ocicore.IngressSecurityRule{Protocol: common.String("6"), Source: common.String(subnetCIDR), IsStateless: common.Bool(false), TcpOptions: tcp(int(port.NodePort))},
		ocicore.IngressSecurityRule{Protocol: common.String("6"), Source: common.String(subnetCIDR), IsStateless: common.Bool(false), TcpOptions: tcp(10256)})
	egress := append(slices.Clone(list.EgressSecurityRules),
		ocicore.EgressSecurityRule{Protocol: common.String("6"), Destination: common.String(subnetCIDR), IsStateless: common.Bool(false), TcpOptions: tcp(int(port.NodePort))},
		ocicore.EgressSecurityRule{Protocol: common.String("6"), Destination: common.String(subnetCIDR), IsStateless: common.Bool(false), TcpOptions: tcp(10256)})
	_, err = network.UpdateSecurityList(t.Context(), ocicore.UpdateSecurityListRequest{SecurityListId: common.String(f.SecurityListID), IfMatch: list.Etag,
		UpdateSecurityListDetails: ocicore.UpdateSecurityListDetails{IngressSecurityRules: ingress, EgressSecurityRules: egress}})
	require.NoError(t, err)
	peerObjects := e.Objects()
	e.ResetCalls()

	svc.Spec.Type = v1.ServiceTypeLoadBalancer
	_, err = env.Client.CoreV1().Services(ns).Update(t.Context(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	got := waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	assert.Equal(t, *peer.IpAddresses[0].IpAddress, ingressAddr(got), "the peer's address")
	lbs := ociLBs(t, client, e, string(svc.UID))
	require.Len(t, lbs, 1)
	assert.Equal(t, *peer.Id, *lbs[0].Id, "the peer's load balancer, not a new one")
	for _, call := range e.Calls() {
		assert.Equal(t, "GET", call.Method, "no change of an adopted load balancer, and no rule added beside the peer's: %+v (work request %s)", call, *created.OpcWorkRequestId)
	}
	deleteService(t, ns, "web")
	assert.Empty(t, c.holds(t, svc, ""))
	after := e.Objects()
	assert.Equal(t, peerObjects["securityRule"]-5, after["securityRule"],
		"the peer's rules of the Service go with it, as the peer removes them (no other Service uses their ports)")
}

// ociNetworkClient is oci-go-sdk's virtual network client of e.
func ociNetworkClient(t *testing.T, e *emulator.Emulator) ocicore.VirtualNetworkClient {
	c, err := ocicore.NewVirtualNetworkClientWithConfigurationProvider(ociUser(t, e))
	require.NoError(t, err)
	c.Host = e.URL()
	return c
}

// spec.loadBalancerIP names a reserved public IP: the load balancer takes
// it, keeps it when it is replaced, and gives it back (never deletes it)
// when the Service goes.
func TestOCIReservedAddressStaysPut(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 69, 1)
	e, client := c.ociEmu, ociLBClient(t, c.ociEmu)
	id, ip := e.ReservePublicIP()
	svc := lbService(t, ns, "web", func(s *v1.Service) { s.Spec.LoadBalancerIP = ip })
	got := waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	assert.Equal(t, ip, ingressAddr(got))

	lbs := ociLBs(t, client, e, string(svc.UID))
	require.Len(t, lbs, 1)
	failed := *lbs[0].Id
	require.NoError(t, e.SetLoadBalancerState(failed, emulator.LBFailed))
	waitReplaced(t, c, svc, failed, ip, "a FAILED load balancer is replaced with the same reserved address")
	assert.Equal(t, ip, ingressAddr(getService(t, ns, "web")))

	// Another Service asking for the taken address: refused, nothing built.
	other := lbService(t, ns, "other", func(s *v1.Service) { s.Spec.LoadBalancerIP = ip })
	got = waitCondition(t, ns, "other", servicecontroller.ConditionReady, metav1.ConditionFalse, "")
	assert.Contains(t, meta.FindStatusCondition(got.Status.Conditions, servicecontroller.ConditionReady).Message, "is ASSIGNED")
	assert.Empty(t, c.holds(t, other, ""))

	deleteService(t, ns, "other")
	deleteService(t, ns, "web")
	assert.Empty(t, c.holds(t, svc, ""))
	p, err := ociNetworkClient(t, e).GetPublicIp(t.Context(), ocicore.GetPublicIpRequest{PublicIpId: common.String(id)})
	require.NoError(t, err, "the reserved IP is the user's: never deleted")
	assert.Equal(t, ocicore.PublicIpLifecycleStateAvailable, p.LifecycleState)
}

// waitReplaced waits for the Service's one load balancer to be another than
// old, ACTIVE, and at address addr when it is not "".
func waitReplaced(t *testing.T, c *lbCloud, svc *v1.Service, old, addr, msg string) {
	t.Helper()
	client := ociLBClient(t, c.ociEmu)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		lbs := ociLBs(t, client, c.ociEmu, string(svc.UID))
		if len(lbs) != 1 || *lbs[0].Id == old || lbs[0].LifecycleState != loadbalancer.LoadBalancerLifecycleStateActive {
			return fmt.Errorf("load balancers %v", c.holds(t, svc, ""))
		}
		if a := *lbs[0].IpAddresses[0].IpAddress; addr != "" && a != addr {
			return fmt.Errorf("the new load balancer's address is %s", a)
		}
		return nil
	}), msg)
}

// ociNLBClient is oci-go-sdk's network load balancer client of e.
func ociNLBClient(t *testing.T, e *emulator.Emulator) nlb.NetworkLoadBalancerClient {
	c, err := nlb.NewNetworkLoadBalancerClientWithConfigurationProvider(ociUser(t, e))
	require.NoError(t, err)
	c.Host = e.URL()
	return c
}

// A network load balancer (the peer's annotation) serves a port over TCP
// and UDP at once, named and built as the peer builds it (one listener
// TCP_AND_UDP-53, backends naming their instances); a Service that changes
// its type gets the other kind and loses the first; nothing is left after.
func TestOCINetworkLoadBalancerServesTCPAndUDP(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 69, 2)
	e, client := c.ociEmu, ociNLBClient(t, c.ociEmu)
	before := e.Objects()
	nlbType := map[string]string{"oci.oraclecloud.com/load-balancer-type": "nlb"}
	svc := lbService(t, ns, "dns", func(s *v1.Service) {
		s.Annotations = nlbType
		s.Spec.Ports = []v1.ServicePort{{Name: "dns-tcp", Protocol: v1.ProtocolTCP, Port: 53}, {Name: "dns-udp", Protocol: v1.ProtocolUDP, Port: 53}}
	})
	for _, k := range c.nodes {
		k.ServeService(t, svc, true)
	}
	got := waitCondition(t, ns, "dns", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	require.Len(t, got.Status.LoadBalancer.Ingress, 2, "the public address, then the private one, as the peer shows them")

	list, err := client.ListNetworkLoadBalancers(t.Context(), nlb.ListNetworkLoadBalancersRequest{
		CompartmentId: common.String(e.Fixture().CompartmentID), DisplayName: common.String(ns + "/dns/" + string(svc.UID))})
	require.NoError(t, err)
	require.Len(t, list.Items, 1, "named <namespace>/<name>/<UID>, as the peer names it")
	n := list.Items[0]
	assert.Equal(t, *n.IpAddresses[0].IpAddress, got.Status.LoadBalancer.Ingress[0].IP)
	require.Contains(t, n.Listeners, "TCP_AND_UDP-53")
	assert.Equal(t, nlb.ListenerProtocolsTcpAndUdp, n.Listeners["TCP_AND_UDP-53"].Protocol)
	bs := n.BackendSets["TCP_AND_UDP-53"]
	assert.Equal(t, nlb.NetworkLoadBalancingPolicyFiveTuple, bs.Policy)
	require.Len(t, bs.Backends, 2)
	for _, b := range bs.Backends {
		assert.Contains(t, *b.TargetId, "ocid1.instance.", "a backend names its instance")
	}

	vip := netip.AddrPortFrom(netip.MustParseAddr(got.Status.LoadBalancer.Ingress[0].IP), 53)
	seenTCP, seenUDP := map[string]bool{}, map[string]bool{}
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		a, err := devenv.RequestTCP(netip.Addr{}, vip)
		if err != nil {
			return err
		}
		seenTCP[a] = true
		b, err := devenv.RequestUDP(netip.Addr{}, vip)
		if err != nil {
			return err
		}
		seenUDP[b] = true
		if len(seenTCP) < 2 || len(seenUDP) < 2 {
			return fmt.Errorf("answers from %v over TCP and %v over UDP", seenTCP, seenUDP)
		}
		return nil
	}), "both nodes answer over TCP and over UDP")

	// A TCP Service that changes from nlb to lb: a load balancer is built
	// and the network load balancer deleted.
	lbService(t, ns, "web", func(s *v1.Service) { s.Annotations = nlbType })
	waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	web := getService(t, ns, "web")
	delete(web.Annotations, "oci.oraclecloud.com/load-balancer-type")
	_, err = env.Client.CoreV1().Services(ns).Update(t.Context(), web, metav1.UpdateOptions{})
	require.NoError(t, err)
	lbClient := ociLBClient(t, e)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		lbs := ociLBs(t, lbClient, e, string(web.UID))
		left, err := client.ListNetworkLoadBalancers(t.Context(), nlb.ListNetworkLoadBalancersRequest{
			CompartmentId: common.String(e.Fixture().CompartmentID), DisplayName: common.String(ns + "/web/" + string(web.UID))})
		if err != nil {
			return err
		}
		if len(lbs) != 1 || len(left.Items) != 0 {
			return fmt.Errorf("%d load balancers, %d network load balancers", len(lbs), len(left.Items))
		}
		svc := getService(t, ns, "web")
		if len(lbs[0].IpAddresses) == 0 || ingressAddr(svc) != *lbs[0].IpAddresses[0].IpAddress {
			return fmt.Errorf("ingress %q is not the load balancer's yet", ingressAddr(svc))
		}
		return nil
	}), "the Service's network load balancer is replaced by a load balancer")

	deleteService(t, ns, "dns")
	deleteService(t, ns, "web")
	assert.Equal(t, before, e.Objects(), "nothing left in the emulator")
}

// The peer's network load balancer of a Service (named <ns>/<name>/<UID>,
// with the peer's listener, backend set and health check, backends naming
// their instances) is adopted as it is: no change, the same addresses.
func TestOCIAdoptsThePeersNetworkLoadBalancer(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 70, 1)
	e, client := c.ociEmu, ociNLBClient(t, c.ociEmu)
	nlbType := map[string]string{"oci.oraclecloud.com/load-balancer-type": "nlb"}
	lbService(t, ns, "dns", func(s *v1.Service) {
		s.Spec.Type = v1.ServiceTypeNodePort
		s.Annotations = nlbType
		s.Spec.Ports = []v1.ServicePort{{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53}}
	})
	svc := getService(t, ns, "dns")
	port := svc.Spec.Ports[0]
	f := e.Fixture()
	name := fmt.Sprintf("%s-%d", port.Protocol, port.Port)
	node := waitNodeInitialised(t, c.nodes[0].Name)
	instance := strings.TrimPrefix(node.Spec.ProviderID, "oci://")
	// As the peer's load_balancer_spec.go builds it: FIVE_TUPLE, source not
	// preserved with externalTrafficPolicy Cluster, kube-proxy's health check.
	created, err := client.CreateNetworkLoadBalancer(t.Context(), nlb.CreateNetworkLoadBalancerRequest{CreateNetworkLoadBalancerDetails: nlb.CreateNetworkLoadBalancerDetails{
		CompartmentId: common.String(f.CompartmentID), DisplayName: common.String(ns + "/dns/" + string(svc.UID)), SubnetId: common.String(f.SubnetID),
		IsPrivate: common.Bool(false), IsPreserveSourceDestination: common.Bool(false), NlbIpVersion: nlb.NlbIpVersionIpv4,
		BackendSets: map[string]nlb.BackendSetDetails{name: {Policy: nlb.NetworkLoadBalancingPolicyFiveTuple, IsPreserveSource: common.Bool(false),
			IpVersion: nlb.IpVersionIpv4,
			Backends: []nlb.Backend{{IpAddress: common.String(c.nodes[0].IP.String()), TargetId: common.String(instance),
				Port: common.Int(int(port.NodePort)), Weight: common.Int(1)}},
			HealthChecker: &nlb.HealthChecker{Protocol: nlb.HealthCheckProtocolsHttp, Port: common.Int(10256), UrlPath: common.String("/healthz"),
				ReturnCode: common.Int(200), Retries: common.Int(3), TimeoutInMillis: common.Int(3000), IntervalInMillis: common.Int(10000)}}},
		Listeners: map[string]nlb.ListenerDetails{name: {Name: common.String(name), DefaultBackendSetName: common.String(name),
			Port: common.Int(int(port.Port)), Protocol: nlb.ListenerProtocolsUdp, IpVersion: nlb.IpVersionIpv4}},
	}})
	require.NoError(t, err)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		got, err := client.GetNetworkLoadBalancer(t.Context(), nlb.GetNetworkLoadBalancerRequest{NetworkLoadBalancerId: created.Id})
		if err != nil {
			return err
		}
		if got.LifecycleState != nlb.LifecycleStateActive {
			return fmt.Errorf("the peer's network load balancer is %s", got.LifecycleState)
		}
		return nil
	}))
	peerObjects := e.Objects()
	e.ResetCalls()

	svc.Spec.Type = v1.ServiceTypeLoadBalancer
	_, err = env.Client.CoreV1().Services(ns).Update(t.Context(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	got := waitCondition(t, ns, "dns", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	var want []string
	for _, a := range created.IpAddresses {
		want = append(want, *a.IpAddress)
	}
	var have []string
	for _, ing := range got.Status.LoadBalancer.Ingress {
		have = append(have, ing.IP)
	}
	assert.Equal(t, want, have, "the peer's addresses, public first")
	for _, call := range e.Calls() {
		assert.Equal(t, "GET", call.Method, "no change of an adopted network load balancer: %+v", call)
	}
	assert.Equal(t, peerObjects, e.Objects())
	deleteService(t, ns, "dns")
	assert.Zero(t, e.Objects()["networkLoadBalancer"])
}

// An internal network load balancer of an assigned private address takes
// it and serves it; another Service asking for it is refused and gets
// nothing; FAILED, it is built anew at the same address; a Service asking
// for another address is refused, the network load balancer left as it
// is; nothing is left after.
func TestOCINetworkLoadBalancerTakesItsAssignedAddress(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 76, 2)
	e, client := c.ociEmu, ociNLBClient(t, c.ociEmu)
	before := e.Objects()
	const assigned, addr = "oci-network-load-balancer.oraclecloud.com/assigned-private-ipv4", "127.0.76.200"
	annotations := func(a string) map[string]string {
		return map[string]string{"oci.oraclecloud.com/load-balancer-type": "nlb", "oci-network-load-balancer.oraclecloud.com/internal": "true", assigned: a}
	}
	nlbs := func(svc *v1.Service) []nlb.NetworkLoadBalancerSummary {
		list, err := client.ListNetworkLoadBalancers(t.Context(), nlb.ListNetworkLoadBalancersRequest{
			CompartmentId: common.String(e.Fixture().CompartmentID), DisplayName: common.String(ns + "/" + svc.Name + "/" + string(svc.UID))})
		require.NoError(t, err)
		return list.Items
	}
	svc := lbService(t, ns, "pinned", func(s *v1.Service) { s.Annotations = annotations(addr) })
	for _, k := range c.nodes {
		k.ServeService(t, svc, true)
	}
	got := waitCondition(t, ns, "pinned", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	assert.Equal(t, addr, ingressAddr(got))
	waitTCP(t, netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr(addr), 80))

	other := lbService(t, ns, "other", func(s *v1.Service) { s.Annotations = annotations(addr) })
	got = waitCondition(t, ns, "other", servicecontroller.ConditionReady, metav1.ConditionFalse, "LoadBalancerIPUnavailable")
	assert.Contains(t, meta.FindStatusCondition(got.Status.Conditions, servicecontroller.ConditionReady).Message, addr+" is taken")
	assert.Empty(t, nlbs(other), "nothing built for it")
	deleteService(t, ns, "other")

	list := nlbs(svc)
	require.Len(t, list, 1)
	failed := *list[0].Id
	require.NoError(t, e.SetLoadBalancerState(failed, emulator.NLBFailed))
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		list := nlbs(svc)
		if len(list) != 1 || *list[0].Id == failed || list[0].LifecycleState != nlb.LifecycleStateActive {
			return fmt.Errorf("%d network load balancers", len(list))
		}
		for _, a := range list[0].IpAddresses {
			if *a.IpAddress == addr {
				return nil
			}
		}
		return fmt.Errorf("the new network load balancer is not at %s", addr)
	}), "a FAILED network load balancer is built anew at its assigned address")
	waitTCP(t, netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr(addr), 80))
	waitCondition(t, ns, "pinned", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)

	moved := getService(t, ns, "pinned")
	moved.Annotations[assigned] = "127.0.76.201"
	_, err := env.Client.CoreV1().Services(ns).Update(t.Context(), moved, metav1.UpdateOptions{})
	require.NoError(t, err)
	// Refused; the load balancer still serves where it was.
	got = waitCondition(t, ns, "pinned", servicecontroller.ConditionProgressing, metav1.ConditionFalse, "UnsupportedService")
	assert.Contains(t, meta.FindStatusCondition(got.Status.Conditions, servicecontroller.ConditionProgressing).Message, "cannot change once built")
	assert.Equal(t, addr, ingressAddr(got), "left as it is")

	deleteService(t, ns, "pinned")
	assert.Equal(t, before, e.Objects(), "nothing left in the emulator")
}

// tlsSecret writes the kubernetes.io/tls Secret name of namespace ns with a
// new certificate for host, and returns the certificate.
func tlsSecret(t *testing.T, ca *core.CA, ns, name, host string) string {
	t.Helper()
	crt, key, err := ca.IssuePEM(host)
	require.NoError(t, err)
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: v1.SecretTypeTLS,
		Data: map[string][]byte{v1.TLSCertKey: crt, v1.TLSPrivateKeyKey: key}}
	if _, err := env.Client.CoreV1().Secrets(ns).Create(t.Context(), sec, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = env.Client.CoreV1().Secrets(ns).Update(t.Context(), sec, metav1.UpdateOptions{})
		require.NoError(t, err)
	} else {
		require.NoError(t, err)
	}
	return string(crt)
}

// SSL listeners present the certificate of the Service's TLS Secret, named
// as the peer names it; a renewed Secret (cert-manager's way: the same
// Secret, new content) is found by the drift check and served, the old
// certificate removed.
func TestOCISSLListenersFollowTheirTLSSecret(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 71, 1)
	e, client := c.ociEmu, ociLBClient(t, c.ociEmu)
	ca, err := core.NewCA("e2e")
	require.NoError(t, err)
	first := tlsSecret(t, ca, ns, "web-tls", "web.example")
	svc := lbService(t, ns, "web", func(s *v1.Service) {
		s.Annotations = map[string]string{
			"service.beta.kubernetes.io/oci-load-balancer-ssl-ports":  "443",
			"service.beta.kubernetes.io/oci-load-balancer-tls-secret": "web-tls",
		}
		s.Spec.Ports = []v1.ServicePort{{Name: "https", Protocol: v1.ProtocolTCP, Port: 443}, {Name: "http", Protocol: v1.ProtocolTCP, Port: 80}}
	})
	waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	lbs := ociLBs(t, client, e, string(svc.UID))
	require.Len(t, lbs, 1)
	lb := lbs[0]
	require.NotNil(t, lb.Listeners["TCP-443"].SslConfiguration, "the SSL port's listener terminates SSL")
	assert.Equal(t, "web-tls", *lb.Listeners["TCP-443"].SslConfiguration.CertificateName, "the certificate is named as the Secret")
	assert.Nil(t, lb.Listeners["TCP-80"].SslConfiguration, "the other port's does not")
	assert.Equal(t, first, *lb.Certificates["web-tls"].PublicCertificate)

	// Renewed in place: the drift check (every 2 s here) finds it.
	second := tlsSecret(t, ca, ns, "web-tls", "web.example")
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		lbs := ociLBs(t, client, e, string(svc.UID))
		if len(lbs) != 1 {
			return fmt.Errorf("%d load balancers", len(lbs))
		}
		l := lbs[0].Listeners["TCP-443"]
		if l.SslConfiguration == nil {
			return fmt.Errorf("no SSL")
		}
		cert := lbs[0].Certificates[*l.SslConfiguration.CertificateName]
		if cert.PublicCertificate == nil || *cert.PublicCertificate != second {
			return fmt.Errorf("listener TCP-443 presents %s, not the renewed certificate", *l.SslConfiguration.CertificateName)
		}
		if len(lbs[0].Certificates) != 1 {
			return fmt.Errorf("certificates %d: the old one is still there", len(lbs[0].Certificates))
		}
		return nil
	}), "the renewed certificate is served and the old one removed")
	assert.Equal(t, *lb.Id, *ociLBs(t, client, e, string(svc.UID))[0].Id, "the same load balancer")
	deleteService(t, ns, "web")
}

// Rule sets of the rule-sets annotation are built with the load balancer and
// applied by every listener; a changed annotation changes them in place; an
// empty one removes them.
func TestOCIRuleSetsFollowTheirAnnotation(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 72, 1)
	e, client := c.ociEmu, ociLBClient(t, c.ociEmu)
	const key = "oci.oraclecloud.com/oci-load-balancer-rule-sets"
	svc := lbService(t, ns, "web", func(s *v1.Service) {
		s.Annotations = map[string]string{key: `{"via": {"items": [{"action": "ADD_HTTP_REQUEST_HEADER", "header": "X-Via", "value": "oci"}]}}`}
	})
	waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	lb := ociLBs(t, client, e, string(svc.UID))[0]
	require.Contains(t, lb.RuleSets, "via")
	assert.Equal(t, []string{"via"}, lb.Listeners["TCP-80"].RuleSetNames)

	set := func(v string) {
		t.Helper()
		s := getService(t, ns, "web")
		s.Annotations[key] = v
		_, err := env.Client.CoreV1().Services(ns).Update(t.Context(), s, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	set(`{"via": {"items": [{"action": "REMOVE_HTTP_REQUEST_HEADER", "header": "X-Old"}]}}`)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		lb := ociLBs(t, client, e, string(svc.UID))[0]
		if rs := lb.RuleSets["via"]; len(rs.Items) != 1 {
			return fmt.Errorf("rule set via: %+v", rs)
		} else if _, ok := rs.Items[0].(loadbalancer.RemoveHttpRequestHeaderRule); !ok {
			return fmt.Errorf("rule set via still has %T", rs.Items[0])
		}
		return nil
	}), "the changed rule set")
	set(`{}`)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		lb := ociLBs(t, client, e, string(svc.UID))[0]
		if len(lb.RuleSets) != 0 || len(lb.Listeners["TCP-80"].RuleSetNames) != 0 {
			return fmt.Errorf("rule sets %v, listener's %v", len(lb.RuleSets), lb.Listeners["TCP-80"].RuleSetNames)
		}
		return nil
	}), "no rule set left")
	deleteService(t, ns, "web")
}

// NSG mode, as the peer's: the load balancer in a frontend NSG of the
// Service's (named and tagged as the peer's), which admits the sources and
// reaches the backend NSG, which admits it; no security list rule. Back to
// SL-All: the load balancer leaves the NSG, which goes, and the backend
// NSG's rules go. Nothing is left after the Service.
func TestOCINSGModeOpensTheFrontendAndBackendGroups(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 73, 1)
	e, client, network := c.ociEmu, ociLBClient(t, c.ociEmu), ociNetworkClient(t, c.ociEmu)
	f := e.Fixture()
	back, err := network.CreateNetworkSecurityGroup(t.Context(), ocicore.CreateNetworkSecurityGroupRequest{CreateNetworkSecurityGroupDetails: ocicore.CreateNetworkSecurityGroupDetails{
		CompartmentId: common.String(f.CompartmentID), VcnId: common.String(f.VCNID), DisplayName: common.String("nodes")}})
	require.NoError(t, err)
	before := e.Objects()
	const mode = "oci.oraclecloud.com/security-rule-management-mode"
	svc := lbService(t, ns, "web", func(s *v1.Service) {
		s.Annotations = map[string]string{mode: "NSG", "oci.oraclecloud.com/oci-backend-network-security-group": *back.Id}
	})
	got := waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	nodePort := got.Spec.Ports[0].NodePort
	groups, err := network.ListNetworkSecurityGroups(t.Context(), ocicore.ListNetworkSecurityGroupsRequest{CompartmentId: common.String(f.CompartmentID),
		DisplayName: common.String(ns + "/web/" + string(svc.UID) + "/nsg")})
	require.NoError(t, err)
	require.Len(t, groups.Items, 1, "the frontend NSG, named as the peer names it")
	front := *groups.Items[0].Id
	assert.Equal(t, string(svc.UID), groups.Items[0].FreeformTags["ServiceUid"])
	lb := ociLBs(t, client, e, string(svc.UID))[0]
	assert.Equal(t, []string{front}, lb.NetworkSecurityGroupIds)

	rules := func(id string) []string {
		r, err := network.ListNetworkSecurityGroupSecurityRules(t.Context(), ocicore.ListNetworkSecurityGroupSecurityRulesRequest{NetworkSecurityGroupId: common.String(id)})
		require.NoError(t, err)
		var out []string
		for _, rule := range r.Items {
			peer := rule.Source
			if rule.Direction == ocicore.SecurityRuleDirectionEgress {
				peer = rule.Destination
			}
			out = append(out, fmt.Sprintf("%s %s %d", rule.Direction, *peer, *rule.TcpOptions.DestinationPortRange.Min))
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, []string{"EGRESS " + *back.Id + " 10256", fmt.Sprintf("EGRESS %s %d", *back.Id, nodePort), "INGRESS 0.0.0.0/0 80"}, rules(front))
	assert.Equal(t, []string{"INGRESS " + front + " 10256", fmt.Sprintf("INGRESS %s %d", front, nodePort)}, rules(*back.Id))
	assert.Equal(t, before["securityRule"]+5, e.Objects()["securityRule"], "no security list rule: the 5 are the NSGs'")

	// SL-All: out of the NSG, which goes; the backend NSG's rules go.
	s := getService(t, ns, "web")
	s.Annotations[mode] = "SL-All"
	_, err = env.Client.CoreV1().Services(ns).Update(t.Context(), s, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		lb := ociLBs(t, client, e, string(svc.UID))[0]
		if len(lb.NetworkSecurityGroupIds) != 0 {
			return fmt.Errorf("still in %v", lb.NetworkSecurityGroupIds)
		}
		if n := e.Objects()["networkSecurityGroup"]; n != before["networkSecurityGroup"] {
			return fmt.Errorf("%d NSGs", n)
		}
		if r := rules(*back.Id); len(r) != 0 {
			return fmt.Errorf("backend rules %v", r)
		}
		return nil
	}), "the frontend NSG is left and deleted, the backend NSG's rules removed")
	deleteService(t, ns, "web")
	assert.Equal(t, before, e.Objects(), "nothing left")
}

// The security list modes, by annotation and by the config: All opens the
// load balancer's ingress, its egress to the nodes and the nodes' ingress
// from it; Frontend the ingress alone; None nothing. Each Service's rules
// carry its mark, and go with it.
func TestOCISecurityListModesOpenWhatTheySay(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 74, 1)
	e := c.ociEmu
	before := e.Objects()
	ours := func(svc *v1.Service) (ingress, egress int) {
		in, out := e.SecurityListRules(e.Fixture().SecurityListID)
		for _, r := range in {
			if strings.Contains(r, string(svc.UID)) {
				ingress++
			}
		}
		for _, r := range out {
			if strings.Contains(r, string(svc.UID)) {
				egress++
			}
		}
		return ingress, egress
	}
	const mode = "service.beta.kubernetes.io/oci-load-balancer-security-list-management-mode"
	for _, tc := range []struct {
		mode                 string
		wantIngress, wantOut int
	}{
		// All: port 80 from 0.0.0.0/0, and the node port and 10256 from
		// the load balancer's subnet (the nodes' here), both ways.
		{"All", 3, 2},
		{"Frontend", 1, 0},
		{"None", 0, 0},
	} {
		name := strings.ToLower(tc.mode)
		svc := lbService(t, ns, name, func(s *v1.Service) { s.Annotations = map[string]string{mode: tc.mode} })
		waitCondition(t, ns, name, servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
		in, out := ours(svc)
		assert.Equal(t, tc.wantIngress, in, "%s: ingress rules", tc.mode)
		assert.Equal(t, tc.wantOut, out, "%s: egress rules", tc.mode)
		deleteService(t, ns, name)
		in, out = ours(svc)
		assert.Zero(t, in+out, "%s: the Service's rules go with it", tc.mode)
	}
	assert.Equal(t, before, e.Objects())
}

// Services preferring dual-stack on the emulator's dual-stack subnet: a load
// balancer of ipMode IPV6 and a network load balancer of nlbIpVersion
// IPV4_AND_IPV6, each with an IPv6 address of the subnet's prefix in the
// Service's status after its IPv4 one; this cluster is IPv4 alone, so the
// listeners stay IPv4 (TCP-80, as the peer names them) and carry the
// traffic; nothing is left after.
func TestOCIPreferDualStackServicesGetAnIPv6Address(t *testing.T) {
	ns := namespace(t)
	c := ociLBCloud(t, 75, 2)
	e := c.ociEmu
	before := e.Objects()
	dual := e.Fixture().DualStackSubnetID
	prefix := netip.MustParsePrefix(emulator.DualStackIPv6CIDR)
	prefer := v1.IPFamilyPolicyPreferDualStack
	for kind, subnet := range map[string]string{"lb": "service.beta.kubernetes.io/oci-load-balancer-subnet1", "nlb": "oci-network-load-balancer.oraclecloud.com/subnet"} {
		svc := lbService(t, ns, "dual-"+kind, func(s *v1.Service) {
			s.Annotations = map[string]string{"oci.oraclecloud.com/load-balancer-type": kind, subnet: dual}
			s.Spec.IPFamilyPolicy = &prefer
		})
		for _, k := range c.nodes {
			k.ServeService(t, svc, true)
		}
		got := waitCondition(t, ns, svc.Name, servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
		var v4, v6 []string
		for _, ing := range got.Status.LoadBalancer.Ingress {
			if a := netip.MustParseAddr(ing.IP); a.Is6() {
				assert.True(t, prefix.Contains(a), "%s: %s is of the subnet's prefix", kind, a)
				v6 = append(v6, ing.IP)
			} else {
				v4 = append(v4, ing.IP)
			}
		}
		require.Len(t, v6, 1, "%s: %v", kind, got.Status.LoadBalancer.Ingress)
		require.NotEmpty(t, v4, kind)
		assert.Equal(t, v4[0], got.Status.LoadBalancer.Ingress[0].IP, "%s: IPv4 first", kind)
		switch kind {
		case "lb":
			lbs := ociLBs(t, ociLBClient(t, e), e, string(svc.UID))
			require.Len(t, lbs, 1)
			assert.Equal(t, loadbalancer.LoadBalancerIpModeIpv6, lbs[0].IpMode)
		case "nlb":
			list, err := ociNLBClient(t, e).ListNetworkLoadBalancers(t.Context(), nlb.ListNetworkLoadBalancersRequest{
				CompartmentId: common.String(e.Fixture().CompartmentID), DisplayName: common.String(ns + "/" + svc.Name + "/" + string(svc.UID))})
			require.NoError(t, err)
			require.Len(t, list.Items, 1)
			assert.Equal(t, nlb.NlbIpVersionIpv4AndIpv6, list.Items[0].NlbIpVersion)
			assert.Equal(t, []string{"TCP-80"}, slices.Sorted(maps.Keys(list.Items[0].Listeners)), "the Service's one family")
		}
		vip := netip.AddrPortFrom(netip.MustParseAddr(v4[0]), 80)
		seen := map[string]bool{}
		require.NoError(t, devenv.Poll(waitLong, tick, func() error {
			a, err := devenv.RequestTCP(netip.Addr{}, vip)
			if err != nil {
				return err
			}
			seen[a] = true
			if len(seen) < 2 {
				return fmt.Errorf("answers from %v", seen)
			}
			return nil
		}), "%s: both nodes answer over IPv4", kind)
		deleteService(t, ns, svc.Name)
	}
	assert.Equal(t, before, e.Objects(), "nothing left in the emulator")
}
