package oci

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// fieldChange is one field of a pinned body (its path in it) as someone
// else changes it: to value (JSON), which the drift key and explain say
// as text after the field's name (fields.go).
type fieldChange struct{ name, value, text string }

// fieldsDrifted are, by body ("lb/backendset": the pinned bodies of the
// lb scenarios' backend sets), each field the drift check compares, and
// how TestEveryFieldSentIsDriftCheckedExplainedAndPutBack changes it.
var fieldsDrifted = map[string]map[string]fieldChange{
	"lb/backendset": withHealthChecker(map[string]fieldChange{
		"policy":             {"policy", `"IP_HASH"`, "IP_HASH"},
		"backends[].weight":  {"weight", `7`, "7"},
		"backends[].drain":   {"drain", `true`, "true"},
		"backends[].backup":  {"backup", `true`, "true"},
		"backends[].offline": {"offline", `true`, "true"},
	}),
	"lb/listener": {
		"protocol":                            {"protocol", `"TCP"`, "TCP"},
		"port":                                {"port", `1080`, "1080"},
		"ruleSetNames[]":                      {"rule sets", `[]`, "none"},
		"connectionConfiguration.idleTimeout": {"idle timeout", `60`, "60"},
		"connectionConfiguration.backendTcpProxyProtocolVersion": {"PROXY protocol version", `1`, "1"},
	},
	"nlb/backendset": withHealthChecker(map[string]fieldChange{
		"policy":               {"policy", `"TWO_TUPLE"`, "TWO_TUPLE"},
		"isPreserveSource":     {"source preservation", `false`, "false"},
		"backends[].weight":    {"weight", `7`, "7"},
		"backends[].isDrain":   {"drain", `true`, "true"},
		"backends[].isBackup":  {"backup", `true`, "true"},
		"backends[].isOffline": {"offline", `true`, "true"},
	}),
	"nlb/listener": {
		"protocol":      {"protocol", `"UDP"`, "UDP"},
		"port":          {"port", `1080`, "1080"},
		"isPpv2Enabled": {"PROXY protocol v2", `false`, "false"},
	},
}

// withHealthChecker is changes and those of a backend set's health checker
// (the same on a load balancer and a network load balancer).
func withHealthChecker(changes map[string]fieldChange) map[string]fieldChange {
	maps.Copy(changes, map[string]fieldChange{
		"healthChecker.protocol":         {"health check protocol", `"TCP"`, "TCP"},
		"healthChecker.port":             {"health check port", `10257`, "10257"},
		"healthChecker.urlPath":          {"health check path", `"/other"`, "/other"},
		"healthChecker.returnCode":       {"health check return code", `204`, "204"},
		"healthChecker.retries":          {"health check retries", `5`, "5"},
		"healthChecker.timeoutInMillis":  {"health check timeout ms", `2500`, "2500"},
		"healthChecker.intervalInMillis": {"health check interval ms", `6000`, "6000"},
	})
	return changes
}

// fieldsLeftOut are the fields of the pinned bodies no drift pass changes
// here, and why (docs/oci.md has this table too).
var fieldsLeftOut = map[string]string{
	"backends[].ipAddress": "identity: a backend is its address and port (and an NLB's, its instance); another is a backend gone and one added, " +
		"which TestEveryObjectChangedBehindOurBackIsRepaired covers (member)",
	"backends[].port":       "identity, as backends[].ipAddress",
	"backends[].targetId":   "identity, as backends[].ipAddress",
	"defaultBackendSetName": "compared (listener field \"backend set\"), but changing it needs a second backend set: structure, covered by TestEveryObjectChangedBehindOurBackIsRepaired (backendset removed)",
	"items": "a rule set's rules are compared whole, not field by field (OCI adds its defaults to an item: sameRuleSet), " +
		"in the drift key as a digest: TestARuleSetChangedBehindOurBackIsSeenExplainedAndPutBack",
}

// bodyPaths are the paths of the leaves of a JSON body: "a.b", "a[].b",
// "a[]" (a list of scalars, or an empty one).
func bodyPaths(prefix string, v any, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			bodyPaths(p, c, out)
		}
	case []any:
		if len(v) == 0 {
			out[prefix+"[]"] = true
		}
		for _, c := range v {
			if _, ok := c.(map[string]any); ok {
				bodyPaths(prefix+"[]", c, out)
			} else {
				out[prefix+"[]"] = true
			}
		}
	default:
		out[prefix] = true
	}
}

// TestEveryFieldSentIsDriftCheckedOrLeftOutWithAReason: each field of the
// pinned bodies of backend sets and listeners is in fieldsDrifted, or in
// fieldsLeftOut with its reason.
func TestEveryFieldSentIsDriftCheckedOrLeftOutWithAReason(t *testing.T) {
	for _, line := range strings.Split(strings.TrimSpace(pinnedBodies), "\n") {
		name, body, _ := strings.Cut(line, "\t")
		kind, child, _ := strings.Cut(name, "/")
		if child != "backendset" && child != "listener" {
			continue
		}
		kind = map[bool]string{true: "nlb", false: "lb"}[kind == "nlb"]
		var v any
		require.NoError(t, json.Unmarshal([]byte(body), &v))
		paths := map[string]bool{}
		bodyPaths("", v, paths)
		for _, p := range slices.Sorted(maps.Keys(paths)) {
			if _, ok := fieldsDrifted[kind+"/"+child][p]; !ok && fieldsLeftOut[p] == "" {
				t.Errorf("%s sends %s: add it to fieldsDrifted (and to fields.go's lists), or to fieldsLeftOut with why", name, p)
			}
		}
	}
}

// fieldDrift is a cloud on the emulator with a Service of each wire
// scenario (but nsg) converged, for changing fields behind its back.
type fieldDrift struct {
	c     *Cloud
	kube  *fake.Clientset
	nodes []*v1.Node
	svcs  map[string]*v1.Service
}

func newFieldDrift(t *testing.T) *fieldDrift { return newFieldDriftOn(t, 2) }

// newFieldDriftOn is newFieldDrift on n Nodes.
func newFieldDriftOn(t *testing.T, n int) *fieldDrift {
	e := startEmulator(t)
	f := &fieldDrift{c: clusterCloud(t, e, "field-cluster"), svcs: map[string]*v1.Service{}}
	for i := range n {
		f.nodes = append(f.nodes, machineNode(e, fmt.Sprintf("field-%03d", i)))
	}
	var objs []runtime.Object
	for i, sc := range wireScenarios() {
		if sc.name == "nsg" {
			continue
		}
		svc := lbSvc("field-"+sc.name, "uid-field-"+sc.name, int32(30180+i))
		svc.Annotations = maps.Clone(sc.annotations)
		if sc.local {
			svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, int32(32000+i)
		}
		f.svcs[sc.name] = svc
		objs = append(objs, svc)
	}
	f.kube = fake.NewClientset(objs...)
	f.c.SetKube(f.kube)
	for name := range f.svcs {
		f.ensure(t, name)
		require.Empty(t, f.settled(t, name))
	}
	return f
}

// many says whether the Services' backend sets are listed as ManyBackends.
func (f *fieldDrift) many() bool { return len(f.nodes) > lbcycle.MembersKept }

func (f *fieldDrift) fresh(t *testing.T, name string) *v1.Service {
	return providertest.Reread(t, f.kube, f.svcs[name])
}

func (f *fieldDrift) ensure(t *testing.T, name string) {
	t.Helper()
	require.NoError(t, poll(time.Minute, func() error {
		_, err := f.c.EnsureLoadBalancer(t.Context(), "kubernetes", f.fresh(t, name), f.nodes)
		return err
	}))
}

func (f *fieldDrift) drifted(t *testing.T, name string) string {
	t.Helper()
	f.c.lb.Relist()
	svc := f.fresh(t, name)
	d, err := f.c.Drifted(t.Context(), []*v1.Service{svc})
	require.NoError(t, err)
	return d[svc.UID]
}

// settled is the drift check after a walk, its post-walk quiet walks done.
func (f *fieldDrift) settled(t *testing.T, name string) string {
	why := f.drifted(t, name)
	for range 3 {
		if !lbcycle.IsReverifying(why) {
			break
		}
		f.ensure(t, name)
		why = f.drifted(t, name)
	}
	return why
}

// listed is the Service's load balancer as OCI has it now, each backend
// one by one (the listing keeps many as ManyBackends).
func (f *fieldDrift) listed(t *testing.T, name string) ociapi.LB {
	t.Helper()
	f.c.lb.Relist()
	lb, found, err := f.c.lb.Listed(t.Context(), f.fresh(t, name))
	require.NoError(t, err)
	require.True(t, found)
	whole, err := f.c.lb.unfold(t.Context(), lb.Obj)
	require.NoError(t, err)
	return whole
}

// at is the value at path of v (a JSON object), the first backend's for
// backends[].
func at(v map[string]any, path string) any {
	var cur any = v
	for _, part := range strings.Split(path, ".") {
		list := strings.HasSuffix(part, "[]")
		cur = cur.(map[string]any)[strings.TrimSuffix(part, "[]")]
		if list && !strings.HasSuffix(path, part) {
			cur = cur.([]any)[0]
		}
	}
	return cur
}

func asJSONMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// TestEveryFieldSentIsDriftCheckedExplainedAndPutBack: each field of
// fieldsDrifted, changed behind the CCM's back on a load balancer and a
// network load balancer (a backend's weight and states as the Console
// changes them, UpdateBackend; the others by an update of their backend set
// or listener), is (a) reported by the next drift pass, with its new value,
// (b) named by explain with the value it has and the one the Service asks,
// and (c) put back by the walk, which leaves nothing drifted.
func TestEveryFieldSentIsDriftCheckedExplainedAndPutBack(t *testing.T) {
	f := newFieldDrift(t)
	for _, sc := range []struct{ svc, body string }{
		{"lb", "lb/backendset"}, {"lb", "lb/listener"}, {"nlb", "nlb/backendset"}, {"nlb", "nlb/listener"},
	} {
		for _, path := range slices.Sorted(maps.Keys(fieldsDrifted[sc.body])) {
			svc := sc.svc
			if strings.HasPrefix(path, "connectionConfiguration.backendTcp") {
				svc = "lb-tcp" // the PROXY protocol is a TCP listener's
			}
			t.Run(sc.body+"/"+path, func(t *testing.T) {
				f.driftOf(t, svc, strings.TrimPrefix(sc.body, sc.svc+"/"), path, fieldsDrifted[sc.body][path])
			})
		}
	}
}

// TestABackendChangedAmongManyIsDriftCheckedExplainedAndPutBack is the test
// above for each backend field on more Nodes than lbcycle.MembersKept: the
// listing keeps each backend set's backends as their digest (ManyBackends,
// memory not in M × N), and a weight or a state changed on one backend of
// hundreds is still seen, explained (the backends read one by one) and put
// back.
func TestABackendChangedAmongManyIsDriftCheckedExplainedAndPutBack(t *testing.T) {
	f := newFieldDriftOn(t, lbcycle.MembersKept+20)
	require.True(t, f.many())
	_, err := json.Marshal(ociapi.BackendSet{Many: &ociapi.ManyBackends{Count: 300}})
	require.Error(t, err, "a backend set listed by its digest is never sent")
	for _, body := range []string{"lb/backendset", "nlb/backendset"} {
		svc, _, _ := strings.Cut(body, "/")
		f.c.lb.Relist()
		lb, found, err := f.c.lb.Listed(t.Context(), f.fresh(t, svc))
		require.NoError(t, err)
		require.True(t, found)
		for name, bs := range lb.Obj.BackendSets {
			require.NotNil(t, bs.Many, "%s's backend set %s is listed one by one", svc, name)
			require.Equal(t, len(f.nodes), bs.Many.Count)
		}
		for _, path := range slices.Sorted(maps.Keys(fieldsDrifted[body])) {
			if strings.HasPrefix(path, "backends[]") {
				t.Run(body+"/"+path, func(t *testing.T) { f.driftOf(t, svc, "backendset", path, fieldsDrifted[body][path]) })
			}
		}
	}
}

// driftOf changes the field at path of the Service's (svc) child of a kind
// (backendset, listener) as ch says, and expects it seen, explained and
// put back.
func (f *fieldDrift) driftOf(t *testing.T, svc, child, path string, ch fieldChange) {
	before := f.listed(t, svc)
	name, was := f.change(t, before, child, path, ch)
	why := ""
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		why = f.drifted(t, svc)
		if (why != "" && !lbcycle.IsReverifying(why)) || time.Now().After(deadline) {
			break
		}
	}
	require.NotEmpty(t, why, "(a) the drift check does not see %s changed", path)
	kind := child
	if strings.HasPrefix(path, "backends[]") {
		kind = "member" // a backend's key: lbcycle.MemberPrefix
	}
	if f.many() {
		// Listed as their digest: the set is told changed, explain names
		// the backend and field.
		require.Contains(t, lbcycle.DriftKinds(why), kind, "(a) counted as a %s's drift: %s", kind, why)
	} else {
		require.Contains(t, why, ch.name+" "+ch.text, "(a) the drift reason names the field and its new value")
		providertest.RepairTold(t, why, kind, ch.name)
	}
	x, err := f.c.ExplainService(t.Context(), "kubernetes", f.fresh(t, svc), f.nodes)
	require.NoError(t, err)
	want := fmt.Sprintf("%s %s, the Service asks %s", ch.name, ch.text, orNone(was))
	var details []string
	for _, d := range x.Drift {
		details = append(details, d.Object+": "+d.Detail)
	}
	require.True(t, slices.ContainsFunc(details, func(d string) bool { return strings.Contains(d, want) }),
		"(b) explain does not say %q: %v", want, details)
	f.ensure(t, svc)
	require.Empty(t, f.settled(t, svc), "(c) drifted after the walk")
	after := f.childJSON(t, f.listed(t, svc), child, name)
	require.Equal(t, f.childJSON(t, before, child, name), after, "(c) the walk put %s back", path)
}

// change makes the change ch at path of the first child of a kind of lb,
// and says its name and the value as it was (as explain says it).
func (f *fieldDrift) change(t *testing.T, lb ociapi.LB, child, path string, ch fieldChange) (name, was string) {
	var obj any
	if child == "backendset" {
		name = slices.Sorted(maps.Keys(lb.BackendSets))[0]
		obj = lb.BackendSets[name]
	} else {
		name = slices.Sorted(maps.Keys(lb.Listeners))[0]
		obj = lb.Listeners[name]
	}
	m := asJSONMap(t, obj)
	old := at(m, path)
	was = fmt.Sprint(old)
	if l, ok := old.([]any); ok {
		was = fmt.Sprint(l...)
	}
	var v any
	require.NoError(t, json.Unmarshal([]byte(ch.value), &v))
	if first, field, ok := strings.Cut(path, "[]."); ok && first == "backends" {
		f.updateBackend(t, lb, name, lb.BackendSets[name].Backends[0], field, v)
		return name, was
	}
	set(m, path, v)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var body any
	if child == "listener" {
		var l ociapi.Listener
		require.NoError(t, json.Unmarshal(b, &l))
		body = unnamedListener(l)
	} else {
		var bs ociapi.BackendSet
		require.NoError(t, json.Unmarshal(b, &bs))
		body = unnamed(bs)
	}
	kind := map[string]string{"backendset": "backendSets", "listener": "listeners"}[child]
	_, err = f.c.api.UpdateChild(t.Context(), lb.Kind, lb.ID, kind, name, body)
	require.NoError(t, err)
	return name, was
}

// set puts v at path of m (a JSON object).
func set(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[strings.TrimSuffix(parts[len(parts)-1], "[]")] = v
}

// updateBackend changes field of backend b of set name as the Console
// does (UpdateBackend): an LB's body has its weight and every state, an
// NLB's the field alone.
func (f *fieldDrift) updateBackend(t *testing.T, lb ociapi.LB, name string, b ociapi.Backend, field string, v any) {
	body := map[string]any{field: v}
	if lb.Kind == ociapi.KindLB {
		body = map[string]any{"weight": b.Weight, "drain": isTrue(b.Drain), "backup": isTrue(b.Backup), "offline": isTrue(b.Offline)}
		body[field] = v
	}
	_, err := f.c.api.(*ociapi.Client).UpdateBackend(t.Context(), lb.Kind, lb.ID, name, b, body)
	require.NoError(t, err)
}

// childJSON is the child name of a kind of lb as JSON.
func (f *fieldDrift) childJSON(t *testing.T, lb ociapi.LB, child, name string) map[string]any {
	if child == "backendset" {
		return asJSONMap(t, lb.BackendSets[name])
	}
	return asJSONMap(t, lb.Listeners[name])
}
