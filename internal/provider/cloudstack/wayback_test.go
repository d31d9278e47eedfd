package cloudstack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/doctor"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
)

// In a VPC tier a Service's source ranges without the peer's source-cidrs
// annotation are in its rules' cidrlist, which the peer rebuilds when it
// takes over again: doctor names those Services before the switch, and
// only those.
func TestDoctorNamesTheServicesAWayBackToThePeerRebuilds(t *testing.T) {
	f := newFixture(t, emulator.Options{VPC: true})
	nodes := f.nodes("worker-1")
	plain := service("plain", httpPort)
	ranged := service("ranged", v1.ServicePort{Name: "http", Protocol: v1.ProtocolTCP, Port: 81, NodePort: 30081})
	ranged.Spec.LoadBalancerSourceRanges = []string{"10.1.0.0/16"}
	both := service("both", v1.ServicePort{Name: "http", Protocol: v1.ProtocolTCP, Port: 82, NodePort: 30082})
	both.Spec.LoadBalancerSourceRanges = []string{"10.2.0.0/16"}
	both.Annotations = map[string]string{"service.beta.kubernetes.io/cloudstack-load-balancer-source-cidrs": "10.2.0.0/16"}
	for _, svc := range []*v1.Service{plain, ranged, both} {
		_, err := f.ensure(svc, nodes)
		require.NoError(t, err, svc.Name)
	}
	res := f.c.DiagnoseServices(context.Background(), []v1.Service{*plain, *ranged, *both})
	require.Len(t, res, 1)
	assert.Equal(t, doctor.Warn, res[0].Status)
	assert.Contains(t, res[0].Detail, "rebuilds the rules of 1 Service(s)")
	assert.Contains(t, res[0].Detail, ranged.Namespace+"/ranged")
	assert.NotContains(t, res[0].Detail, "/plain")
	assert.NotContains(t, res[0].Detail, "/both")
	assert.Contains(t, res[0].Fix, "source-cidrs")

	res = f.c.DiagnoseServices(context.Background(), []v1.Service{*plain, *both})
	assert.Equal(t, doctor.OK, res[0].Status, res[0].Detail)
}
