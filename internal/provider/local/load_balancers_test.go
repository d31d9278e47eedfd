package local

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The node controller sets a Node's providerID before its addresses, and only
// the providerID change makes the service controller sync: a Node caught in
// between is reached at its instance's address.
func TestBackendIPOfANodeWhoseAddressesAreNotWrittenYet(t *testing.T) {
	c := newTestCloud(t, testInstances...)
	node := func(name, providerID string, addrs ...v1.NodeAddress) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}, Status: v1.NodeStatus{Addresses: addrs}}
	}
	for _, tc := range []struct {
		name string
		node *v1.Node
		want string
	}{
		{"its own InternalIP", node("running", "local://running", v1.NodeAddress{Type: v1.NodeInternalIP, Address: "127.0.0.99"}), "127.0.0.99"},
		{"providerID set, addresses not yet", node("running", "local://running"), "127.0.0.10"},
		{"not initialised: left out", node("running", ""), ""},
		{"addresses but no InternalIP: left out", node("running", "local://running", v1.NodeAddress{Type: v1.NodeHostName, Address: "running.local"}), ""},
		{"unknown instance: left out", node("ghost", "local://ghost"), ""},
		{"terminated instance: left out", node("terminated", "local://terminated"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := c.lb.backendIP(tc.node, true)
			if tc.want == "" {
				assert.False(t, ok, "got %s", got)
				return
			}
			assert.True(t, ok)
			assert.Equal(t, netip.MustParseAddr(tc.want), got)
		})
	}
}
