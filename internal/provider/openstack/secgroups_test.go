package openstack

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

const manageSGs = "\n[LoadBalancer]\nmanage-security-groups = true\n"

// sgOf is the Service's group as Neutron lists it by our tag, nil when none.
func sgOf(t *testing.T, tg *contractTarget, svc *v1.Service) *groups.SecGroup {
	t.Helper()
	gs := sdkAll(t, groups.List(tg.network, groups.ListOpts{Tags: tagService + string(svc.UID)}), groups.ExtractGroups)
	require.LessOrEqual(t, len(gs), 1)
	if len(gs) == 0 {
		return nil
	}
	return &gs[0]
}

// ingress is the group's ingress rules as "proto port from remote".
func ingress(t *testing.T, tg *contractTarget, groupID string) []string {
	t.Helper()
	rs := sdkAll(t, rules.List(tg.network, rules.ListOpts{SecGroupID: groupID, Direction: "ingress"}), rules.ExtractRules)
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %d from %s", r.Protocol, r.PortRangeMin, r.RemoteIPPrefix))
	}
	sort.Strings(out)
	return out
}

// portGroups is the security groups of the server's port.
func portGroups(t *testing.T, tg *contractTarget, serverID string) []string {
	t.Helper()
	ps := sdkAll(t, ports.List(tg.network, ports.ListOpts{DeviceID: serverID}), ports.ExtractPorts)
	require.Len(t, ps, 1)
	return ps[0].SecurityGroups
}

// subnetOf is the CIDR of the subnet holding ip.
func subnetOf(t *testing.T, tg *contractTarget, ip string) string {
	t.Helper()
	sns := sdkAll(t, subnets.List(tg.network, subnets.ListOpts{NetworkID: tg.netID}), subnets.ExtractSubnets)
	for _, sn := range sns {
		if netip.MustParsePrefix(sn.CIDR).Contains(netip.MustParseAddr(ip)) {
			return sn.CIDR
		}
	}
	t.Fatalf("no subnet of network %s holds %s", tg.netID, ip)
	return ""
}

func portWrites(tg *contractTarget) (n int) {
	for _, call := range tg.emu.Calls() {
		if call.Route == "PUT /network/v2.0/ports/{id}" {
			n += call.Count
		}
	}
	return n
}

// writes are the emulator's write calls since the last reset, by route.
func writes(tg *contractTarget) []string {
	var out []string
	for _, call := range tg.emu.Calls() {
		if call.Method != http.MethodGet && !strings.Contains(call.Route, "/auth/tokens") {
			out = append(out, fmt.Sprintf("%s ×%d", call.Route, call.Count))
		}
	}
	sort.Strings(out)
	return out
}

// manage-security-groups: a group per Service with a rule per NodePort (and
// the healthCheckNodePort) from the member subnet, on each member Node's port
// next to the Node's own groups; a port change writes only the difference;
// Nodes that leave and join move it; a Node that joins under several Services
// is one port write; deleting the Service leaves nothing of it.
func TestContractSecurityGroups(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, manageSGs)
	s1, s2 := tg.server(t, contractName("sg-a")), tg.server(t, contractName("sg-b"))
	node := func(s contractServer) *v1.Node { return contractNode(s.name, "openstack:///"+s.id, s.fixedIP) }
	nodes := []*v1.Node{node(s1), node(s2)}
	own1 := portGroups(t, tg, s1.id)

	svc := contractService(contractName("sg"), nil)
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 32001
	ensure(t, c, svc, nodes)
	g := sgOf(t, tg, svc)
	require.NotNil(t, g, "the Service's group, tagged")
	assert.Equal(t, sgName(svc), g.Name)
	assert.Contains(t, g.Tags, tagCluster+c.Cluster.Get())
	cidr := subnetOf(t, tg, s1.fixedIP)
	assert.Equal(t, []string{"tcp 30080 from " + cidr, "tcp 32001 from " + cidr, "udp 30053 from " + cidr}, ingress(t, tg, g.ID))
	for _, s := range []contractServer{s1, s2} {
		assert.Contains(t, portGroups(t, tg, s.id), g.ID, "on the member's port")
	}
	for _, own := range own1 {
		assert.Contains(t, portGroups(t, tg, s1.id), own, "the Node's own groups stay")
	}

	// A NodePort changed: one rule in, one out, no port written.
	svc.Spec.Ports[0].NodePort = 30081
	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	ensure(t, c, svc, nodes)
	assert.Equal(t, []string{"tcp 30081 from " + cidr, "tcp 32001 from " + cidr, "udp 30053 from " + cidr}, ingress(t, tg, g.ID))
	if tg.emu != nil {
		w := writes(tg)
		assert.Contains(t, w, "POST /network/v2.0/security-group-rules ×1")
		assert.Contains(t, w, "DELETE /network/v2.0/security-group-rules/{id} ×1")
		assert.Zero(t, portWrites(tg), "no port written: %v", w)
	}

	// A Node leaves, then comes back.
	require.NoError(t, poll(3*time.Minute, func() error { return c.UpdateLoadBalancer(t.Context(), "contract", svc, nodes[:1]) }))
	assert.NotContains(t, portGroups(t, tg, s2.id), g.ID)
	require.NoError(t, poll(3*time.Minute, func() error { return c.UpdateLoadBalancer(t.Context(), "contract", svc, nodes) }))
	assert.Contains(t, portGroups(t, tg, s2.id), g.ID)

	// Two more Services; a third Node joins all three: one write of its port.
	others := []*v1.Service{contractService(contractName("sg-x"), nil), contractService(contractName("sg-y"), nil)}
	for i, o := range others {
		o.Spec.Ports[0].NodePort, o.Spec.Ports[1].NodePort = int32(30180+i), int32(30190+i)
		ensure(t, c, o, nodes)
	}
	s3 := tg.server(t, contractName("sg-c"))
	joined := append(slices.Clone(nodes), node(s3))
	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	// One after the other, as a service controller with one worker would:
	// the first puts every group on.
	for _, x := range append([]*v1.Service{svc}, others...) {
		require.NoError(t, poll(3*time.Minute, func() error { return c.UpdateLoadBalancer(context.Background(), "contract", x, joined) }))
	}
	on3 := portGroups(t, tg, s3.id)
	for _, x := range append([]*v1.Service{svc}, others...) {
		assert.Contains(t, on3, sgOf(t, tg, x).ID)
	}
	if tg.emu != nil {
		assert.Equal(t, 1, portWrites(tg), "one write of the new Node's port for three Services")
	}

	// Deleted: the group is off every port and gone; the Nodes' own stay.
	for _, x := range append([]*v1.Service{svc}, others...) {
		deleteLB(t, c, x)
		assert.Nil(t, sgOf(t, tg, x), "the group goes with the Service")
	}
	assert.ElementsMatch(t, own1, portGroups(t, tg, s1.id))
}

// The group cloud-provider-openstack made for a Service is taken over (the
// same group, tagged), and a second cluster's groups on the same Nodes are
// never touched.
func TestContractSecurityGroupsOfThePeerAndOfAnotherCluster(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, manageSGs)
	s1 := tg.server(t, contractName("sg-peer"))
	nodes := []*v1.Node{contractNode(s1.name, "openstack:///"+s1.id, s1.fixedIP)}
	svc := contractService(contractName("peer-sg"), nil)
	peers, err := groups.Create(t.Context(), tg.network, groups.CreateOpts{Name: sgName(svc),
		Description: "Security Group for contract/" + svc.Name + " Service LoadBalancer in cluster contract"}).Extract()
	require.NoError(t, err)
	t.Cleanup(func() { _ = groups.Delete(context.Background(), tg.network, peers.ID).ExtractErr() })

	ensure(t, c, svc, nodes)
	g := sgOf(t, tg, svc)
	require.NotNil(t, g)
	assert.Equal(t, peers.ID, g.ID, "the peer's group, adopted")

	other := tg.cloud(t, manageSGs) // another cluster, the same Nodes
	theirs := contractService(contractName("theirs"), nil)
	theirs.Spec.Ports[0].NodePort, theirs.Spec.Ports[1].NodePort = 30280, 30253
	ensure(t, other, theirs, nodes)
	tgOther := sgOf(t, tg, theirs)
	require.NotNil(t, tgOther)

	deleteLB(t, c, svc)
	assert.Nil(t, sgOf(t, tg, svc))
	assert.Contains(t, portGroups(t, tg, s1.id), tgOther.ID, "the other cluster's group stays on the Node")
	deleteLB(t, other, theirs)
	assert.NotContains(t, portGroups(t, tg, s1.id), tgOther.ID)
}

// A port changed by someone else between our read and our write: Neutron
// refuses the write (If-Match on the revision), the port is read again, and
// both changes are on it.
func TestContractAPortChangedMeanwhileKeepsBothChanges(t *testing.T) {
	tg := newContractTarget(t)
	s := tg.server(t, contractName("sg-race"))
	ps := sdkAll(t, ports.List(tg.network, ports.ListOpts{DeviceID: s.id}), ports.ExtractPorts)
	require.Len(t, ps, 1)
	read := ps[0]
	mine, err := groups.Create(t.Context(), tg.network, groups.CreateOpts{Name: contractName("ours")}).Extract()
	require.NoError(t, err)
	theirs, err := groups.Create(t.Context(), tg.network, groups.CreateOpts{Name: contractName("theirs")}).Extract()
	require.NoError(t, err)
	t.Cleanup(func() {
		none := []string{}
		_, _ = ports.Update(context.Background(), tg.network, read.ID, ports.UpdateOpts{SecurityGroups: &none}).Extract()
		_ = groups.Delete(context.Background(), tg.network, mine.ID).ExtractErr()
		_ = groups.Delete(context.Background(), tg.network, theirs.ID).ExtractErr()
	})
	// Someone else adds theirs after our read.
	withTheirs := append(slices.Clone(read.SecurityGroups), theirs.ID)
	_, err = ports.Update(t.Context(), tg.network, read.ID, ports.UpdateOpts{SecurityGroups: &withTheirs}).Extract()
	require.NoError(t, err)

	ch := &portChange{add: map[string]bool{mine.ID: true}, remove: map[string]bool{},
		known: osapi.PortGroups{ID: read.ID, Groups: read.SecurityGroups, Revision: read.RevisionNumber}}
	c := tg.cloud(t, "")
	_, err = c.lb.sgs.writePortGroups(t.Context(), ch)
	require.NoError(t, err)
	got := portGroups(t, tg, s.id)
	assert.Contains(t, got, mine.ID)
	assert.Contains(t, got, theirs.ID, "the change made meanwhile is not lost")
}

// With the ovn provider the clients' addresses reach the Nodes: the rules
// open the Service's source ranges, or everyone of each family it serves.
func TestSecurityGroupSourcesWithOVN(t *testing.T) {
	c := specCloud(t, "lb-provider=ovn")
	got, err := c.lb.sgRemotes(t.Context(), lbSpec{family: v1.IPv4Protocol, members: []string{"10.0.0.1"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"0.0.0.0/0"}, got)
	got, err = c.lb.sgRemotes(t.Context(), lbSpec{family: v1.IPv4Protocol, secondFamily: v1.IPv6Protocol, members: []string{"10.0.0.1"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"0.0.0.0/0", "::/0"}, got, "dual-stack: both families")
	got, err = c.lb.sgRemotes(t.Context(), lbSpec{family: v1.IPv4Protocol, allowedCIDRs: []string{"192.0.2.0/24", "2001:db8::/32"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.0/24", "2001:db8::/32"}, got)
	g := &sgSpec{nodePorts: []sgPort{{proto: "tcp", port: 30080}}}
	assert.Equal(t, []osapi.RuleKey{{Ether: "IPv4", Proto: "tcp", Remote: "192.0.2.0/24", Min: 30080, Max: 30080}, {Ether: "IPv6", Proto: "tcp", Remote: "2001:db8::/32", Min: 30080, Max: 30080}},
		g.wantedRules(got), "an IPv6 rule for an IPv6 range")
}
