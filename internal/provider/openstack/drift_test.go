package openstack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// outOfBand is what someone else does to an object of each kind the drift
// check lists (Objects): delete it, or change it. The test fails, naming the
// kind, when Objects lists a kind this table lacks.
var outOfBand = map[string]struct {
	remove func(ctx context.Context, octavia *gophercloud.ServiceClient, id, parent string) error
	change func(ctx context.Context, octavia *gophercloud.ServiceClient, id, parent string) error
}{
	"listener": {
		remove: func(ctx context.Context, o *gophercloud.ServiceClient, id, _ string) error {
			return listeners.Delete(ctx, o, id).ExtractErr()
		},
		change: func(ctx context.Context, o *gophercloud.ServiceClient, id, _ string) error {
			cidrs := []string{"192.0.2.0/24"}
			_, err := listeners.Update(ctx, o, id, listeners.UpdateOpts{AllowedCIDRs: &cidrs}).Extract()
			return err
		},
	},
	"pool": {
		remove: func(ctx context.Context, o *gophercloud.ServiceClient, id, _ string) error {
			return pools.Delete(ctx, o, id).ExtractErr()
		},
		change: func(ctx context.Context, o *gophercloud.ServiceClient, id, _ string) error {
			_, err := pools.Update(ctx, o, id, pools.UpdateOpts{LBMethod: pools.LBMethodLeastConnections}).Extract()
			return err
		},
	},
	"member": {
		remove: func(ctx context.Context, o *gophercloud.ServiceClient, id, pool string) error {
			return pools.DeleteMember(ctx, o, pool, id).ExtractErr()
		},
		change: func(ctx context.Context, o *gophercloud.ServiceClient, _, pool string) error {
			// A stray beside ours.
			_, err := pools.CreateMember(ctx, o, pool, pools.CreateMemberOpts{Address: "10.0.0.250", ProtocolPort: 30999}).Extract()
			return err
		},
	},
	"security-group": {
		remove: func(ctx context.Context, _ *gophercloud.ServiceClient, id, _ string) error {
			return groups.Delete(ctx, networkOf(ctx), id).ExtractErr()
		},
		change: func(ctx context.Context, _ *gophercloud.ServiceClient, id, _ string) error {
			// A stray rule in it.
			_, err := rules.Create(ctx, networkOf(ctx), rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4,
				SecGroupID: id, Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "198.51.100.0/24"}).Extract()
			return err
		},
	},
	"security-group-rule": {
		remove: func(ctx context.Context, _ *gophercloud.ServiceClient, id, _ string) error {
			return rules.Delete(ctx, networkOf(ctx), id).ExtractErr()
		},
		change: func(ctx context.Context, _ *gophercloud.ServiceClient, id, _ string) error {
			// Rules cannot be changed in place: one replaced by a wider one.
			r, err := rules.Get(ctx, networkOf(ctx), id).Extract()
			if err != nil {
				return err
			}
			if err := rules.Delete(ctx, networkOf(ctx), id).ExtractErr(); err != nil {
				return err
			}
			_, err = rules.Create(ctx, networkOf(ctx), rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.RuleEtherType(r.EtherType),
				SecGroupID: r.SecGroupID, Protocol: rules.RuleProtocol(r.Protocol), PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax,
				RemoteIPPrefix: "0.0.0.0/0"}).Extract()
			return err
		},
	},
	"monitor": {
		remove: func(ctx context.Context, o *gophercloud.ServiceClient, id, _ string) error {
			return monitors.Delete(ctx, o, id).ExtractErr()
		},
		change: func(ctx context.Context, o *gophercloud.ServiceClient, id, _ string) error {
			// Changed in place: not visible in the listings (Octavia keeps
			// its id); the hourly walk puts it right. Deleting it is seen.
			return monitors.Delete(ctx, o, id).ExtractErr()
		},
	},
}

type networkKey struct{}

// networkOf is the Neutron client the test put in ctx.
func networkOf(ctx context.Context) *gophercloud.ServiceClient {
	return ctx.Value(networkKey{}).(*gophercloud.ServiceClient)
}

// object is a key of Objects: its kind, id and parent (a member's pool).
type object struct{ kind, id, parent, key string }

func parseObject(key string) object {
	kind, rest, _ := strings.Cut(key, "/")
	id, rest, _ := strings.Cut(rest, " ")
	_, parent, _ := strings.Cut(rest, "of pool ")
	return object{kind, id, parent, key}
}

// Every kind of object a Service's load balancer owns, deleted or changed
// behind the CCM's back, is seen by the next drift pass and repaired by the
// walk it causes: the same objects of each kind again, the same address,
// nothing of the old ones left over; the walk's result is then the new
// normal. The kinds come from the drift check's own listing.
func TestContractEveryObjectChangedBehindOurBackIsRepaired(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "\n[LoadBalancer]\ncreate-monitor = true\nmanage-security-groups = true\n")
	svc := contractService(contractName("drift"), nil)
	kube := fake.NewClientset(svc)
	c.SetKube(kube)
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201"), contractNode("n2", "", "10.0.0.202")}
	fresh := func() *v1.Service {
		got, err := kube.CoreV1().Services(svc.Namespace).Get(t.Context(), svc.Name, metav1.GetOptions{})
		require.NoError(t, err)
		return got
	}
	converge := func() string {
		t.Helper()
		st := ensure(t, c, fresh(), nodes)
		return st.Ingress[0].IP
	}
	drift := func() string {
		t.Helper()
		d, err := c.Drifted(t.Context(), []*v1.Service{fresh()})
		require.NoError(t, err)
		return d[svc.UID]
	}
	inventory := func() (map[string]int, []object) {
		t.Helper()
		lb, found, err := (steps{c}).Listed(t.Context(), fresh())
		require.NoError(t, err)
		require.True(t, found)
		keys, err := (steps{c}).Objects(t.Context(), fresh(), lb)
		require.NoError(t, err)
		counts := map[string]int{}
		var objs []object
		for _, k := range keys {
			o := parseObject(k)
			counts[o.kind]++
			objs = append(objs, o)
		}
		return counts, objs
	}
	addr := converge()
	assert.Empty(t, drift(), "walked by this process: remembered")
	restarted := tg.cloud(t, "\n[LoadBalancer]\ncreate-monitor = true\nmanage-security-groups = true\n")
	restarted.Cluster.Set(c.Cluster.Get())
	restarted.SetKube(kube)
	c = restarted
	assert.Contains(t, drift(), "has not been walked since this process started", "a restart re-verifies")
	converge()
	require.Empty(t, drift(), "the walk's load balancer is remembered")
	want, objs := inventory()
	for kind := range want {
		require.Contains(t, outOfBand, kind, "Objects lists %ss: add what someone does to one to outOfBand", kind)
	}
	require.Subset(t, slices.Collect(maps.Keys(want)), []string{"listener", "pool", "member", "monitor", "security-group", "security-group-rule"})
	octavia := tg.octavia(t, c)
	for _, kind := range slices.Sorted(maps.Keys(want)) {
		for _, how := range []string{"remove", "change"} {
			t.Run(kind+"/"+how, func(t *testing.T) {
				_, objs = inventory()
				// One of ours (not a group's default egress rule, which is
				// Neutron's).
				i := slices.IndexFunc(objs, func(o object) bool { return o.kind == kind && !strings.Contains(o.key, " egress ") })
				o := objs[i]
				act := outOfBand[kind].remove
				if how == "change" {
					act = outOfBand[kind].change
				}
				ctx := context.WithValue(t.Context(), networkKey{}, tg.network)
				require.NoError(t, poll(time.Minute, func() error { return act(ctx, octavia, o.id, o.parent) }))
				var why string
				require.NoError(t, poll(2*time.Minute, func() error {
					if why = drift(); why == "" {
						return fmt.Errorf("no drift seen yet")
					}
					return nil
				}))
				t.Logf("drift: %s", why)
				assert.Equal(t, addr, converge(), "the address stays")
				assert.Empty(t, drift(), "the repair is remembered")
				assert.Empty(t, drift(), "and stays")
				got, _ := inventory()
				assert.Equal(t, want, got, "as many objects of each kind as before: repaired, nothing left over")
			})
		}
	}
	deleteLB(t, c, fresh())
}
