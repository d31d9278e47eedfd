package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
	"github.com/overcast-ccm/overcast/test/framework"
)

// listRules are the rules of e's security list, each as OCI has it but for
// its description and the type of its peer (the peer sends none, the API's
// default, CIDR_BLOCK), sorted: what the list opens, whoever marked it.
func listRules(e *emulator.Emulator) []string {
	in, out := e.SecurityListRules(e.Fixture().SecurityListID)
	var rules []string
	for dir, raws := range map[string][]string{"in": in, "out": out} {
		for _, raw := range raws {
			var r map[string]any
			if json.Unmarshal([]byte(raw), &r) != nil {
				rules = append(rules, dir+" unreadable "+raw)
				continue
			}
			delete(r, "description")
			delete(r, "sourceType")
			delete(r, "destinationType")
			b, _ := json.Marshal(r)
			rules = append(rules, dir+" "+string(b))
		}
	}
	slices.Sort(rules)
	return rules
}

// described counts the rules of e's list whose description has s.
func described(e *emulator.Emulator, s string) (n int) {
	in, out := e.SecurityListRules(e.Fixture().SecurityListID)
	for _, r := range append(in, out...) {
		if strings.Contains(r, s) {
			n++
		}
	}
	return n
}

// TestOCIThePeerAndUsOnOneListInEitherOrder: cluster A on the unmodified
// peer, cluster B on Overcast, a Service "web" on the same port and node
// port in each, on one security list (issue 43, item 5), in each order of
// coming and going. Whoever goes first, the other's ports stay open (or are
// put back within the drift period, when the peer removes B's rules with
// its own); when both are gone, the list is as it was.
func TestOCIThePeerAndUsOnOneListInEitherOrder(t *testing.T) {
	const nodePort, drift = 30778, 20 * time.Second
	e := ociEmulator(t, 93)
	clusterA := ociPeerCluster(t, e, "oci93-a-node")
	env.StartCCM(t, framework.CCMOptions{Cloud: "oci", CloudConfig: e.CloudConfig(), ExtraArgs: []string{"--load-balancer-drift-period=" + drift.String()}})
	_, ip := e.AddMachine("oci93-b-node")
	waitNodeInitialised(t, env.NewKubelet(t, "oci93-b-node", ip).Name)
	clean := listRules(e)
	web := func(s *v1.Service) { s.Spec.Ports[0].NodePort = nodePort }

	for _, tc := range []struct {
		name               string
		weFirst, weGoFirst bool
		handedOver         int
	}{
		{"we come first and go first", true, true, 5},
		{"we come first, the peer goes first", true, false, 0},
		{"the peer comes first, we go first", false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nsA, ns := clusterA.Namespace(t), namespace(t)
			peerUp := func() { ociPeerWeb(t, clusterA, nsA, nodePort) }
			var ours *v1.Service
			weUp := func() {
				ours = lbService(t, ns, "web", web)
				waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, servicecontroller.ReasonEnsured)
			}
			if tc.weFirst {
				weUp()
				peerUp()
			} else {
				peerUp()
				weUp()
			}
			both := listRules(e)
			require.Equal(t, 5, described(e, string(ours.UID)), "B's own rules")

			peerGoes := func() {
				require.NoError(t, clusterA.Client.CoreV1().Services(nsA).Delete(t.Context(), "web", metav1.DeleteOptions{}))
				waitServiceGone(t, clusterA, nsA, "web", waitLong)
			}
			if tc.weGoFirst {
				deleteService(t, ns, "web")
				assert.Zero(t, described(e, string(ours.UID)), "no rule keeps B's mark")
				assert.Equal(t, tc.handedOver, described(e, `"description":"kept for load balancer `), "rules handed over to the peer's load balancer")
				assert.Subset(t, listRules(e), both, "A's ports all still open")
				peerGoes()
			} else {
				peerGoes()
				require.NoError(t, devenv.Poll(waitLong+3*drift, tick, func() error {
					if n := described(e, string(ours.UID)); n != 5 {
						return fmt.Errorf("B has %d of its 5 rules", n)
					}
					return nil
				}), "the peer removed B's rules with its own; B puts them back")
				deleteService(t, ns, "web")
			}
			require.NoError(t, devenv.Poll(waitLong, tick, func() error {
				if got := listRules(e); !slices.Equal(got, clean) {
					return fmt.Errorf("the list has %d rules, %d before both came", len(got), len(clean))
				}
				return nil
			}), "both gone, the list is as it was")
		})
	}
}
