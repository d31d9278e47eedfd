package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/loadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
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
	require.NoError(t, err)
	require.NoError(t, e.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// nodeGone waits for the Node named name to be deleted.
func nodeGone(name string) func() error {
	return func() error {
		_, err := env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("node %s still exists (err %v)", name, err)
	}
}

func TestOCINodesFollowTheirInstances(t *testing.T) {
	e := ociEmulator(t, 66)
	ccm := env.StartCCMProcess(t, "oci-nodes", framework.CCMOptions{Cloud: "oci", CloudConfig: e.CloudConfig() + "lifecycleMaxAge: 1s\n"})
	ids := map[string]string{}
	kubelets := map[string]*framework.Kubelet{}
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
		n := waitNodeInitialised(t, name)
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
	require.NoError(t, framework.Poll(waitLong, tick, nodeGone("oci-gone")), "the Node of a terminated instance is deleted")
	require.NoError(t, framework.Poll(waitLong, tick, nodeGone("oci-purged")), "the Node of a purged instance is deleted")
	require.NoError(t, framework.Poll(waitLong, tick, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), "oci-down", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !hasTaint(n, framework.ShutdownTaint) {
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

// ociLBClient is oci-go-sdk's load balancer client of e.
func ociLBClient(t *testing.T, e *emulator.Emulator) loadbalancer.LoadBalancerClient {
	t.Helper()
	t.Setenv("OCI_SDK_DEFAULT_CIRCUITBREAKER_ENABLED", "false")
	f := e.Fixture()
	c, err := loadbalancer.NewLoadBalancerClientWithConfigurationProvider(
		common.NewRawConfigurationProvider(f.TenancyID, f.UserID, e.Region(), f.Fingerprint, f.PrivateKeyPEM, nil))
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
	env.StartCCM(t, framework.CCMOptions{Cloud: "oci", CloudConfig: e.CloudConfig(),
		ExtraArgs: []string{"--load-balancer-drift-period=2s"}})
	c := &lbCloud{name: "oci"}
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
