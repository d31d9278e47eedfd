package e2e

import (
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/devenv"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
	"github.com/overcast-ccm/overcast/test/framework"
)

// TestCloudStackTakesOverFromThePeerItself runs the unmodified
// cloudstack-kubernetes-provider (its binary named by
// OVERCAST_PEER_CLOUDSTACK; docs/cloudstack.md says how to build it) on the
// emulator with two Services, one with source ranges, then Overcast in its
// place, as docs/cloudstack.md's migration says. Run by hand: the peer is not
// built by make test.
func TestCloudStackTakesOverFromThePeerItself(t *testing.T) {
	bin, ns, e, k := peerCloudStack(t, 69, false)
	// The peer needs an administrator's keys (it calls the admin-only
	// listManagementServersMetrics at start).
	peer := env.StartBinary(t, bin, "cloudstack-kubernetes-provider", framework.CCMOptions{Cloud: "external-cloudstack",
		CloudConfig: e.AdminCloudConfig()})
	waitNodeInitialised(t, k.Name)
	shapes := map[string]func(*v1.Service){
		"plain":  nil,
		"ranged": func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"} },
	}
	addrs := map[string]string{}
	for name, mutate := range shapes {
		svc := lbService(t, ns, name, mutate)
		k.ServeService(t, svc, true)
	}
	for name := range shapes {
		require.NoError(t, devenv.Poll(waitLong, tick, func() error {
			got, err := env.Client.CoreV1().Services(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if addrs[name] = ingressAddr(got); addrs[name] == "" {
				return fmt.Errorf("%s has no ingress from the peer yet", name)
			}
			return nil
		}), "the peer serves %s", name)
	}
	admin := csAdmin(e)
	peerRules, peerFirewall := csObjects(t, admin, false)
	require.Len(t, peerRules, 2, "the peer's rules")
	peer.Stop()
	e.ResetCalls()

	env.StartCCM(t, framework.CCMOptions{Cloud: "external-cloudstack", CloudConfig: e.CloudConfig()})
	for name := range shapes {
		got := waitCondition(t, ns, name, servicecontroller.ConditionReady, metav1.ConditionTrue, "")
		assert.Equal(t, addrs[name], ingressAddr(got), "%s keeps the peer's address", name)
		assert.Equal(t, k.Name, waitTCP(t, netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr(addrs[name]), 80)))
	}
	rules, firewall := csObjects(t, admin, false)
	assert.Equal(t, peerRules, rules, "the peer's rules, none rebuilt")
	assert.Equal(t, peerFirewall, firewall, "the peer's firewall rules, none rebuilt")
	writes := csWrites(e)
	assert.Equal(t, len(shapes), writes, "one write per Service: its address's tags")
	assert.Empty(t, warnings(t, ns))
	t.Logf("the peer's %d rules and %d firewall rules adopted with %d writes; addresses %v", len(rules), len(firewall), writes, addrs)

	csDeleteLeavesNothing(t, admin, false, ns, "plain", "ranged")
}

// TestCloudStackGoesBackToThePeerItself: the way back. Overcast serves
// every shape the peer makes (source ranges, source-cidrs, both, PROXY
// protocol, UDP, several ports), is stopped, and the unmodified peer starts
// in its place. On an isolated network it rebuilds nothing (no write at
// all) and every Service keeps its address and its traffic. In a VPC tier a
// Service's source ranges without the source-cidrs annotation are in its
// rules' cidrlist (the tier's ACL is not the rule's alone): the peer
// rebuilds exactly the Services overcast doctor named before the switch.
// Run by hand, as the way there.
func TestCloudStackGoesBackToThePeerItself(t *testing.T) {
	for _, network := range []struct {
		name  string
		third int
		vpc   bool
	}{{"isolated network", 74, false}, {"VPC tier", 75, true}} {
		t.Run(network.name, func(t *testing.T) { goBackToThePeer(t, network.third, network.vpc) })
	}
}

// shapesThePeerMakes are the Services of every shape the peer makes (source
// ranges, source-cidrs, both, PROXY protocol, UDP, several ports), by name.
var shapesThePeerMakes = map[string]func(*v1.Service){
	"plain":  nil,
	"ranged": func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"} },
	"cidrs":  func(s *v1.Service) { s.Annotations = map[string]string{peerSourceCIDRs: "127.0.0.0/8"} },
	"both": func(s *v1.Service) {
		s.Annotations = map[string]string{peerSourceCIDRs: "127.0.0.0/8"}
		s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/9"}
	},
	"proxy": func(s *v1.Service) { s.Annotations = map[string]string{peerProxyProtocol: "true"} },
	"udp":   func(s *v1.Service) { s.Spec.Ports[0].Protocol, s.Spec.Ports[0].Port = v1.ProtocolUDP, 53 },
	"ports": func(s *v1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: "https", Protocol: v1.ProtocolTCP, Port: 443})
		s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"}
	},
}

func goBackToThePeer(t *testing.T, third int, vpc bool) {
	bin, ns, e, k := peerCloudStack(t, third, vpc)
	ccm := env.StartCCM(t, framework.CCMOptions{Cloud: "external-cloudstack", CloudConfig: e.CloudConfig()})
	waitNodeInitialised(t, k.Name)
	shapes := shapesThePeerMakes
	addrs := map[string]string{}
	for name, mutate := range shapes {
		k.ServeService(t, lbService(t, ns, name, mutate), true)
	}
	for name := range shapes {
		addrs[name] = ingressAddr(waitCondition(t, ns, name, servicecontroller.ConditionReady, metav1.ConditionTrue, ""))
	}
	admin := csAdmin(e)
	rules, firewall := csObjects(t, admin, false)
	byName := csRuleNames(t, admin)
	ccm.Stop()
	// What doctor says the peer will rebuild, before the switch.
	ccmBin, err := env.CCMBinary()
	require.NoError(t, err)
	doctor, _ := framework.RunDoctor(t, filepath.Join(filepath.Dir(ccmBin), "overcast"), "external-cloudstack", e.CloudConfig(),
		"--kubeconfig="+env.AdminKubeconfig, "--timeout=1m")
	named := map[string]bool{}
	for name := range shapes {
		named[name] = strings.Contains(doctor, ns+"/"+name)
	}
	e.ResetCalls()

	peer := env.StartBinary(t, bin, "cloudstack-kubernetes-provider", framework.CCMOptions{Cloud: "external-cloudstack",
		CloudConfig: e.AdminCloudConfig()})
	waitThePeerSynced(t, e, len(shapes))
	gotRules, gotFirewall := csObjects(t, admin, false)
	rebuilt := map[string]bool{}
	for id, rule := range byName {
		if slices.Contains(gotRules, id) {
			continue
		}
		for name := range shapes {
			if strings.HasPrefix(rule, cloudprovider.DefaultLoadBalancerName(getService(t, ns, name))+"-") {
				rebuilt[name] = true
			}
		}
	}
	if vpc {
		for name := range shapes {
			assert.Equal(t, named[name], rebuilt[name], "%s: doctor named it %v, the peer rebuilt it %v:\n%s", name, named[name], rebuilt[name], doctor)
		}
		t.Logf("VPC tier: the peer rebuilt the rules of %v, as doctor said; %d writes", rebuilt, csWrites(e))
	} else {
		assert.Equal(t, rules, gotRules, "the peer rebuilds no rule")
		assert.Equal(t, firewall, gotFirewall, "the peer rebuilds no firewall rule")
		assert.Zero(t, csWrites(e), "the peer writes nothing: %v", e.Calls())
		assert.NotContains(t, slices.Collect(maps.Values(named)), true, "doctor names none")
	}
	for name := range shapes {
		got, err := env.Client.CoreV1().Services(ns).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, addrs[name], ingressAddr(got), "%s keeps its address", name)
	}
	assert.Equal(t, k.Name, waitTCP(t, netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr(addrs["ranged"]), 80)))
	peer.Stop()

	env.StartCCM(t, framework.CCMOptions{Cloud: "external-cloudstack", CloudConfig: e.CloudConfig()})
	names := make([]string, 0, len(shapes))
	for name := range shapes {
		names = append(names, name)
	}
	csDeleteLeavesNothing(t, admin, false, ns, names...)
}

// waitThePeerSynced waits until the peer has synced its services Services,
// as it does every one at its start: it has when it has listed each one's
// rules and lists them no more for a while (it asks for its zone every 5 s
// whatever it does).
func waitThePeerSynced(t *testing.T, e *emulator.Emulator, services int) {
	listed := func() (n int) {
		for _, c := range e.Calls() {
			if strings.HasSuffix(c.Route, "listLoadBalancerRules") {
				n += c.Count
			}
		}
		return n
	}
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		before := listed()
		if before < services {
			return fmt.Errorf("the peer listed the rules %d times, not yet once per Service", before)
		}
		time.Sleep(5 * time.Second)
		if listed() != before {
			return fmt.Errorf("the peer is still at work")
		}
		return nil
	}))
}

// peerCloudStack is what a test with the peer needs: its binary (skipped
// without one), a namespace, the emulator on 127.0.third.0/24 and a Node's
// kubelet on one of its machines.
func peerCloudStack(t *testing.T, third int, vpc bool) (bin, ns string, e *emulator.Emulator, k *devenv.Kubelet) {
	t.Helper()
	bin = os.Getenv("OVERCAST_PEER_CLOUDSTACK")
	if bin == "" {
		t.Skip("OVERCAST_PEER_CLOUDSTACK names no cloudstack-kubernetes-provider binary")
	}
	e = cloudStackEmulator(t, third, vpc)
	name := fmt.Sprintf("cs%d-node-1", third)
	_, ip := e.AddMachine(name)
	return bin, namespace(t), e, env.NewKubelet(t, name, ip)
}

// csRuleNames are the load balancer rules' names by id.
func csRuleNames(t *testing.T, admin *cs.CloudStackClient) map[string]string {
	t.Helper()
	p := admin.LoadBalancer.NewListLoadBalancerRulesParams()
	p.SetListall(true)
	r, err := admin.LoadBalancer.ListLoadBalancerRules(p)
	require.NoError(t, err)
	out := map[string]string{}
	for _, x := range r.LoadBalancerRules {
		out[x.Id] = x.Name
	}
	return out
}
