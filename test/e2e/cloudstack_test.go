package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/devenv"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
	"github.com/overcast-ccm/overcast/test/framework"
)

// The CloudStack cloud on the real apiserver, against the CloudStack emulator
// reached through cloudstack-go, with the user keys CloudStack gives CKS
// clusters.

// cloudStackEmulator starts the emulator with its guest network on
// 127.0.third.0/24 and its public addresses on 127.3.third.0/24.
func cloudStackEmulator(t *testing.T, third int, vpc ...bool) *emulator.Emulator {
	t.Helper()
	e, err := emulator.New(emulator.Options{JobDelay: 300 * time.Millisecond, ServeTraffic: true, VPC: len(vpc) > 0 && vpc[0],
		MachineCIDR: fmt.Sprintf("127.0.%d.0/24", third), PublicCIDR: fmt.Sprintf("127.3.%d.0/24", third)})
	return coretest.Serve(t, e, err)
}

func csAdmin(e *emulator.Emulator) *cs.CloudStackClient {
	fx := e.Fixture()
	return cs.NewClient(e.URL()+"/client/api", fx.AdminKey, fx.AdminSecret, false)
}

// cloudStackLBCloud: the emulator, a CCM on it, and n machines with Nodes.
func cloudStackLBCloud(t *testing.T, third, n int) *lbCloud {
	c, _ := cloudStackLBCloudOn(t, third, n)
	return c
}

// cloudStackLBCloudOn is cloudStackLBCloud with its emulator.
func cloudStackLBCloudOn(t *testing.T, third, n int) (*lbCloud, *emulator.Emulator) {
	t.Helper()
	e := cloudStackEmulator(t, third)
	ccm := env.StartCCM(t, framework.CCMOptions{Cloud: "cloudstack", CloudConfig: e.CloudConfig(),
		ExtraArgs: []string{"--load-balancer-drift-period=2s"}})
	c := &lbCloud{name: "cloudstack", ccm: ccm, conf: e.CloudConfig()}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("cs%d-node-%d", third, i)
		_, ip := e.AddMachine(name)
		c.nodes = append(c.nodes, env.NewKubelet(t, name, ip))
	}
	for _, k := range c.nodes {
		waitNodeInitialised(t, k.Name)
	}
	admin := csAdmin(e)
	c.holds = func(t *testing.T, svc *v1.Service, _ string) []string {
		var out []string
		for _, r := range csRules(t, admin) {
			if strings.HasPrefix(r.Name, cloudprovider.DefaultLoadBalancerName(svc)+"-") {
				out = append(out, "rule "+r.Name)
			}
		}
		p := admin.Address.NewListPublicIpAddressesParams()
		p.SetListall(true)
		p.SetTags(map[string]string{"overcast-service": string(svc.UID)})
		r, err := admin.Address.ListPublicIpAddresses(p)
		require.NoError(t, err)
		for _, a := range r.PublicIpAddresses {
			out = append(out, "address "+a.Ipaddress)
		}
		return out
	}
	c.members = func(t *testing.T, svc *v1.Service) []string {
		var out []string
		for _, r := range csRules(t, admin) {
			if !strings.HasPrefix(r.Name, cloudprovider.DefaultLoadBalancerName(svc)+"-") {
				continue
			}
			got, err := admin.LoadBalancer.ListLoadBalancerRuleInstances(admin.LoadBalancer.NewListLoadBalancerRuleInstancesParams(r.Id))
			require.NoError(t, err)
			for _, v := range got.LoadBalancerRuleInstances {
				out = append(out, v.Nic[0].Ipaddress)
			}
		}
		slices.Sort(out)
		return out
	}
	return c, e
}

func csRules(t *testing.T, admin *cs.CloudStackClient) []*cs.LoadBalancerRule {
	t.Helper()
	p := admin.LoadBalancer.NewListLoadBalancerRulesParams()
	p.SetListall(true)
	r, err := admin.LoadBalancer.ListLoadBalancerRules(p)
	require.NoError(t, err)
	return r.LoadBalancerRules
}

func TestCloudStackNodesFollowTheirMachines(t *testing.T) {
	e := cloudStackEmulator(t, 61)
	conf := e.CloudConfig() + "lifecycle-max-age = 1s\n"
	env.StartCCM(t, framework.CCMOptions{Cloud: "external-cloudstack", CloudConfig: conf})
	byName, ip1 := e.AddMachine("cs-byname")
	down, ip2 := e.AddMachine("cs-down")
	gone, ip3 := e.AddMachine("cs-gone")
	doubt, ip4 := e.AddMachine("cs-doubt")
	k1 := env.NewKubelet(t, "cs-byname.example.com", ip1)
	k2 := env.NewKubelet(t, "cs-down", ip2)
	k3 := env.NewKubelet(t, "cs-gone", ip3)
	k4 := env.NewKubelet(t, "cs-doubt", ip4)

	// A Node the peer initialised (a bare UUID, its older form) and whose
	// name is not its machine's: found by its providerID, which is kept.
	renamed, ip5 := e.AddMachine("cs-machine")
	_, err := env.Client.CoreV1().Nodes().Create(t.Context(), &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "cs-renamed"},
		Spec:       v1.NodeSpec{ProviderID: renamed, Taints: []v1.Taint{{Key: devenv.UninitializedTaint, Value: "true", Effect: v1.TaintEffectNoSchedule}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Nodes().Delete(context.Background(), "cs-renamed", metav1.DeleteOptions{})
	})

	fx := e.Fixture()
	for name, id := range map[string]string{"cs-byname.example.com": byName, "cs-down": down, "cs-gone": gone, "cs-doubt": doubt} {
		n := waitNodeInitialised(t, name)
		assert.Equal(t, "external-cloudstack://"+id, n.Spec.ProviderID, name)
		assert.Equal(t, fx.ZoneName, n.Labels[v1.LabelTopologyZone], name)
		assert.Equal(t, fx.ZoneName, n.Labels[v1.LabelTopologyRegion], name)
		assert.NotEmpty(t, n.Labels[v1.LabelInstanceTypeStable], name)
	}
	n := waitNodeAddressed(t, "cs-renamed")
	assert.Equal(t, renamed, n.Spec.ProviderID, "a providerID is never changed")
	assert.Equal(t, fx.ZoneName, n.Labels[v1.LabelTopologyZone])
	assert.Contains(t, n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip5})

	// The management server is down: a NotReady Node whose machine cannot be
	// looked up stays.
	fault := core.Fault{Status: 503}
	e.InjectFault(fault)
	k4.StopHeartbeats(true)
	time.Sleep(5 * time.Second) // five lifecycle periods, the listing 1 s old at most
	_, err = env.Client.CoreV1().Nodes().Get(t.Context(), "cs-doubt", metav1.GetOptions{})
	require.NoError(t, err, "a Node must not be deleted while the cloud does not answer")
	e.ClearFaults()
	require.NoError(t, k4.ResumeHeartbeats())

	// Destroyed: deleted. Stopped: tainted, and kept.
	require.NoError(t, e.SetMachineState(gone, emulator.StateDestroyed))
	require.NoError(t, e.SetMachineState(down, emulator.StateStopped))
	k3.StopHeartbeats(true)
	k2.StopHeartbeats(true)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		_, err := env.Client.CoreV1().Nodes().Get(context.Background(), "cs-gone", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("node cs-gone still exists (err %w)", err)
	}), "the Node of a destroyed machine is deleted")
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), "cs-down", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !hasTaint(n, devenv.ShutdownTaint) {
			return fmt.Errorf("no shutdown taint yet")
		}
		return nil
	}), "the Node of a stopped machine is tainted")
	_, err = env.Client.CoreV1().Nodes().Get(t.Context(), k1.Name, metav1.GetOptions{})
	require.NoError(t, err)
}

func TestCloudStackServicesCarryTrafficAndLeaveNothing(t *testing.T) {
	ns := namespace(t)
	c := cloudStackLBCloud(t, 62, 2)
	// TCP and UDP on one port, from a source range.
	svc := lbService(t, ns, "dns", func(s *v1.Service) {
		s.Spec.Ports = []v1.ServicePort{
			{Name: "tcp", Protocol: v1.ProtocolTCP, Port: 53},
			{Name: "udp", Protocol: v1.ProtocolUDP, Port: 53},
		}
		s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"}
	})
	for _, k := range c.nodes {
		k.ServeService(t, svc, true)
	}
	got := waitCondition(t, ns, "dns", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
	addr := netip.MustParseAddr(ingressAddr(got))
	names := []string{c.nodes[0].Name, c.nodes[1].Name}
	assert.Contains(t, names, waitTCP(t, netip.Addr{}, netip.AddrPortFrom(addr, 53)))
	var answer string
	require.NoError(t, devenv.Poll(waitShort, tick, func() error {
		var err error
		answer, err = devenv.RequestUDP(netip.Addr{}, netip.AddrPortFrom(addr, 53))
		return err
	}))
	assert.Contains(t, names, answer)
	assert.Len(t, c.holds(t, got, ""), 3, "two rules and the address: %v", c.holds(t, got, ""))

	// Node churn: a Node excluded leaves the rules' machines.
	patchNode(t, c.nodes[0].Name, `{"metadata":{"labels":{"`+v1.LabelNodeExcludeBalancers+`":"true"}}}`)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		m := c.members(t, got)
		want := []string{c.nodes[1].IP.String(), c.nodes[1].IP.String()}
		if !slices.Equal(m, want) {
			return fmt.Errorf("members %v, want %v", m, want)
		}
		return nil
	}))
	assert.Empty(t, warnings(t, ns))
	deleteService(t, ns, "dns")
	assert.Empty(t, c.holds(t, got, ""), "a deleted Service leaves nothing")
}

// A tcp-proxy rule sends the PROXY protocol header with the client's address.
func TestCloudStackProxyProtocolReachesTheNode(t *testing.T) {
	ns := namespace(t)
	c := cloudStackLBCloud(t, 63, 1)
	svc := lbService(t, ns, "proxied", func(s *v1.Service) {
		s.Annotations = map[string]string{"service.beta.kubernetes.io/cloudstack-load-balancer-proxy-protocol": "true"}
	})
	l, err := net.Listen("tcp", netip.AddrPortFrom(c.nodes[0].IP, uint16(svc.Spec.Ports[0].NodePort)).String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	headers := make(chan string, 16)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(conn).ReadString('\n')
			headers <- line
			_, _ = conn.Write([]byte("proxied\n"))
			_ = conn.Close()
		}
	}()
	got := waitCondition(t, ns, "proxied", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
	addr := netip.MustParseAddr(ingressAddr(got))
	src := netip.MustParseAddr("127.0.63.200")
	assert.Equal(t, "proxied", waitTCP(t, src, netip.AddrPortFrom(addr, 80)))
	// The first line of the connection that carried the request (health
	// checks connect and send nothing).
	var header string
	for header == "" {
		select {
		case header = <-headers:
		case <-time.After(waitShort):
			t.Fatal("no connection reached the Node")
		}
	}
	assert.True(t, strings.HasPrefix(header, "PROXY TCP4 127.0.63.200 "+addr.String()+" "), "the PROXY header: %q", header)
	assert.Empty(t, warnings(t, ns))
}

// A Service the peer served: its rule (named as the peer names it), the
// address the peer associated, the firewall rule. Overcast takes them over as
// they are, with no second rule and the same address, and deleting the
// Service releases the address, as the peer would have.
// Two Services asking for one free address share it: it is associated for
// the first, kept while the other's rules are on it, and released with the
// last, whichever goes first; for the address Overcast associated (tagged for
// the first) and for the one the peer did (the first annotated
// ip-associated-by-controller, the address untagged), taken over.
func TestCloudStackASharedRequestedAddressGoesWithTheLast(t *testing.T) {
	third := 70
	for _, shape := range []string{"overcast", "peer"} {
		for _, first := range []string{"owner", "other"} {
			t.Run(shape+"/"+first+" deleted first", func(t *testing.T) {
				sharedAddressGoesWithTheLast(t, third, shape == "peer", first == "owner")
			})
			third++
		}
	}
}

func sharedAddressGoesWithTheLast(t *testing.T, third int, peer, ownerFirst bool) {
	ns := namespace(t)
	e := cloudStackEmulator(t, third)
	name := fmt.Sprintf("cs%d-node-1", third)
	machine, ip := e.AddMachine(name)
	k := env.NewKubelet(t, name, ip)
	shared := fmt.Sprintf("127.3.%d.200", third)
	svcs := []string{"owner", "other"}
	opts := framework.CCMOptions{Cloud: "cloudstack", CloudConfig: e.CloudConfig()}
	if peer {
		nodes := env.StartCCM(t, framework.CCMOptions{Cloud: "cloudstack", CloudConfig: e.CloudConfig(),
			Controllers: []string{"cloud-node", "cloud-node-lifecycle"}})
		waitNodeInitialised(t, k.Name)
		nodes.Stop()
		for i, name := range svcs {
			svc := lbService(t, ns, name, func(s *v1.Service) {
				s.Spec.LoadBalancerIP = shared
				s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort = int32(80+i), int32(30080+i)
			})
			k.ServeService(t, svc, true)
			peerBuilds(t, e, svc, []string{machine})
		}
		require.Equal(t, "true", getService(t, ns, "owner").Annotations[peerIPAssociated], "the peer associated it for the first")
		env.StartCCM(t, opts)
	} else {
		env.StartCCM(t, opts)
		waitNodeInitialised(t, k.Name)
		for i, name := range svcs {
			svc := lbService(t, ns, name, func(s *v1.Service) {
				s.Spec.LoadBalancerIP = shared
				s.Spec.Ports[0].Port = int32(80 + i)
			})
			k.ServeService(t, svc, true)
			waitCondition(t, ns, name, servicecontroller.ConditionReady, metav1.ConditionTrue, "")
		}
	}
	for _, name := range svcs {
		got := waitCondition(t, ns, name, servicecontroller.ConditionReady, metav1.ConditionTrue, "")
		require.Equal(t, shared, ingressAddr(got))
	}
	admin := csAdmin(e)
	addresses := func() []string {
		p := admin.Address.NewListPublicIpAddressesParams()
		p.SetListall(true)
		r, err := admin.Address.ListPublicIpAddresses(p)
		require.NoError(t, err)
		var out []string
		for _, a := range r.PublicIpAddresses {
			out = append(out, a.Ipaddress)
		}
		return out
	}
	require.Equal(t, []string{shared}, addresses())

	if !ownerFirst {
		slices.Reverse(svcs)
	}
	deleteService(t, ns, svcs[0])
	assert.Equal(t, []string{shared}, addresses(), "kept: the other Service's rule is on it")
	port := map[string]uint16{"owner": 80, "other": 81}[svcs[1]]
	assert.Equal(t, k.Name, waitTCP(t, netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr(shared), port)))

	deleteService(t, ns, svcs[1])
	assert.Empty(t, csRules(t, admin))
	assert.Empty(t, addresses(), "released with the last Service that used it")
	assert.Empty(t, warnings(t, ns))
}
