package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/cloud-provider/api"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// Every kind of object a Service's load balancer owns (listeners, backend
// sets, backends, the security rules it relies on), removed or changed
// behind the CCM's back, is repaired within a drift period (providertest),
// for each kind of load balancer (an nlb's rules: mode None, its default).
func TestEveryObjectChangedBehindOurBackIsRepaired(t *testing.T) {
	for _, kind := range []struct {
		name, kind  string
		annotations map[string]string
		kinds       []string
	}{
		{"security lists", ociapi.KindLB, nil, []string{"listener", "backendset", "member", "security-rule"}},
		{"NSG mode", ociapi.KindLB, map[string]string{"oci.oraclecloud.com/security-rule-management-mode": "NSG"},
			[]string{"listener", "backendset", "member", "nsg-rule"}},
		{"network load balancer", ociapi.KindNLB, map[string]string{"oci.oraclecloud.com/load-balancer-type": "nlb"}, []string{"listener", "backendset", "member"}},
	} {
		t.Run(kind.name, func(t *testing.T) { driftOf(t, kind.kind, kind.annotations, kind.kinds) })
	}
}

func driftOf(t *testing.T, kind string, annotations map[string]string, kinds []string) {
	e := startEmulator(t)
	const cluster = "drift-cluster"
	newCloud := func() *Cloud { return clusterCloud(t, e, cluster) }
	c := newCloud()
	svc := lbSvc("drift", "uid-drift", 30180)
	svc.Annotations = maps.Clone(annotations)
	if annotations["oci.oraclecloud.com/security-rule-management-mode"] == "NSG" {
		backendNSG(t, e, c, svc)
	}
	kube := fake.NewClientset(svc)
	c.SetKube(kube)
	var nodes []*v1.Node
	for _, name := range []string{"drift-a", "drift-b"} {
		nodes = append(nodes, machineNode(e, name))
	}
	fresh := func(t *testing.T) *v1.Service { return providertest.Reread(t, kube, svc) }
	listed := func(ctx context.Context) (ociapi.LB, error) {
		c.lb.Relist()
		lb, found, err := c.lb.Listed(ctx, fresh(t))
		if err == nil && !found {
			err = errors.New("the load balancer is not listed")
		}
		return lb.Obj, err
	}
	providertest.RunDrift(t, providertest.Drift{
		Ensure: func(t *testing.T) string {
			var st *v1.LoadBalancerStatus
			require.NoError(t, poll(time.Minute, func() error {
				var err error
				st, err = c.EnsureLoadBalancer(t.Context(), "kubernetes", fresh(t), nodes)
				return err
			}))
			return st.Ingress[0].IP
		},
		Drifted: func(t *testing.T) string {
			d, err := c.Drifted(t.Context(), []*v1.Service{fresh(t)})
			require.NoError(t, err)
			return d[svc.UID]
		},
		Objects: func(t *testing.T) []string { return providertest.ObjectsOf(t, c.lb, fresh(t)) },
		Restart: func(*testing.T) {
			c = newCloud()
			c.SetKube(kube)
		},
		OutOfBand: ociOutOfBand(func() *Cloud { return c }, kind, listed),
		Kinds:     kinds,
	})
}

// poll calls f until it is not a RetryError (bounded).
func poll(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		var re *api.RetryError
		if !errors.As(err, &re) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ociOutOfBand is what someone else does to an object of each kind.
func ociOutOfBand(cloud func() *Cloud, kind string, listed func(context.Context) (ociapi.LB, error)) map[string][2]func(context.Context, string) error {
	h := hand{cloud: cloud, kind: kind, listed: listed}
	policy := map[string]string{ociapi.KindLB: "IP_HASH", ociapi.KindNLB: "TWO_TUPLE"}[kind]
	id := providertest.ID
	return map[string][2]func(context.Context, string) error{
		"listener": {
			func(ctx context.Context, k string) error { return h.remove(ctx, "listeners", id(k)) },
			h.moveListener,
		},
		"backendset": {
			h.removeBackendSet,
			func(ctx context.Context, k string) error {
				return h.backendSet(ctx, id(k), func(bs *ociapi.BackendSet) { bs.Policy = policy })
			},
		},
		"nsg-rule": {
			func(ctx context.Context, k string) error { return h.nsgRule(ctx, k, nil) },
			func(ctx context.Context, k string) error {
				// Its peer and ports are what it is (another is another
				// rule: a removal, above); isStateless is the field the
				// drift key holds beside them.
				return h.nsgRule(ctx, k, func(r *ociapi.NSGRule) { r.IsStateless = true })
			},
		},
		"member": {
			func(ctx context.Context, k string) error {
				_, set, _ := strings.Cut(k, " of ")
				return h.backendSet(ctx, set, func(bs *ociapi.BackendSet) {
					bs.Backends = slices.DeleteFunc(bs.Backends, func(b ociapi.Backend) bool { return fmt.Sprintf("%s:%d", b.IPAddress, b.Port) == id(k) })
				})
			},
			func(ctx context.Context, k string) error { // a stray beside ours
				_, set, _ := strings.Cut(k, " of ")
				return h.backendSet(ctx, set, func(bs *ociapi.BackendSet) {
					bs.Backends = append(bs.Backends, ociapi.Backend{IPAddress: "10.0.0.250", Port: 30999, Weight: 1})
				})
			},
		},
		"security-rule": {
			func(ctx context.Context, k string) error { return editRule(ctx, cloud(), k, nil) },
			func(ctx context.Context, k string) error {
				return editRule(ctx, cloud(), k, func(r *ociapi.SecurityRule) { r.IsStateless = true })
			},
		},
	}
}

// hand is someone else changing a load balancer of a kind through the API,
// as the drift tests do behind the CCM's back.
type hand struct {
	cloud  func() *Cloud
	kind   string
	listed func(context.Context) (ociapi.LB, error)
}

// update changes the child name of the load balancer (what: backendSets or
// listeners) to body.
func (h hand) update(ctx context.Context, what, name string, body any) error {
	lb, err := h.listed(ctx)
	if err != nil {
		return err
	}
	_, err = h.cloud().api.UpdateChild(ctx, h.kind, lb.ID, what, name, body)
	return err
}

// remove deletes the child name of the load balancer.
func (h hand) remove(ctx context.Context, what, name string) error {
	lb, err := h.listed(ctx)
	if err != nil {
		return err
	}
	_, err = h.cloud().api.DeleteChild(ctx, h.kind, lb.ID, what, name)
	return err
}

// moveListener puts the listener of key k on another port.
func (h hand) moveListener(ctx context.Context, k string) error {
	lb, err := h.listed(ctx)
	if err != nil {
		return err
	}
	l := lb.Listeners[providertest.ID(k)]
	l.Port, l.Name = l.Port+1000, ""
	return h.update(ctx, "listeners", providertest.ID(k), l)
}

// removeBackendSet deletes the backend set of key k, its listener first:
// OCI keeps a set in use.
func (h hand) removeBackendSet(ctx context.Context, k string) error {
	lb, err := h.listed(ctx)
	if err != nil {
		return err
	}
	for name, l := range lb.Listeners {
		if l.DefaultBackendSetName == providertest.ID(k) {
			if err := h.remove(ctx, "listeners", name); err != nil {
				return err
			}
		}
	}
	return h.remove(ctx, "backendSets", providertest.ID(k))
}

// backendSet changes the backend set name as change says.
func (h hand) backendSet(ctx context.Context, name string, change func(*ociapi.BackendSet)) error {
	lb, err := h.listed(ctx)
	if err != nil {
		return err
	}
	bs := lb.BackendSets[name]
	change(&bs)
	bs.Name = ""
	return h.update(ctx, "backendSets", name, bs)
}

// nsgRule removes the NSG rule of key k (change nil), or replaces it with
// one changed as change says.
func (h hand) nsgRule(ctx context.Context, k string, change func(*ociapi.NSGRule)) error {
	group := strings.Fields(k)[1]
	rules, err := h.cloud().api.NSGRules(ctx, group)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if r.ID != providertest.ID(k) {
			continue
		}
		if err := h.cloud().api.RemoveNSGRules(ctx, group, []string{r.ID}); err != nil || change == nil {
			return err
		}
		change(&r)
		r.ID = ""
		return h.cloud().api.AddNSGRules(ctx, group, []ociapi.NSGRule{r})
	}
	return fmt.Errorf("no rule %s", k)
}

// editRule removes the rule whose Objects key is key from its security
// list (change nil), or changes it.
func editRule(ctx context.Context, c *Cloud, key string, change func(*ociapi.SecurityRule)) error {
	_, list, _ := strings.Cut(key, " of ")
	dir, _, _ := strings.Cut(providertest.ID(key), ":")
	sl, err := c.api.SecurityList(ctx, list)
	if err != nil {
		return err
	}
	rules := &sl.Ingress
	if dir == "egress" {
		rules = &sl.Egress
	}
	for i, raw := range *rules {
		var r ociapi.SecurityRule
		if json.Unmarshal(raw, &r) != nil || ruleKey(r, list, dir) != key {
			continue
		}
		if change == nil {
			*rules = slices.Delete(*rules, i, i+1)
		} else {
			change(&r)
			(*rules)[i], err = json.Marshal(r)
			if err != nil {
				return err
			}
		}
		_, err = c.api.UpdateSecurityList(ctx, sl)
		return err
	}
	return fmt.Errorf("no rule %s", key)
}

// Finding 5 of issue 34: two clusters on one security list, the other on
// the peer. This cluster's Service, on a load balancer Overcast built, adds
// its own marked rule beside the peer's unmarked one for the same port (the
// peer's may go without it). The other cluster's Service goes, and its peer
// removes every rule opening the port whatever its description (its Delete
// keeps only rules of ports still wanted: load_balancer_security_lists.go's
// getLoadBalancerIngressRules), ours too: the next drift pass sees the rule
// gone and the walk puts it back, so the port is closed for at most a drift
// period, not until a Node joins.
func TestARuleAnotherClustersPeerRemovesIsPutBackWithinTheDriftPeriod(t *testing.T) {
	e := startEmulator(t)
	f := e.Fixture()
	c := clusterCloud(t, e, "cluster-b")
	svc := lbSvc("web", "uid-web", 30280)
	kube := fake.NewClientset(svc)
	c.SetKube(kube)
	nodes := []*v1.Node{machineNode(e, "b-node")}
	fresh := func() *v1.Service { return providertest.Reread(t, kube, svc) }
	// The other cluster's peer opened port 80 to everyone, unmarked.
	peer := tcpRule(true, "0.0.0.0/0", 80, "")
	addIngressRule(t, c, f.SecurityListID, peer)

	ensure := func() {
		require.NoError(t, poll(time.Minute, func() error {
			_, err := c.EnsureLoadBalancer(t.Context(), "kubernetes", fresh(), nodes)
			return err
		}))
	}
	drifted := func() string {
		d, err := c.Drifted(t.Context(), []*v1.Service{fresh()})
		require.NoError(t, err)
		return d[svc.UID]
	}
	settled := func() string { // the post-walk check's quiet walks
		why := drifted()
		for range 2 {
			if !lbcycle.IsReverifying(why) {
				break
			}
			ensure()
			why = drifted()
		}
		return why
	}
	opens80 := func() (marked, unmarked int) { return rulesDoing(t, e, f.SecurityListID, peer) }
	ensure()
	require.Empty(t, settled())
	m, u := opens80()
	require.Equal(t, [2]int{1, 1}, [2]int{m, u}, "a rule of its own beside the peer's")

	// The other cluster's Service goes; its peer removes the rules opening
	// its port, both.
	for range 2 {
		require.NoError(t, editRule(t.Context(), c, ruleKey(peer, f.SecurityListID, "ingress"), nil))
	}
	require.Equal(t, [2]int{0, 0}, func() [2]int { m, u := opens80(); return [2]int{m, u} }())
	why := drifted()
	require.Contains(t, why, "security-rule/", "the next drift pass sees the port closed")
	ensure()
	m, u = opens80()
	assert.Equal(t, [2]int{1, 0}, [2]int{m, u}, "the walk puts back a rule of its own, marked")
	assert.Empty(t, settled())
}

// addIngressRule adds r to the ingress rules of security list list.
func addIngressRule(t *testing.T, c *Cloud, list string, r ociapi.SecurityRule) {
	sl, err := c.api.SecurityList(t.Context(), list)
	require.NoError(t, err)
	raw, err := json.Marshal(r)
	require.NoError(t, err)
	sl.Ingress = append(sl.Ingress, raw)
	_, err = c.api.UpdateSecurityList(t.Context(), sl)
	require.NoError(t, err)
}

// rulesDoing counts the ingress rules of security list list that do what
// want does: those with the CCM's mark, and the others.
func rulesDoing(t *testing.T, e *emulator.Emulator, list string, want ociapi.SecurityRule) (marked, unmarked int) {
	in, _ := e.SecurityListRules(list)
	for _, s := range in {
		var r ociapi.SecurityRule
		require.NoError(t, json.Unmarshal([]byte(s), &r))
		if does(r, want) {
			if strings.HasPrefix(r.Description, markPrefix) {
				marked++
			} else {
				unmarked++
			}
		}
	}
	return marked, unmarked
}

// backendNSG makes an NSG in e's VCN and names it on svc as its backends'.
func backendNSG(t *testing.T, e *emulator.Emulator, c *Cloud, svc *v1.Service) {
	t.Helper()
	f := e.Fixture()
	back, err := c.api.CreateNSG(t.Context(), f.CompartmentID, f.VCNID, "nodes", nil, "")
	require.NoError(t, err)
	svc.Annotations["oci.oraclecloud.com/oci-backend-network-security-group"] = back.ID
}
