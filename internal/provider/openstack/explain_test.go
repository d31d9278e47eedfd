package openstack

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// explained is ExplainService of svc, which must write nothing (on the
// emulator, where calls are counted).
func explainedBy(t *testing.T, tg *contractTarget, c *Cloud, svc *v1.Service, nodes []*v1.Node) provider.ServiceExplanation {
	t.Helper()
	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	e, err := c.ExplainService(t.Context(), "contract", svc, nodes)
	require.NoError(t, err)
	if tg.emu != nil {
		require.Empty(t, writes(tg), "explain writes nothing")
	}
	return e
}

// driftOf are the explanation's differences as "action object" lines.
func driftOf(e provider.ServiceExplanation) []string {
	out := []string{}
	for _, d := range e.Drift {
		out = append(out, d.Action+" "+d.Object)
	}
	return out
}

// A Service built by the cycle is explained as it is (nothing to repair);
// a listener's allowed CIDRs, a pool's method, a member and a security
// group rule changed behind the CCM's back are the drift explain shows,
// with no write, and what the next walk repairs: explain then shows none.
func TestContractExplainShowsWhatTheCloudHoldsAndWhatDrifted(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "\n[LoadBalancer]\ncreate-monitor = true\nmanage-security-groups = true\n")
	svc := contractService(contractName("explain"), nil)
	kube := fake.NewClientset(svc)
	c.SetKube(kube)
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201"), contractNode("n2", "", "10.0.0.202")}
	fresh := func() *v1.Service { return providertest.Reread(t, kube, svc) }
	addr := ensure(t, c, fresh(), nodes).Ingress[0].IP

	e := explainedBy(t, tg, c, fresh(), nodes)
	require.True(t, e.Found)
	assert.True(t, e.DriftChecked)
	assert.Empty(t, driftOf(e), "converged: nothing to repair")
	require.NotEmpty(t, e.Addresses)
	assert.Equal(t, addr, e.Addresses[0].IP)
	assert.Equal(t, "floating IP", e.Addresses[0].Kind)
	require.Len(t, e.Listeners, 2)
	require.Len(t, e.Pools, 2)
	for _, p := range e.Pools {
		assert.Len(t, p.Members, 2, p.Name)
		assert.NotEmpty(t, p.Health, "create-monitor")
	}
	kinds := map[string]int{}
	for _, r := range e.SecurityRules {
		kinds[r.Kind]++
		if r.Kind == "security group rule" {
			assert.Equal(t, provider.MarkThisCluster, r.Mark)
		}
	}
	assert.Equal(t, 2, kinds["allowed CIDRs"])
	assert.NotZero(t, kinds["security group rule"])
	require.NotNil(t, e.Record)
	assert.True(t, e.Record.AsAsked)

	tcpPool := changeBehindItsBack(t, tg, c, e)
	e = settled(t, tg, c, fresh(), nodes)
	got := strings.Join(driftOf(e), "\n")
	for _, d := range e.Drift {
		t.Logf("drift: %s %s: %s", d.Action, d.Object, d.Detail)
	}
	assert.Contains(t, got, "change listener TCP/80")
	assert.Contains(t, got, "change pool "+tcpPool.Name)
	assert.Contains(t, got, "create member 10.0.0.202:30080 of pool "+tcpPool.Name)
	assert.Contains(t, got, "create security group rule")

	// The next walk (as a drift pass makes it) repairs what explain showed.
	walked := fresh()
	delete(walked.Annotations, string(annotation.OpenStackConverged))
	c.lb.Drifting(walked)
	ensure(t, c, walked, nodes)
	e = settled(t, tg, c, fresh(), nodes)
	assert.Empty(t, driftOf(e), "the walk repaired it")
	if tg.emu != nil {
		out, err := json.Marshal(e)
		require.NoError(t, err)
		assert.NotContains(t, string(out), tg.emu.Fixture().AppCredentialSecret, "never a secret")
	}
	deleteLB(t, c, fresh())
}

// settled is the explanation once Octavia is done with the load balancer
// (the drift is worked out then).
func settled(t *testing.T, tg *contractTarget, c *Cloud, svc *v1.Service, nodes []*v1.Node) provider.ServiceExplanation {
	t.Helper()
	var e provider.ServiceExplanation
	require.NoError(t, poll(time.Minute, func() error {
		if e = explainedBy(t, tg, c, svc, nodes); !e.DriftChecked {
			return fmt.Errorf("load balancer %s", e.LoadBalancer.State)
		}
		return nil
	}))
	return e
}

// changeBehindItsBack changes the TCP listener's allowed CIDRs and its
// pool's method, removes the pool's member 10.0.0.202 and an ingress rule
// of the security group, as someone else would: it returns the pool.
func changeBehindItsBack(t *testing.T, tg *contractTarget, c *Cloud, e provider.ServiceExplanation) provider.Pool {
	t.Helper()
	octavia := tg.octavia(t, c)
	ctx := context.Background()
	tcp := e.Listeners[0]
	if tcp.Protocol != "TCP" {
		tcp = e.Listeners[1]
	}
	cidrs := []string{"192.0.2.0/24"}
	require.NoError(t, poll(time.Minute, func() error {
		_, err := listeners.Update(ctx, octavia, tcp.ID, listeners.UpdateOpts{AllowedCIDRs: &cidrs}).Extract()
		return err
	}))
	var tcpPool provider.Pool
	for _, p := range e.Pools {
		if p.Name == tcp.Pool {
			tcpPool = p
		}
	}
	require.NoError(t, poll(time.Minute, func() error {
		_, err := pools.Update(ctx, octavia, tcpPool.ID, pools.UpdateOpts{LBMethod: pools.LBMethodLeastConnections}).Extract()
		return err
	}))
	removeMember(t, tg, c, tcpPool.ID, "10.0.0.202")
	var sgRule provider.SecurityRule
	for _, r := range e.SecurityRules {
		if r.Kind == "security group rule" && r.Direction == "ingress" {
			sgRule = r
		}
	}
	require.NoError(t, rules.Delete(ctx, tg.network, sgRule.ID).ExtractErr())
	return tcpPool
}

// removeMember deletes the member of address ip from pool poolID.
func removeMember(t *testing.T, tg *contractTarget, c *Cloud, poolID, ip string) {
	t.Helper()
	octavia := tg.octavia(t, c)
	members := sdkAll(t, pools.ListMembers(octavia, poolID, pools.ListMembersOpts{}), pools.ExtractMembers)
	for _, m := range members {
		if m.Address == ip {
			require.NoError(t, poll(time.Minute, func() error { return pools.DeleteMember(t.Context(), octavia, poolID, m.ID).ExtractErr() }))
			return
		}
	}
	t.Fatalf("pool %s has no member %s", poolID, ip)
}

// A Service the cloud has nothing for is not found; a Node's server is
// found, with what the node controller would set.
func TestContractExplainOfNothingAndOfANode(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	svc := contractService(contractName("nothing"), nil)
	e := explainedBy(t, tg, c, svc, nil)
	assert.False(t, e.Found)

	// Without health monitors nor security groups: as converged.
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201")}
	ensure(t, c, svc, nodes)
	e = settled(t, tg, c, svc, nodes)
	assert.Empty(t, driftOf(e))
	assert.Empty(t, e.Pools[0].Health)
	deleteLB(t, c, svc)

	s := tg.server(t, contractName("explain-node"))
	node := contractNode(s.name, "", "")
	require.NoError(t, poll(2*time.Minute, func() error {
		_, err := c.InstanceMetadata(t.Context(), node)
		return err
	}))
	n, err := c.ExplainNode(t.Context(), node, []*v1.Node{node})
	require.NoError(t, err)
	require.True(t, n.Found)
	assert.Equal(t, s.id, n.Machine.ID)
	assert.Equal(t, "openstack:///"+s.id, n.Wants.ProviderID)
	assert.Equal(t, tg.flavorName, n.Wants.Labels[v1.LabelInstanceTypeStable])
	var objects []string
	for _, d := range n.Differences {
		objects = append(objects, d.Action+" "+d.Object)
	}
	assert.Contains(t, objects, "create providerID", "the Node has none yet")
	assert.False(t, n.Guard.MachineGone)
}
