package lbcycle

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// inventoried is a cloud whose listings show objects of its load balancer.
type inventoried struct {
	script
	objects []string
	later   bool // Objects cannot say them this pass
}

func (i *inventoried) Objects(context.Context, *v1.Service, LB[string]) ([]string, error) {
	if i.later {
		return nil, fmt.Errorf("reading the rules of nsg-1: %w", ErrLater)
	}
	return i.objects, nil
}

// inventoryCycle is a cycle of one converged Service whose load balancer
// has objects, and its drift check of the Service.
func inventoryCycle(t *testing.T, objects []string) (*v1.Service, *inventoried, *Cycle[string, string], func() string) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", UID: types.UID("u1")}}
	lb := &LB[string]{ID: "lb1", State: Ready}
	cloud := &inventoried{script: script{spec: fp, listed: lb, found: lb, publish: true}, objects: objects}
	c := New[string, string](cloud, memRecords{svc.UID: {ID: "lb1", Fingerprint: fp}}, Options{})
	return svc, cloud, c, func() string {
		t.Helper()
		d, err := c.Drifted(t.Context(), []*v1.Service{svc})
		require.NoError(t, err)
		return d[svc.UID]
	}
}

// Every object of a load balancer is checked from the listings: after a
// restart each load balancer is walked once; later an object gone, changed
// or added is drift, which a walk repairs; what the walk leaves (a stray
// that is not ours) is the new normal, not a drift forever.
func TestEveryObjectOfALoadBalancerIsCheckedAndARestartReverifies(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", UID: types.UID("u1")}}
	lb := &LB[string]{ID: "lb1", State: Ready}
	cloud := &inventoried{script: script{spec: fp, listed: lb, found: lb, publish: true},
		objects: []string{"listener/l1/TCP/80", "pool/p1", "member/p1/m1", "member/p1/m2"}}
	records := memRecords{svc.UID: {ID: "lb1", Fingerprint: fp}}
	c := New[string, string](cloud, records, Options{})
	drift := func() string {
		t.Helper()
		d, err := c.Drifted(t.Context(), []*v1.Service{svc})
		require.NoError(t, err)
		return d[svc.UID]
	}
	walk := func() {
		t.Helper()
		cloud.ran = nil
		_, err := c.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nil)
		require.NoError(t, err)
		require.Contains(t, cloud.ran, "converge", "a drifted Service is walked")
	}

	// settled: after a walk that changed what the pass before saw, the next
	// pass asks for a quiet walk, and the one after remembers.
	settled := func(msg string) {
		t.Helper()
		walk()
		assert.True(t, IsReverifying(drift()), "%s: checked by a quiet walk", msg)
		walk()
		assert.Empty(t, drift(), msg)
	}
	assert.True(t, IsReverifying(drift()), "a restart re-verifies")
	walk()
	assert.Empty(t, drift(), "the walk changed nothing: remembered at once")

	cloud.objects = []string{"listener/l1/TCP/80", "pool/p1", "member/p1/m1"}
	assert.Equal(t, "gone: member/p1/m2", drift(), "a member deleted out of band")
	cloud.objects = []string{"listener/l1/TCP/80", "pool/p1", "member/p1/m1", "member/p1/m3"}
	settled("the walk's repair is the new normal")

	cloud.objects = []string{"listener/l1/TCP/81", "pool/p1", "member/p1/m1", "member/p1/m3", "pool/stray"}
	assert.Equal(t, "replaced listener/l1/TCP/80 by listener/l1/TCP/81; new: pool/stray", drift())
	settled("a stray the walk leaves (not ours) is not drift forever")

	// A walk that changes nothing (the hourly full walk): remembered at once.
	c.walkedInventory("lb1")
	assert.Empty(t, drift(), "the same as before the walk")

	require.NoError(t, c.EnsureLoadBalancerDeleted(t.Context(), "kubernetes", svc))
	assert.Empty(t, c.inventory, "nothing remembered of a deleted load balancer")
}

// A load balancer whose objects cannot be said this pass (the cloud's reads
// of the pass are spent) gets no verdict, and keeps what its walk left to be
// judged by the pass that can say them.
func TestObjectsNotReadYetWaitForALaterPass(t *testing.T) {
	svc, cloud, c, drift := inventoryCycle(t, []string{"listener/l1/TCP/80", "pool/p1"})
	require.True(t, IsReverifying(drift()), "a restart re-verifies")
	_, err := c.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nil)
	require.NoError(t, err)
	cloud.later = true
	assert.Empty(t, drift(), "no verdict")
	assert.Empty(t, drift(), "nor on the next pass")
	cloud.later = false
	assert.Empty(t, drift(), "what the walk left, seen by the first pass that can")
	cloud.objects = []string{"listener/l1/TCP/80"}
	assert.Equal(t, "gone: pool/p1", drift())
}

// A quiet walk (after a start, or checking what a walk left) that changes
// objects made a repair no drift pass told of: the pass after it says what
// changed, for the repair's Event.
func TestWhatAQuietWalkRepairedIsTold(t *testing.T) {
	before := []string{"listener/l1/TCP/80", "pool/p1"} // a member deleted while no CCM ran
	svc, cloud, c, drift := inventoryCycle(t, before)
	why := drift()
	require.True(t, IsReverifying(why))
	_, repaired := QuietRepair(why)
	assert.False(t, repaired, "a re-verification is no repair")
	_, err := c.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nil)
	require.NoError(t, err)
	cloud.objects = append(slices.Clone(before), "member/p1/m1") // the quiet walk put it back

	why = drift()
	what, repaired := QuietRepair(why)
	require.True(t, repaired, "told: %q", why)
	assert.Equal(t, "new: member/p1/m1", what)
	assert.True(t, IsPostWalkCheck(why), "and checked again, quietly")
	_, err = c.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nil)
	require.NoError(t, err)
	assert.Empty(t, drift(), "the check changed nothing: remembered")
}

// An object changed behind the walk's back before the first pass after it
// (another cluster's CCM removing a rule just after ours was added) is not
// remembered as normal: the pass asks for a quiet walk, which repairs it,
// and what the next pass sees must match before it is remembered.
func TestWhatChangesJustAfterAWalkIsRepairedNotRemembered(t *testing.T) {
	all := []string{"listener/l1/TCP/80", "rule/80", "rule/30080", "rule/10256"}
	svc, cloud, c, drift := inventoryCycle(t, all)
	walks := 0
	walk := func(leaves []string) {
		t.Helper()
		_, err := c.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nil)
		require.NoError(t, err)
		walks++
		cloud.objects = leaves
	}
	walk(all)
	cloud.objects = all[:2] // two rules removed before the first pass
	assert.True(t, IsReverifying(drift()), "not remembered: checked by a quiet walk")
	walk(all) // which puts them back
	assert.True(t, IsReverifying(drift()), "what the check left differs from what the pass saw: checked again")
	walk(all)
	assert.Empty(t, drift(), "the same twice: remembered")
	cloud.objects = all[:2]
	assert.Equal(t, "gone: rule/10256, rule/30080", drift(), "and any change later is drift")
	assert.Equal(t, 3, walks)

	// Objects that change at every pass are remembered after a few checks.
	walk(all)
	for i := range postWalkChecks {
		cloud.objects = all[:1+i%2]
		assert.True(t, IsReverifying(drift()))
		walk(cloud.objects)
	}
	assert.Empty(t, drift(), "remembered as they are after %d checks", postWalkChecks)
}

// A restart with many load balancers re-verifies at most ReverifyPerPass
// of them a pass: its reads are spread.
func TestARestartReverifiesAFewLoadBalancersAPass(t *testing.T) {
	records := memRecords{}
	listing := map[types.UID]*LB[string]{}
	var svcs []*v1.Service
	for i := range ReverifyPerPass + 50 {
		s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), Namespace: "default", UID: types.UID(fmt.Sprint(i))}}
		svcs = append(svcs, s)
		id := fmt.Sprint("lb", i)
		records[s.UID] = Record{ID: id, Fingerprint: fp}
		listing[s.UID] = &LB[string]{ID: id, State: Ready}
	}
	cloud := &inventoriedListing{listingCloud: listingCloud{listing: listing}}
	c := New[string, string](cloud, records, Options{})
	drifted, err := c.Drifted(t.Context(), svcs)
	require.NoError(t, err)
	assert.Len(t, drifted, ReverifyPerPass)
	for _, why := range drifted {
		assert.True(t, IsReverifying(why), why)
	}
}

type inventoriedListing struct{ listingCloud }

func (i *inventoriedListing) Drift(context.Context, *v1.Service, Record, LB[string]) (string, error) {
	return "", nil
}

func (i *inventoriedListing) Objects(context.Context, *v1.Service, LB[string]) ([]string, error) {
	return []string{"listener/1"}, nil
}

// The members a Node change puts in are the cycle's own doing: not drift.
func TestMembersUpdatedAloneAreNotDrift(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", UID: types.UID("u1")}}
	lb := &LB[string]{ID: "lb1", State: Ready}
	cloud := &inventoried{script: script{spec: fp, listed: lb, found: lb, publish: true, memberOK: true},
		objects: []string{"pool/p1", "member/m1"}}
	records := memRecords{svc.UID: {ID: "lb1", Fingerprint: Fingerprint{Config: fp.Config, Members: "old"}}}
	c := New[string, string](cloud, records, Options{})
	c.inventory["lb1"] = []string{"member/m0", "pool/p1"}
	require.NoError(t, c.UpdateLoadBalancer(t.Context(), "kubernetes", svc, nil))
	require.Contains(t, cloud.ran, "members")
	d, err := c.Drifted(t.Context(), []*v1.Service{svc})
	require.NoError(t, err)
	assert.Empty(t, d)

	// A listener changed behind our back while the Nodes changed is
	// drift all the same: only the members are adopted.
	cloud.objects = []string{"listener/l1 from 0.0.0.0/0", "member/m2", "pool/p1"}
	c.inventory["lb1"] = []string{"listener/l1 from 10.0.0.0/8", "member/m1", "pool/p1"}
	records[svc.UID] = Record{ID: "lb1", Fingerprint: Fingerprint{Config: fp.Config, Members: "older"}}
	require.NoError(t, c.UpdateLoadBalancer(t.Context(), "kubernetes", svc, nil))
	d, err = c.Drifted(t.Context(), []*v1.Service{svc})
	require.NoError(t, err)
	assert.Equal(t, "changed listener/l1: from 0.0.0.0/0 (was 10.0.0.0/8)", d[svc.UID])

	// So is a member that stays, changed (a backend's weight): only the
	// members added and removed are the Node change's.
	cloud.objects = []string{"member/10.0.0.1:30080 weight 7 of TCP-80", "member/10.0.0.3:30080 weight 1 of TCP-80"}
	c.inventory["lb1"] = []string{"member/10.0.0.1:30080 weight 1 of TCP-80", "member/10.0.0.2:30080 weight 1 of TCP-80"}
	records[svc.UID] = Record{ID: "lb1", Fingerprint: Fingerprint{Config: fp.Config, Members: "oldest"}}
	require.NoError(t, c.UpdateLoadBalancer(t.Context(), "kubernetes", svc, nil))
	d, err = c.Drifted(t.Context(), []*v1.Service{svc})
	require.NoError(t, err)
	assert.Equal(t, "changed member/10.0.0.1:30080 of TCP-80: weight 7 (was 1)", d[svc.UID])
}

func TestTwoObjectsAlikeAreTwo(t *testing.T) {
	assert.Equal(t, "gone: rule/a", describeChange([]string{"rule/a", "rule/a"}, []string{"rule/a"}))
	assert.Empty(t, describeChange([]string{"rule/a", "rule/b"}, []string{"rule/b", "rule/a"}))
}

// A key changed in place is said field by field, with the value it had;
// the kinds of a reason are those of its keys.
func TestAChangeIsSaidFieldByField(t *testing.T) {
	for _, tc := range []struct{ was, now, want string }{
		{"monitor/m1 HTTP delay=5 timeout=3 max_retries=1 of pool p1", "monitor/m1 HTTP delay=17 timeout=3 max_retries=7 of pool p1",
			"changed monitor/m1 of pool p1: delay 17 (was 5), max_retries 7 (was 1)"},
		{"listener/TCP-80 protocol TCP, port 80, idle timeout 300", "listener/TCP-80 protocol TCP, port 80, idle timeout 30",
			"changed listener/TCP-80: idle timeout 30 (was 300)"},
		{"backendset/TCP-80 policy IP_HASH, health check path /healthz", "backendset/TCP-80 policy IP_HASH, health check path none",
			"changed backendset/TCP-80: health check path none (was /healthz)"},
		{"rule/r1 tcp 192.0.2.1:80->30080 roundrobin from 0.0.0.0/0", "rule/r1 tcp 192.0.2.1:80->30080 leastconn from 0.0.0.0/0",
			"changed rule/r1: leastconn (was roundrobin)"},
		{"acl/a1 allow 80", "acl/a1 deny 80 81", "changed acl/a1: deny 80 81 (was allow 80)"},
	} {
		got := describeChange([]string{tc.was}, []string{tc.now})
		assert.Equal(t, tc.want, got)
	}
	assert.Equal(t, "changed listener/l1: x 2 (was 1); replaced rule/a by rule/b: 22 (was 80)",
		describeChange([]string{"rule/a 80", "listener/l1 x=1"}, []string{"rule/b 22", "listener/l1 x=2"}), "each object apart")
	for why, want := range map[string][]string{
		"changed monitor/m1 of pool p1: url_path /b (was /a/c); gone: member/10.0.0.1:80, member/x": {"member", "monitor"},
		"load balancer lb1 is in ERROR":                                                                             {"load-balancer"},
		"TLS Secret default/web-tls holds a new certificate":                                                        {"certificate"},
		"the TLS Secret prod-payments/web-tls was renewed":                                                          {"certificate"},
		"gone: security-group-rule/r1 ingress IPv6 tcp 80-80 from 2001:db8::beef/128":                               {"security-group-rule"},
		"changed listener/l1: allowed_cidrs fd00::dead/128 (was 10.0.0.0/8)":                                        {"listener"},
		"the rules are on 10.0.0.1, not on 10.0.0.2; gone: firewall-rule/f1 protocol=tcp cidrlist=2001:db8::ab/128": {"firewall-rule"},
	} {
		assert.Equal(t, want, DriftKinds(why), why)
	}
}

// Beyond MembersKept a pool's members are remembered as one key: memory
// flat in the members, and the same answers — a Node change adopted, a
// member that stays changed in place drift, a member gone drift.
func TestManyMembersAreRememberedAsOneKeyAndJudgedTheSame(t *testing.T) {
	members := func(n int, weight func(i int) int) []string {
		out := []string{"pool/p1"}
		for i := range n {
			out = append(out, fmt.Sprintf("member/10.0.%d.%d:30080 weight %d of TCP-80", i/250, i%250, weight(i)))
		}
		return out
	}
	one := func(int) int { return 1 }
	svc, cloud, c, drift := inventoryCycle(t, members(1000, one))
	cloud.memberOK = true
	records, ok := c.records.(memRecords)
	require.True(t, ok)
	require.True(t, IsReverifying(drift()))
	_, err := c.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nil)
	require.NoError(t, err)
	require.Empty(t, drift())
	assert.Len(t, c.inventory["lb1"], 2, "the pool and one key for its 1,000 members")

	cloud.objects = members(1001, one) // a Node joined: the cycle's own update
	records[svc.UID] = Record{ID: "lb1", Fingerprint: Fingerprint{Config: fp.Config, Members: "old"}}
	require.NoError(t, c.UpdateLoadBalancer(t.Context(), "kubernetes", svc, nil))
	assert.Empty(t, drift(), "members added by a Node change are adopted")

	cloud.objects = members(1001, func(i int) int { return 1 + btoi(i == 7) })
	assert.Contains(t, drift(), "changed member/set-", "a member's weight changed behind our back")

	cloud.objects = members(1001, one)
	_, err = c.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nil)
	require.NoError(t, err)
	drift() // the quiet check after the walk
	require.Empty(t, drift())
	cloud.objects = members(1000, one)
	assert.NotEmpty(t, drift(), "a member deleted behind our back")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
