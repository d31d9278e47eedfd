package cloudstack

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// A rule is a function of the spec alone (no Cloud): its name, algorithm,
// ports, address and network, and the sources in its cidrlist, ours or, on
// the peer's shape, the peer's.
func TestARuleIsWhatTheSpecAsksOfItsPort(t *testing.T) {
	svc := service("web", httpPort)
	svc.Annotations = map[string]string{string(annotation.CloudStackSourceCIDRs): "198.51.100.0/24"}
	svc.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	spec, err := parseSpec(svc)
	require.NoError(t, err)
	require.Len(t, spec.ports, 1)
	p := spec.ports[0]
	want := csapi.Rule{Name: p.ruleName(spec.name), Algorithm: spec.algorithm, Protocol: "tcp", AddressID: "ip-1", Network: "net-1",
		PublicPort: 80, PrivatePort: 30080, CIDRs: []string{"198.51.100.0/24"}}
	assert.Equal(t, want, ruleOf(spec, p, "ip-1", "net-1", false))
	assert.Equal(t, []string{"198.51.100.0/24"}, ruleOf(spec, p, "ip-1", "net-1", true).CIDRs, "the annotation first, on both shapes")

	delete(svc.Annotations, string(annotation.CloudStackSourceCIDRs))
	spec, err = parseSpec(svc)
	require.NoError(t, err)
	assert.Equal(t, []string{"203.0.113.0/24"}, ruleOf(spec, p, "ip-1", "net-1", false).CIDRs, "ours: the source ranges")
	assert.Equal(t, everyone, ruleOf(spec, p, "ip-1", "net-1", true).CIDRs, "the peer's: everyone (its firewall rules hold the ranges)")
}
