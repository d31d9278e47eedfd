package cloudstack

import (
	"testing"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServingTrafficNeedsLoopbackAddresses(t *testing.T) {
	_, err := New(Options{ServeTraffic: true, MachineCIDR: "10.1.1.0/24", PublicCIDR: "127.0.75.0/24"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MachineCIDR")
	assert.NotContains(t, err.Error(), "PublicCIDR")
}

// A rule carries traffic to its machines once the router lets it in: on an
// isolated network, a firewall rule must open the port, and the rule's own
// cidrlist narrows who may reach it.
func TestRulesCarryTrafficWhereTheFirewallOpensThem(t *testing.T) {
	e := started(t, Options{ServeTraffic: true, MachineCIDR: "127.0.76.0/24", PublicCIDR: "127.0.77.0/24"})
	c := user(e)
	m1, ip1 := e.AddMachine("node-1")
	coretest.Answerer(t, ip1+":30080", "node-1")
	ip := associate(t, e, c, "")
	ruleID := webRule(t, e, c, ip, "web-tcp-80", 80)
	assign := c.LoadBalancer.NewAssignToLoadBalancerRuleParams(ruleID)
	assign.SetVirtualmachineids([]string{m1})
	_, err := c.LoadBalancer.AssignToLoadBalancerRule(assign)
	require.NoError(t, err)
	vip := ip.Ipaddress + ":80"

	time.Sleep(500 * time.Millisecond)
	_, err = coretest.Ask(vip)
	require.Error(t, err, "no firewall rule opens port 80: nothing gets through")

	fw := c.Firewall.NewCreateFirewallRuleParams(ip.Id, "tcp")
	fw.SetStartport(80)
	fw.SetEndport(80)
	fw.SetCidrlist([]string{"127.0.0.0/8"})
	_, err = c.Firewall.CreateFirewallRule(fw)
	require.NoError(t, err)
	var got string
	require.Eventually(t, func() bool {
		got, err = coretest.Ask(vip)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "%s answers: %v", vip, err)
	assert.Equal(t, "node-1\n", got)

	// A health-check policy probes the members by HTTP: this one answers no
	// HTTP, so it goes down and nothing is served.
	hc := c.LoadBalancer.NewCreateLBHealthCheckPolicyParams(ruleID)
	hc.SetIntervaltime(3)
	hc.SetResponsetimeout(2)
	hc.SetUnhealthythreshold(1)
	policy, err := c.LoadBalancer.CreateLBHealthCheckPolicy(hc)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := coretest.Ask(vip)
		return err != nil
	}, 15*time.Second, 100*time.Millisecond, "an unhealthy member gets no traffic")
	_, err = c.LoadBalancer.DeleteLBHealthCheckPolicy(c.LoadBalancer.NewDeleteLBHealthCheckPolicyParams(policy.Healthcheckpolicy[0].Id))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := coretest.Ask(vip)
		return err == nil
	}, 15*time.Second, 100*time.Millisecond, "without the policy, a TCP connect is health enough")

	update := c.LoadBalancer.NewUpdateLoadBalancerRuleParams(ruleID)
	update.SetCidrlist([]string{"10.0.0.0/8"})
	_, err = c.LoadBalancer.UpdateLoadBalancerRule(update)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := coretest.Ask(vip)
		return err != nil
	}, 10*time.Second, 50*time.Millisecond, "the rule's cidrlist does not admit loopback")

	_, err = c.LoadBalancer.DeleteLoadBalancerRule(c.LoadBalancer.NewDeleteLoadBalancerRuleParams(ruleID))
	require.NoError(t, err)
	assert.Empty(t, e.DataPlaneErrors())
}
