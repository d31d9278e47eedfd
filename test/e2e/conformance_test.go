package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/kit"
	"github.com/overcast-ccm/overcast/test/conformance"
)

// TestConformance runs the conformance suite (test/conformance) for every
// cloud with an emulator, found by its kit, and for the local cloud.
func TestConformance(t *testing.T) {
	kube := conformance.Kube{Client: env.Client, Namespace: namespace}
	for _, name := range kit.EmulatedNames() {
		t.Run(name, func(t *testing.T) { conformance.Run(t, kube, emulatedTarget(t, name)) })
	}
	t.Run("local", func(t *testing.T) {
		conf := `autoInventory: true
loadBalancer:
  pools:
  - name: p
    addresses: ["127.1.91.0/28"]
`
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "conformance-local"},
			Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.91.1"}}}}
		k, err := kit.Get("local")
		require.NoError(t, err)
		conformance.Run(t, kube, conformance.Target{Name: "local", New: newProvider("local", conf),
			Nodes: []*v1.Node{node}, Invalid: k.Invalid})
	})
}

// emulatedTarget is the cloud named name on its emulator, whose load
// balancers take 2 s to build (longer than a step may take), with two
// machines whose Nodes the cloud itself describes (InstanceMetadata).
func emulatedTarget(t *testing.T, name string) conformance.Target {
	t.Helper()
	k, err := kit.Emulated(name)
	require.NoError(t, err)
	e, err := k.Emulate(kit.EmulatorOptions{Provisioning: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	tg := conformance.Target{Name: name, New: newProvider(name, e.CloudConfig()), Invalid: k.Invalid,
		Calls: e.Calls, Objects: e.Objects, Busy: true, Shared: true}
	instances, ok := tg.New(t, "describe").InstancesV2()
	require.True(t, ok)
	for i := range 2 {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("conformance-%s-%d", name, i)}}
		e.AddMachine(node.Name)
		md, err := instances.InstanceMetadata(t.Context(), node)
		require.NoError(t, err)
		node.Spec.ProviderID = md.ProviderID
		node.Status.Addresses = md.NodeAddresses
		tg.Nodes = append(tg.Nodes, node)
	}
	return tg
}

// newProvider builds the cloud from its config as overcast-ccm does, a
// cluster of the given UID.
func newProvider(name, conf string) func(t *testing.T, uid string) cloudprovider.Interface {
	return func(t *testing.T, uid string) cloudprovider.Interface {
		t.Helper()
		c, err := cloudprovider.GetCloudProvider(name, strings.NewReader(conf))
		require.NoError(t, err)
		require.NotNil(t, c, "no cloud %s", name)
		c.(interface{ SetClusterUID(string) }).SetClusterUID(uid)
		return c
	}
}
