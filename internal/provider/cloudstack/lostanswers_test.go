package cloudstack

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/cloud-provider/api"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// Every write the CCM makes to build a Service's load balancer, its answer
// lost (carried out, the connection then cut: a job no one knows of) or
// late (carried out only after the CCM gave up waiting, so that the next
// pass does not see it yet), ends as the same build without the fault
// ends: one address with the Service's tags, one rule per port with its
// machines and health-check policy, one opening per port, the Service
// served; and deleting the Service leaves nothing. The writes are those a
// build without faults makes (the emulator's count of them), on each kind
// of network.
func TestEveryWriteSurvivesALostAnswer(t *testing.T) {
	for _, vpc := range []bool{false, true} {
		t.Run(map[bool]string{false: "isolated network", true: "VPC tier"}[vpc], func(t *testing.T) {
			t.Parallel() // each build on an emulator of its own
			clean, commands := buildWith(t, vpc, nil)
			require.NotEmpty(t, commands)
			for _, command := range commands {
				for _, w := range []struct {
					how   string
					fault core.Fault
				}{
					{"lost", core.Fault{Lost: true}},
					{"late", core.Fault{Late: time.Second}},
				} {
					t.Run(w.how+" "+command, func(t *testing.T) {
						f := w.fault
						f.Route, f.Count = "POST "+command, 1
						got, _ := buildWith(t, vpc, &f)
						assert.Equal(t, clean, got, "what the Service has in the cloud")
					})
				}
			}
		})
	}
}

// buildWith builds fieldsService's load balancer on a new emulator with
// fault injected (nil: none), the client's attempts bounded to 300 ms; it
// says what the cloud then holds, and the commands written. Deleting the
// Service then leaves nothing.
func buildWith(t *testing.T, vpc bool, fault *core.Fault) (map[string]int, []string) {
	f := newFixture(t, emulator.Options{VPC: vpc})
	require.NoError(t, f.c.api.(*csapi.Client).SetAttemptTimeout(300*time.Millisecond))
	nodes := f.nodes("worker-1", "worker-2")
	svc := fieldsService()
	kube := fake.NewClientset(svc)
	f.c.SetKube(kube)
	fresh := func() *v1.Service { return providertest.Reread(t, kube, svc) }
	f.emu.ResetCalls()
	if fault != nil {
		f.emu.InjectFault(*fault)
	}
	var st *v1.LoadBalancerStatus
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st, err = f.c.EnsureLoadBalancer(t.Context(), "kubernetes", fresh(), nodes); err == nil {
			break
		}
	}
	require.NoError(t, err, "the Service is served")
	require.Len(t, st.Ingress, 1)
	var commands []string
	for _, c := range f.emu.Calls() {
		if c.Method == http.MethodPost && !slices.Contains(commands, strings.TrimPrefix(c.Route, "POST ")) {
			commands = append(commands, strings.TrimPrefix(c.Route, "POST "))
		}
	}
	time.Sleep(1500 * time.Millisecond) // a late write lands
	held := heldBy(t, f, fresh, nodes, st.Ingress[0].IP)
	f.remove(fresh())
	assert.Equal(t, map[string]int{}, cloudHolds(t, f), "nothing is left once the Service is deleted")
	return held, commands
}

// heldBy is what the cloud holds once the passes after the build (drift
// passes, and the walks they ask for) have resolved what a late write left,
// the address kept.
func heldBy(t *testing.T, f *fixture, svc func() *v1.Service, nodes []*v1.Node, addr string) map[string]int {
	t.Helper()
	for range 5 {
		st, err := f.c.EnsureLoadBalancer(t.Context(), "kubernetes", svc(), nodes)
		if errors.As(err, new(*api.RetryError)) {
			continue
		}
		require.NoError(t, err)
		require.Equal(t, addr, st.Ingress[0].IP, "the address stays")
		if drifted(t, f, svc) == "" {
			break
		}
	}
	return cloudHolds(t, f)
}

// cloudHolds counts, by kind, what the emulator holds (an emulator of the
// test's own: all of it is the Service's, or left by it).
func cloudHolds(t *testing.T, f *fixture) map[string]int {
	t.Helper()
	out := map[string]int{}
	add := func(kind string, n int) {
		if n > 0 {
			out[kind] += n
		}
	}
	for _, a := range f.addresses() {
		add("address tagged "+strings.Join(slices.Sorted(slices.Values(tagKeys(a.Tags))), ","), 1)
	}
	for _, r := range f.rules() {
		add("rule "+r.Name[len(r.Name)-6:], 1)
		add("member", len(f.members(r.Id)))
		checks, err := f.c.api.HealthChecks(t.Context(), r.Id)
		require.NoError(t, err)
		add("health check", len(checks))
	}
	add("firewall rule", len(f.firewall()))
	p := f.admin.NetworkACL.NewListNetworkACLsParams()
	p.SetListall(true)
	items, err := f.admin.NetworkACL.ListNetworkACLs(p)
	require.NoError(t, err)
	for _, it := range items.NetworkACLs {
		add("ACL item tagged "+strings.Join(slices.Sorted(slices.Values(tagKeys(it.Tags))), ","), 1)
	}
	return out
}

func tagKeys(tags []cs.Tags) []string {
	out := []string{}
	for _, t := range tags {
		out = append(out, t.Key)
	}
	return out
}
