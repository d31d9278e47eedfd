package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/devenv"
)

func octaviaClient(t *testing.T) *gophercloud.ServiceClient {
	t.Helper()
	c, err := gopenstack.NewLoadBalancerV2(compute.ProviderClient, gophercloud.EndpointOpts{Region: osEnv["OS_REGION_NAME"]})
	require.NoError(t, err)
	return c
}

func lbNamespace(t *testing.T) string {
	t.Helper()
	ns := "os-lb-" + suffix()
	_, err := env.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return ns
}

func waitIngress(t *testing.T, ns, name string) string {
	t.Helper()
	var ip string
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error {
		s, err := env.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("no ingress on %s/%s yet", ns, name)
		}
		ip = s.Status.LoadBalancer.Ingress[0].IP
		return nil
	}))
	return ip
}

// lbOf finds the Service's load balancer by the CCM's UID tag.
func lbOf(t *testing.T, octavia *gophercloud.ServiceClient, svc *v1.Service) []loadbalancers.LoadBalancer {
	t.Helper()
	pages, err := loadbalancers.List(octavia, loadbalancers.ListOpts{Tags: []string{"overcast-service-uid=" + string(svc.UID)}}).AllPages(context.Background())
	require.NoError(t, err)
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	require.NoError(t, err)
	return lbs
}

// shape is each listener's "PROTO/port -> members (allowed CIDRs)".
func shape(t *testing.T, octavia *gophercloud.ServiceClient, lbID string) []string {
	t.Helper()
	ctx := context.Background()
	pages, err := listeners.List(octavia, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	require.NoError(t, err)
	ls, err := listeners.ExtractListeners(pages)
	require.NoError(t, err)
	var out []string
	for _, l := range ls {
		var members []string
		if l.DefaultPoolID != "" {
			mp, err := pools.ListMembers(octavia, l.DefaultPoolID, pools.ListMembersOpts{}).AllPages(ctx)
			require.NoError(t, err)
			ms, err := pools.ExtractMembers(mp)
			require.NoError(t, err)
			for _, m := range ms {
				members = append(members, fmt.Sprintf("%s:%d", m.Address, m.ProtocolPort))
			}
		}
		sort.Strings(members)
		cidrs := slices.Clone(l.AllowedCIDRs)
		sort.Strings(cidrs)
		out = append(out, fmt.Sprintf("%s/%d -> %v %v", l.Protocol, l.ProtocolPort, members, cidrs))
	}
	sort.Strings(out)
	return out
}

func TestLoadBalancerOnOctavia(t *testing.T) {
	octavia := octaviaClient(t)
	network := networkClient(t)
	name := "os-lbnode-" + suffix()
	s := createServer(t, name)
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF"))
	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "service"}
	env.StartCCM(t, opts)
	env.NewKubelet(t, name, s.fixedIP())
	waitInitialised(t, name)

	ns := lbNamespace(t)
	svc := createService(t, ns, "web", []v1.ServicePort{
		{Name: "http", Protocol: v1.ProtocolTCP, Port: 80},
		{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53},
	}, nil)

	ip := waitIngress(t, ns, "web")
	pub := netip.MustParsePrefix("203.0.113.0/24")
	assert.True(t, pub.Contains(netip.MustParseAddr(ip)), "the ingress is a floating IP from the public network, got %s", ip)
	lbs := lbOf(t, octavia, svc)
	require.Len(t, lbs, 1)
	lb := lbs[0]
	assert.Equal(t, "ACTIVE", lb.ProvisioningStatus)
	assert.Equal(t, "kube_service_overcast-e2e_"+ns+"_web", lb.Name)
	member := func(p int32) string { return fmt.Sprintf("%s:%d", s.fixedIP(), p) }
	svc, err := env.Client.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	np := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		np[p.Name] = p.NodePort
	}
	assert.Equal(t, []string{
		fmt.Sprintf("TCP/80 -> [%s] [0.0.0.0/0]", member(np["http"])),
		fmt.Sprintf("UDP/53 -> [%s] [0.0.0.0/0]", member(np["dns"])),
	}, shape(t, octavia, lb.ID), "a listener per port, the Node as member at its NodePort, open to all as the peer writes it")

	// Source ranges and a new port converge (one change at a time, requeued).
	_, err = env.Client.CoreV1().Services(ns).Patch(t.Context(), "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"loadBalancerSourceRanges":["198.51.100.0/24"],"ports":[{"name":"https","protocol":"TCP","port":443}]}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	svc, err = env.Client.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	for _, p := range svc.Spec.Ports {
		np[p.Name] = p.NodePort
	}
	want := []string{
		fmt.Sprintf("TCP/443 -> [%s] [198.51.100.0/24]", member(np["https"])),
		fmt.Sprintf("TCP/80 -> [%s] [198.51.100.0/24]", member(np["http"])),
		fmt.Sprintf("UDP/53 -> [%s] [198.51.100.0/24]", member(np["dns"])),
	}
	require.NoError(t, devenv.Poll(3*time.Minute, 2*time.Second, func() error {
		if got := shape(t, octavia, lb.ID); !slices.Equal(got, want) {
			return fmt.Errorf("listeners %v, want %v", got, want)
		}
		return nil
	}))
	assert.Equal(t, ip, waitIngress(t, ns, "web"), "the address does not change")

	// Deleting the Service removes the load balancer and its floating IP.
	require.NoError(t, env.Client.CoreV1().Services(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}))
	require.NoError(t, devenv.Poll(3*time.Minute, 2*time.Second, func() error {
		_, err := env.Client.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("service still there (finalizer): %w", err)
		}
		for _, l := range lbOf(t, octavia, svc) {
			if l.ProvisioningStatus != "DELETED" {
				return fmt.Errorf("load balancer %s is %s", l.ID, l.ProvisioningStatus)
			}
		}
		return nil
	}))
	pages, err := floatingips.List(network, floatingips.ListOpts{FloatingIP: ip}).AllPages(context.Background())
	require.NoError(t, err)
	fips, err := floatingips.ExtractFloatingIPs(pages)
	require.NoError(t, err)
	assert.Empty(t, fips, "the floating IP the CCM created is released")
}

func TestInternalLoadBalancerHasNoFloatingIP(t *testing.T) {
	octavia := octaviaClient(t)
	name := "os-lbint-" + suffix()
	s := createServer(t, name)
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF"))
	opts.Controllers = []string{"cloud-node", "service"}
	env.StartCCM(t, opts)
	env.NewKubelet(t, name, s.fixedIP())
	waitInitialised(t, name)
	ns := lbNamespace(t)
	svc, err := env.Client.CoreV1().Services(ns).Create(t.Context(), &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "internal", Namespace: ns, Annotations: map[string]string{
			"service.beta.kubernetes.io/openstack-internal-load-balancer": "true",
		}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Protocol: v1.ProtocolTCP, Port: 8080}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	ip := waitIngress(t, ns, "internal")
	lbs := lbOf(t, octavia, svc)
	require.Len(t, lbs, 1)
	assert.Equal(t, lbs[0].VipAddress, ip, "an internal load balancer publishes its VIP")
	require.NoError(t, env.Client.CoreV1().Services(ns).Delete(t.Context(), "internal", metav1.DeleteOptions{}))
	require.NoError(t, devenv.Poll(3*time.Minute, 2*time.Second, func() error {
		if _, err := env.Client.CoreV1().Services(ns).Get(context.Background(), "internal", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("service still there: %w", err)
		}
		return nil
	}))
}
