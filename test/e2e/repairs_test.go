package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

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

// A restart of the CCM writes no Service whose load balancer is as it was:
// the status the cloud says (an address with no ipMode: VIP) is the one
// stored (the apiserver defaults ipMode to VIP), and no Event is told again.
// On each cloud's emulator; local's load balancers live in the CCM's
// process (its restart: TestLoadBalancerIPsSurviveARestartOfTheCCM).
func TestARestartWritesNoServiceThatIsAsItWas(t *testing.T) {
	for i, cloud := range lbClouds {
		if cloud.name == "local" {
			continue
		}
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 114+i, 1)
			ns := namespace(t)
			lbService(t, ns, "web", nil)
			waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
			before := quietService(t, ns, "web")
			ensured := countEvents(t, ns, "web", servicecontroller.ReasonEnsured)

			c.ccm.Stop()
			done := map[string]string{"operation": "ensure", "result": "done"}
			passes := metricstest.Counter(t, "overcast_service_load_balancer_syncs_total", done)
			env.StartCCM(t, framework.CCMOptions{Cloud: c.name, CloudConfig: c.conf, ExtraArgs: []string{"--load-balancer-drift-period=2s"}})
			require.NoError(t, devenv.Poll(waitLong, tick, func() error {
				if metricstest.Counter(t, "overcast_service_load_balancer_syncs_total", done) <= passes {
					return assert.AnError
				}
				return nil
			}), "the restarted CCM passes over the Service")
			assert.Equal(t, before, getService(t, ns, "web").ResourceVersion, "the Service is not written again")
			assert.Equal(t, ensured, countEvents(t, ns, "web", servicecontroller.ReasonEnsured), "no Event told again")
			deleteService(t, ns, "web")
		})
	}
}

// quietService waits until the Service has not changed for a few seconds
// (what its creation's passes write is written) and returns its version.
func quietService(t *testing.T, ns, name string) string {
	t.Helper()
	last := getService(t, ns, name).ResourceVersion
	require.NoError(t, devenv.Poll(waitLong, 3*time.Second, func() error {
		now := getService(t, ns, name).ResourceVersion
		if now != last {
			last = now
			return assert.AnError
		}
		return nil
	}))
	return last
}

// countEvents counts the Service's Events of a reason.
func countEvents(t *testing.T, ns, name, reason string) int {
	t.Helper()
	n := 0
	for _, e := range events(t, ns, name) {
		if strings.HasSuffix(e, " "+reason) {
			n++
		}
	}
	return n
}
