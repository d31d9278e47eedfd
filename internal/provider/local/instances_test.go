package local

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
)

// newTestCloud builds the local cloud from a config with the given instances and
// one pool, without Initialize: events are dropped until a recorder is set.
func newTestCloud(t *testing.T, instances ...Instance) *Cloud {
	t.Helper()
	c, err := New(testConfig(func(c *Config) {
		c.Instances = instances
		c.Region = "region-1"
		c.Zone = "zone-1"
		c.InstanceType = "type-1"
		c.LoadBalancer.Pools = []PoolConfig{{Name: "default", Addresses: []string{"127.0.200.0/24"}}}
	}))
	require.NoError(t, err)
	t.Cleanup(c.lb.proxy.Close)
	return c
}

var testInstances = []Instance{
	{Name: "running", Addresses: []Address{{Type: v1.NodeInternalIP, Address: "127.0.0.10"}, {Type: v1.NodeHostName, Address: "running.local"}}},
	{Name: "custom", ProviderID: "local://custom-id", InstanceType: "big", Zone: "zone-2", Region: "region-2", State: StateRunning},
	{Name: "shutdown", State: StateShutdown},
	{Name: "terminated", State: StateTerminated},
}

func TestNewRefusesAnInvalidConfig(t *testing.T) {
	_, err := New(testConfig(func(c *Config) { c.Instances = []Instance{{Name: "Bad_Name"}} }))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "instances[0].name")
	assert.Contains(t, err.Error(), "loadBalancer.pools: no pools")
}

func TestInstanceMetadata(t *testing.T) {
	tests := []struct {
		name string
		node *v1.Node
		want *cloudprovider.InstanceMetadata
	}{
		{
			name: "an instance found by name gets the config's defaults and its own addresses",
			node: testNode("running", "", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.99"}}),
			want: &cloudprovider.InstanceMetadata{
				ProviderID: "local://running", InstanceType: "type-1", Zone: "zone-1", Region: "region-1",
				NodeAddresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.10"}, {Type: v1.NodeHostName, Address: "running.local"}},
			},
		},
		{
			name: "an instance found by providerID keeps its own type, zone and region",
			node: testNode("whatever", "local://custom-id", nil),
			want: &cloudprovider.InstanceMetadata{
				ProviderID: "local://custom-id", InstanceType: "big", Zone: "zone-2", Region: "region-2",
				NodeAddresses: []v1.NodeAddress{{Type: v1.NodeHostName, Address: "whatever"}},
			},
		},
		{
			name: "a shut down instance still has metadata, with the Node's addresses",
			node: testNode("shutdown", "", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.11"}}),
			want: &cloudprovider.InstanceMetadata{
				ProviderID: "local://shutdown", InstanceType: "type-1", Zone: "zone-1", Region: "region-1",
				NodeAddresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.11"}, {Type: v1.NodeHostName, Address: "shutdown"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCloud(t, testInstances...)
			got, err := c.InstanceMetadata(t.Context(), tt.node)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// notFoundCases are TestNotFoundMapping's cases: a Node, and what
// InstanceExists, InstanceShutdown and InstanceMetadata answer for it, with the
// Event the last one records.
var notFoundCases = []struct {
	name string
	node *v1.Node

	existsWant bool
	existsErr  bool

	shutdownWant        bool
	shutdownErr         bool
	shutdownNotFound    bool
	metadataNotFound    bool
	metadataErr         bool
	metadataEventReason string
}{
	{
		name:       "a running instance exists and is not shut down",
		node:       testNode("running", "", nil),
		existsWant: true,
	},
	{
		name:       "an instance found by providerID exists",
		node:       testNode("other-name", "local://custom-id", nil),
		existsWant: true,
	},
	{
		name:         "a shut down instance exists and is shut down",
		node:         testNode("shutdown", "local://shutdown", nil),
		existsWant:   true,
		shutdownWant: true,
	},
	{
		name:                "a terminated instance does not exist and has no metadata",
		node:                testNode("terminated", "", nil),
		metadataNotFound:    true,
		metadataErr:         true,
		metadataEventReason: "InstanceNotFound",
	},
	{
		name:                "an unknown Node does not exist and is not found",
		node:                testNode("stranger", "", nil),
		shutdownErr:         true,
		shutdownNotFound:    true,
		metadataNotFound:    true,
		metadataErr:         true,
		metadataEventReason: "InstanceNotFound",
	},
	{
		name:                "an unknown local providerID does not exist and is not found",
		node:                testNode("running", "local://gone", nil),
		shutdownErr:         true,
		shutdownNotFound:    true,
		metadataNotFound:    true,
		metadataErr:         true,
		metadataEventReason: "InstanceNotFound",
	},
	{
		name:                "a foreign providerID is an error everywhere, never gone",
		node:                testNode("running", "openstack:///0b4e1c9e", nil),
		existsErr:           true,
		shutdownErr:         true,
		metadataErr:         true,
		metadataEventReason: "InstanceLookupFailed",
	},
}

// TestNotFoundMapping is the mapping the house rules ask for: "certainly gone" is
// InstanceNotFound or exists=false; "cannot tell" is an error, never "gone".
func TestNotFoundMapping(t *testing.T) {
	for _, tt := range notFoundCases {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCloud(t, testInstances...)
			events := record.NewFakeRecorder(10)
			c.Events.Set(events)

			exists, err := c.InstanceExists(t.Context(), tt.node)
			if tt.existsErr {
				require.Error(t, err, "InstanceExists")
				assert.NotErrorIs(t, err, cloudprovider.InstanceNotFound)
			} else {
				require.NoError(t, err, "InstanceExists")
				assert.Equal(t, tt.existsWant, exists, "InstanceExists")
			}

			shutdown, err := c.InstanceShutdown(t.Context(), tt.node)
			if tt.shutdownErr {
				require.Error(t, err, "InstanceShutdown")
				assert.Equal(t, tt.shutdownNotFound, errors.Is(err, cloudprovider.InstanceNotFound), "InstanceShutdown: %v", err)
			} else {
				require.NoError(t, err, "InstanceShutdown")
				assert.Equal(t, tt.shutdownWant, shutdown, "InstanceShutdown")
			}

			md, err := c.InstanceMetadata(t.Context(), tt.node)
			if tt.metadataErr {
				require.Error(t, err, "InstanceMetadata")
				assert.Nil(t, md)
				assert.Equal(t, tt.metadataNotFound, errors.Is(err, cloudprovider.InstanceNotFound), "InstanceMetadata: %v", err)
			} else {
				require.NoError(t, err, "InstanceMetadata")
				require.NotNil(t, md)
			}

			if tt.metadataEventReason == "" {
				assert.Empty(t, events.Events, "no Event for a Node that has an instance")
				return
			}
			require.Len(t, events.Events, 1)
			ev := <-events.Events
			assert.True(t, strings.HasPrefix(ev, v1.EventTypeWarning+" "+tt.metadataEventReason+" "), ev)
			assert.Contains(t, ev, tt.node.Name)
		})
	}
}

func TestInstancesWithAutoInventory(t *testing.T) {
	c, err := New(testConfig(func(c *Config) {
		c.AutoInventory = true
		c.LoadBalancer.Disabled = true
	}))
	require.NoError(t, err)
	t.Cleanup(c.lb.proxy.Close)
	node := testNode("any", "", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.5"}}, providedNodeIPAnnotation, "127.0.0.5")

	exists, err := c.InstanceExists(t.Context(), node)
	require.NoError(t, err)
	assert.True(t, exists)
	md, err := c.InstanceMetadata(t.Context(), node)
	require.NoError(t, err)
	assert.Equal(t, &cloudprovider.InstanceMetadata{
		ProviderID: "local://any", InstanceType: DefaultInstanceType, Zone: DefaultZone, Region: DefaultRegion,
		NodeAddresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.5"}, {Type: v1.NodeHostName, Address: "any"}},
	}, md)

	_, err = c.InstanceExists(t.Context(), testNode("any", "oci://ocid1.instance.oc1..x", nil))
	require.Error(t, err, "a foreign providerID is never adopted")
}
