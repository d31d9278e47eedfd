package e2e

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/test/framework"
)

// lbCluster starts a CCM on an auto inventory with one pool and n Ready nodes.
func lbCluster(t *testing.T, third int, pools string, n int) []*devenv.Kubelet {
	t.Helper()
	env.StartCCM(t, framework.CCMOptions{CloudConfig: autoConfig(pools)})
	var ks []*devenv.Kubelet
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("lb%d-node-%d", third, i)
		ks = append(ks, env.NewKubelet(t, name, fmt.Sprintf("127.0.%d.%d", third, i)))
	}
	for _, k := range ks {
		waitNodeInitialised(t, k.Name)
	}
	return ks
}

func TestLoadBalancerServesTCPAndUDPThroughTheVIP(t *testing.T) {
	ns := namespace(t)
	nodes := lbCluster(t, 21, `  - name: p
    addresses: ["127.1.21.0/28"]`, 2)
	svc := lbService(t, ns, "dns", func(s *v1.Service) {
		s.Spec.Ports = []v1.ServicePort{
			{Name: "tcp", Protocol: v1.ProtocolTCP, Port: 5353},
			{Name: "udp", Protocol: v1.ProtocolUDP, Port: 5353},
		}
	})
	for _, k := range nodes {
		k.ServeService(t, svc, true)
	}
	ip := waitIngressIP(t, ns, "dns")
	assert.Equal(t, "127.1.21.1", ip.String(), "the lowest free address of the pool (network address skipped)")
	got := getService(t, ns, "dns")
	require.NotNil(t, got.Status.LoadBalancer.Ingress[0].IPMode)
	assert.Equal(t, v1.LoadBalancerIPModeProxy, *got.Status.LoadBalancer.Ingress[0].IPMode)

	vip := netip.AddrPortFrom(ip, 5353)
	waitTCP(t, netip.Addr{}, vip)
	seenTCP, seenUDP := map[string]bool{}, map[string]bool{}
	for range 8 {
		a, err := devenv.RequestTCP(netip.Addr{}, vip)
		require.NoError(t, err)
		seenTCP[a] = true
		// A new source port each time: a new UDP flow, balanced like a connection.
		b, err := devenv.RequestUDP(netip.Addr{}, vip)
		require.NoError(t, err)
		seenUDP[b] = true
	}
	want := map[string]bool{nodes[0].Name: true, nodes[1].Name: true}
	assert.Equal(t, want, seenTCP, "TCP reaches both nodes")
	assert.Equal(t, want, seenUDP, "UDP reaches both nodes")

	// A NotReady node gets no new traffic.
	nodes[1].StopHeartbeats(true)
	onlyAnswers(t, vip, nodes[0].Name, "is NotReady")

	// Deleting the Service closes the VIP.
	deleteService(t, ns, "dns")
	require.NoError(t, devenv.Poll(waitShort, tick, func() error {
		if _, err := devenv.RequestTCP(netip.Addr{}, vip); err == nil {
			return fmt.Errorf("%s still answers after the Service was deleted", vip)
		}
		return nil
	}))
}

// onlyAnswers waits until node alone answers at vip (six requests in a row):
// the others, which are what why says, get no new traffic.
func onlyAnswers(t *testing.T, vip netip.AddrPort, node, why string) {
	t.Helper()
	require.NoError(t, devenv.Poll(waitShort, tick, func() error {
		for range 6 {
			a, err := devenv.RequestTCP(netip.Addr{}, vip)
			if err != nil {
				return err
			}
			if a != node {
				return fmt.Errorf("answer from %s, which %s", a, why)
			}
		}
		return nil
	}))
}

func TestLoadBalancerSourceRangesBlockOtherClients(t *testing.T) {
	ns := namespace(t)
	nodes := lbCluster(t, 22, `  - name: p
    addresses: ["127.1.22.0/28"]`, 1)
	svc := lbService(t, ns, "private", func(s *v1.Service) {
		s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.2/32"}
	})
	nodes[0].ServeService(t, svc, true)
	vip := netip.AddrPortFrom(waitIngressIP(t, ns, "private"), 80)

	assert.Equal(t, nodes[0].Name, waitTCP(t, netip.MustParseAddr("127.0.0.2"), vip), "a client inside the ranges is served")
	_, err := devenv.RequestTCP(netip.MustParseAddr("127.0.0.3"), vip)
	require.Error(t, err, "a client outside the ranges is refused")

	// Widening the ranges lets it in, without a new IP.
	_, err = env.Client.CoreV1().Services(ns).Patch(t.Context(), "private", types.MergePatchType,
		[]byte(`{"spec":{"loadBalancerSourceRanges":["127.0.0.2/32","127.0.0.3/32"]}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, nodes[0].Name, waitTCP(t, netip.MustParseAddr("127.0.0.3"), vip))
	assert.Equal(t, vip.Addr(), waitIngressIP(t, ns, "private"))
}

func TestExternalTrafficPolicyLocalUsesHealthCheckNodePort(t *testing.T) {
	ns := namespace(t)
	nodes := lbCluster(t, 23, `  - name: p
    addresses: ["127.1.23.0/28"]`, 2)
	svc := lbService(t, ns, "local", func(s *v1.Service) {
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	})
	require.NotZero(t, svc.Spec.HealthCheckNodePort)
	nodes[0].ServeService(t, svc, true)
	nodes[1].ServeService(t, svc, false) // no local endpoint: kube-proxy answers 503
	vip := netip.AddrPortFrom(waitIngressIP(t, ns, "local"), 80)
	waitTCP(t, netip.Addr{}, vip)
	onlyAnswers(t, vip, nodes[0].Name, "has no local endpoint")
}

func TestLoadBalancerIPsSurviveARestartOfTheCCM(t *testing.T) {
	ns := namespace(t)
	pools := `  - name: p
    addresses: ["127.1.24.0/28"]`
	ccm := env.StartCCM(t, framework.CCMOptions{CloudConfig: autoConfig(pools)})
	k := env.NewKubelet(t, "restart-node", "127.0.24.1")
	waitNodeInitialised(t, k.Name)
	ips := map[string]netip.Addr{}
	for _, name := range []string{"one", "two", "three"} {
		svc := lbService(t, ns, name, func(s *v1.Service) {
			if name == "two" { // asks for an address of its own
				s.Annotations = map[string]string{"local.overcast.io/load-balancer-ip": "127.1.24.9"}
			}
		})
		k.ServeService(t, svc, true)
		ips[name] = waitIngressIP(t, ns, name)
	}
	assert.Equal(t, "127.1.24.9", ips["two"].String(), "a requested free address in the pool is honoured")
	assert.Len(t, map[netip.Addr]bool{ips["one"]: true, ips["two"]: true, ips["three"]: true}, 3, "distinct addresses")

	versions := map[string]string{}
	for name := range ips {
		versions[name] = getService(t, ns, name).ResourceVersion
	}
	ccm.Stop()
	for _, ip := range ips {
		require.NoError(t, devenv.Poll(waitShort, tick, func() error {
			if _, err := devenv.RequestTCP(netip.Addr{}, netip.AddrPortFrom(ip, 80)); err == nil {
				return fmt.Errorf("%s still served by a stopped CCM", ip)
			}
			return nil
		}))
	}
	// While no CCM runs, a new Service waits; the restarted CCM must not give it an
	// address that the status of another Service holds.
	four := lbService(t, ns, "four", nil)
	k.ServeService(t, four, true)

	env.StartCCM(t, framework.CCMOptions{CloudConfig: autoConfig(pools)})
	for name, ip := range ips {
		assert.Equal(t, k.Name, waitTCP(t, netip.Addr{}, netip.AddrPortFrom(ip, 80)), "%s is served again on %s", name, ip)
		assert.Equal(t, ip, waitIngressIP(t, ns, name), "%s keeps its address", name)
	}
	ip4 := waitIngressIP(t, ns, "four")
	for name, ip := range ips {
		assert.NotEqual(t, ip, ip4, "four must not get %s's address", name)
		// Its status as the cloud says it (no ipMode: VIP) is the one stored
		// (ipMode defaulted to VIP): nothing to write.
		assert.Equal(t, versions[name], getService(t, ns, name).ResourceVersion, "%s is not written again by the restarted CCM", name)
	}
	// Release everything while this CCM still runs (cleanups run after its Stop).
	for _, name := range []string{"one", "two", "three", "four"} {
		deleteService(t, ns, name)
	}
}

func TestPoolExhaustionLeavesTheServicePendingWithAnEvent(t *testing.T) {
	ns := namespace(t)
	nodes := lbCluster(t, 25, `  - name: tiny
    addresses: ["127.1.25.7/32"]`, 1)
	first := lbService(t, ns, "first", nil)
	nodes[0].ServeService(t, first, true)
	assert.Equal(t, "127.1.25.7", waitIngressIP(t, ns, "first").String())

	lbService(t, ns, "second", nil)
	msg := waitEvent(t, ns, "second", "IPPoolExhausted")
	assert.Contains(t, msg, "tiny")
	assert.Empty(t, getService(t, ns, "second").Status.LoadBalancer.Ingress, "the Service stays pending")

	// A requested address held by another Service is refused the same way.
	lbService(t, ns, "third", func(s *v1.Service) {
		s.Annotations = map[string]string{"local.overcast.io/load-balancer-ip": "127.1.25.7"}
	})
	msg = waitEvent(t, ns, "third", "IPNotAvailable")
	assert.Contains(t, msg, ns+"/first")

	// Freeing the address lets the pending Service have it.
	deleteService(t, ns, "first")
	assert.Equal(t, "127.1.25.7", waitIngressIP(t, ns, "second").String())
}

func TestInvalidAnnotationGetsAnEventAndChangesNothing(t *testing.T) {
	ns := namespace(t)
	nodes := lbCluster(t, 26, `  - name: p
    addresses: ["127.1.26.0/28"]`, 1)
	bad := lbService(t, ns, "bad", func(s *v1.Service) {
		s.Annotations = map[string]string{"local.overcast.io/health-check-interval": "banana"}
	})
	msg := waitEvent(t, ns, "bad", "InvalidAnnotation")
	assert.Contains(t, msg, "local.overcast.io/health-check-interval")
	assert.Contains(t, msg, "accepted values are")
	assert.Empty(t, getService(t, ns, "bad").Status.LoadBalancer.Ingress, "no IP for a Service with a bad annotation")
	assert.Empty(t, bad.Status.LoadBalancer.Ingress)

	// A serving Service that gets a bad annotation keeps its address and keeps serving.
	good := lbService(t, ns, "good", nil)
	nodes[0].ServeService(t, good, true)
	ip := waitIngressIP(t, ns, "good")
	vip := netip.AddrPortFrom(ip, 80)
	waitTCP(t, netip.Addr{}, vip)
	_, err := env.Client.CoreV1().Services(ns).Patch(t.Context(), "good", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"local.overcast.io/pool":"nope","local.overcast.io/udp-idle-timeout":"-3s"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	msg = waitEvent(t, ns, "good", "InvalidAnnotation")
	assert.Contains(t, msg, "local.overcast.io/udp-idle-timeout", "every bad annotation is named")
	assert.Equal(t, ip, waitIngressIP(t, ns, "good"))
	_, err = devenv.RequestTCP(netip.Addr{}, vip)
	assert.NoError(t, err, "the load balancer keeps serving")
}

func TestServicesShareAnIPWhenTheyOptIn(t *testing.T) {
	ns := namespace(t)
	nodes := lbCluster(t, 27, `  - name: p
    addresses: ["127.1.27.0/28"]`, 1)
	share := func(port int32) func(*v1.Service) {
		return func(s *v1.Service) {
			s.Annotations = map[string]string{"local.overcast.io/allow-shared-ip": "web"}
			s.Spec.Ports[0].Port = port
		}
	}
	a := lbService(t, ns, "web-http", share(80))
	b := lbService(t, ns, "web-https", share(443))
	nodes[0].ServeService(t, a, true)
	nodes[0].ServeService(t, b, true)
	ipA, ipB := waitIngressIP(t, ns, "web-http"), waitIngressIP(t, ns, "web-https")
	assert.Equal(t, ipA, ipB, "Services with the same key and disjoint ports share the address")
	waitTCP(t, netip.Addr{}, netip.AddrPortFrom(ipA, 80))
	waitTCP(t, netip.Addr{}, netip.AddrPortFrom(ipA, 443))

	c := lbService(t, ns, "web-clash", share(80))
	nodes[0].ServeService(t, c, true)
	assert.NotEqual(t, ipA, waitIngressIP(t, ns, "web-clash"), "the same port never shares")
}
