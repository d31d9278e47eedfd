package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	ocicore "github.com/oracle/oci-go-sdk/v65/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/kit"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
	"github.com/overcast-ccm/overcast/test/framework"
)

// The unmodified oci-cloud-controller-manager (its binary named by
// OVERCAST_PEER_OCI; docs/oci.md says how to build it) on the emulator,
// which it reaches as it reaches OCI, through the emulator as an HTTPS proxy.
// Run by hand, as the other peers' tests: the peer is not built by make test.

// ociPeerShapes are the Services the peer makes, one per shape of its
// source the emulator serves: its modes of security rules (NSG with a
// backend NSG, named by backend), a network load balancer (preserving the
// client's address, with the security lists managed), an internal one,
// source ranges, several ports, a flexible shape.
func ociPeerShapes(backend string) map[string]func(*v1.Service) {
	const mode = "oci.oraclecloud.com/security-rule-management-mode"
	annotate := func(kv ...string) func(*v1.Service) {
		return func(s *v1.Service) {
			s.Annotations = map[string]string{}
			for i := 0; i < len(kv); i += 2 {
				s.Annotations[kv[i]] = kv[i+1]
			}
		}
	}
	return map[string]func(*v1.Service){
		"plain":  nil,
		"ranged": func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"} },
		"ports": func(s *v1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: "https", Protocol: v1.ProtocolTCP, Port: 443})
		},
		"frontend": annotate(mode, "SL-Frontend"),
		"nsg":      annotate(mode, "NSG", "oci.oraclecloud.com/oci-backend-network-security-group", backend),
		"internal": annotate("service.beta.kubernetes.io/oci-load-balancer-internal", "true"),
		"flex": annotate("service.beta.kubernetes.io/oci-load-balancer-shape", "flexible",
			"service.beta.kubernetes.io/oci-load-balancer-shape-flex-min", "10", "service.beta.kubernetes.io/oci-load-balancer-shape-flex-max", "100"),
		"nlb": annotate("oci.oraclecloud.com/load-balancer-type", "nlb"),
		"preserve": func(s *v1.Service) {
			annotate("oci.oraclecloud.com/load-balancer-type", "nlb", mode, "SL-All",
				"oci-network-load-balancer.oraclecloud.com/is-preserve-source", "true")(s)
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		},
	}
}

// ociPeer is the peer's binary (the test is skipped without one) and the
// options that run it on e.
func ociPeer(t *testing.T, e *emulator.Emulator) (string, framework.CCMOptions) {
	t.Helper()
	bin := os.Getenv("OVERCAST_PEER_OCI")
	if bin == "" {
		t.Skip("OVERCAST_PEER_OCI names no oci-cloud-controller-manager binary")
	}
	ca := filepath.Join(t.TempDir(), "emulator-ca.pem")
	require.NoError(t, os.WriteFile(ca, e.CA(), 0o600))
	// The peer's client-side limit (its default rate and burst) would make the test
	// wait on it, not on the peer's work.
	conf := e.CloudConfig() + "rateLimiter:\n  disableRateLimiter: true\n"
	return bin, framework.CCMOptions{Cloud: "oci", CloudConfig: conf, Controllers: []string{"cloud-node", "service"},
		Env: []string{"HTTPS_PROXY=" + e.URL(), "SSL_CERT_FILE=" + ca}}
}

// ociPeerKubelet registers a Node of cluster c on a new instance of e, with
// its providerID, as OKE's kubelets are started (the peer needs it).
func ociPeerKubelet(t *testing.T, c *framework.Env, e *emulator.Emulator, name string) *devenv.Kubelet {
	t.Helper()
	k, err := kit.Emulated("oci")
	require.NoError(t, err)
	id, ip := e.AddMachine(name)
	kl, err := c.RegisterKubelet(t.Context(), name, ip, k.ProviderID(id))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, kl.Remove(context.Background())) })
	return kl
}

// ociWrites are the calls of e that change something.
func ociWrites(e *emulator.Emulator) (n int, which []string) {
	for _, c := range e.Calls() {
		if c.Method != http.MethodGet && c.Method != http.MethodHead && c.Code < 400 {
			n += c.Count
			which = append(which, fmt.Sprintf("%s %s %d ×%d", c.Method, c.Route, c.Code, c.Count))
		}
	}
	return n, which
}

// ociPeerSettled waits for the peer to have synced n Services since the
// calls were reset: it has looked up each one's load balancer and looks up
// no more for a while.
func ociPeerSettled(t *testing.T, e *emulator.Emulator, n int) {
	t.Helper()
	lookups := func() (k int) {
		for _, c := range e.Calls() {
			if c.Method == http.MethodGet && strings.HasSuffix(strings.ToLower(c.Route), "loadbalancers") {
				k += c.Count
			}
		}
		return k
	}
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		before := lookups()
		if before < n {
			return fmt.Errorf("the peer looked up %d load balancers, not yet one per Service (%d)", before, n)
		}
		time.Sleep(5 * time.Second)
		if lookups() != before {
			return fmt.Errorf("the peer is still at work")
		}
		return nil
	}))
}

// ociState is what a switch must keep: every object's count, the security
// lists' rules, each Service's address.
func ociState(t *testing.T, e *emulator.Emulator, ns string) (map[string]int, []string, map[string]string) {
	t.Helper()
	in, out := e.SecurityListRules(e.Fixture().SecurityListID)
	rules := append(slices.Clone(in), out...)
	slices.Sort(rules)
	addrs := map[string]string{}
	list, err := env.Client.CoreV1().Services(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range list.Items {
		addrs[s.Name] = ingressAddr(&s)
	}
	return e.Objects(), rules, addrs
}

// TestOCIGoesToThePeerAndBackItself: the peer serves a Service of every
// shape; Overcast takes over and writes nothing; Overcast serves the same
// shapes of its own; the peer takes over again and writes nothing (no load
// balancer, listener, backend set or security rule rebuilt, every address
// kept); Overcast back deletes them all and leaves nothing.
func TestOCIGoesToThePeerAndBackItself(t *testing.T) {
	e := ociEmulator(t, 91)
	bin, opts := ociPeer(t, e)
	k := ociPeerKubelet(t, env, e, "oci91-node-1")
	ns := namespace(t)
	f := e.Fixture()
	back, err := ociNetworkClient(t, e).CreateNetworkSecurityGroup(t.Context(), ocicore.CreateNetworkSecurityGroupRequest{CreateNetworkSecurityGroupDetails: ocicore.CreateNetworkSecurityGroupDetails{
		CompartmentId: common.String(f.CompartmentID), VcnId: common.String(f.VCNID), DisplayName: common.String("nodes")}})
	require.NoError(t, err)
	shapes := ociPeerShapes(*back.Id)
	empty := e.Objects()
	peer := env.StartBinary(t, bin, "oci-cloud-controller-manager", opts)
	waitNodeInitialised(t, k.Name)
	for name, mutate := range shapes {
		lbService(t, ns, "peer-"+name, mutate)
	}
	for name := range shapes {
		require.NoError(t, devenv.Poll(waitLong, tick, func() error {
			if ingressAddr(getService(t, ns, "peer-"+name)) == "" {
				return fmt.Errorf("peer-%s has no address from the peer yet", name)
			}
			return nil
		}), "the peer serves peer-%s", name)
	}
	peer.Stop()
	objects, rules, addrs := ociState(t, e, ns)
	e.ResetCalls()

	// The way there.
	ccm := env.StartCCM(t, framework.CCMOptions{Cloud: "oci", CloudConfig: e.CloudConfig()})
	for name := range shapes {
		waitCondition(t, ns, "peer-"+name, servicecontroller.ConditionReady, metav1.ConditionTrue, "")
	}
	n, which := ociWrites(e)
	assert.Zero(t, n, "Overcast adopts the peer's load balancers with no write: %v", which)
	gotObjects, gotRules, gotAddrs := ociState(t, e, ns)
	assert.Equal(t, objects, gotObjects)
	assert.Equal(t, rules, gotRules, "the peer's rules, as they were")
	assert.Equal(t, addrs, gotAddrs, "every address kept")
	t.Logf("the way there: %d Services of the peer adopted, %d writes", len(shapes), n)

	// Overcast's own of every shape.
	for name, mutate := range shapes {
		lbService(t, ns, "ours-"+name, mutate)
	}
	for name := range shapes {
		waitCondition(t, ns, "ours-"+name, servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
	}
	ccm.Stop()
	objects, rules, addrs = ociState(t, e, ns)
	e.ResetCalls()

	// The way back.
	peer = env.StartBinary(t, bin, "oci-cloud-controller-manager", opts)
	ociPeerSettled(t, e, 2*len(shapes))
	n, which = ociWrites(e)
	assert.Zero(t, n, "the peer rebuilds nothing: %v", which)
	gotObjects, gotRules, gotAddrs = ociState(t, e, ns)
	assert.Equal(t, objects, gotObjects)
	assert.Equal(t, rules, gotRules, "every rule as it was")
	assert.Equal(t, addrs, gotAddrs, "every address kept")
	t.Logf("the way back: %d Services (%d of the peer's, %d of Overcast's), %d writes", 2*len(shapes), len(shapes), len(shapes), n)
	peer.Stop()

	env.StartCCM(t, framework.CCMOptions{Cloud: "oci", CloudConfig: e.CloudConfig()})
	for _, s := range slices.Sorted(maps.Keys(addrs)) {
		deleteService(t, ns, s)
	}
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		if got := e.Objects(); !maps.Equal(got, empty) {
			return fmt.Errorf("left: %v, before: %v", got, empty)
		}
		return nil
	}), "nothing left, of the peer's or ours")
}

// TestOCIAnotherClustersPeerClosesNoPortForLong: two clusters on one
// security list, cluster A (an apiserver of its own) on the unmodified
// peer, cluster B on Overcast, a Service on the same port and node port in
// each (finding 5 of issue 34). B's rules are its own, marked, beside A's
// peer's; when A's Service goes, the peer removes every rule opening its
// ports, B's too, and B's drift check puts them back within its period.
func TestOCIAnotherClustersPeerClosesNoPortForLong(t *testing.T) {
	const nodePort, drift = 30777, 20 * time.Second
	e := ociEmulator(t, 92)
	clusterA := ociPeerCluster(t, e, "oci92-a-node")
	web := func(s *v1.Service) { s.Spec.Ports[0].NodePort = nodePort }
	nsA := clusterA.Namespace(t)
	ociPeerWeb(t, clusterA, nsA, nodePort)

	env.StartCCM(t, framework.CCMOptions{Cloud: "oci", CloudConfig: e.CloudConfig(), ExtraArgs: []string{"--load-balancer-drift-period=" + drift.String()}})
	_, ip := e.AddMachine("oci92-b-node")
	k := env.NewKubelet(t, "oci92-b-node", ip)
	waitNodeInitialised(t, k.Name)
	ns := namespace(t)
	svcB := lbService(t, ns, "web", web)
	addr := ingressAddr(waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured))
	ours := func() (n int) {
		in, out := e.SecurityListRules(e.Fixture().SecurityListID)
		for _, r := range append(in, out...) {
			if strings.Contains(r, string(svcB.UID)) {
				n++
			}
		}
		return n
	}
	require.Equal(t, 5, ours(), "B's own rules, beside the peer's that do the same")

	// A's Service goes; watch B's rules until they are all back.
	fewest := ours()
	gone := time.Now()
	require.NoError(t, clusterA.Client.CoreV1().Services(nsA).Delete(t.Context(), "web", metav1.DeleteOptions{}))
	var back time.Duration
	require.NoError(t, devenv.Poll(waitLong+3*drift, 100*time.Millisecond, func() error {
		n := ours()
		fewest = min(fewest, n)
		if fewest == 5 || n < 5 {
			return fmt.Errorf("B has %d of its 5 rules (fewest %d)", n, fewest)
		}
		back = time.Since(gone)
		return nil
	}), "the peer removes B's rules with its own, and B puts them back")
	t.Logf("the other cluster's peer left %d of B's 5 rules; all back %.1fs after its Service was deleted (drift period %s)", fewest, back.Seconds(), drift)
	assert.Less(t, back, waitLong+3*drift)
	assert.Equal(t, addr, ingressAddr(getService(t, ns, "web")), "B's address kept")
}

// ociPeerCluster is another cluster (an apiserver of its own) with a Node
// named node on e, served by the unmodified peer.
func ociPeerCluster(t *testing.T, e *emulator.Emulator, node string) *framework.Env {
	t.Helper()
	bin, opts := ociPeer(t, e)
	c, err := framework.Start()
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	ociPeerKubelet(t, c, e, node)
	c.StartBinary(t, bin, "oci-cloud-controller-manager", opts)
	return c
}

// ociPeerWeb makes the Service "web" of cluster c in ns (port 80 on
// nodePort) and waits until the peer has served it.
func ociPeerWeb(t *testing.T, c *framework.Env, ns string, nodePort int32) {
	t.Helper()
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Protocol: v1.ProtocolTCP, Port: 80, NodePort: nodePort}}}}
	_, err := c.Client.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		got, err := c.Client.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil || ingressAddr(got) == "" {
			return fmt.Errorf("the peer has not served %s/web yet (%w)", ns, err)
		}
		return nil
	}))
}
