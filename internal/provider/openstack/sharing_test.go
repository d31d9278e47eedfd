package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

func (tg *contractTarget) octavia(t *testing.T, c *Cloud) *gophercloud.ServiceClient {
	t.Helper()
	octavia, err := clientOf(c).OctaviaClient(t.Context())
	require.NoError(t, err)
	return octavia
}

// listenersOf is each listener of the load balancer as "PROTO/port".
func listenersOf(t *testing.T, octavia *gophercloud.ServiceClient, lbID string) []string {
	t.Helper()
	var out []string
	for _, l := range lbListeners(t, octavia, lbID) {
		out = append(out, l.Protocol+"/"+strconv.Itoa(l.ProtocolPort))
	}
	sort.Strings(out)
	return out
}

// sdkAll is every item of pager's pages, read with the SDK (as someone
// else would read the cloud).
func sdkAll[T any](t *testing.T, pager pagination.Pager, extract func(pagination.Page) ([]T, error)) []T {
	t.Helper()
	pages, err := pager.AllPages(t.Context())
	require.NoError(t, err)
	all, err := extract(pages)
	require.NoError(t, err)
	return all
}

// getLB is the load balancer id as c's API reads it, and whether it exists.
func getLB(t *testing.T, c *Cloud, id string) (*osapi.LoadBalancer, bool) {
	t.Helper()
	lb, err := c.api.GetLoadBalancer(t.Context(), id)
	if errors.Is(err, outcome.ErrNotFound) {
		return nil, false
	}
	require.NoError(t, err)
	return lb, lb.ProvisioningStatus != "DELETED"
}

func fipsAt(t *testing.T, tg *contractTarget, addr string) []floatingips.FloatingIP {
	t.Helper()
	fips := sdkAll(t, floatingips.List(tg.network, floatingips.ListOpts{FloatingIP: addr}), floatingips.ExtractFloatingIPs)
	return fips
}

func sharingService(name, lbID string, ports ...v1.ServicePort) *v1.Service {
	svc := contractService(name, map[string]string{"loadbalancer.openstack.org/load-balancer-id": lbID})
	svc.Spec.Ports = ports
	return svc
}

func tcpPort(port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Protocol: v1.ProtocolTCP, Port: port, NodePort: nodePort}
}

// onlyReads fails the test when the emulator saw a write since its calls were
// reset (nothing to check against the real OpenStack).
func onlyReads(t *testing.T, tg *contractTarget, why string) {
	t.Helper()
	if tg.emu == nil {
		return
	}
	for _, call := range tg.emu.Calls() {
		if !strings.Contains(call.Route, "/auth/tokens") { // a new client's token
			assert.Contains(t, []string{http.MethodGet, http.MethodHead}, call.Method, "%s: %s", why, call.Route)
		}
	}
}

// A load balancer shared by load-balancer-id, as cloud-provider-openstack
// shares it: every Service recorded in its tags, max-shared-lb honoured, a
// port another Service holds refused before any write, and deleting the
// Service it was made for leaves the others' listeners and address alone;
// the last one deletes it and its floating IP.
func TestContractSharedLoadBalancer(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	octavia := tg.octavia(t, c)
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201")}

	owner := contractService(contractName("owner"), nil)
	st := ensure(t, c, owner, nodes)
	addr := st.Ingress[0].IP
	lb, err := c.lb.findLB(t.Context(), owner)
	require.NoError(t, err)
	require.NotNil(t, lb)

	sharer := sharingService(contractName("sharer"), lb.ID, tcpPort(8080, 30808))
	st = ensure(t, c, sharer, nodes)
	assert.Equal(t, addr, st.Ingress[0].IP, "a sharer publishes the load balancer's floating IP")
	assert.Equal(t, []string{"TCP/80", "TCP/8080", "UDP/53"}, listenersOf(t, octavia, lb.ID))
	got, _ := getLB(t, c, lb.ID)
	assert.Contains(t, got.Tags, lbName("contract", owner))
	assert.Contains(t, got.Tags, lbName("contract", sharer), "the sharer is recorded on the load balancer")

	// Converged: a sharer's pass writes nothing.
	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	ensure(t, c, sharer, nodes)
	onlyReads(t, tg, "a converged sharer")

	// A third is one beyond max-shared-lb (2, the peer's default): refused, nothing written.
	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	third := sharingService(contractName("third"), lb.ID, tcpPort(9090, 30909))
	p, ok := outcome.AsProblem(settle(t, c, third))
	require.True(t, ok)
	assert.Equal(t, reasonSharingRefused, p.Reason)
	assert.Contains(t, p.Message, "max-shared-lb = 2")
	onlyReads(t, tg, "a Service beyond max-shared-lb")

	// With room for it, a port the owner holds is refused, naming the owner.
	roomy := tg.cloud(t, "\n[LoadBalancer]\nmax-shared-lb = 4\n")
	roomy.Cluster.Set(c.Cluster.Get())
	clash := sharingService(contractName("clash"), lb.ID, tcpPort(8443, 30843), tcpPort(80, 30081))
	p, ok = outcome.AsProblem(settle(t, roomy, clash))
	require.True(t, ok)
	assert.Equal(t, reasonPortTaken, p.Reason)
	assert.Contains(t, p.Message, "TCP/80 (Service contract/"+owner.Name+")")
	onlyReads(t, tg, "a port clash")
	internal := sharingService(contractName("internal"), lb.ID, tcpPort(7070, 30707))
	internal.Annotations["service.beta.kubernetes.io/openstack-internal-load-balancer"] = "true"
	p, ok = outcome.AsProblem(settle(t, roomy, internal))
	require.True(t, ok)
	assert.Equal(t, reasonSharingRefused, p.Reason)
	assert.Equal(t, []string{"TCP/80", "TCP/8080", "UDP/53"}, listenersOf(t, octavia, lb.ID), "nothing built for the refused")

	// Deleting the Service it was made for: its listeners and tags go, the
	// load balancer and its address stay for the sharer.
	deleteLB(t, c, owner)
	got, exists := getLB(t, c, lb.ID)
	require.True(t, exists, "a load balancer another Service shares is not deleted")
	assert.Equal(t, []string{"TCP/8080"}, listenersOf(t, octavia, lb.ID))
	assert.NotContains(t, got.Tags, lbName("contract", owner))
	assert.NotContains(t, got.Tags, tagService+string(owner.UID))
	require.Len(t, fipsAt(t, tg, addr), 1, "the address stays with the load balancer")
	st = ensure(t, c, sharer, nodes)
	assert.Equal(t, addr, st.Ingress[0].IP)

	// The last one deletes it, and the floating IP allocated for it.
	deleteLB(t, c, sharer)
	gone(t, c, lb.ID)
	assert.Empty(t, fipsAt(t, tg, addr), "the floating IP goes with the load balancer")
}

// A Service that shares a load balancer a person made leaves it as it found
// it: its own listeners go, the load balancer and what others have stay.
func TestContractASharedLoadBalancerAPersonMadeIsNeverDeleted(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	octavia := tg.octavia(t, c)
	created, err := loadbalancers.Create(t.Context(), octavia, loadbalancers.CreateOpts{
		Name: contractName("by-hand"), VipNetworkID: tg.netID,
		Listeners: []listeners.CreateOpts{{Name: "theirs", Protocol: listeners.ProtocolTCP, ProtocolPort: 443}},
	}).Extract()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.lb.deleteCascade(context.Background(), created.ID) })
	vip := active(t, c, created.ID)
	// It has no floating IP: a person gives it one.
	pub := publicNetwork(t, tg, c)
	fip, err := floatingips.Create(t.Context(), tg.network, floatingips.CreateOpts{FloatingNetworkID: pub, PortID: vip.VipPortID}).Extract()
	require.NoError(t, err)
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), tg.network, fip.ID).ExtractErr() })

	svc := sharingService(contractName("guest"), created.ID, tcpPort(80, 30080), tcpPort(443, 30443))
	p, ok := outcome.AsProblem(settle(t, c, svc))
	require.True(t, ok)
	assert.Equal(t, reasonPortTaken, p.Reason, p.Message)
	svc.Spec.Ports = svc.Spec.Ports[:1]
	st := ensure(t, c, svc, nil)
	assert.Equal(t, fip.FloatingIP, st.Ingress[0].IP)
	assert.Equal(t, []string{"TCP/443", "TCP/80"}, listenersOf(t, octavia, created.ID))

	deleteLB(t, c, svc)
	lb, exists := getLB(t, c, created.ID)
	require.True(t, exists, "a load balancer a person made is never deleted")
	assert.Equal(t, []string{"TCP/443"}, listenersOf(t, octavia, created.ID))
	assert.NotContains(t, lb.Tags, lbName("contract", svc))
	require.Len(t, fipsAt(t, tg, fip.FloatingIP), 1)
}

// The load balancer cloud-provider-openstack made for a Service, with the
// load-balancer-id it writes on the Service, is taken over as it is: the
// same floating IP, the same listeners and pools, one write (the tags);
// deleting the Service deletes it and the floating IP the peer allocated.
func TestContractTakesOverThePeersLoadBalancer(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	octavia := tg.octavia(t, c)
	svc := contractService(contractName("peer"), nil)
	svc.Spec.Ports = svc.Spec.Ports[:1]
	name := lbName("contract", svc)
	// As the peer builds it (pkg/openstack/loadbalancer.go: the load balancer
	// tagged with its name, listener_<i>_<name> and pool_<i>_<name> tagged
	// likewise, members named by Node, the default timeouts and no limit).
	limit, cd, mc, md, ti := -1, 50000, 5000, 50000, 0
	created, err := loadbalancers.Create(t.Context(), octavia, loadbalancers.CreateOpts{
		Name: name, Description: "Kubernetes external service " + svc.Namespace + "/" + svc.Name + " from cluster contract",
		VipNetworkID: tg.netID, Tags: []string{name},
		Listeners: []listeners.CreateOpts{{
			Name: "listener_0_" + name, Protocol: listeners.ProtocolTCP, ProtocolPort: 80, ConnLimit: &limit, Tags: []string{name},
			TimeoutClientData: &cd, TimeoutMemberConnect: &mc, TimeoutMemberData: &md, TimeoutTCPInspect: &ti,
			DefaultPool: &pools.CreateOpts{Name: "pool_0_" + name, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin,
				Members: []pools.CreateMemberOpts{{Name: "n1", Address: "10.0.0.201", ProtocolPort: 30080}}},
		}},
	}).Extract()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.lb.deleteCascade(context.Background(), created.ID) })
	lb := active(t, c, created.ID)
	fip, err := floatingips.Create(t.Context(), tg.network, floatingips.CreateOpts{FloatingNetworkID: publicNetwork(t, tg, c), PortID: lb.VipPortID,
		Description: "Floating IP for Kubernetes external service " + svc.Namespace + "/" + svc.Name + " from cluster contract"}).Extract()
	require.NoError(t, err)
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), tg.network, fip.ID).ExtractErr() })
	before := listenerIDs(t, octavia, lb.ID)
	svc.Annotations = map[string]string{"loadbalancer.openstack.org/load-balancer-id": lb.ID}

	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	st := ensure(t, c, svc, []*v1.Node{contractNode("n1", "", "10.0.0.201")})
	assert.Equal(t, fip.FloatingIP, st.Ingress[0].IP, "the same address")
	assert.Equal(t, before, listenerIDs(t, octavia, lb.ID), "nothing rebuilt")
	if tg.emu != nil {
		var writes []string
		for _, call := range tg.emu.Calls() {
			if call.Method != http.MethodGet {
				writes = append(writes, call.Route)
			}
		}
		assert.Equal(t, []string{"PUT /load-balancer/v2.0/lbaas/loadbalancers/{id}"}, writes, "one write: the tags")
	}
	got, _ := getLB(t, c, lb.ID)
	assert.True(t, c.lb.owned(got, svc), "tagged as this cluster's, for the Service")

	deleteLB(t, c, svc)
	gone(t, c, lb.ID)
	assert.Empty(t, fipsAt(t, tg, fip.FloatingIP), "the peer's floating IP goes with it")
}

func listenerIDs(t *testing.T, octavia *gophercloud.ServiceClient, lbID string) []string {
	t.Helper()
	var ids []string
	for _, l := range lbListeners(t, octavia, lbID) {
		ids = append(ids, l.ID+"/"+l.DefaultPoolID)
	}
	slices.Sort(ids)
	return ids
}

// lbListeners lists the load balancer's listeners.
func lbListeners(t *testing.T, octavia *gophercloud.ServiceClient, lbID string) []listeners.Listener {
	t.Helper()
	ls := sdkAll(t, listeners.List(octavia, listeners.ListOpts{LoadbalancerID: lbID}), listeners.ExtractListeners)
	return ls
}

// publicNetwork is the external network floating IPs come from.
func publicNetwork(t *testing.T, tg *contractTarget, c *Cloud) string {
	t.Helper()
	id, err := c.lb.onlyExternalNetwork(t.Context())
	require.NoError(t, err)
	return id
}

// gone waits for the load balancer to be deleted.
func gone(t *testing.T, c *Cloud, id string) {
	t.Helper()
	require.NoError(t, poll(3*time.Minute, func() error {
		if _, exists := getLB(t, c, id); exists {
			return fmt.Errorf("load balancer %s still exists", id)
		}
		return nil
	}))
}

// active waits for the load balancer to be ACTIVE.
func active(t *testing.T, c *Cloud, id string) *osapi.LoadBalancer {
	t.Helper()
	var lb *osapi.LoadBalancer
	require.NoError(t, poll(3*time.Minute, func() error {
		if lb, _ = getLB(t, c, id); lb == nil || lb.ProvisioningStatus != "ACTIVE" {
			return fmt.Errorf("load balancer %s is not ACTIVE", id)
		}
		return nil
	}))
	return lb
}
