package openstack

import (
	"context"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// parentPool is the pool a member's or monitor's key names.
func parentPool(key string) string { _, p, _ := strings.Cut(key, "of pool "); return p }

// outOfBand is what someone else does to an object of each kind the drift
// check lists: remove it, change it (or add a stray beside it).
func outOfBand(octavia, network *gophercloud.ServiceClient) map[string][2]func(context.Context, string) error {
	id := providertest.ID
	return map[string][2]func(context.Context, string) error{
		"listener": {
			func(ctx context.Context, k string) error { return listeners.Delete(ctx, octavia, id(k)).ExtractErr() },
			func(ctx context.Context, k string) error {
				cidrs := []string{"192.0.2.0/24"}
				_, err := listeners.Update(ctx, octavia, id(k), listeners.UpdateOpts{AllowedCIDRs: &cidrs}).Extract()
				return err
			},
		},
		"pool": {
			func(ctx context.Context, k string) error { return pools.Delete(ctx, octavia, id(k)).ExtractErr() },
			func(ctx context.Context, k string) error {
				_, err := pools.Update(ctx, octavia, id(k), pools.UpdateOpts{LBMethod: pools.LBMethodLeastConnections}).Extract()
				return err
			},
		},
		"member": {
			func(ctx context.Context, k string) error {
				return pools.DeleteMember(ctx, octavia, parentPool(k), id(k)).ExtractErr()
			},
			func(ctx context.Context, k string) error { // a stray beside ours
				_, err := pools.CreateMember(ctx, octavia, parentPool(k), pools.CreateMemberOpts{Address: "10.0.0.250", ProtocolPort: 30999}).Extract()
				return err
			},
		},
		"monitor": {
			func(ctx context.Context, k string) error { return monitors.Delete(ctx, octavia, id(k)).ExtractErr() },
			func(ctx context.Context, k string) error {
				// A change in place keeps its id, unseen by the listing:
				// the hourly walk's. Replaced by hand is seen.
				return monitors.Delete(ctx, octavia, id(k)).ExtractErr()
			},
		},
		"security-group": {
			func(ctx context.Context, k string) error { return groups.Delete(ctx, network, id(k)).ExtractErr() },
			func(ctx context.Context, k string) error { // a stray rule in it
				_, err := rules.Create(ctx, network, rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4,
					SecGroupID: id(k), Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "198.51.100.0/24"}).Extract()
				return err
			},
		},
		"security-group-rule": {
			func(ctx context.Context, k string) error { return rules.Delete(ctx, network, id(k)).ExtractErr() },
			func(ctx context.Context, k string) error { // replaced by a wider one
				r, err := rules.Get(ctx, network, id(k)).Extract()
				if err != nil {
					return err
				}
				if err := rules.Delete(ctx, network, id(k)).ExtractErr(); err != nil {
					return err
				}
				_, err = rules.Create(ctx, network, rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.RuleEtherType(r.EtherType),
					SecGroupID: r.SecGroupID, Protocol: rules.RuleProtocol(r.Protocol), PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax,
					RemoteIPPrefix: "0.0.0.0/0"}).Extract()
				return err
			},
		},
	}
}

// Every kind of object a Service's load balancer owns, removed or changed
// behind the CCM's back, is repaired within a drift period (providertest).
func TestContractEveryObjectChangedBehindOurBackIsRepaired(t *testing.T) {
	tg := newContractTarget(t)
	const extra = "\n[LoadBalancer]\ncreate-monitor = true\nmanage-security-groups = true\n"
	c := tg.cloud(t, extra)
	svc := contractService(contractName("drift"), nil)
	kube := fake.NewClientset(svc)
	c.SetKube(kube)
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201"), contractNode("n2", "", "10.0.0.202")}
	fresh := func(t *testing.T) *v1.Service {
		got, err := kube.CoreV1().Services(svc.Namespace).Get(t.Context(), svc.Name, metav1.GetOptions{})
		require.NoError(t, err)
		return got
	}
	providertest.RunDrift(t, providertest.Drift{
		Ensure: func(t *testing.T) string { return ensure(t, c, fresh(t), nodes).Ingress[0].IP },
		Drifted: func(t *testing.T) string {
			d, err := c.Drifted(t.Context(), []*v1.Service{fresh(t)})
			require.NoError(t, err)
			return d[svc.UID]
		},
		Objects: func(t *testing.T) []string { return providertest.ObjectsOf(t, c.lb, fresh(t)) },
		Restart: func(t *testing.T) {
			restarted := tg.cloud(t, extra)
			restarted.Cluster.Set(c.Cluster.Get())
			restarted.SetKube(kube)
			c = restarted
		},
		OutOfBand: outOfBand(tg.octavia(t, c), tg.network),
		Kinds:     []string{"listener", "pool", "member", "monitor", "security-group", "security-group-rule"},
	})
	deleteLB(t, c, fresh(t))
}
