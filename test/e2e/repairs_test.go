package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/overcast-ccm/overcast/internal/devenv"
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
	assert.Positive(t, repairsCounted(t, "cloudstack", "firewall-rule"), "counted by cloud and kind")
	deleteService(t, ns, "web")
}

// repairsCounted is the drift-repair counter of the CCM in this process for
// cloud and kind of object.
func repairsCounted(t *testing.T, cloud, kind string) (n float64) {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "overcast_service_load_balancer_drift_repairs_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["cloud"] == cloud && labels["kind"] == kind {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
