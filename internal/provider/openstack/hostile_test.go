package openstack

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// Keystone, Nova, Neutron and Octavia answering garbage: errors, no Node
// deleted, nothing removed, memory bounded, one load balancer once they
// answer well again.
func TestAHostileOpenStackIsAnErrorNeverAGoneServer(t *testing.T) {
	e := coretest.Serve(t, emulator.New(emulator.Options{}), nil)
	cfg, err := Read(strings.NewReader(e.CloudConf()))
	require.NoError(t, err)
	c, err := New(cfg)
	require.NoError(t, err)
	c.Cluster.Set("hostile-cluster")
	id, ip := e.AddServer(emulator.ServerSpec{Name: "hostile-node"})
	node := contractNode("hostile-node", "openstack:///"+id, ip)
	providertest.RunHostile(t, providertest.Hostile{
		Cloud: c, Emulator: e.Server, Node: node, Nodes: []*v1.Node{node}, ClusterName: "contract",
		Service: func(name string) *v1.Service { return contractService(name, nil) },
		Fresh:   func() { c.servers.Invalidate(); c.lb.Relist() },
		Held: func(t *testing.T, svc *v1.Service) int {
			lb, err := c.lb.findLB(t.Context(), svc)
			require.NoError(t, err, "one load balancer, found by its tags")
			if lb == nil {
				return 0
			}
			return 1
		},
	})
}
