package ccm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The node controller's Events go through their own client, everything else
// through the Nodes' client.
func TestTheNodeControllersEventsGoThroughTheirOwnClient(t *testing.T) {
	nodes, events := fake.NewClientset(), fake.NewClientset()
	c := eventsApart{Interface: nodes, events: events.CoreV1()}
	_, err := c.CoreV1().Events("default").Create(t.Context(), &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Len(t, events.Actions(), 1)
	assert.Equal(t, "events", events.Actions()[0].GetResource().Resource)
	assert.Len(t, nodes.Actions(), 1)
	assert.Equal(t, "nodes", nodes.Actions()[0].GetResource().Resource)
}
