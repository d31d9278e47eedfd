package explain

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/provider"
)

// cloud is an Explainer that holds a load balancer for every Service, and
// remembers the Nodes it was given.
type cloud struct {
	cloudprovider.Interface
	nodes []string
	uid   string
}

func (c *cloud) ProviderName() string   { return "fake" }
func (c *cloud) SetClusterUID(u string) { c.uid = u }

func (c *cloud) ExplainService(_ context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (provider.ServiceExplanation, error) {
	for _, n := range nodes {
		c.nodes = append(c.nodes, n.Name)
	}
	e := provider.NewServiceExplanation("fake", svc)
	e.Found, e.DriftChecked = true, true
	e.Change(provider.ActionChange, "listener TCP/80", "as the cloud says")
	return e, nil
}

func (c *cloud) ExplainNode(context.Context, *v1.Node, []*v1.Node) (provider.NodeExplanation, error) {
	return provider.NodeExplanation{}, nil
}

func objects() []runtime.Object {
	out := []runtime.Object{
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "uid-cluster"}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "in"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "out", Labels: map[string]string{v1.LabelNodeExcludeBalancers: "true"}}},
		// an Event of another Service of the same name, gone: not shown
		&v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default"}, Reason: "Old",
			InvolvedObject: v1.ObjectReference{Kind: "Service", Name: "web", UID: "uid-gone"}},
	}
	for i := range 12 {
		out = append(out, &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i), Namespace: "default"}, Reason: fmt.Sprintf("R%02d", i),
			Type: v1.EventTypeNormal, LastTimestamp: metav1.NewTime(time.Unix(int64(1e9+i), 0)),
			InvolvedObject: v1.ObjectReference{Kind: "Service", Name: "web", UID: "uid-web"}})
	}
	return out
}

// The cloud is told the cluster's UID and given the eligible Nodes; the
// Service's latest Events are its own, oldest first.
func TestServiceGivesTheCloudWhatTheCycleWould(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	c := &cloud{}
	e, err := Service(context.Background(), Options{Cloud: c, Kube: kube}, "default", "web")
	require.NoError(t, err)
	assert.Equal(t, "uid-cluster", c.uid)
	assert.Equal(t, []string{"in"}, c.nodes, "the excluded Node is not eligible")
	require.Len(t, e.Events, 10)
	assert.Equal(t, "R02", e.Events[0].Reason)
	assert.Equal(t, "R11", e.Events[9].Reason)

	// A Service that no longer asks for a load balancer: what the cloud
	// holds is deleted.
	svc, err := kube.CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	svc.Spec.Type = v1.ServiceTypeClusterIP
	_, err = kube.CoreV1().Services("default").Update(context.Background(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	e, err = Service(context.Background(), Options{Cloud: c, Kube: kube}, "default", "web")
	require.NoError(t, err)
	require.Len(t, e.Drift, 1)
	assert.Equal(t, provider.ActionDelete, e.Drift[0].Action)
	assert.Contains(t, e.Drift[0].Detail, "ClusterIP")

	_, err = Service(context.Background(), Options{Cloud: c, Kube: kube}, "default", "nope")
	assert.ErrorIs(t, err, ErrUnknown)
}

// The text leaves out what is empty and says when nothing drifted.
func TestPrintLeavesOutWhatIsEmpty(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u"}}
	e := provider.NewServiceExplanation("fake", svc)
	e.Found, e.DriftChecked = true, true
	e.Addresses = append(e.Addresses, provider.Address{IP: "192.0.2.1", Kind: "public"})
	var out bytes.Buffer
	require.NoError(t, PrintService(&out, e, time.Now()))
	assert.Equal(t, "Service default/web on fake (uid u)\n\nAddresses\n  192.0.2.1  public\n\nDrift: none, the cloud holds what the Service asks\n", out.String())
}
