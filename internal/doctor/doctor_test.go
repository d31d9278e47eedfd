package doctor

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/deletionguard"
)

func TestTheTableShowsEachFixUnderItsFailedRow(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Print(&b, []Result{
		{Check: "cloud config", Status: OK, Detail: "cloud.conf parses"},
		{Check: "openstack: load-balancer", Status: Fail, Detail: "403   Forbidden", Fix: "add the role"},
		{Check: "leader lease", Status: Warn, Detail: "held by x", Fix: "check x"},
		{Check: "cloud config", Status: Fail, Detail: "a: bad\nb:  worse"},
	}))
	assert.Equal(t, `CHECK                     RESULT  DETAIL
cloud config              ok      cloud.conf parses
openstack: load-balancer  FAIL    403 Forbidden
                                  fix: add the role
leader lease              warn    held by x
                                  fix: check x
cloud config              FAIL    a: bad
                                  b: worse

2 of 4 checks failed.
`, b.String())
	assert.True(t, Failed([]Result{{Status: Warn}, {Status: Fail}}))
	assert.False(t, Failed([]Result{{Status: OK}, {Status: Warn}}))
}

func TestKubeletsWithoutExternalCloudProviderAreNamed(t *testing.T) {
	node := func(name, providerID string, tainted bool) v1.Node {
		n := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
		if tainted {
			n.Spec.Taints = []v1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Effect: v1.TaintEffectNoSchedule}}
		}
		return n
	}
	r := checkKubelets([]v1.Node{node("a", "openstack:///1", false), node("b", "", true), node("c", "", false)})
	assert.Equal(t, Fail, r.Status)
	assert.Contains(t, r.Detail, "1 of 3 Nodes")
	assert.Contains(t, r.Detail, ": c")
	assert.Contains(t, r.Fix, "--cloud-provider=external")

	assert.Equal(t, OK, checkKubelets([]v1.Node{node("a", "x://1", false), node("b", "", true)}).Status)
	assert.Equal(t, Warn, checkKubelets(nil).Status)
}

func TestLongListsAreCut(t *testing.T) {
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("n%02d", i))
	}
	assert.Equal(t, "n00, n01, n02, n03, n04, n05, n06, n07, n08, n09 and 2 more", list(names))
}

func TestPermissionsNameTheLease(t *testing.T) {
	var got []string
	for _, p := range permissions("my-lease") {
		got = append(got, p.String())
	}
	assert.Contains(t, got, "update leases.coordination.k8s.io my-lease")
	assert.Contains(t, got, "patch services/status")
	assert.Contains(t, got, "get namespaces kube-system")
}

// machines is a cloud whose instances are the names it holds.
type machines struct {
	cloudprovider.Interface
	names map[string]bool
}

func (m machines) InstancesV2() (cloudprovider.InstancesV2, bool) { return instances(m), true }

type instances machines

func (instances) InstanceExists(context.Context, *v1.Node) (bool, error)   { return true, nil }
func (instances) InstanceShutdown(context.Context, *v1.Node) (bool, error) { return false, nil }

func (m instances) InstanceMetadata(_ context.Context, n *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	if !m.names[n.Name] {
		return nil, cloudprovider.InstanceNotFound
	}
	return &cloudprovider.InstanceMetadata{ProviderID: "x:///" + n.Name}, nil
}

// Nodes without an instance are named; when more vanish than the Node
// deletion guard lets go at once, doctor says the CCM holds their deletions
// and how to let them go.
func TestNodesWithoutAnInstanceAndTheGuard(t *testing.T) {
	var nodes []v1.Node
	cloud := machines{names: map[string]bool{}}
	for i := range 8 {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		cloud.names[name] = true
	}
	delete(cloud.names, "n0")
	delete(cloud.names, "n1")
	r := checkNodeInstances(t.Context(), cloud, nodes)
	assert.Equal(t, Fail, r.Status)
	assert.Contains(t, r.Detail, "2 match no instance: n0, n1")
	assert.NotContains(t, r.Detail, "guard", "2 of 8 is within the guard's default (25 %, at least 2)")

	delete(cloud.names, "n2")
	r = checkNodeInstances(t.Context(), cloud, nodes)
	assert.Contains(t, r.Detail, "3 match no instance")
	assert.Contains(t, r.Detail, "Node deletion guard")
	assert.Contains(t, r.Detail, deletionguard.ReasonHeld)
	assert.Contains(t, r.Fix, deletionguard.AllowAnnotation+"=true")
}
