package oci

import (
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/loadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheSDKBuildsAndChangesRuleSetsListenersUse(t *testing.T) {
	e := started(t, Options{})
	c := lbClient(t, e)
	ctx := t.Context()
	f := e.fx
	header := loadbalancer.AddHttpRequestHeaderRule{Header: common.String("X-Via"), Value: common.String("oci")}
	details := loadbalancer.CreateLoadBalancerDetails{CompartmentId: common.String(f.CompartmentID), DisplayName: common.String("svc-rules"),
		ShapeName: common.String("flexible"), SubnetIds: []string{f.SubnetID},
		ShapeDetails: &loadbalancer.ShapeDetails{MinimumBandwidthInMbps: common.Int(10), MaximumBandwidthInMbps: common.Int(100)},
		BackendSets:  map[string]loadbalancer.BackendSetDetails{"TCP-80": tcpBackendSet("10.0.10.2")},
		RuleSets:     map[string]loadbalancer.RuleSetDetails{"via": {Items: []loadbalancer.Rule{header}}},
		Listeners: map[string]loadbalancer.ListenerDetails{"TCP-80": {DefaultBackendSetName: common.String("TCP-80"),
			Port: common.Int(80), Protocol: common.String("HTTP"), RuleSetNames: []string{"via"}}}}
	id, lb := createLB(t, c, details)
	require.Contains(t, lb.RuleSets, "via")
	require.Len(t, lb.RuleSets["via"].Items, 1)
	got, ok := lb.RuleSets["via"].Items[0].(loadbalancer.AddHttpRequestHeaderRule)
	require.True(t, ok, "the SDK decodes the rule by its action: %T", lb.RuleSets["via"].Items[0])
	assert.Equal(t, "X-Via", *got.Header)
	assert.Equal(t, []string{"via"}, lb.Listeners["TCP-80"].RuleSetNames)

	// In use: cannot go; changed: by a work request; a listener of a rule set there is not: 400.
	_, err := c.DeleteRuleSet(ctx, loadbalancer.DeleteRuleSetRequest{LoadBalancerId: id, RuleSetName: common.String("via")})
	requireServiceError(t, err, 400, "InvalidParameter")
	_, err = c.UpdateRuleSet(ctx, loadbalancer.UpdateRuleSetRequest{LoadBalancerId: id, RuleSetName: common.String("via"),
		UpdateRuleSetDetails: loadbalancer.UpdateRuleSetDetails{Items: []loadbalancer.Rule{loadbalancer.RemoveHttpRequestHeaderRule{Header: common.String("X-Old")}}}})
	require.NoError(t, err)
	_, err = c.UpdateListener(ctx, loadbalancer.UpdateListenerRequest{LoadBalancerId: id, ListenerName: common.String("TCP-80"),
		UpdateListenerDetails: loadbalancer.UpdateListenerDetails{DefaultBackendSetName: common.String("TCP-80"), Port: common.Int(80),
			Protocol: common.String("HTTP"), RuleSetNames: []string{"nope"}}})
	requireServiceError(t, err, 400, "InvalidParameter")
	sets, err := c.ListRuleSets(ctx, loadbalancer.ListRuleSetsRequest{LoadBalancerId: id})
	require.NoError(t, err)
	require.Len(t, sets.Items, 1)
	_, ok = sets.Items[0].Items[0].(loadbalancer.RemoveHttpRequestHeaderRule)
	assert.True(t, ok, "changed")
}
