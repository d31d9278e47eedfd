package cloudstack

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/annotation"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// fieldsService is a Service whose writes send every field fieldChanges
// changes: TCP and UDP ports, source ranges, a health check.
func fieldsService() *v1.Service {
	svc := service("fields", httpPort, v1.ServicePort{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053})
	svc.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
	svc.Annotations = map[string]string{string(annotation.CloudStackHealthCheckPath): "/healthz"}
	return svc
}

// Each field of fieldChanges, changed behind the CCM's back, is seen by the
// next drift pass, named by explain with the value it has and the one the
// Service asks, and put back by the walk that follows, the address kept
// (and the drift check settles).
func TestEveryFieldChangedBehindOurBackIsSeenExplainedAndPutBack(t *testing.T) {
	for _, vpc := range []bool{false, true} {
		t.Run(map[bool]string{false: "isolated network", true: "VPC tier"}[vpc], func(t *testing.T) {
			f := newFixture(t, emulator.Options{VPC: vpc})
			nodes := f.nodes("worker-1", "worker-2")
			stray, _ := f.emu.AddMachine("not-a-node")
			svc := fieldsService()
			kube := fake.NewClientset(svc)
			f.c.SetKube(kube)
			fresh := func() *v1.Service { return providertest.Reread(t, kube, svc) }
			o := &outOfBand{f: f, admin: f.admin, svc: fresh, stray: stray, members: []string{idOf(nodes[0]), idOf(nodes[1])}}
			slices.Sort(o.members)
			addr := f.ensured(fresh(), nodes).Ingress[0].IP
			require.Empty(t, settled(t, f, fresh, nodes), "settled once built")
			for _, key := range slices.Sorted(maps.Keys(fieldChanges)) {
				if fieldChanges[key].vpc != vpc {
					continue
				}
				t.Run(key, func(t *testing.T) { putBack(t, f, o, key, addr, nodes) })
			}
		})
	}
}

// toldAs is the kind (in the keys of the drift check) of the object of the
// field key of fieldChanges, and how a repair of it names it: by the field
// (a member: the machine).
func toldAs(key string) (kind, named string) {
	i := strings.LastIndex(key, " ")
	field := key[i+1:]
	if field == "virtualmachineids" {
		return "member", lbcycle.MemberPrefix
	}
	return map[string]string{"rule": "rule", "firewall rule": "firewall-rule", "ACL item": "acl-item", "health check": "health-check"}[key[:i]], field
}

// putBack changes the field key behind the CCM's back and holds the drift
// check, explain and the walk to it.
func putBack(t *testing.T, f *fixture, o *outOfBand, key, addr string, nodes []*v1.Node) {
	fc := fieldChanges[key]
	before := o.state()
	require.NoError(t, fc.change(o))
	require.NotEqual(t, before, o.state(), "the change is made")
	why := drifted(t, f, o.svc)
	require.NotEmpty(t, why, "(a) the drift check sees %s changed", key)
	assert.False(t, lbcycle.IsReverifying(why), why)
	kind, named := toldAs(key)
	providertest.RepairTold(t, why, kind, named)
	has, asks := strings.ReplaceAll(fc.has, "STRAY", o.stray), strings.ReplaceAll(fc.asks, "MEMBER", o.members[0])
	field := key[strings.LastIndex(key, " ")+1:]
	var said []string
	for _, d := range f.explain(o.svc(), nodes).Drift {
		said = append(said, d.Object+": "+d.Detail)
	}
	text := strings.Join(said, "\n")
	for _, want := range []string{field + " " + has, asks} {
		assert.Contains(t, text, want, "(b) explain names %s with the value it has and the one the Service asks", field)
	}
	assert.Equal(t, addr, f.ensured(o.svc(), nodes).Ingress[0].IP, "(c) the walk keeps the address")
	assert.Empty(t, settled(t, f, o.svc, nodes), "(c) settled after the walk")
	assert.Equal(t, before, o.state(), "(c) %s put back", key)
}

// drifted is a drift pass's reason for the Service.
func drifted(t *testing.T, f *fixture, svc func() *v1.Service) string {
	t.Helper()
	d, err := f.c.Drifted(t.Context(), []*v1.Service{svc()})
	require.NoError(t, err)
	return d[svc().UID]
}

// settled is the drift check after a walk, its post-walk quiet walks done.
func settled(t *testing.T, f *fixture, svc func() *v1.Service, nodes []*v1.Node) string {
	t.Helper()
	why := drifted(t, f, svc)
	for range 3 {
		if why == "" || !lbcycle.IsReverifying(why) {
			break
		}
		f.ensured(svc(), nodes)
		why = drifted(t, f, svc)
	}
	return why
}
