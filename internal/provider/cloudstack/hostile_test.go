package cloudstack

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// The CloudStack API answering garbage: errors, no Node deleted, nothing
// removed, memory bounded, one address and its rules once it answers well.
func TestAHostileCloudStackIsAnErrorNeverAGoneMachine(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("hostile-node")
	n := 0
	providertest.RunHostile(t, providertest.Hostile{
		Cloud: f.c, Emulator: f.emu.Server, Node: nodes[0], Nodes: nodes, ClusterName: "kubernetes",
		Service: func(name string) *v1.Service {
			n++
			return service(name+string(rune('a'+n)), httpPort)
		},
		Fresh: func() { f.c.machines.Invalidate(); f.c.lb.Relist() },
		Held: func(t *testing.T, svc *v1.Service) int {
			own, err := f.c.api.AddressesTagged(t.Context(), f.c.lb.ownTags(svc))
			if err != nil {
				t.Fatal(err)
			}
			return len(own)
		},
	})
}
