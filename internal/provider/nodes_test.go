package provider

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func TestTheAddressALoadBalancerReachesANodeAt(t *testing.T) {
	dual := []v1.NodeAddress{
		{Type: v1.NodeHostName, Address: "node-1"},
		{Type: v1.NodeExternalIP, Address: "203.0.113.9"},
		{Type: v1.NodeInternalIP, Address: "fd00::5"},
		{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
	}
	for _, tc := range []struct {
		name   string
		addrs  []v1.NodeAddress
		family v1.IPFamily
		want   string
	}{
		{"no family: the first InternalIP", dual, "", "fd00::5"},
		{"IPv4 wanted: the first IPv4 InternalIP", dual, v1.IPv4Protocol, "10.0.0.5"},
		{"IPv6 wanted", dual, v1.IPv6Protocol, "fd00::5"},
		{"the family missing: the first InternalIP", dual[:3], v1.IPv4Protocol, "fd00::5"},
		{"an IPv4-mapped address is IPv4", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "::ffff:10.0.0.7"}}, v1.IPv4Protocol, "10.0.0.7"},
		{"no InternalIP: none", dual[:2], "", ""},
		{"unparsable addresses are skipped", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "node-1.internal"}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ip, ok := InternalIP(tc.addrs, tc.family)
			assert.Equal(t, tc.want != "", ok)
			if ok {
				assert.Equal(t, tc.want, ip.String())
			}
		})
	}
}

func TestANodeAwaitsItsAddressesBetweenProviderIDAndAddresses(t *testing.T) {
	n := &v1.Node{}
	assert.False(t, AwaitingAddresses(n), "not initialised yet")
	n.Spec.ProviderID = "openstack:///x"
	assert.True(t, AwaitingAddresses(n))
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}}
	assert.False(t, AwaitingAddresses(n))
}
