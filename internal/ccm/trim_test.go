package ccm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestTrimKeepsWhatControllersRead(t *testing.T) {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec:       v1.NodeSpec{ProviderID: "openstack:///x", Taints: []v1.Taint{{Key: "k"}}},
		Status: v1.NodeStatus{
			Addresses:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			Images:     []v1.ContainerImage{{Names: []string{"registry.example/big:1"}, SizeBytes: 1 << 30}},
		},
	}
	want := node.DeepCopy()
	want.ManagedFields, want.Status.Images = nil, nil
	got, err := trimObject(node)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: map[string]string{"x": "y"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
	wantSvc := svc.DeepCopy()
	wantSvc.ManagedFields = nil
	got, err = trimObject(cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: svc})
	require.NoError(t, err)
	assert.Equal(t, wantSvc, got.(cache.DeletedFinalStateUnknown).Obj, "a tombstone's object is trimmed too")
}
