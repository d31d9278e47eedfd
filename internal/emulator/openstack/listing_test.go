package openstack

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFiltersAreTheTaggedFieldsAndWhatAnObjectAnswersItself(t *testing.T) {
	two := 2
	for _, tt := range []struct {
		name   string
		o      any
		filter string
		want   string
		ok     bool
	}{
		{"a string", &network{ID: "n1"}, "id", "n1", true},
		{"a boolean", &network{External: true}, "router:external", "true", true},
		{"a number", &network{MTU: 1450}, "mtu", "1450", true},
		{"an embedded struct's field", &network{neutronStd: neutronStd{Revision: 3}}, "revision_number", "3", true},
		{"a list", &port{SecurityGroups: []string{"a", "b"}}, "security_groups", multi("a", "b"), true},
		{"what a port answers itself", &port{FixedIPs: []fixedIP{{SubnetID: "s", IPAddress: "10.0.0.5"}}}, "fixed_ips", multi("ip_address=10.0.0.5", "subnet_id=s"), true},
		{"a nil pointer", &sgRule{}, "port_range_min", "", true},
		{"a pointer", &lbMember{MonitorPort: &two}, "monitor_port", "2", true},
		{"one field under two names", &listener{projectID: "p"}, "tenant_id", "p", true},
		{"an untagged field is not a filter", &network{Subnets: []string{"s"}}, "subnets", "", false},
		{"a computed status", &router{}, "status", "ACTIVE", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := field(tt.o, tt.filter)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}
