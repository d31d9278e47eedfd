package clouds

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/kit"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// Every cloud answers InstancesV2 through the Node deletion guard: a cloud
// that answered its own would let the node lifecycle controller delete every
// Node whose machine a broken credential hides. Each cloud is started on its
// emulator (the local cloud on its dev cloud), as overcast-ccm starts it.
func TestEveryCloudsInstancesAreGuarded(t *testing.T) {
	for _, name := range kit.Names() {
		t.Run(name, func(t *testing.T) {
			conf := cloudConfigOf(t, name)
			cloud, err := cloudprovider.InitCloudProvider(name, conf)
			require.NoError(t, err)
			instances, ok := cloud.InstancesV2()
			require.True(t, ok, "%s serves InstancesV2", name)
			assert.True(t, provider.Guarded(instances), "%s's InstancesV2 is not wrapped by the deletion guard: answer c.GuardInstances(c)", name)
		})
	}
}

// cloudConfigOf is the path of a --cloud-config of cloud name: its
// emulator's, else its dev cloud's.
func cloudConfigOf(t *testing.T, name string) string {
	t.Helper()
	k, err := kit.Get(name)
	require.NoError(t, err)
	if k.Emulate != nil {
		e, err := k.Emulate(kit.EmulatorOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.Close() })
		path := filepath.Join(t.TempDir(), "cloud.conf")
		require.NoError(t, os.WriteFile(path, []byte(e.CloudConfig()), 0o600))
		return path
	}
	require.NotNil(t, k.Dev, "%s has neither an emulator nor a dev cloud", name)
	dev, err := k.Dev(t.TempDir(), []kit.Node{{Name: "guarded-node", IP: "127.0.0.1"}})
	require.NoError(t, err)
	t.Cleanup(dev.Close)
	return dev.Config
}
