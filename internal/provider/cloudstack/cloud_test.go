package cloudstack

// The provider against the CloudStack emulator (internal/emulator/cloudstack),
// with the user keys CloudStack gives CKS clusters; cloudstack-go, with an
// administrator's keys, looks behind it. The controllers' side (the real
// apiserver) is test/e2e's.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/doctor"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/providerid"
)

const clusterUID = "6c0d8a8e-0000-4000-8000-00000000c1a5"

type fixture struct {
	t   *testing.T
	emu *emulator.Emulator
	c   *Cloud
	// admin is cloudstack-go as an administrator, to look behind the CCM.
	admin *cs.CloudStackClient
}

func newFixture(t *testing.T, opts emulator.Options) *fixture {
	t.Helper()
	e, err := emulator.New(opts)
	e = coretest.Serve(t, e, err)
	cfg, err := Read(strings.NewReader(e.CloudConfig()))
	require.NoError(t, err)
	c, err := New(cfg, ProviderName)
	require.NoError(t, err)
	c.Cluster.Set(clusterUID)
	// The emulator's jobs end as soon as its JobDelay (none by default): the
	// CCM would learn that from the first listing; the tests' passes follow
	// each other without waiting the 2 s it first expects.
	c.lb.jobs.took, c.lb.jobs.margin = opts.JobDelay, 0
	// An untagged address is taken up at once (associating_test.go has the
	// wait for its tags).
	c.lb.tagSettle = 0
	fx := e.Fixture()
	return &fixture{t: t, emu: e, c: c, admin: cs.NewClient(e.URL()+"/client/api", fx.AdminKey, fx.AdminSecret, false)}
}

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func TestNodesAreInitialisedByNameAndByProviderID(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	id, ip := f.emu.AddMachine("worker-1")
	ctx := context.Background()

	for _, n := range []*v1.Node{
		node("worker-1", ""),
		node("Worker-1.cluster.example.com", ""), // the domain and the case do not matter
		node("renamed", providerid.CloudStack(id)),
		node("renamed", id), // the peer's older form: a bare UUID
	} {
		md, err := f.c.InstanceMetadata(ctx, n)
		require.NoError(t, err, n.Name)
		assert.Equal(t, "external-cloudstack://"+id, md.ProviderID, "the peer's form, so that either CCM can take over")
		assert.Equal(t, labelValue(f.emu.Fixture().OfferingName), md.InstanceType, "the offering, as a label value (the peer's)")
		assert.Equal(t, f.emu.Fixture().ZoneName, md.Zone)
		assert.Equal(t, f.emu.Fixture().ZoneName, md.Region, "the region is the zone unless [Global] region says otherwise")
		assert.Contains(t, md.NodeAddresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}

	_, err := f.c.InstanceMetadata(ctx, node("nobody", ""))
	assert.ErrorIs(t, err, cloudprovider.InstanceNotFound)
	_, err = f.c.InstanceMetadata(ctx, node("x", "openstack:///"+id))
	assert.ErrorIs(t, err, providerid.ErrForeign, "a foreign providerID is never taken for a missing machine")
}

func TestTwoMachinesOfOneNameAreNamedInTheError(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	a, _ := f.emu.AddMachine("twin")
	b, _ := f.emu.AddMachine("twin")
	_, err := f.c.InstanceMetadata(context.Background(), node("twin", ""))
	require.Error(t, err)
	assert.Contains(t, err.Error(), a)
	assert.Contains(t, err.Error(), b)
}

func TestShutdownAndGoneAreToldApartAndNeverGuessedFromAnError(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	ctx := context.Background()
	id, _ := f.emu.AddMachine("worker-1")
	n := node("worker-1", providerid.CloudStack(id))

	exists, err := f.c.InstanceExists(ctx, n)
	require.NoError(t, err)
	assert.True(t, exists)

	require.NoError(t, f.emu.SetMachineState(id, emulator.StateStopped))
	f.c.machines.Invalidate()
	down, err := f.c.InstanceShutdown(ctx, n)
	require.NoError(t, err)
	assert.True(t, down, "a Stopped machine is shut down")
	exists, err = f.c.InstanceExists(ctx, n)
	require.NoError(t, err)
	assert.True(t, exists, "and still exists")

	// The management server is down: errors, never "gone".
	f.emu.InjectFault(core.Fault{Status: 503})
	f.c.machines.Invalidate()
	_, err = f.c.InstanceExists(ctx, n)
	require.Error(t, err)
	f.emu.ClearFaults()

	// Destroyed: a user's keys no longer see it; the lookup by id confirms.
	require.NoError(t, f.emu.SetMachineState(id, emulator.StateDestroyed))
	f.c.machines.Invalidate()
	exists, err = f.c.InstanceExists(ctx, n)
	require.NoError(t, err)
	assert.False(t, exists)

	// Expunged: gone from every list, its id still resolves to nothing.
	require.NoError(t, f.emu.SetMachineState(id, "Expunged"))
	exists, err = f.c.InstanceExists(ctx, n)
	require.NoError(t, err)
	assert.False(t, exists)
	_, err = f.c.InstanceShutdown(ctx, n)
	assert.ErrorIs(t, err, cloudprovider.InstanceNotFound)
}

func TestOneThousandMachinesAreListedInPages(t *testing.T) {
	f := newFixture(t, emulator.Options{MachineCIDR: "10.1.0.0/16", PageSize: 200})
	ids := map[string]string{}
	for i := range 1000 {
		id, _ := f.emu.AddMachine(fmt.Sprintf("node-%04d", i))
		ids[fmt.Sprintf("node-%04d", i)] = id
	}
	ctx := context.Background()
	f.emu.ResetCalls()
	for name, id := range ids {
		md, err := f.c.InstanceMetadata(ctx, node(name, ""))
		require.NoError(t, err, name)
		require.Equal(t, providerid.CloudStack(id), md.ProviderID)
	}
	// The server's default.page.size is 200 here: the first page, asked at
	// 500, is refused with the server's size, then five pages of 200 serve
	// every Node (the peer asks one page and misses what is beyond it).
	assert.Equal(t, 6, calls(f.emu, "listVirtualMachines"))
}

func TestBadKeysFailEveryPath(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	id, _ := f.emu.AddMachine("worker-1")
	cfg := f.c.cfg
	cfg.Global.SecretKey = "not-the-secret"
	c, err := New(cfg, ProviderName)
	require.NoError(t, err)
	c.Cluster.Set(clusterUID)
	ctx := context.Background()

	_, err = c.InstanceExists(ctx, node("worker-1", providerid.CloudStack(id)))
	assert.ErrorIs(t, err, outcome.ErrAuth)
	_, err = c.InstanceMetadata(ctx, node("worker-1", ""))
	assert.ErrorIs(t, err, outcome.ErrAuth)
	svc := service("web", httpPort)
	_, err = c.EnsureLoadBalancer(ctx, "kubernetes", svc, []*v1.Node{node("worker-1", providerid.CloudStack(id))})
	assert.ErrorIs(t, err, outcome.ErrAuth)
	assert.NotContains(t, err.Error(), "not-the-secret")
	assert.NotContains(t, err.Error(), f.emu.Fixture().UserKey, "the API key is not in errors either")
	err = c.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc)
	assert.ErrorIs(t, err, outcome.ErrAuth)
}

func calls(e *emulator.Emulator, command string) int {
	n := 0
	for _, c := range e.Calls() {
		if c.Route == command || strings.HasSuffix(c.Route, " "+command) {
			n += c.Count
		}
	}
	return n
}

// webOnOneNode is a fixture with one Node and the Service web on httpPort.
func webOnOneNode(t *testing.T) (*fixture, []*v1.Node, *v1.Service) {
	f := newFixture(t, emulator.Options{})
	return f, f.nodes("worker-1"), service("web", httpPort)
}

// requireProblem says that err is a Problem of reason.
func requireProblem(t *testing.T, err error, reason string) {
	t.Helper()
	p, ok := outcome.AsProblem(err)
	require.True(t, ok, "a Problem: %v", err)
	assert.Equal(t, reason, p.Reason)
}

// httpPort is the port most tests' Services have.
var httpPort = v1.ServicePort{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080}

func service(name string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(fmt.Sprintf("%08x-1111-4222-8333-444455556666", len(name)*7919))},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: ports},
	}
}

// ensure runs EnsureLoadBalancer until the load balancer is there (a bounded
// number of passes); a RetryError is progress.
func (f *fixture) ensure(svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	f.t.Helper()
	for range 30 {
		st, err := f.c.EnsureLoadBalancer(context.Background(), "kubernetes", svc, nodes)
		if errors.As(err, new(*api.RetryError)) {
			continue
		}
		return st, err
	}
	f.t.Fatal("the load balancer was not ready after 30 passes")
	return nil, nil
}

// ensured is ensure's status, which must come with no error.
func (f *fixture) ensured(svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	f.t.Helper()
	st, err := f.ensure(svc, nodes)
	require.NoError(f.t, err)
	return st
}

func (f *fixture) remove(svc *v1.Service) {
	f.t.Helper()
	for range 30 {
		err := f.c.EnsureLoadBalancerDeleted(context.Background(), "kubernetes", svc)
		if errors.As(err, new(*api.RetryError)) {
			continue
		}
		require.NoError(f.t, err)
		return
	}
	f.t.Fatal("the load balancer was not deleted after 30 passes")
}

// cloud is what the admin sees: rules, addresses and firewall rules.
func (f *fixture) rules() []*cs.LoadBalancerRule {
	p := f.admin.LoadBalancer.NewListLoadBalancerRulesParams()
	p.SetListall(true)
	r, err := f.admin.LoadBalancer.ListLoadBalancerRules(p)
	require.NoError(f.t, err)
	return r.LoadBalancerRules
}

func (f *fixture) addresses() []*cs.PublicIpAddress {
	p := f.admin.Address.NewListPublicIpAddressesParams()
	p.SetListall(true)
	r, err := f.admin.Address.ListPublicIpAddresses(p)
	require.NoError(f.t, err)
	return r.PublicIpAddresses
}

func (f *fixture) firewall() []*cs.FirewallRule {
	p := f.admin.Firewall.NewListFirewallRulesParams()
	p.SetListall(true)
	r, err := f.admin.Firewall.ListFirewallRules(p)
	require.NoError(f.t, err)
	return r.FirewallRules
}

func (f *fixture) members(ruleID string) []string {
	r, err := f.admin.LoadBalancer.ListLoadBalancerRuleInstances(f.admin.LoadBalancer.NewListLoadBalancerRuleInstancesParams(ruleID))
	require.NoError(f.t, err)
	var ids []string
	for _, v := range r.LoadBalancerRuleInstances {
		ids = append(ids, v.Id)
	}
	slices.Sort(ids)
	return ids
}

func (f *fixture) nodes(names ...string) []*v1.Node {
	var out []*v1.Node
	for _, n := range names {
		id, _ := f.emu.AddMachine(n)
		out = append(out, node(n, providerid.CloudStack(id)))
	}
	return out
}

func TestTCPAndUDPOnOnePortShareAnAddressAndTheirOpenings(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1", "worker-2")
	svc := service("dns",
		v1.ServicePort{Name: "dns-tcp", Protocol: v1.ProtocolTCP, Port: 53, NodePort: 30053},
		v1.ServicePort{Name: "dns-udp", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30054})
	svc.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}

	st := f.ensured(svc, nodes)
	require.Len(t, st.Ingress, 1)
	addr := st.Ingress[0].IP

	rules := f.rules()
	require.Len(t, rules, 2)
	name := lbName(svc)
	var names []string
	for _, r := range rules {
		names = append(names, r.Name)
		assert.Equal(t, addr, r.Publicip)
		assert.Equal(t, "53", r.Publicport)
		assert.Equal(t, "roundrobin", r.Algorithm)
		assert.Len(t, f.members(r.Id), 2, "both Nodes' machines serve %s", r.Name)
	}
	slices.Sort(names)
	assert.Equal(t, []string{name + "-tcp-53", name + "-udp-53"}, names, "the peer's names")

	fw := f.firewall()
	require.Len(t, fw, 2, "one firewall rule per protocol")
	for _, r := range fw {
		assert.Equal(t, "198.51.100.0/24", r.Cidrlist, "the source ranges, not everyone")
		assert.Equal(t, 53, r.Startport)
	}

	// The address is tagged as the Service's.
	addrs := f.addresses()
	require.Len(t, addrs, 1)
	tags := map[string]string{}
	for _, tg := range addrs[0].Tags {
		tags[tg.Key] = tg.Value
	}
	assert.Equal(t, map[string]string{tagCluster: clusterUID, tagService: string(svc.UID), tagServiceName: "default/dns"}, tags)

	// Unchanged: a pass writes nothing.
	f.emu.ResetCalls()
	f.ensured(svc, nodes)
	assert.Zero(t, writes(f.emu), "a pass over a converged load balancer writes nothing")

	f.remove(svc)
	assert.Empty(t, f.rules())
	assert.Empty(t, f.firewall())
	assert.Empty(t, f.addresses(), "the address associated for the Service is released")
}

func writes(e *emulator.Emulator) int {
	n := 0
	for _, c := range e.Calls() {
		if c.Method == http.MethodPost {
			n += c.Count
		}
	}
	return n
}

// The CCM's writes go by POST, the command and signature in a form body
// (calls.go, as cloudstack-go's PostForm): the emulator counts them, and
// faults match them, by their command, as for the GETs.
func TestAFaultAimedAtAPostedCommandFailsThatCommand(t *testing.T) {
	f, nodes, svc := webOnOneNode(t)
	f.emu.InjectFault(core.Fault{Route: "POST createLoadBalancerRule", Status: 530, Count: 1})
	_, err := f.ensure(svc, nodes)
	require.Error(t, err, "the rule's creation fails")
	assert.Equal(t, 1, calls(f.emu, "createLoadBalancerRule"), "%v", f.emu.Calls())
	assert.Equal(t, 1, calls(f.emu, "associateIpAddress"), "%v", f.emu.Calls())
	assert.Empty(t, f.rules())

	f.ensured(svc, nodes)
	assert.Len(t, f.rules(), 1)
	assert.Equal(t, 2, calls(f.emu, "createLoadBalancerRule"), "%v", f.emu.Calls())
	assert.Equal(t, 1, calls(f.emu, "associateIpAddress"), "the next pass takes up the address associated: %v", f.emu.Calls())
}

// posted counts the calls made with POST (the writes) by command.
func posted(e *emulator.Emulator) map[string]int {
	n := map[string]int{}
	for _, c := range e.Calls() {
		if c.Method == http.MethodPost {
			n[strings.TrimPrefix(c.Route, "POST ")] += c.Count
		}
	}
	return n
}

func TestNodeChurnChangesTheRulesMachines(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1", "worker-2", "worker-3")
	svc := service("web", httpPort)
	f.ensured(svc, nodes[:2])
	rules := f.rules()
	require.Len(t, rules, 1)
	assert.Len(t, f.members(rules[0].Id), 2)

	var err error
	for range 10 {
		err = f.c.UpdateLoadBalancer(context.Background(), "kubernetes", svc, nodes[1:])
		if !errors.As(err, new(*api.RetryError)) {
			break
		}
	}
	require.NoError(t, err)
	want := []string{idOf(nodes[1]), idOf(nodes[2])}
	slices.Sort(want)
	assert.Equal(t, want, f.members(rules[0].Id))
}

func idOf(n *v1.Node) string { id, _ := providerid.ParseCloudStack(n.Spec.ProviderID); return id }

func TestAUsersAddressIsUsedAndKept(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1")
	// The user associated an address themselves.
	got := f.associateUntagged()

	svc := service("web", httpPort)
	svc.Spec.LoadBalancerIP = got.Ipaddress
	st := f.ensured(svc, nodes)
	assert.Equal(t, got.Ipaddress, st.Ingress[0].IP)

	f.remove(svc)
	assert.Empty(t, f.rules())
	addrs := f.addresses()
	require.Len(t, addrs, 1, "the user's address is kept")
	assert.Equal(t, got.Ipaddress, addrs[0].Ipaddress)
	assert.Empty(t, addrs[0].Tags, "and not tagged")
}

func TestAFreeRequestedAddressIsAssociatedAndReleased(t *testing.T) {
	f, nodes, svc := webOnOneNode(t)
	svc.Spec.LoadBalancerIP = "203.0.113.77"
	f.associatedAndReleased(svc, nodes)
}

// associatedAndReleased ensures svc's load balancer, on its loadBalancerIP,
// then deletes it: the address, associated for the Service, goes with it.
func (f *fixture) associatedAndReleased(svc *v1.Service, nodes []*v1.Node) {
	f.t.Helper()
	st, err := f.ensure(svc, nodes)
	require.NoError(f.t, err)
	assert.Equal(f.t, svc.Spec.LoadBalancerIP, st.Ingress[0].IP)
	f.remove(svc)
	assert.Empty(f.t, f.addresses(), "associated for the Service, released with it")
}

func TestAnAddressOutOfReachCreatesNothing(t *testing.T) {
	f, nodes, svc := webOnOneNode(t)
	svc.Spec.LoadBalancerIP = "192.0.2.10" // not a public address of the zone
	_, err := f.ensure(svc, nodes)
	requireProblem(t, err, outcome.ReasonAddressUnavailable)
	assert.Empty(t, f.addresses())
	assert.Empty(t, f.rules())
}

func TestInvalidAnnotationsChangeNothing(t *testing.T) {
	f, nodes, svc := webOnOneNode(t)
	svc.Annotations = map[string]string{"service.beta.kubernetes.io/cloudstack-load-balancer-source-cidrs": "10.0.0.0/33"}
	f.emu.ResetCalls()
	_, err := f.ensure(svc, nodes)
	requireProblem(t, err, outcome.ReasonInvalidAnnotation)
	assert.Zero(t, writes(f.emu))
}

func TestThePeersRulesAreAdoptedNotDuplicated(t *testing.T) {
	f, nodes, svc := webOnOneNode(t)
	fx := f.emu.Fixture()

	// What the peer made: an address, a rule named <lbname>-tcp-80 with the
	// machine, a firewall rule. No tags. And a rule whose name only contains
	// the load balancer name, which its keyword search would take.
	user := f.user()
	addr := f.associateUntagged()
	rp := user.LoadBalancer.NewCreateLoadBalancerRuleParams("roundrobin", lbName(svc)+"-tcp-80", 30080, 80)
	rp.SetPublicipid(addr.Id)
	rp.SetNetworkid(fx.NetworkID)
	rp.SetProtocol("tcp")
	peer, err := user.LoadBalancer.CreateLoadBalancerRule(rp)
	require.NoError(t, err)
	as := user.LoadBalancer.NewAssignToLoadBalancerRuleParams(peer.Id)
	as.SetVirtualmachineids([]string{idOf(nodes[0])})
	_, err = user.LoadBalancer.AssignToLoadBalancerRule(as)
	require.NoError(t, err)
	decoy := user.LoadBalancer.NewCreateLoadBalancerRuleParams("roundrobin", "x"+lbName(svc)+"-tcp-81", 30081, 81)
	decoy.SetPublicipid(addr.Id)
	decoy.SetNetworkid(fx.NetworkID)
	_, err = user.LoadBalancer.CreateLoadBalancerRule(decoy)
	require.NoError(t, err)

	st := f.ensured(svc, nodes)
	assert.Equal(t, addr.Ipaddress, st.Ingress[0].IP, "the peer's address is kept")
	assert.Len(t, f.rules(), 2, "nothing duplicated, the decoy untouched")

	f.remove(svc)
	left := f.rules()
	require.Len(t, left, 1, "only the decoy is left: a keyword match is never taken for the Service's rule")
	assert.Equal(t, "x"+lbName(svc)+"-tcp-81", left[0].Name)
	assert.Len(t, f.addresses(), 1, "an address with another's rule on it is kept")
}

func TestVPCTiersOpenPortsWithTaggedACLItems(t *testing.T) {
	f := newFixture(t, emulator.Options{VPC: true})
	nodes := f.nodes("worker-1")
	svc := service("web", httpPort)
	svc.Annotations = map[string]string{"service.beta.kubernetes.io/cloudstack-load-balancer-proxy-protocol": "true"}
	f.ensured(svc, nodes)
	rules := f.rules()
	require.Len(t, rules, 1)
	assert.Equal(t, "tcp-proxy", rules[0].Protocol)
	assert.Equal(t, lbName(svc)+"-tcp-proxy-80", rules[0].Name)

	p := f.admin.NetworkACL.NewListNetworkACLsParams()
	p.SetListall(true)
	acl, err := f.admin.NetworkACL.ListNetworkACLs(p)
	require.NoError(t, err)
	require.Len(t, acl.NetworkACLs, 1)
	assert.Equal(t, "tcp", acl.NetworkACLs[0].Protocol, "TCP (the peer asks tcp-proxy, which ACLs refuse)")

	// The item deleted behind the CCM's back: the drift check sees it, and
	// the next pass makes it again.
	s := f.c.lb
	s.Relist()
	lb, found, err := s.Listed(context.Background(), svc)
	require.NoError(t, err)
	require.True(t, found)
	why, err := s.Drift(context.Background(), svc, lbcycle.Record{}, lb)
	require.NoError(t, err)
	assert.Empty(t, why, "as converged")
	_, err = f.admin.NetworkACL.DeleteNetworkACL(f.admin.NetworkACL.NewDeleteNetworkACLParams(acl.NetworkACLs[0].Id))
	require.NoError(t, err)
	s.Relist()
	why, err = s.Drift(context.Background(), svc, lbcycle.Record{}, lb)
	require.NoError(t, err)
	assert.Equal(t, "no ACL item of the tier's list opens port 80/tcp of "+lb.Obj.addr.IP, why)
	f.ensured(svc, nodes)
	acl, err = f.admin.NetworkACL.ListNetworkACLs(p)
	require.NoError(t, err)
	require.Len(t, acl.NetworkACLs, 1, "made again")

	f.remove(svc)
	acl, err = f.admin.NetworkACL.ListNetworkACLs(p)
	require.NoError(t, err)
	assert.Empty(t, acl.NetworkACLs)
	assert.Empty(t, f.addresses())
}

func TestSlowJobsNeverHoldAWorker(t *testing.T) {
	f := newFixture(t, emulator.Options{JobDelay: time.Hour})
	nodes := f.nodes("worker-1")
	svc := service("web", httpPort)
	start := time.Now()
	for range 3 {
		_, err := f.c.EnsureLoadBalancer(context.Background(), "kubernetes", svc, nodes)
		require.ErrorAs(t, err, new(*api.RetryError))
	}
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Len(t, f.addresses(), 1, "one address, however many passes")
}

func TestDoctorNamesWhatToFix(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	f.emu.AddMachine("worker-1")
	res := f.c.Diagnose(context.Background())
	require.Len(t, res, 3)
	for _, r := range res {
		assert.Equal(t, doctor.OK, r.Status, "%s: %s", r.Check, r.Detail)
	}
	assert.Contains(t, res[0].Detail, "1 virtual machine(s) visible")

	cfg := f.c.cfg
	cfg.Global.SecretKey = "not-the-secret"
	c, err := New(cfg, ProviderName)
	require.NoError(t, err)
	res = c.Diagnose(context.Background())
	require.Len(t, res, 1)
	assert.Equal(t, doctor.Fail, res[0].Status)
	assert.Contains(t, res[0].Fix, "api-key and secret-key")
	assert.NotContains(t, res[0].Detail, "not-the-secret")
}
