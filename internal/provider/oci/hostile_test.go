package oci

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// OCI's APIs answering garbage: errors, no Node deleted, nothing removed,
// memory bounded, one load balancer once they answer well again.
func TestAHostileOCIIsAnErrorNeverAGoneInstance(t *testing.T) {
	e := startEmulator(t)
	c := clusterCloud(t, e, "hostile-cluster")
	node := machineNode(e, "hostile-node")
	n := 0
	providertest.RunHostile(t, providertest.Hostile{
		Cloud: c, Emulator: e.Server, Node: node, Nodes: []*v1.Node{node}, ClusterName: "kubernetes",
		Service: func(name string) *v1.Service {
			n++
			return lbSvc(name, "uid-"+name, int32(30100+n))
		},
		Fresh: func() { c.machines.Invalidate(); c.lb.Relist() },
		Held: func(t *testing.T, svc *v1.Service) int {
			lbs, err := c.api.LoadBalancers(t.Context(), ociapi.KindLB, ociapi.With(ociapi.InCompartment(c.cfg.CompartmentID), "displayName", lbName(svc)))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, lb := range lbs {
				if lb.LifecycleState != "DELETED" {
					n++
				}
			}
			return n
		},
	})
}
