package openstack

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// Drift held to the wire: every field the CCM sends of a listener, a pool,
// a health monitor or a member (the pinned request bodies say which) is
// either changed behind the CCM's back below, and must be seen by the
// drift check, named by explain and put back by the walk, or left out here
// with the reason (docs/openstack.md says the same).

// fieldChanges are, by object kind (as Objects keys it) and wire field, the
// value someone else sets.
var fieldChanges = map[string]map[string]any{
	"listener": {
		"allowed_cidrs": []string{"192.0.2.0/24"}, "connection_limit": 5,
		"timeout_client_data": 11000, "timeout_member_connect": 12000, "timeout_member_data": 13000, "timeout_tcp_inspect": 1400,
		"insert_headers": map[string]string{},
	},
	"pool":    {"lb_algorithm": "LEAST_CONNECTIONS"},
	"monitor": {"delay": 17, "timeout": 4, "max_retries": 7, "max_retries_down": 5, "url_path": "/elsewhere", "http_method": "HEAD", "expected_codes": "204"},
}

// fieldsLeftOut are the fields sent that the drift check does not compare
// field by field, and why.
var fieldsLeftOut = map[string]map[string]string{
	"listener": {
		"loadbalancer_id": "structure: a listener is read from its load balancer",
		"default_pool_id": "structure: a listener without its pool is a pool short (the drift test's pool removed)",
		"name":            "identity: the peer's listeners have names of their own, kept when adopted",
		"tags":            "they say whose a listener is (a shared load balancer's): never rewritten",
		"protocol":        "Octavia cannot change it: another protocol is another listener (the drift test's listener removed)",
		"protocol_port":   "Octavia cannot change it: another port is another listener",
		"default_tls_container_ref": "compared and put back by the walk; not changed here, as it needs a certificate in Barbican " +
			"(a rotated Secret's new reference: tls_test.go)",
	},
	"pool": {
		"listener_id": "structure: a pool is read from its listener",
		"name":        "identity: the peer's pools have names of their own, kept when adopted",
		"protocol":    "Octavia cannot change it: a pool of another protocol is made anew (converge)",
	},
	"monitor": {
		"pool_id": "structure: a monitor is read from its pool",
		"name":    "identity: the peer's monitors have names of their own",
		"type":    "Octavia cannot change it: a monitor of another type is made anew (the drift test's monitor removed)",
	},
	"member": {
		"address":       "identity, which Octavia cannot change: another address is another member (the drift test's member removed)",
		"protocol_port": "identity, which Octavia cannot change",
		"subnet_id":     "Octavia cannot change it",
		"monitor_port": "compared by the walk (convergeMembers) and put back by the hourly one: Octavia lists members only pool by pool, " +
			"so reading them every drift period would cost a call per pool",
	},
}

// sentFields are the wire fields of each kind in the pinned bodies.
func sentFields(t *testing.T) map[string][]string {
	t.Helper()
	kinds := map[string]string{"listener": "listener", "pool": "pool", "monitor": "healthmonitor", "members": "members"}
	named := regexp.MustCompile(`^[a-z-]+/(listener|pool|monitor|members)-\d+$`)
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(pinnedBodies), "\n") {
		name, body, _ := strings.Cut(line, "\t")
		m := named.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		var doc map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(body), &doc), name)
		var objects []map[string]any
		if m[1] == "members" {
			require.NoError(t, json.Unmarshal(doc[kinds[m[1]]], &objects), name)
		} else {
			var o map[string]any
			require.NoError(t, json.Unmarshal(doc[kinds[m[1]]], &o), name)
			objects = append(objects, o)
		}
		kind := strings.TrimSuffix(m[1], "s")
		for _, o := range objects {
			for f := range o {
				if !slices.Contains(out[kind], f) {
					out[kind] = append(out[kind], f)
				}
			}
		}
	}
	return out
}

func TestEveryFieldSentIsDriftCheckedOrLeftOutWithAReason(t *testing.T) {
	sent := sentFields(t)
	require.ElementsMatch(t, []string{"listener", "pool", "monitor", "member"}, slices.Collect(maps.Keys(sent)))
	for kind, fields := range sent {
		for _, f := range fields {
			_, changed := fieldChanges[kind][f]
			_, left := fieldsLeftOut[kind][f]
			assert.True(t, changed != left, "%s %s: sent, so changed behind our back in TestContractEveryFieldSentIsPutBack or left out with a reason (one of the two)", kind, f)
		}
		for f := range fieldChanges[kind] {
			assert.Contains(t, fields, f, "%s %s is changed by the test but no pinned body sends it", kind, f)
		}
	}
}

// fieldsService is a Service whose writes send every field fieldChanges
// changes: source ranges, timeouts, a connection limit, X-Forwarded-For
// (an HTTP listener) and an HTTP health monitor (Local traffic).
func fieldsService(name string) *v1.Service {
	svc := contractService(name, map[string]string{
		"loadbalancer.openstack.org/timeout-client-data":    "5000",
		"loadbalancer.openstack.org/timeout-member-connect": "3000",
		"loadbalancer.openstack.org/timeout-member-data":    "6000",
		"loadbalancer.openstack.org/timeout-tcp-inspect":    "100",
		"loadbalancer.openstack.org/connection-limit":       "100",
		"loadbalancer.openstack.org/x-forwarded-for":        "true",
	})
	svc.Spec.Ports = svc.Spec.Ports[:1]
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 32000
	svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "192.168.0.0/16"}
	return svc
}

// apiOf is, of an Objects kind, Octavia's collection and body key.
var apiOf = map[string][2]string{"listener": {"listeners", "listener"}, "pool": {"pools", "pool"}, "monitor": {"healthmonitors", "healthmonitor"}}

// readField is the object's field as Octavia answers it.
func readField(ctx context.Context, octavia *gophercloud.ServiceClient, kind, id, field string) (string, error) {
	var body map[string]map[string]any
	_, err := octavia.Get(ctx, octavia.ServiceURL("lbaas", apiOf[kind][0], id), &body, nil) //nolint:bodyclose // gophercloud closes it
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(body[apiOf[kind][1]][field])
	return string(b), err
}

// setField sets the object's field behind the CCM's back.
func setField(ctx context.Context, octavia *gophercloud.ServiceClient, kind, id, field string, value any) error {
	body := map[string]map[string]any{apiOf[kind][1]: {field: value}}
	_, err := octavia.Put(ctx, octavia.ServiceURL("lbaas", apiOf[kind][0], id), body, nil, &gophercloud.RequestOpts{OkCodes: []int{200, 202}}) //nolint:bodyclose // gophercloud closes it
	return err
}

// Each field of fieldChanges, changed behind the CCM's back, is seen by the
// next drift pass, named by explain with the value it has and the one the
// Service asks, and put back by the walk that follows (nothing else moves:
// the same address, and the drift check settles).
func TestContractEveryFieldSentIsPutBack(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "\n[LoadBalancer]\ncreate-monitor = true\n")
	svc := fieldsService(contractName("fields"))
	kube := fake.NewClientset(svc)
	c.SetKube(kube)
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201"), contractNode("n2", "", "10.0.0.202")}
	fresh := func() *v1.Service { return providertest.Reread(t, kube, svc) }
	addr := ensure(t, c, fresh(), nodes).Ingress[0].IP
	octavia := tg.octavia(t, c)
	drifted := func() string {
		d, err := c.Drifted(t.Context(), []*v1.Service{fresh()})
		require.NoError(t, err)
		return d[svc.UID]
	}
	settle := func(t *testing.T) string {
		why := drifted()
		for range 3 {
			if why == "" || !lbcycle.IsReverifying(why) {
				break
			}
			ensure(t, c, fresh(), nodes)
			why = drifted()
		}
		return why
	}
	require.Empty(t, settle(t), "settled once built")
	for _, kind := range slices.Sorted(maps.Keys(fieldChanges)) {
		for _, field := range slices.Sorted(maps.Keys(fieldChanges[kind])) {
			t.Run(kind+"/"+field, func(t *testing.T) {
				id := providertest.ID(firstOf(providertest.ObjectsOf(t, c.lb, fresh()), kind))
				require.NotEmpty(t, id, "the drift check lists a %s", kind)
				was, err := readField(t.Context(), octavia, kind, id, field)
				require.NoError(t, err)
				require.NoError(t, poll(time.Minute, func() error { return setField(t.Context(), octavia, kind, id, field, fieldChanges[kind][field]) }))
				var why string
				require.NoError(t, poll(2*time.Minute, func() error {
					if why = drifted(); why == "" {
						return fmt.Errorf("no drift seen")
					}
					return nil
				}), "(a) the drift check sees %s %s changed", kind, field)
				assert.False(t, lbcycle.IsReverifying(why), why)
				providertest.RepairTold(t, why, kind, field)
				e := explainedBy(t, tg, c, fresh(), nodes)
				assert.True(t, slices.ContainsFunc(e.Drift, func(d provider.Difference) bool { return strings.Contains(d.Detail, field) }),
					"(b) explain names %s: %+v", field, e.Drift)
				assert.Equal(t, addr, ensure(t, c, fresh(), nodes).Ingress[0].IP, "(c) the walk keeps the address")
				assert.Empty(t, settle(t), "(c) settled after the walk")
				now, err := readField(t.Context(), octavia, kind, id, field)
				require.NoError(t, err)
				assert.Equal(t, was, now, "(c) %s %s put back", kind, field)
			})
		}
	}
	deleteLB(t, c, fresh())
}

// firstOf is the first key of kind.
func firstOf(keys []string, kind string) string {
	for _, k := range keys {
		if providertest.Kind(k) == kind {
			return k
		}
	}
	return ""
}
