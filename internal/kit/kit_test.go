package kit

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCloudsAreFoundByNameAndAnUnknownOneIsNamed(t *testing.T) {
	names, emulated := Names(), EmulatedNames()
	assert.True(t, slices.IsSorted(names))
	assert.Subset(t, names, []string{"cloudstack", "local", "openstack"})
	assert.Subset(t, names, emulated)
	assert.NotContains(t, emulated, "local", "the local cloud is real on this machine")
	_, err := Get("gce")
	assert.EqualError(t, err, `no cloud "gce": the clouds are `+strings.Join(names, ", "))
	_, err = Emulated("local")
	assert.EqualError(t, err, "the local cloud has no emulator; the clouds with one are "+strings.Join(emulated, ", "))
	_, err = DevCloud("gce")
	assert.EqualError(t, err, `no cloud "gce": the clouds are `+strings.Join(names, ", "))
}

func TestEveryEmulatorStartsOnLoopbackAndTakesMachines(t *testing.T) {
	for _, name := range EmulatedNames() {
		t.Run(name, func(t *testing.T) {
			k, err := Emulated(name)
			require.NoError(t, err)
			_, err = k.Emulate(EmulatorOptions{Listen: "0.0.0.0:0"})
			require.Error(t, err, "never beyond loopback")
			_, err = k.Emulate(EmulatorOptions{ServeTraffic: true, MachineCIDR: "10.0.0.0/24", PublicCIDR: "203.0.113.0/24"})
			require.Error(t, err, "traffic is served on loopback addresses only (or not at all)")

			e, err := k.Emulate(EmulatorOptions{})
			require.NoError(t, err)
			defer e.Close()
			id, ip := e.AddMachine("node-1")
			assert.NotEmpty(t, id)
			assert.NotEmpty(t, ip)
			assert.Contains(t, e.CloudConfig(), e.URL())
			require.NotEmpty(t, e.Secrets(), "the chaos tests look for them in every output")
			for _, secret := range e.Secrets() {
				assert.Contains(t, e.CloudConfig(), secret, "a secret as the config writes it")
			}
			assert.NotNil(t, e.Core())
			assert.NotEmpty(t, k.Churn[0], "the chaos tests' churn needs an annotation that reaches the cloud")
			assert.NotEqual(t, k.Churn[1], k.Churn[2])
			for _, kind := range k.LoadBalancerKinds {
				assert.Contains(t, e.Objects(), kind, "a kind the emulator counts")
			}
			assert.NotEmpty(t, k.LoadBalancerKinds)
			resp, err := http.Get(e.URL() + "/_emulator/calls")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
}

func TestTheDevClusterGetsAConfigAndItsNodes(t *testing.T) {
	nodes := []Node{{Name: "node-1", IP: "127.0.50.1", InstanceType: "local.small", Zone: "dc1-a"}}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			k, err := Get(name)
			require.NoError(t, err)
			if k.Dev == nil {
				t.Skip("no dev cluster yet")
			}
			d, err := k.Dev(t.TempDir(), nodes)
			require.NoError(t, err)
			defer d.Close()
			assert.FileExists(t, d.Config)
			require.Len(t, d.Nodes, 1)
			assert.Equal(t, "node-1", d.Nodes[0].Name)
			assert.NotEmpty(t, d.Nodes[0].IP)
			assert.NotEmpty(t, d.Address)
		})
	}
}
