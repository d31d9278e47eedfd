package cloudstack

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// Every kind of object a Service's load balancer owns (its rules, their
// firewall openings on an isolated network, the tier's ACL items in a VPC),
// removed or changed behind the CCM's back, is repaired within a drift
// period (providertest), on each kind of network.
func TestEveryObjectChangedBehindOurBackIsRepaired(t *testing.T) {
	for _, network := range []struct {
		name  string
		opts  emulator.Options
		kinds []string
	}{
		{"isolated network", emulator.Options{}, []string{"rule", "member", "firewall-rule"}},
		{"VPC tier", emulator.Options{VPC: true}, []string{"rule", "member", "acl-item"}},
	} {
		t.Run(network.name, func(t *testing.T) { driftOn(t, network.opts, network.kinds) })
	}
}

func driftOn(t *testing.T, opts emulator.Options, kinds []string) {
	f := newFixture(t, opts)
	nodes := f.nodes("worker-1", "worker-2")
	stray, _ := f.emu.AddMachine("not-a-node")
	svc := service("drift", httpPort,
		v1.ServicePort{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053})
	svc.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
	kube := fake.NewClientset(svc)
	f.c.SetKube(kube)
	fresh := func() *v1.Service { return providertest.Reread(t, kube, svc) }
	providertest.RunDrift(t, providertest.Drift{
		Ensure: func(t *testing.T) string {
			st, err := f.ensure(fresh(), nodes)
			require.NoError(t, err)
			return st.Ingress[0].IP
		},
		Drifted: func(t *testing.T) string {
			d, err := f.c.Drifted(t.Context(), []*v1.Service{fresh()})
			require.NoError(t, err)
			return d[svc.UID]
		},
		Objects: func(t *testing.T) []string { return providertest.ObjectsOf(t, f.c.lb, fresh()) },
		Restart: func(t *testing.T) {
			cfg, err := Read(strings.NewReader(f.emu.CloudConfig()))
			require.NoError(t, err)
			c, err := New(cfg, ProviderName)
			require.NoError(t, err)
			c.Cluster.Set(clusterUID)
			c.lb.jobs.took, c.lb.jobs.margin, c.lb.tagSettle = 0, 0, 0
			c.SetKube(kube)
			f.c = c
		},
		OutOfBand: csOutOfBand(f.admin, stray),
		Kinds:     kinds,
	})
	f.remove(fresh())
}

// csOutOfBand is what someone else does to an object of each kind, stray
// a machine that is no Node.
func csOutOfBand(admin *cs.CloudStackClient, stray string) map[string][2]func(context.Context, string) error {
	id := providertest.ID
	return map[string][2]func(context.Context, string) error{
		"rule": {
			func(_ context.Context, k string) error {
				_, err := admin.LoadBalancer.DeleteLoadBalancerRule(admin.LoadBalancer.NewDeleteLoadBalancerRuleParams(id(k)))
				return err
			},
			func(_ context.Context, k string) error {
				p := admin.LoadBalancer.NewUpdateLoadBalancerRuleParams(id(k))
				p.SetAlgorithm("leastconn")
				_, err := admin.LoadBalancer.UpdateLoadBalancerRule(p)
				return err
			},
		},
		"firewall-rule": {
			func(_ context.Context, k string) error {
				_, err := admin.Firewall.DeleteFirewallRule(admin.Firewall.NewDeleteFirewallRuleParams(id(k)))
				return err
			},
			func(_ context.Context, k string) error { return replaceFirewallRule(admin, id(k)) },
		},
		"member": {
			func(_ context.Context, k string) error { return unassign(admin, k) },
			func(_ context.Context, k string) error { return replaceMember(admin, k, stray) },
		},
		"acl-item": {
			func(_ context.Context, k string) error {
				_, err := admin.NetworkACL.DeleteNetworkACL(admin.NetworkACL.NewDeleteNetworkACLParams(id(k)))
				return err
			},
			func(_ context.Context, k string) error { return replaceACLItem(admin, id(k)) },
		},
	}
}

// replaceFirewallRule replaces firewall rule id by one for other sources
// (one open to all is not drift: the rule's cidrlist keeps the sources, as
// the peer's shape does).
func replaceFirewallRule(admin *cs.CloudStackClient, id string) error {
	r, _, err := admin.Firewall.GetFirewallRuleByID(id, cs.WithProject("-1"))
	if err != nil {
		r, _, err = admin.Firewall.GetFirewallRuleByID(id)
	}
	if err != nil {
		return err
	}
	if _, err := admin.Firewall.DeleteFirewallRule(admin.Firewall.NewDeleteFirewallRuleParams(id)); err != nil {
		return err
	}
	p := admin.Firewall.NewCreateFirewallRuleParams(r.Ipaddressid, r.Protocol)
	p.SetCidrlist([]string{"192.0.2.0/24"})
	p.SetStartport(r.Startport)
	p.SetEndport(r.Endport)
	_, err = admin.Firewall.CreateFirewallRule(p)
	return err
}

// replaceMember puts another machine (stray) in the place of the member of
// key k.
func replaceMember(admin *cs.CloudStackClient, k, stray string) error {
	if err := unassign(admin, k); err != nil {
		return err
	}
	_, rule, _ := strings.Cut(k, " of ")
	p := admin.LoadBalancer.NewAssignToLoadBalancerRuleParams(rule)
	p.SetVirtualmachineids([]string{stray})
	_, err := admin.LoadBalancer.AssignToLoadBalancerRule(p)
	return err
}

// replaceACLItem replaces ACL item id by one for other sources (CloudStack
// keeps an item's number: a new one is what a person can add).
func replaceACLItem(admin *cs.CloudStackClient, id string) error {
	p := admin.NetworkACL.NewListNetworkACLsParams()
	p.SetId(id)
	p.SetListall(true)
	items, err := admin.NetworkACL.ListNetworkACLs(p)
	if err != nil {
		return err
	}
	if len(items.NetworkACLs) != 1 {
		return fmt.Errorf("ACL item %s: %d listed", id, len(items.NetworkACLs))
	}
	item := items.NetworkACLs[0]
	if _, err := admin.NetworkACL.DeleteNetworkACL(admin.NetworkACL.NewDeleteNetworkACLParams(item.Id)); err != nil {
		return err
	}
	c := admin.NetworkACL.NewCreateNetworkACLParams(item.Protocol)
	c.SetAclid(item.Aclid)
	c.SetCidrlist([]string{"192.0.2.0/24"})
	c.SetStartport(atoi(item.Startport))
	c.SetEndport(atoi(item.Endport))
	c.SetTraffictype(item.Traffictype)
	c.SetAction(item.Action)
	_, err = admin.NetworkACL.CreateNetworkACL(c)
	return err
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// unassign removes the machine of a member key ("member/<vm> of <rule>")
// from its rule.
func unassign(admin *cs.CloudStackClient, key string) error {
	_, rule, _ := strings.Cut(key, " of ")
	p := admin.LoadBalancer.NewRemoveFromLoadBalancerRuleParams(rule)
	p.SetVirtualmachineids([]string{providertest.ID(key)})
	_, err := admin.LoadBalancer.RemoveFromLoadBalancerRule(p)
	return err
}
