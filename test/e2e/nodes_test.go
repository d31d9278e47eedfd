package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/test/framework"
)

func TestNodesAreInitialisedFromTheInventory(t *testing.T) {
	cfg, _ := localConfig(t, `instances:
- name: init-a
  instanceType: m1.large
  zone: zone-1
  region: region-1
  addresses:
  - {type: InternalIP, address: 127.0.11.1}
  - {type: ExternalIP, address: 127.0.111.1}
  - {type: Hostname, address: init-a.example}
- name: init-b
  providerID: local://rack2-slot7
`, `  - name: p
    addresses: ["127.1.11.0/28"]`)
	env.StartCCM(t, framework.CCMOptions{CloudConfig: cfg})

	// init-b has no addresses in the inventory: its kubelet's --node-ip is used.
	env.NewKubelet(t, "init-a", "127.0.11.1")
	env.NewKubelet(t, "init-b", "127.0.11.2")
	env.NewKubelet(t, "init-unknown", "127.0.11.3")

	a := waitNodeInitialised(t, "init-a")
	assert.Equal(t, "local://init-a", a.Spec.ProviderID)
	assert.Equal(t, map[string]string{
		v1.LabelInstanceTypeStable:      "m1.large",
		v1.LabelInstanceType:            "m1.large",
		v1.LabelTopologyZone:            "zone-1",
		v1.LabelFailureDomainBetaZone:   "zone-1",
		v1.LabelTopologyRegion:          "region-1",
		v1.LabelFailureDomainBetaRegion: "region-1",
	}, pick(a.Labels, v1.LabelInstanceTypeStable, v1.LabelInstanceType, v1.LabelTopologyZone,
		v1.LabelFailureDomainBetaZone, v1.LabelTopologyRegion, v1.LabelFailureDomainBetaRegion))
	require.NoError(t, devenv.Poll(waitShort, tick, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(t.Context(), "init-a", metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: "127.0.11.1"},
			{Type: v1.NodeExternalIP, Address: "127.0.111.1"},
			{Type: v1.NodeHostName, Address: "init-a.example"},
		}
		if !assert.ObjectsAreEqual(want, n.Status.Addresses) {
			return fmt.Errorf("addresses %v, want %v", n.Status.Addresses, want)
		}
		return nil
	}))

	b := waitNodeInitialised(t, "init-b")
	assert.Equal(t, "local://rack2-slot7", b.Spec.ProviderID, "the inventory's providerID is used")
	assert.Equal(t, "local.standard", b.Labels[v1.LabelInstanceTypeStable], "the default instance type")
	assert.Equal(t, "e2e-zone-a", b.Labels[v1.LabelTopologyZone], "the config's default zone")
	require.NoError(t, devenv.Poll(waitShort, tick, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(t.Context(), "init-b", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP && a.Address == "127.0.11.2" {
				return nil
			}
		}
		return fmt.Errorf("addresses %v lack the kubelet's node IP", n.Status.Addresses)
	}))

	// A Node the inventory does not know stays uninitialised, with a Warning Event.
	msg := waitEvent(t, metav1.NamespaceDefault, "init-unknown", "InstanceNotFound")
	assert.Contains(t, msg, "init-unknown")
	n, err := env.Client.CoreV1().Nodes().Get(t.Context(), "init-unknown", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, hasTaint(n, devenv.UninitializedTaint), "an unknown Node keeps the uninitialized taint")
	assert.Empty(t, n.Spec.ProviderID)
}

func TestAutoInventoryAdoptsEveryNode(t *testing.T) {
	env.StartCCM(t, framework.CCMOptions{CloudConfig: autoConfig(`  - name: p
    addresses: ["127.1.12.0/28"]`)})
	env.NewKubelet(t, "auto-a", "127.0.12.1")
	n := waitNodeInitialised(t, "auto-a")
	assert.Equal(t, "local://auto-a", n.Spec.ProviderID)
	assert.Equal(t, "local", n.Labels[v1.LabelTopologyRegion])
}

func TestNodeLifecycleFollowsTheInventory(t *testing.T) {
	const inv = `instances:
- name: life-gone
- name: life-shutdown
- name: life-doubt
`
	cfg, path := localConfig(t, inv, `  - name: p
    addresses: ["127.1.13.0/28"]`)
	env.StartCCM(t, framework.CCMOptions{CloudConfig: cfg})
	gone := env.NewKubelet(t, "life-gone", "127.0.13.1")
	down := env.NewKubelet(t, "life-shutdown", "127.0.13.2")
	doubt := env.NewKubelet(t, "life-doubt", "127.0.13.3")
	for _, n := range []string{"life-gone", "life-shutdown", "life-doubt"} {
		waitNodeInitialised(t, n)
	}

	// Doubt never deletes: an unreadable inventory keeps the last good one, so a
	// NotReady Node whose instance was listed stays.
	writeInventory(t, path, "instances: [this is not an inventory\n")
	doubt.StopHeartbeats(true)
	time.Sleep(4 * time.Second) // four lifecycle periods (--node-monitor-period=1s)
	_, err := env.Client.CoreV1().Nodes().Get(t.Context(), "life-doubt", metav1.GetOptions{})
	require.NoError(t, err, "a Node must not be deleted while the inventory is in doubt")
	require.NoError(t, doubt.ResumeHeartbeats())

	// The instance removed, the Node NotReady: the Node is deleted.
	// The instance shut down: the Node gets the shutdown taint and stays.
	writeInventory(t, path, `instances:
- name: life-shutdown
  state: shutdown
- name: life-doubt
`)
	gone.StopHeartbeats(true)
	down.StopHeartbeats(true)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		_, err := env.Client.CoreV1().Nodes().Get(context.Background(), "life-gone", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("node life-gone still exists (err %w)", err)
	}), "the Node of a removed instance is deleted")
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), "life-shutdown", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !hasTaint(n, devenv.ShutdownTaint) {
			return fmt.Errorf("no shutdown taint yet on %s", n.Name)
		}
		return nil
	}), "the Node of a shut-down instance is tainted")

	// Back up: the taint goes.
	writeInventory(t, path, inv)
	require.NoError(t, down.ResumeHeartbeats())
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), "life-shutdown", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if hasTaint(n, devenv.ShutdownTaint) {
			return fmt.Errorf("shutdown taint still on %s", n.Name)
		}
		return nil
	}), "the shutdown taint goes once the Node is Ready again")
	_, err = env.Client.CoreV1().Nodes().Get(t.Context(), "life-doubt", metav1.GetOptions{})
	require.NoError(t, err)
}

func hasTaint(n *v1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// The machines of most Nodes vanish at once (credentials of another project, a
// removed policy): the guard holds their deletion, says so once, and lets a
// Node go when a person annotates it; a machine back ends the hold.
func TestNodeDeletionGuardHoldsAMassDisappearance(t *testing.T) {
	const inv = `instances:
- name: guard-a
- name: guard-b
- name: guard-c
- name: guard-d
`
	cfg, path := localConfig(t, inv, `  - name: p
    addresses: ["127.1.14.0/28"]`)
	// A share of 10%: with fewer than 30 Nodes in this shared cluster, more
	// than 2 vanished at once is held.
	nodes, err := env.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Less(t, len(nodes.Items)+4, 30)
	env.StartCCM(t, framework.CCMOptions{CloudConfig: cfg, ExtraArgs: []string{"--node-deletion-guard-share=0.1"}})
	kubelets := map[string]*devenv.Kubelet{}
	for i, name := range []string{"guard-a", "guard-b", "guard-c", "guard-d"} {
		kubelets[name] = env.NewKubelet(t, name, fmt.Sprintf("127.0.14.%d", i+1))
	}
	for name := range kubelets {
		waitNodeInitialised(t, name)
	}

	writeInventory(t, path, "instances:\n- name: guard-d\n")
	for _, name := range []string{"guard-a", "guard-b", "guard-c"} {
		kubelets[name].StopHeartbeats(true)
	}
	var msg string
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		for _, name := range []string{"guard-a", "guard-b", "guard-c"} {
			evs, err := env.Client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=NodeDeletionHeld"})
			if err != nil {
				return err
			}
			if len(evs.Items) > 0 {
				msg = evs.Items[0].Message
				return nil
			}
		}
		return fmt.Errorf("no NodeDeletionHeld Warning yet")
	}))
	assert.Contains(t, msg, "the machines of 3 of the cluster's")
	assert.Contains(t, msg, "overcast.io/allow-deletion=true")
	time.Sleep(5 * time.Second) // five lifecycle periods (--node-monitor-period=1s)
	for _, name := range []string{"guard-a", "guard-b", "guard-c"} {
		_, err := env.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err, "%s must not be deleted while the guard holds", name)
	}
	var warnings int
	evs, err := env.Client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=NodeDeletionHeld"})
	require.NoError(t, err)
	for _, e := range evs.Items {
		warnings += int(e.Count)
	}
	assert.Equal(t, 1, warnings, "one Warning for the hold, not one per Node or per check")

	// A person allows one: it goes, the others stay.
	_, err = env.Client.CoreV1().Nodes().Patch(t.Context(), "guard-a", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"overcast.io/allow-deletion":"true"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		if _, err := env.Client.CoreV1().Nodes().Get(context.Background(), "guard-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("guard-a still there (%w)", err)
		}
		return nil
	}), "the Node a person allowed is deleted")
	for _, name := range []string{"guard-b", "guard-c"} {
		_, err := env.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err, "%s is still held", name)
	}

	// The machines back: nothing more is held or deleted.
	writeInventory(t, path, inv)
	for _, name := range []string{"guard-b", "guard-c"} {
		require.NoError(t, kubelets[name].ResumeHeartbeats())
	}
}
