package openstack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
)

// What the service controller promises, on the real Octavia: progress is not a
// Warning, the conditions tell where a load balancer is, one deleted behind our
// back comes back with the same address, a refused Service costs nothing, and
// nothing of a deleted Service stays in the project.
func TestServiceControllerOnOctavia(t *testing.T) {
	octavia := octaviaClient(t)
	network := networkClient(t)
	name := "os-sc-" + suffix()
	s := createServer(t, name)
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF"))
	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "service"}
	// The default period is 3 minutes; the test does not wait that long.
	opts.ExtraArgs = []string{"--load-balancer-drift-period=20s"}
	env.StartCCM(t, opts)
	env.NewKubelet(t, name, s.fixedIP())
	waitInitialised(t, name)
	ns := lbNamespace(t)

	// Progressing, then Ready, and no Warning.
	_, err := env.Client.CoreV1().Services(ns).Create(t.Context(), webService(ns, "web"), metav1.CreateOptions{})
	require.NoError(t, err)
	sawProgressing := false
	require.NoError(t, devenv.Poll(3*time.Minute, 200*time.Millisecond, func() error {
		got := getSvc(t, ns, "web")
		if c := meta.FindStatusCondition(got.Status.Conditions, servicecontroller.ConditionProgressing); c != nil && c.Status == metav1.ConditionTrue {
			sawProgressing = true
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, servicecontroller.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("not ready: %v", got.Status.Conditions)
		}
		return nil
	}))
	assert.True(t, sawProgressing, "LoadBalancerProgressing was True while Octavia worked")
	svc := getSvc(t, ns, "web")
	addr := svc.Status.LoadBalancer.Ingress[0].IP
	assert.Empty(t, warningEvents(t, ns), "no Warning for a load balancer that is being built")

	// Deleted behind our back: rebuilt, with the same address, no change of the Service.
	lbs := lbOf(t, octavia, svc)
	require.Len(t, lbs, 1)
	first := lbs[0]
	require.NoError(t, loadbalancers.Delete(t.Context(), octavia, first.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
	start := time.Now()
	require.NoError(t, devenv.Poll(5*time.Minute, 2*time.Second, func() error {
		lbs := lbOf(t, octavia, svc)
		if len(lbs) != 1 || lbs[0].ID == first.ID || lbs[0].ProvisioningStatus != "ACTIVE" {
			return fmt.Errorf("load balancers of the Service: %v", lbNames(lbs))
		}
		got := getSvc(t, ns, "web")
		if c := meta.FindStatusCondition(got.Status.Conditions, servicecontroller.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("not ready again: %v", got.Status.Conditions)
		}
		if fip := floatingIPOn(t, network, lbs[0].VipPortID); fip != addr {
			return fmt.Errorf("floating IP on the new VIP: %q, want %s", fip, addr)
		}
		return nil
	}))
	t.Logf("rebuilt in %s", time.Since(start).Round(time.Second))
	got := getSvc(t, ns, "web")
	assert.Equal(t, svc.Generation, got.Generation, "the Service was not changed")
	assert.Equal(t, addr, got.Status.LoadBalancer.Ingress[0].IP, "the same public address")
	assert.Positive(t, eventCount(t, ns, "web", servicecontroller.ReasonRepairing))
	assert.Empty(t, warningEvents(t, ns))

	// A Service asking for that address is refused before anything is created.
	aServiceAskingForATakenAddressIsRefused(t, octavia, network, ns, addr)

	// Deleted: nothing of either Service stays.
	current := lbOf(t, octavia, svc)[0]
	deleteSvcAndWait(t, ns, "web")
	deleteSvcAndWait(t, ns, "taken")
	assert.Empty(t, lbOf(t, octavia, svc), "no load balancer")
	assert.Empty(t, ownFloatingIPs(t, network, string(svc.UID)), "no floating IP")
	for _, id := range []string{first.ID, current.ID} {
		assert.Empty(t, portsNamed(t, network, "octavia-lb-"+id), "no VIP port of load balancer %s", id)
	}
}

// aServiceAskingForATakenAddressIsRefused creates the Service taken of ns
// asking for addr, in use: it is refused before anything is created.
func aServiceAskingForATakenAddressIsRefused(t *testing.T, octavia, network *gophercloud.ServiceClient, ns, addr string) {
	taken := webService(ns, "taken")
	taken.Spec.LoadBalancerIP = addr
	taken, err := env.Client.CoreV1().Services(ns).Create(t.Context(), taken, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, devenv.Poll(time.Minute, time.Second, func() error {
		c := meta.FindStatusCondition(getSvc(t, ns, "taken").Status.Conditions, servicecontroller.ConditionReady)
		if c == nil || c.Reason != "LoadBalancerIPUnavailable" {
			return fmt.Errorf("condition %v", c)
		}
		return nil
	}))
	assert.Empty(t, lbOf(t, octavia, taken), "no load balancer for the refused Service")
	assert.Empty(t, ownFloatingIPs(t, network, string(taken.UID)))
}

func webService(ns, name string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}},
		},
	}
}

func warningEvents(t *testing.T, ns string) []string {
	t.Helper()
	evs, err := env.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "type=Warning"})
	require.NoError(t, err)
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.InvolvedObject.Name+": "+e.Reason+": "+e.Message)
	}
	return out
}

func lbNames(lbs []loadbalancers.LoadBalancer) []string {
	var out []string
	for _, lb := range lbs {
		out = append(out, lb.ID+" "+lb.ProvisioningStatus)
	}
	return out
}

func floatingIPOn(t *testing.T, network *gophercloud.ServiceClient, portID string) string {
	t.Helper()
	pages, err := floatingips.List(network, floatingips.ListOpts{PortID: portID}).AllPages(context.Background())
	require.NoError(t, err)
	fips, err := floatingips.ExtractFloatingIPs(pages)
	require.NoError(t, err)
	if len(fips) == 0 {
		return ""
	}
	return fips[0].FloatingIP
}

// ownFloatingIPs are the project's floating IPs whose description names the
// Service's UID (those the CCM created for it).
func ownFloatingIPs(t *testing.T, network *gophercloud.ServiceClient, uid string) []string {
	t.Helper()
	pages, err := floatingips.List(network, floatingips.ListOpts{}).AllPages(context.Background())
	require.NoError(t, err)
	fips, err := floatingips.ExtractFloatingIPs(pages)
	require.NoError(t, err)
	var out []string
	for _, f := range fips {
		if strings.Contains(f.Description, uid) {
			out = append(out, f.FloatingIP)
		}
	}
	return out
}

func portsNamed(t *testing.T, network *gophercloud.ServiceClient, name string) []string {
	t.Helper()
	pages, err := ports.List(network, ports.ListOpts{Name: name}).AllPages(context.Background())
	require.NoError(t, err)
	ps, err := ports.ExtractPorts(pages)
	require.NoError(t, err)
	var out []string
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}
