package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/metricstest"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
	"github.com/overcast-ccm/overcast/test/framework"
)

// A repair made by the quiet walk after a start (a firewall rule widened
// while no CCM ran: the port is still open, so only the walk sees it) is
// told as every repair is: a Normal RepairingLoadBalancer Event that says
// what changed.
func TestARepairAfterAStartIsTold(t *testing.T) {
	ns := namespace(t)
	c, e := cloudStackLBCloudOn(t, 79, 1)
	admin := csAdmin(e)
	svc := lbService(t, ns, "web", func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"} })
	c.nodes[0].ServeService(t, svc, true)
	waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
	_, openings := csObjects(t, admin, false)
	require.Len(t, openings, 1)

	c.ccm.Stop()
	_, err := admin.Firewall.DeleteFirewallRule(admin.Firewall.NewDeleteFirewallRuleParams(openings[0]))
	require.NoError(t, err)
	wide := admin.Firewall.NewCreateFirewallRuleParams(csRules(t, admin)[0].Publicipid, "tcp")
	wide.SetStartport(80)
	wide.SetEndport(80)
	wide.SetCidrlist([]string{"0.0.0.0/0"})
	_, err = admin.Firewall.CreateFirewallRule(wide)
	require.NoError(t, err)
	_, openings = csObjects(t, admin, false)
	env.StartCCM(t, framework.CCMOptions{Cloud: "cloudstack", CloudConfig: c.conf, ExtraArgs: []string{"--load-balancer-drift-period=2s"}})

	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		if _, o := csObjects(t, admin, false); len(o) != 1 || slices.Equal(o, openings) {
			return assert.AnError
		}
		return nil
	}), "the firewall rule is put back")
	msg := waitEvent(t, ns, "web", servicecontroller.ReasonRepairing)
	assert.True(t, strings.HasPrefix(msg, "Repaired load balancer: "), msg)
	assert.Contains(t, msg, "firewall", "it says what changed")
	assert.Positive(t, metricstest.Counter(t, "overcast_service_load_balancer_drift_repairs_total", map[string]string{"cloud": "cloudstack", "kind": "firewall-rule"}), "counted by cloud and kind")
	deleteService(t, ns, "web")
}
