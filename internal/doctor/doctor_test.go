package doctor

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
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
