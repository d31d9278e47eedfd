package openstack

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The status tree's shape is Octavia's (API reference, "Get the Load Balancer
// status tree"; recorded from the harness's Octavia 11.0.0 with a stranded
// fully populated load balancer).
func TestStatusTreeCountsWhatIsPending(t *testing.T) {
	for _, tt := range []struct {
		name, body, want string
	}{
		{"all ACTIVE", `{"statuses":{"loadbalancer":{"provisioning_status":"ACTIVE","listeners":[{"provisioning_status":"ACTIVE",
			"pools":[{"provisioning_status":"ACTIVE","health_monitor":{"provisioning_status":"ACTIVE"},"members":[{"provisioning_status":"ACTIVE"}]}]}]}}}`, ""},
		{"stranded children of an ACTIVE load balancer", `{"statuses":{"loadbalancer":{"provisioning_status":"ACTIVE","listeners":[{"provisioning_status":"PENDING_CREATE",
			"pools":[{"provisioning_status":"PENDING_CREATE","members":[{"provisioning_status":"PENDING_CREATE"},{"provisioning_status":"PENDING_CREATE"}]}]}]}}}`,
			"4 listener(s), pool(s), monitor(s) or member(s)"},
		{"a pending health monitor alone", `{"statuses":{"loadbalancer":{"provisioning_status":"ACTIVE","listeners":[{"provisioning_status":"ACTIVE",
			"pools":[{"provisioning_status":"ACTIVE","health_monitor":{"provisioning_status":"PENDING_UPDATE"},"members":[]}]}]}}}`,
			"1 listener(s), pool(s), monitor(s) or member(s)"},
		{"no listeners", `{"statuses":{"loadbalancer":{"provisioning_status":"ACTIVE","listeners":[]}}}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var tree statusTree
			require.NoError(t, json.Unmarshal([]byte(tt.body), &tree))
			assert.Equal(t, "ACTIVE", tree.Statuses.LoadBalancer.ProvisioningStatus)
			assert.Equal(t, tt.want, tree.pending())
		})
	}
}
