package local

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/providerid"
)

// testConfig is a Config with defaults filled, changed by edit.
func testConfig(edit func(*Config)) Config {
	var c Config
	if edit != nil {
		edit(&c)
	}
	c.setDefaults()
	return c
}

// testNode builds a Node; kv are annotation keys and values.
func testNode(name, providerID string, addrs []v1.NodeAddress, kv ...string) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.NodeSpec{ProviderID: providerID},
		Status:     v1.NodeStatus{Addresses: addrs},
	}
	if len(kv) > 0 {
		n.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			n.Annotations[kv[i]] = kv[i+1]
		}
	}
	return n
}

var inlineInstances = []Instance{
	{Name: "node-a", Addresses: []Address{{Type: v1.NodeInternalIP, Address: "127.0.0.10"}}},
	{Name: "node-b", ProviderID: "local://custom-b", InstanceType: "local.large", Zone: "local-b", Region: "r2", State: StateShutdown},
	{Name: "node-c", State: StateTerminated},
}

// nodeA is inlineInstances' node-a as looked up: the defaults filled in.
var nodeA = Instance{
	Name: "node-a", ProviderID: "local://node-a", InstanceType: DefaultInstanceType, Zone: DefaultZone, Region: DefaultRegion,
	State: StateRunning, Addresses: []Address{{Type: v1.NodeInternalIP, Address: "127.0.0.10"}},
}

// inventoryLookups are TestInventoryLookup's cases: a Node looked up in
// inlineInstances, with or without autoInventory, and the instance found,
// nothing, or an error.
var inventoryLookups = []struct {
	name      string
	auto      bool
	node      *v1.Node
	want      Instance
	wantFound bool
	wantErr   bool
}{
	{
		name:      "an instance is found by name and gets the default providerID, state, type, zone and region",
		node:      testNode("node-a", "", nil),
		wantFound: true,
		want:      nodeA,
	},
	{
		name:      "an instance is found by its default providerID",
		node:      testNode("renamed", "local://node-a", nil),
		wantFound: true,
		want:      nodeA,
	},
	{
		name:      "an instance is found by its given providerID and keeps its own fields",
		node:      testNode("node-b", "local://custom-b", nil),
		wantFound: true,
		want: Instance{
			Name: "node-b", ProviderID: "local://custom-b", InstanceType: "local.large", Zone: "local-b", Region: "r2",
			State: StateShutdown, Addresses: []Address{{Type: v1.NodeHostName, Address: "node-b"}},
		},
	},
	{
		name:      "an instance without addresses takes the Node's own",
		node:      testNode("node-c", "", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.12"}}),
		wantFound: true,
		want: Instance{
			Name: "node-c", ProviderID: "local://node-c", InstanceType: DefaultInstanceType, Zone: DefaultZone, Region: DefaultRegion,
			State:     StateTerminated,
			Addresses: []Address{{Type: v1.NodeInternalIP, Address: "127.0.0.12"}, {Type: v1.NodeHostName, Address: "node-c"}},
		},
	},
	{
		name: "a Node of an unknown name is not found",
		node: testNode("stranger", "", nil),
	},
	{
		name: "a local providerID of no instance is not found, even when the name matches",
		node: testNode("node-a", "local://elsewhere", nil),
	},
	{
		name:    "a foreign providerID is an error, never not found",
		node:    testNode("node-a", "openstack:///8a6f5a1b", nil),
		wantErr: true,
	},
	{
		name:    "a foreign providerID is an error even with autoInventory",
		auto:    true,
		node:    testNode("node-a", "aws:///us-east-1a/i-1", nil),
		wantErr: true,
	},
	{
		name:      "autoInventory prefers the inventory's instance",
		auto:      true,
		node:      testNode("node-b", "", nil),
		wantFound: true,
		want: Instance{
			Name: "node-b", ProviderID: "local://custom-b", InstanceType: "local.large", Zone: "local-b", Region: "r2",
			State: StateShutdown, Addresses: []Address{{Type: v1.NodeHostName, Address: "node-b"}},
		},
	},
	{
		name: "autoInventory adopts an unknown Node with its provided node IPs, status addresses and hostname",
		auto: true,
		node: testNode("stranger", "", []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: "127.0.0.20"},
			{Type: v1.NodeExternalIP, Address: "127.0.0.30"},
			{Type: v1.NodeHostName, Address: "stranger"},
		}, providedNodeIPAnnotation, "127.0.0.20, ::1"),
		wantFound: true,
		want: Instance{
			Name: "stranger", ProviderID: "local://stranger", InstanceType: DefaultInstanceType, Zone: DefaultZone, Region: DefaultRegion,
			State: StateRunning,
			Addresses: []Address{
				{Type: v1.NodeInternalIP, Address: "127.0.0.20"},
				{Type: v1.NodeInternalIP, Address: "::1"},
				{Type: v1.NodeExternalIP, Address: "127.0.0.30"},
				{Type: v1.NodeHostName, Address: "stranger"},
			},
		},
	},
	{
		name:      "autoInventory adopts a Node by its local providerID",
		auto:      true,
		node:      testNode("stranger", "local://stranger", nil),
		wantFound: true,
		want: Instance{
			Name: "stranger", ProviderID: "local://stranger", InstanceType: DefaultInstanceType, Zone: DefaultZone, Region: DefaultRegion,
			State: StateRunning, Addresses: []Address{{Type: v1.NodeHostName, Address: "stranger"}},
		},
	},
}

func TestInventoryLookup(t *testing.T) {
	for _, tt := range inventoryLookups {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := newInventory(testConfig(func(c *Config) {
				c.Instances = inlineInstances
				c.AutoInventory = tt.auto
			}))
			require.NoError(t, err)
			got, found, err := inv.lookup(tt.node)
			if tt.wantErr {
				require.Error(t, err)
				assert.ErrorIs(t, err, providerid.ErrForeign)
				assert.Contains(t, err.Error(), tt.node.Spec.ProviderID)
				assert.False(t, found)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantFound, found)
			if tt.wantFound {
				assert.Equal(t, tt.want, got)
			}
		})
	}
}

func TestInventoryDoesNotChangeTheConfiguredInstances(t *testing.T) {
	instances := []Instance{{Name: "node-a"}}
	inv, err := newInventory(testConfig(func(c *Config) { c.Instances = instances }))
	require.NoError(t, err)
	_, found, err := inv.lookup(testNode("node-a", "", nil))
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, []Instance{{Name: "node-a"}}, instances)
}

func writeInventory(t *testing.T, path, doc string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
}

func TestInventoryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inventory.yaml")
	writeInventory(t, path, "instances:\n- name: node-a\n")
	inv, err := newInventory(testConfig(func(c *Config) { c.InventoryFile = path }))
	require.NoError(t, err)
	logger := klog.Background()

	found := func(name string) bool {
		t.Helper()
		_, ok, err := inv.lookup(testNode(name, "", nil))
		require.NoError(t, err)
		return ok
	}
	require.True(t, found("node-a"))
	require.False(t, found("node-b"))

	// A change is picked up.
	writeInventory(t, path, "instances:\n- name: node-b\n  state: shutdown\n")
	inv.reload(logger)
	assert.False(t, found("node-a"))
	assert.True(t, found("node-b"))

	// An invalid file keeps the last good inventory and remembers why.
	for _, bad := range []string{
		"instances:\n- name: Not_A_Node\n",
		"instances:\n- nmae: node-c\n", //nolint:misspell // a misspelt key is the point
		"instances: [\n",
	} {
		writeInventory(t, path, bad)
		inv.reload(logger)
		assert.True(t, found("node-b"), "after %q", bad)
		assert.False(t, found("node-c"), "after %q", bad)
		inv.mu.RLock()
		assert.Contains(t, inv.lastErr, path)
		inv.mu.RUnlock()
	}

	// A deleted file keeps the last good inventory too.
	require.NoError(t, os.Remove(path))
	inv.reload(logger)
	assert.True(t, found("node-b"))
	inv.mu.RLock()
	assert.Contains(t, inv.lastErr, "inventoryFile")
	inv.mu.RUnlock()

	// A good file again replaces it and clears the error.
	writeInventory(t, path, "instances:\n- name: node-c\n")
	inv.reload(logger)
	assert.False(t, found("node-b"))
	assert.True(t, found("node-c"))
	inv.mu.RLock()
	assert.Empty(t, inv.lastErr)
	inv.mu.RUnlock()

	// An unchanged file changes nothing.
	inv.mu.RLock()
	loadedAt := inv.loadedAt
	inv.mu.RUnlock()
	inv.reload(logger)
	inv.mu.RLock()
	assert.Equal(t, loadedAt, inv.loadedAt)
	inv.mu.RUnlock()
}

func TestInventoryFileMustBeGoodAtStart(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		doc  string // "" means no file
		want string
	}{
		{"a missing file is an error", "", "inventoryFile"},
		{"an invalid instance is an error", "instances:\n- name: Not_A_Node\n", `instances[0].name: "Not_A_Node"`},
		{"an unknown key is an error", "instances:\n- name: a\n  adress: x\n", "instances[0].adress: unknown key"}, //nolint:misspell // a misspelt key is the point
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "inventory-"+string(rune('a'+i))+".yaml")
			if tt.doc != "" {
				writeInventory(t, path, tt.doc)
			}
			_, err := newInventory(testConfig(func(c *Config) { c.InventoryFile = path }))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestInventoryRunStopsAndReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inventory.yaml")
	writeInventory(t, path, "instances:\n- name: node-a\n")
	cfg := testConfig(func(c *Config) { c.InventoryFile = path })
	cfg.ReloadInterval.Duration = 20 * time.Millisecond
	inv, err := newInventory(cfg)
	require.NoError(t, err)

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { inv.run(stop); close(done) }()
	writeInventory(t, path, "instances:\n- name: node-b\n")
	require.Eventually(t, func() bool {
		_, ok, err := inv.lookup(testNode("node-b", "", nil))
		return err == nil && ok
	}, 5*time.Second, 10*time.Millisecond)
	close(stop)
	<-done
}
