package openstack

// The contract suite: what the provider does, through the real gophercloud client,
// against a target that is either the emulator (internal/emulator/openstack, in
// `make test`) or the real OpenStack of test/openstack (in `make test-openstack`,
// with OVERCAST_CONTRACT_OPENSTACK_ENV naming the harness's openstack.env). Both
// must pass the same assertions: a behaviour the real one has and the emulator
// lacks is an emulator bug.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
	"github.com/overcast-ccm/overcast/internal/metricstest"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// contractTarget is where the suite runs.
type contractTarget struct {
	name                                 string
	conf                                 string // the CCM's cloud.conf
	passwordConf                         string // the same with the CCM's user and password
	imageID, flavorID, flavorName, netID string
	publicCIDR                           netip.Prefix
	routerID                             string
	compute, network                     *gophercloud.ServiceClient // as the CCM's user
	emu                                  *emulator.Emulator         // nil against the real one
}

var targetCounter atomic.Int64

func newContractTarget(t *testing.T) *contractTarget {
	return newContractTargetWith(t, emulator.Options{})
}

// newContractTargetWith is the target with these emulator options (the real
// OpenStack when there is one).
func newContractTargetWith(t *testing.T, opts emulator.Options) *contractTarget {
	t.Helper()
	if path := os.Getenv("OVERCAST_CONTRACT_OPENSTACK_ENV"); path != "" {
		return realTarget(t, path)
	}
	opts.ProvisioningDelay = 200 * time.Millisecond
	e := coretest.Serve(t, emulator.New(opts), nil)
	f := e.Fixture()
	tg := &contractTarget{
		name: "emulator", conf: e.CloudConf(), imageID: f.ImageID, flavorID: f.FlavorID, flavorName: f.FlavorName,
		netID: f.NetworkID, publicCIDR: netip.MustParsePrefix("203.0.113.0/24"), routerID: f.RouterID, emu: e,
	}
	tg.passwordConf = replaceGlobal(tg.conf, fmt.Sprintf("auth-url=%s/identity/v3\nusername=%s\npassword=%s\ntenant-id=%s\ndomain-id=default\nregion=RegionOne\n",
		e.URL(), f.UserName, f.Password, f.ProjectID))
	tg.clients(t, gophercloud.AuthOptions{
		IdentityEndpoint: e.URL() + "/identity/v3", ApplicationCredentialID: f.AppCredentialID, ApplicationCredentialSecret: f.AppCredentialSecret,
	}, "RegionOne")
	return tg
}

func realTarget(t *testing.T, path string) *contractTarget {
	t.Helper()
	env := map[string]string{}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = strings.Trim(v, `'"`)
		}
	}
	conf, err := os.ReadFile(env["OVERCAST_OS_CLOUD_CONF"])
	require.NoError(t, err)
	passwordConf, err := os.ReadFile(env["OVERCAST_OS_CLOUD_PASSWORD_CONF"])
	require.NoError(t, err)
	tg := &contractTarget{
		name: "real", conf: string(conf), passwordConf: string(passwordConf), imageID: env["OVERCAST_OS_IMAGE_ID"], flavorID: env["OVERCAST_OS_FLAVOR_ID"],
		flavorName: env["OVERCAST_OS_FLAVOR_NAME"], netID: env["OVERCAST_OS_NETWORK_ID"],
		publicCIDR: netip.MustParsePrefix("203.0.113.0/24"), routerID: env["OVERCAST_OS_ROUTER_ID"],
	}
	tg.clients(t, gophercloud.AuthOptions{
		IdentityEndpoint: env["OS_AUTH_URL"], ApplicationCredentialID: env["OVERCAST_OS_APPLICATION_CREDENTIAL_ID"],
		ApplicationCredentialSecret: env["OVERCAST_OS_APPLICATION_CREDENTIAL_SECRET"],
	}, env["OS_REGION_NAME"])
	return tg
}

func (tg *contractTarget) clients(t *testing.T, ao gophercloud.AuthOptions, region string) {
	t.Helper()
	ao.AllowReauth = true
	p, err := gopenstack.AuthenticatedClient(t.Context(), ao)
	require.NoError(t, err)
	eo := gophercloud.EndpointOpts{Region: region}
	tg.compute, err = gopenstack.NewComputeV2(p, eo)
	require.NoError(t, err)
	tg.compute.Microversion = "2.47"
	tg.network, err = gopenstack.NewNetworkV2(p, eo)
	require.NoError(t, err)
}

// cloud is the provider under test, with a cluster UID of its own.
func (tg *contractTarget) cloud(t *testing.T, extra string) *Cloud {
	t.Helper()
	return tg.cloudFrom(t, tg.conf+extra)
}

// replaceGlobal is conf with global as its [Global] section.
func replaceGlobal(conf, global string) string {
	start := strings.Index(conf, "[Global]")
	end := strings.Index(conf[start+1:], "\n[")
	return conf[:start] + "[Global]\n" + global + conf[start+1+end:]
}

func (tg *contractTarget) cloudFrom(t *testing.T, conf string) *Cloud {
	t.Helper()
	cfg, err := Read(strings.NewReader(conf))
	require.NoError(t, err)
	c, err := New(cfg)
	require.NoError(t, err)
	c.Cluster.Set(fmt.Sprintf("contract-%d-%d", os.Getpid(), targetCounter.Add(1)))
	return c
}

type contractServer struct{ id, name, fixedIP string }

// server boots a server through Nova and waits for its address; it is deleted at
// the end of the test.
func (tg *contractTarget) server(t *testing.T, name string) contractServer {
	t.Helper()
	ctx := context.Background()
	created, err := servers.Create(ctx, tg.compute, servers.CreateOpts{
		Name: name, ImageRef: tg.imageID, FlavorRef: tg.flavorID, Networks: []servers.Network{{UUID: tg.netID}},
	}, nil).Extract()
	require.NoError(t, err)
	t.Cleanup(func() { _ = servers.Delete(context.Background(), tg.compute, created.ID).ExtractErr() })
	var s contractServer
	require.NoError(t, poll(2*time.Minute, func() error {
		var got struct {
			Status    string `json:"status"`
			Addresses map[string][]struct {
				Addr string `json:"addr"`
			} `json:"addresses"`
		}
		if err := servers.Get(ctx, tg.compute, created.ID).ExtractInto(&got); err != nil {
			return err
		}
		for _, as := range got.Addresses {
			for _, a := range as {
				s = contractServer{id: created.ID, name: name, fixedIP: a.Addr}
			}
		}
		if got.Status != "ACTIVE" || s.fixedIP == "" {
			return fmt.Errorf("server %s is %s", name, got.Status)
		}
		return nil
	}))
	return s
}

func poll(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		var p backoffPermanent
		if errors.As(err, &p) {
			return p.error
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still failing after %s: %w", timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func contractName(prefix string) string { return fmt.Sprintf("%s-%06d", prefix, rand.IntN(1000000)) }

func contractNode(name, providerID, ip string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
	if ip != "" {
		n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}
	}
	return n
}

func TestContractInstances(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	ctx := t.Context()
	s := tg.server(t, contractName("contract-node"))

	node := contractNode(s.name, "", "")
	var md *cloudprovider.InstanceMetadata
	require.NoError(t, poll(time.Minute, func() error {
		var err error
		md, err = c.InstanceMetadata(ctx, node)
		return err
	}), "a Node named after a server is found by name")
	assert.Equal(t, "openstack:///"+s.id, md.ProviderID)
	assert.Equal(t, tg.flavorName, md.InstanceType)
	assert.Equal(t, "nova", md.Zone)
	assert.Contains(t, md.NodeAddresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: s.fixedIP})
	assert.Contains(t, md.NodeAddresses, v1.NodeAddress{Type: v1.NodeHostName, Address: s.name})

	node.Spec.ProviderID = md.ProviderID
	exists, err := c.InstanceExists(ctx, node)
	require.NoError(t, err)
	assert.True(t, exists)
	down, err := c.InstanceShutdown(ctx, node)
	require.NoError(t, err)
	assert.False(t, down)

	_, err = c.InstanceMetadata(ctx, contractNode(contractName("contract-nobody"), "", ""))
	assert.ErrorIs(t, err, cloudprovider.InstanceNotFound, "a Node that matches no server")

	require.NoError(t, servers.Stop(ctx, tg.compute, s.id).ExtractErr())
	require.NoError(t, poll(2*time.Minute, func() error {
		c.servers.Invalidate()
		down, err := c.InstanceShutdown(ctx, node)
		if err != nil || !down {
			return fmt.Errorf("shutdown %v, err %w", down, err)
		}
		return nil
	}), "SHUTOFF is shutdown")

	require.NoError(t, servers.Delete(ctx, tg.compute, s.id).ExtractErr())
	require.NoError(t, poll(2*time.Minute, func() error {
		c.servers.Invalidate()
		exists, err := c.InstanceExists(ctx, node)
		if err != nil || exists {
			return fmt.Errorf("exists %v, err %w", exists, err)
		}
		return nil
	}), "a deleted server does not exist")
}

// TestContractServerChangesCostOneCall holds Nova to what the snapshot's
// incremental refresh relies on, and the refresh to its cost: changes-since
// lists a server deleted since (status DELETED) and a new one, not the
// unchanged ones; one such listing takes the new server in and the deleted one
// out.
func TestContractServerChangesCostOneCall(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	ctx := t.Context()
	kept, gone := tg.server(t, contractName("contract-kept")), tg.server(t, contractName("contract-gone"))
	for _, s := range []contractServer{kept, gone} {
		_, found, err := c.servers.Get(ctx, "id/"+s.id)
		require.NoError(t, err)
		require.True(t, found, "the first, full listing has %s", s.name)
	}
	// Nova's times have whole seconds: the next server is created at least one
	// whole second after the others last changed.
	time.Sleep(2 * time.Second)
	fresh := tg.server(t, contractName("contract-fresh"))
	var created struct {
		Created string `json:"created"`
	}
	require.NoError(t, servers.Get(ctx, tg.compute, fresh.id).ExtractInto(&created))
	require.NoError(t, servers.Delete(ctx, tg.compute, gone.id).ExtractErr())
	require.NoError(t, poll(2*time.Minute, func() error {
		err := servers.Get(ctx, tg.compute, gone.id).Err
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil
		}
		return fmt.Errorf("server %s is still there: %w", gone.name, err)
	}))

	var since []osapi.Server
	pages, err := servers.List(tg.compute, servers.ListOpts{ChangesSince: created.Created}).AllPages(ctx)
	require.NoError(t, err)
	require.NoError(t, servers.ExtractServersInto(pages, &since))
	status := map[string]string{}
	var mark string
	for _, s := range since {
		status[s.ID] = s.Status
		mark = max(mark, s.Updated)
	}
	assert.Equal(t, "DELETED", status[gone.id], "changes-since lists a deleted server as DELETED")
	assert.Equal(t, "ACTIVE", status[fresh.id], "and a new one")
	assert.NotContains(t, status, kept.id, "but not an unchanged one")
	assert.NotEmpty(t, mark, "with its updated time")

	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	incremental := snapshotRefreshes(t, "incremental")
	c.servers.Invalidate()
	_, found, err := c.servers.Get(ctx, "name/"+fresh.name)
	require.NoError(t, err)
	assert.True(t, found, "the incremental refresh takes the new server in")
	_, found, err = c.servers.Get(ctx, "id/"+gone.id)
	require.NoError(t, err)
	assert.False(t, found, "and the deleted one out")
	_, found, err = c.servers.Get(ctx, "id/"+kept.id)
	require.NoError(t, err)
	assert.True(t, found, "and keeps the unchanged one")
	node := contractNode(gone.name, "openstack:///"+gone.id, "")
	exists, err := c.InstanceExists(ctx, node)
	require.NoError(t, err)
	assert.False(t, exists, "the deleted server's Node is gone, confirmed by a GET")
	assert.Equal(t, incremental+1, snapshotRefreshes(t, "incremental"), "one incremental listing")
	if tg.emu != nil {
		byRoute := map[string]int{}
		for _, call := range tg.emu.Calls() {
			if call.Service == "compute" {
				byRoute[call.Route] += call.Count
			}
		}
		assert.Equal(t, map[string]int{"GET /compute/v2.1/servers/detail": 1, "GET /compute/v2.1/servers/{id}": 1}, byRoute,
			"one listing of the changes, and the GET that confirms the deletion")
	}
}

// snapshotRefreshes reads overcast_snapshot_refreshes_total for OpenStack's
// successful refreshes of one kind.
func snapshotRefreshes(t *testing.T, kind string) float64 {
	t.Helper()
	return metricstest.Counter(t, "overcast_snapshot_refreshes_total", map[string]string{"cloud": "openstack", "kind": kind, "result": "ok"})
}

func TestContractBadCredentialsAreErrorsNeverGone(t *testing.T) {
	tg := newContractTarget(t)
	conf := tg.conf
	for _, key := range []string{"application-credential-secret", "password"} {
		conf = replaceINIValue(conf, key, "not-the-secret")
	}
	cfg, err := Read(strings.NewReader(conf))
	require.NoError(t, err)
	c, err := New(cfg)
	require.NoError(t, err)
	node := contractNode("contract-x", "openstack:///0b7f0c2e-1111-2222-3333-444455556666", "")
	_, err = c.InstanceExists(t.Context(), node)
	require.Error(t, err, "a 401 is an error, which the lifecycle controller never takes for a deleted server")
	assert.NotErrorIs(t, err, cloudprovider.InstanceNotFound)
	assert.NotContains(t, err.Error(), "not-the-secret")
	_, err = c.InstanceMetadata(t.Context(), node)
	require.Error(t, err)
	assert.NotErrorIs(t, err, cloudprovider.InstanceNotFound, "nor a missing instance")
}

func replaceINIValue(conf, key, value string) string {
	lines := strings.Split(conf, "\n")
	for i, l := range lines {
		if k, _, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == key {
			lines[i] = key + "=" + value
		}
	}
	return strings.Join(lines, "\n")
}

// ensure calls EnsureLoadBalancer as the service controller does: again after a
// RetryError, until it answers.
func ensure(t *testing.T, c *Cloud, svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	t.Helper()
	var st *v1.LoadBalancerStatus
	require.NoError(t, poll(3*time.Minute, func() error {
		var err error
		st, err = c.EnsureLoadBalancer(t.Context(), "contract", svc, nodes)
		var re *api.RetryError
		if errors.As(err, &re) {
			return err
		}
		if err != nil {
			return backoffPermanent{err}
		}
		return nil
	}))
	return st
}

func deleteLB(t *testing.T, c *Cloud, svc *v1.Service) {
	t.Helper()
	require.NoError(t, poll(3*time.Minute, func() error {
		err := c.EnsureLoadBalancerDeleted(t.Context(), "contract", svc)
		if err != nil {
			return err
		}
		_, exists, err := c.GetLoadBalancer(t.Context(), "contract", svc)
		if err != nil || exists {
			return fmt.Errorf("still exists (err %w)", err)
		}
		return nil
	}))
}

type backoffPermanent struct{ error }

func contractService(name string, annotations map[string]string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "contract", UID: types.UID(fmt.Sprintf("uid-%s-%d", name, rand.Int64())), Annotations: annotations},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{
			{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080},
			{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053},
		}},
	}
}

func TestContractLoadBalancer(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	svc := contractService(contractName("web"), nil)
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201")}

	st := ensure(t, c, svc, nodes)
	require.Len(t, st.Ingress, 1)
	fip := netip.MustParseAddr(st.Ingress[0].IP)
	assert.True(t, tg.publicCIDR.Contains(fip), "a floating IP from the public network: %s", fip)
	got, exists, err := c.GetLoadBalancer(t.Context(), "contract", svc)
	require.NoError(t, err)
	require.True(t, exists)
	assert.Equal(t, st.Ingress[0].IP, got.Ingress[0].IP)

	// Converged: the same call again writes nothing (counted on the emulator).
	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	again := ensure(t, c, svc, nodes)
	assert.Equal(t, st.Ingress[0].IP, again.Ingress[0].IP)
	if tg.emu != nil {
		for _, call := range tg.emu.Calls() {
			assert.Equal(t, http.MethodGet, call.Method, "no-op reconcile made a write: %+v", call)
		}
	}

	// A second Node: every pool gets it, in one batch call per pool.
	nodes = append(nodes, contractNode("n2", "", "10.0.0.202"))
	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	require.NoError(t, poll(3*time.Minute, func() error { return c.UpdateLoadBalancer(t.Context(), "contract", svc, nodes) }))
	if tg.emu != nil {
		writes := 0
		for _, call := range tg.emu.Calls() {
			if call.Method != http.MethodGet {
				writes += call.Count
				assert.Equal(t, http.MethodPut, call.Method, "only batch member updates: %+v", call)
			}
		}
		assert.Equal(t, 2, writes, "one batch member write per pool")
	}

	deleteLB(t, c, svc)
	fips := sdkAll(t, floatingips.List(tg.network, floatingips.ListOpts{FloatingIP: fip.String()}), floatingips.ExtractFloatingIPs)
	assert.Empty(t, fips, "the floating IP the CCM allocated is released")
	require.NoError(t, c.EnsureLoadBalancerDeleted(t.Context(), "contract", svc), "deleting again is success")
}

// TestContractANodeWithoutAddressesYetIsAMember: the node controller sets a
// Node's providerID, then its addresses; the service controller syncs on the
// first change only. The Node's member comes from its server meanwhile.
func TestContractANodeWithoutAddressesYetIsAMember(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	srv := tg.server(t, contractName("member"))
	svc := contractService(contractName("early"), map[string]string{"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"})
	nodes := []*v1.Node{
		contractNode("n1", "", "10.0.0.201"),
		contractNode(srv.name, ProviderIDPrefix+"/"+srv.id, ""),
		contractNode("not-yet-initialised", "", ""),
	}
	ensure(t, c, svc, nodes)

	octavia, err := clientOf(c).OctaviaClient(t.Context())
	require.NoError(t, err)
	lb, err := c.lb.findLB(t.Context(), svc)
	require.NoError(t, err)
	require.NotNil(t, lb)
	ps := sdkAll(t, pools.List(octavia, pools.ListOpts{LoadbalancerID: lb.ID}), pools.ExtractPools)
	require.NotEmpty(t, ps)
	want := []string{"10.0.0.201", srv.fixedIP}
	slices.Sort(want)
	for _, p := range ps {
		got := memberAddresses(t, octavia, p.ID)
		assert.Equal(t, want, got, "pool %s: the Node without addresses is reached at its server's fixed IP; the uninitialised one is left out", p.Name)
	}
	deleteLB(t, c, svc)
}

// TestContractUnchangedServicesShareTwoListings: a CCM that looks again at
// Services whose load balancers it converged (a restart) reads this cluster's
// load balancers and the floating IPs once for all of them, and anything that
// does not match what the Service recorded takes the direct path.
func TestContractUnchangedServicesShareTwoListings(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201")}
	var svcs []*v1.Service
	for i := range 3 {
		ann := map[string]string{}
		if i == 2 {
			ann["service.beta.kubernetes.io/openstack-internal-load-balancer"] = "true"
		}
		svcs = append(svcs, contractService(contractName("same"), ann))
	}
	want := map[string]string{}
	for _, svc := range svcs {
		st := ensure(t, c, svc, nodes)
		record(t, c, svc, nodes, st)
		want[svc.Name] = st.Ingress[0].IP
	}
	// A CCM that starts again.
	cluster := c.Cluster.Get()
	c = tg.cloud(t, "")
	c.Cluster.Set(cluster)
	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	for range 2 {
		for _, svc := range svcs {
			st, err := c.EnsureLoadBalancer(t.Context(), "contract", svc, nodes)
			require.NoError(t, err)
			require.Len(t, st.Ingress, 1)
			assert.Equal(t, want[svc.Name], st.Ingress[0].IP)
		}
	}
	if tg.emu != nil {
		reads := 0
		for _, call := range tg.emu.Calls() {
			if call.Service == "identity" {
				continue
			}
			assert.Equal(t, http.MethodGet, call.Method, "unchanged Services made a write: %+v", call)
			reads += call.Count
		}
		assert.LessOrEqual(t, reads, 4, "6 looks at 3 unchanged Services: 2 listings (plus version discovery)")
	}

	// A recorded address that is not the floating IP's: the direct path answers.
	svcs[0].Annotations[string(annotation.OpenStackLoadBalancerAddress)] = "203.0.113.254"
	st := ensure(t, c, svcs[0], nodes)
	assert.Equal(t, want[svcs[0].Name], st.Ingress[0].IP)
	for _, svc := range svcs {
		deleteLB(t, c, svc)
	}
}

// memberAddresses is the addresses of the pool's members, sorted, as Octavia
// lists them through gophercloud (not the CCM's own listing).
func memberAddresses(t *testing.T, octavia *gophercloud.ServiceClient, poolID string) []string {
	t.Helper()
	members := sdkAll(t, pools.ListMembers(octavia, poolID, nil), pools.ExtractMembers)
	var got []string
	for _, m := range members {
		got = append(got, m.Address)
	}
	slices.Sort(got)
	return got
}

// poolsOf is every pool of the load balancer, in full (their provisioning
// status too), read with the SDK.
func poolsOf(t *testing.T, octavia *gophercloud.ServiceClient, lbID string) []pools.Pool {
	t.Helper()
	ps := sdkAll(t, pools.List(octavia, pools.ListOpts{LoadbalancerID: lbID}), pools.ExtractPools)
	return ps
}

// record writes on svc the annotations the CCM records after converging (it
// has no Kubernetes client here).
func record(t *testing.T, c *Cloud, svc *v1.Service, nodes []*v1.Node, st *v1.LoadBalancerStatus) {
	t.Helper()
	lb, err := c.lb.findLB(t.Context(), svc)
	require.NoError(t, err)
	spec, err := c.lb.spec("contract", svc, nodes)
	require.NoError(t, err)
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[string(annotation.OpenStackConverged)] = lb.ID + "/" + spec.fingerprint()
	svc.Annotations[string(annotation.OpenStackLoadBalancerAddress)] = st.Ingress[0].IP
}

// callsSince counts the emulator's calls since the last count, by route:
// reads and writes apart (Keystone's left out); nil maps for the real cloud.
func (tg *contractTarget) callsSince() (reads, writes map[string]int) {
	if tg.emu == nil {
		return nil, nil
	}
	reads, writes = map[string]int{}, map[string]int{}
	for _, call := range tg.emu.Calls() {
		if call.Service == "identity" {
			continue
		}
		if call.Method == http.MethodGet {
			reads[call.Route] += call.Count
		} else {
			writes[call.Route] += call.Count
		}
	}
	tg.emu.ResetCalls()
	return reads, writes
}

// waitActive waits for the load balancer to take changes again.
func waitActive(t *testing.T, octavia *gophercloud.ServiceClient, id string) {
	t.Helper()
	require.NoError(t, poll(3*time.Minute, func() error {
		got, err := loadbalancers.Get(t.Context(), octavia, id).Extract()
		if err == nil && got.ProvisioningStatus != "ACTIVE" {
			err = fmt.Errorf("load balancer %s", got.ProvisioningStatus)
		}
		return err
	}))
}

// updated calls UpdateLoadBalancer until it is done (Octavia takes one
// change at a time).
func updated(t *testing.T, c *Cloud, svc *v1.Service, nodes []*v1.Node) {
	t.Helper()
	require.NoError(t, poll(3*time.Minute, func() error {
		c.lb.index.lbs.Invalidate()
		return c.UpdateLoadBalancer(t.Context(), "contract", svc, nodes)
	}))
}

const (
	routeAddMember  = "POST /load-balancer/v2.0/lbaas/pools/{id}/members"
	routePutMembers = "PUT /load-balancer/v2.0/lbaas/pools/{id}/members"
)

// TestContractNodeChangeUpdatesMembersAlone: when only the Nodes changed since
// the load balancer converged, an update reads the pools and writes one
// member change per pool, nothing else; it is done once Octavia accepts the
// last one. A Node joining the set this process saw converged is that
// member alone (a POST); any other change is one batch update, which says
// every member.
func TestContractNodeChangeUpdatesMembersAlone(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	ctx := t.Context()
	one := contractService(contractName("one"), nil)
	one.Spec.Ports = one.Spec.Ports[:1]
	two := contractService(contractName("two"), nil)
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201")}
	for _, svc := range []*v1.Service{one, two} {
		record(t, c, svc, nodes, ensure(t, c, svc, nodes))
	}
	nodes = append(nodes, contractNode("n2", "", "10.0.0.202"))
	octavia, err := clientOf(c).OctaviaClient(ctx)
	require.NoError(t, err)
	tg.callsSince()

	// One pool: done at once.
	require.NoError(t, c.UpdateLoadBalancer(ctx, "contract", one, nodes), "accepted is done: no retry")
	if reads, writes := tg.callsSince(); tg.emu != nil {
		assert.Equal(t, map[string]int{routeAddMember: 1}, writes, "the Node joining, alone")
		assert.Equal(t, map[string]int{
			"GET /load-balancer/v2.0/lbaas/loadbalancers": 1, // the cluster's, shared by every Service
			// The pool names one member, the Service asks for two: no listing
			// of its members (at 5,000 Nodes, 5 pages a pool).
			"GET /load-balancer/v2.0/lbaas/pools": 1,
		}, reads)
	}

	// Two pools: one update at a time, the second once Octavia is done with the first.
	err = c.UpdateLoadBalancer(ctx, "contract", two, nodes)
	require.ErrorAs(t, err, new(*api.RetryError), "the second pool waits for the first")
	updated(t, c, two, nodes)
	if _, writes := tg.callsSince(); tg.emu != nil {
		assert.Equal(t, map[string]int{routeAddMember: 2}, writes, "one member added a pool")
	}
	for _, svc := range []*v1.Service{one, two} {
		lb, err := c.lb.findLB(ctx, svc)
		require.NoError(t, err)
		pages, err := pools.List(octavia, pools.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
		require.NoError(t, err)
		all, err := pools.ExtractPools(pages)
		require.NoError(t, err)
		require.Len(t, all, len(svc.Spec.Ports))
		for _, pool := range all {
			assert.ElementsMatch(t, []string{"10.0.0.201", "10.0.0.202"}, memberAddresses(t, octavia, pool.ID), "pool %s", pool.Name)
		}
	}

	// A Node leaving: the batch update (a member's id would have to be read).
	record(t, c, one, nodes, ensure(t, c, one, nodes))
	updated(t, c, one, nodes[:1])
	if _, writes := tg.callsSince(); tg.emu != nil {
		assert.Equal(t, map[string]int{routePutMembers: 1}, writes)
	}
	for _, svc := range []*v1.Service{one, two} {
		deleteLB(t, c, svc)
	}
}

// TestContractANodeJoiningIsReadWhenNotKnown: a process that did not see the
// set the pool was converged to (a new leader) sends the batch update; a
// member added behind our back is refused as a duplicate (Octavia's 409),
// then said with every other in the batch update, which also puts back the
// one removed: never two of one address, never an error left.
func TestContractANodeJoiningIsReadWhenNotKnown(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	ctx := t.Context()
	svc := contractService(contractName("join"), nil)
	svc.Spec.Ports = svc.Spec.Ports[:1]
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201")}
	record(t, c, svc, nodes, ensure(t, c, svc, nodes))
	octavia, err := clientOf(c).OctaviaClient(ctx)
	require.NoError(t, err)
	lb, err := c.lb.findLB(ctx, svc)
	require.NoError(t, err)
	pages, err := pools.List(octavia, pools.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	require.NoError(t, err)
	all, err := pools.ExtractPools(pages)
	require.NoError(t, err)
	require.Len(t, all, 1)
	pool := all[0]

	c.lb.memberSets = provider.MemberSets{} // what a new leader knows
	tg.callsSince()
	updated(t, c, svc, append(nodes, contractNode("n2", "", "10.0.0.202")))
	if _, writes := tg.callsSince(); tg.emu != nil {
		assert.Equal(t, map[string]int{routePutMembers: 1}, writes, "not known: the batch update")
	}

	nodes = append(nodes, contractNode("n2", "", "10.0.0.202"))
	record(t, c, svc, nodes, ensure(t, c, svc, nodes))
	// Behind our back: n2's member removed and n3's added, with the port
	// the Service gives; as many members as before.
	mpages, err := pools.ListMembers(octavia, pool.ID, pools.ListMembersOpts{Address: "10.0.0.202"}).AllPages(ctx)
	require.NoError(t, err)
	members, err := pools.ExtractMembers(mpages)
	require.NoError(t, err)
	require.Len(t, members, 1)
	for _, change := range []func() error{
		func() error { return pools.DeleteMember(ctx, octavia, pool.ID, members[0].ID).ExtractErr() },
		func() error {
			_, err := pools.CreateMember(ctx, octavia, pool.ID, pools.CreateMemberOpts{Address: "10.0.0.203", ProtocolPort: int(svc.Spec.Ports[0].NodePort)}).Extract()
			return err
		},
	} {
		waitActive(t, octavia, lb.ID)
		require.NoError(t, change())
	}
	waitActive(t, octavia, lb.ID)
	tg.callsSince()
	updated(t, c, svc, append(nodes, contractNode("n3", "", "10.0.0.203")))
	if _, writes := tg.callsSince(); tg.emu != nil {
		assert.Equal(t, map[string]int{routeAddMember: 1, routePutMembers: 1}, writes, "refused, then the batch update")
	}
	assert.ElementsMatch(t, []string{"10.0.0.201", "10.0.0.202", "10.0.0.203"}, memberAddresses(t, octavia, pool.ID))
	deleteLB(t, c, svc)
}

func TestContractInternalLoadBalancerAndKeptFloatingIP(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	internal := contractService(contractName("inside"), map[string]string{"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"})
	st := ensure(t, c, internal, nil)
	require.Len(t, st.Ingress, 1)
	assert.False(t, tg.publicCIDR.Contains(netip.MustParseAddr(st.Ingress[0].IP)), "an internal load balancer publishes its VIP")
	deleteLB(t, c, internal)

	kept := contractService(contractName("kept"), map[string]string{"loadbalancer.openstack.org/keep-floatingip": "true"})
	st = ensure(t, c, kept, nil)
	deleteLB(t, c, kept)
	fips := sdkAll(t, floatingips.List(tg.network, floatingips.ListOpts{FloatingIP: st.Ingress[0].IP}), floatingips.ExtractFloatingIPs)
	require.Len(t, fips, 1, "keep-floatingip keeps it")
	assert.Empty(t, fips[0].PortID, "detached")
	require.NoError(t, floatingips.Delete(t.Context(), tg.network, fips[0].ID).ExtractErr())
}

func TestContractLoadBalancerInErrorIsReplaced(t *testing.T) {
	tg := newContractTarget(t)
	if tg.emu == nil {
		t.Skip("an ERROR load balancer can only be made on demand in the emulator")
	}
	c := tg.cloud(t, "")
	svc := contractService(contractName("broken"), map[string]string{"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"})
	ensure(t, c, svc, nil)
	lb, err := c.lb.findLB(t.Context(), svc)
	require.NoError(t, err)
	require.NoError(t, tg.emu.SetLoadBalancerError(lb.ID))
	ensure(t, c, svc, nil)
	replaced, err := c.lb.findLB(t.Context(), svc)
	require.NoError(t, err)
	assert.NotEqual(t, lb.ID, replaced.ID, "a new load balancer replaces the one in ERROR")
	deleteLB(t, c, svc)
}

func TestContractRoutes(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	s := tg.server(t, contractName("contract-route"))
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, indexer.Add(contractNode(s.name, "", s.fixedIP)))
	c.nodes = corelisters.NewNodeLister(indexer)
	r, ok := c.Routes()
	require.True(t, ok)
	dest := fmt.Sprintf("10.%d.%d.0/24", 100+rand.IntN(100), rand.IntN(250))
	route := &cloudprovider.Route{Name: "r", TargetNode: types.NodeName(s.name), DestinationCIDR: dest}
	require.NoError(t, r.CreateRoute(t.Context(), "contract", "", route))
	require.NoError(t, r.CreateRoute(t.Context(), "contract", "", route), "creating it again is a no-op")
	list, err := r.ListRoutes(t.Context(), "contract")
	require.NoError(t, err)
	found := false
	for _, rt := range list {
		if rt.DestinationCIDR == dest {
			found = true
			assert.Equal(t, types.NodeName(s.name), rt.TargetNode)
		}
	}
	assert.True(t, found, "the route is listed")
	require.NoError(t, r.DeleteRoute(t.Context(), "contract", route))
	router, err := routers.Get(t.Context(), tg.network, tg.routerID).Extract()
	require.NoError(t, err)
	for _, rt := range router.Routes {
		assert.NotEqual(t, dest, rt.DestinationCIDR, "the route is gone")
	}
}

// A new load balancer is created fully populated, in one POST: each listener
// with its pool, the pool with its members and health monitor. Octavia
// provisions it once; the only other write is the floating IP.
func TestContractLoadBalancerIsCreatedFullyPopulated(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloud(t, "")
	svc := contractService(contractName("graph"), map[string]string{string(annotation.OpenStackEnableHealthMonitor): "true"})
	var nodes []*v1.Node
	var want []string
	for i := range 20 {
		ip := fmt.Sprintf("10.0.0.%d", 100+i)
		nodes = append(nodes, contractNode(fmt.Sprintf("n%d", i), "", ip))
		want = append(want, ip)
	}
	if tg.emu != nil {
		tg.emu.ResetCalls()
	}
	st := ensure(t, c, svc, nodes)
	require.Len(t, st.Ingress, 1)
	if tg.emu != nil {
		var writes []string
		calls := 0
		for _, call := range tg.emu.Calls() {
			if call.Service == "identity" {
				continue
			}
			calls += call.Count
			if call.Method != http.MethodGet {
				writes = append(writes, fmt.Sprintf("%s ×%d", call.Route, call.Count))
			}
		}
		assert.ElementsMatch(t, []string{"POST /load-balancer/v2.0/lbaas/loadbalancers ×1", "POST /network/v2.0/floatingips ×1"}, writes)
		assert.LessOrEqual(t, calls, 10, "calls for one new load balancer: %+v", tg.emu.Calls())
	}

	octavia, err := clientOf(c).OctaviaClient(t.Context())
	require.NoError(t, err)
	lb, err := c.lb.findLB(t.Context(), svc)
	require.NoError(t, err)
	require.Equal(t, "ACTIVE", lb.ProvisioningStatus)
	// In full: the pools' provisioning status too.
	ps := poolsOf(t, octavia, lb.ID)
	require.Len(t, ps, 2, "a pool per port")
	for _, p := range ps {
		assert.Equal(t, "ACTIVE", p.ProvisioningStatus, "pool %s", p.Name)
		assert.NotEmpty(t, p.MonitorID, "pool %s has its health monitor", p.Name)
		got := memberAddresses(t, octavia, p.ID)
		assert.ElementsMatch(t, want, got, "pool %s has every member", p.Name)
	}
	deleteLB(t, c, svc)
}

// A provider that leaves the children of a fully populated load balancer
// pending for good (the harness's Octavia 11.0.0 does; the emulator can) is
// found out on the first load balancer, which is rebuilt step by step, as every
// later one is; its members can then be updated.
func TestContractStrandedChildrenAreRebuiltStepByStep(t *testing.T) {
	tg := newContractTargetWith(t, emulator.Options{StrandGraphChildren: true})
	c := tg.cloud(t, "")
	c.lb.serial.Store(false) // as without provider-requires-serial-api-calls (the harness sets it)
	svc := contractService(contractName("strand"), nil)
	nodes := []*v1.Node{contractNode("n1", "", "10.0.0.201")}
	st := ensure(t, c, svc, nodes)
	require.Len(t, st.Ingress, 1)

	octavia, err := clientOf(c).OctaviaClient(t.Context())
	require.NoError(t, err)
	lb, err := c.lb.findLB(t.Context(), svc)
	require.NoError(t, err)
	var tree statusTree
	require.NoError(t, loadbalancers.GetStatuses(t.Context(), octavia, lb.ID).ExtractInto(&tree))
	assert.True(t, c.lb.serial.Load(), "later load balancers are built step by step")
	assert.Equal(t, "ACTIVE", tree.Statuses.LoadBalancer.ProvisioningStatus)
	assert.Len(t, tree.Statuses.LoadBalancer.Listeners, 2)
	assert.Empty(t, tree.pending(), "nothing is left pending")
	built, err := c.api.ListPools(t.Context(), lb.ID)
	require.NoError(t, err)
	assert.Len(t, built, 2, "the rebuilt load balancer has its pools when it is reported ready")

	nodes = append(nodes, contractNode("n2", "", "10.0.0.202"))
	require.NoError(t, poll(3*time.Minute, func() error { return c.UpdateLoadBalancer(t.Context(), "contract", svc, nodes) }))
	// In full: the pools' provisioning status too.
	ps := poolsOf(t, octavia, lb.ID)
	require.Len(t, ps, 2, "a pool per port")
	for _, p := range ps {
		assert.Equal(t, "ACTIVE", p.ProvisioningStatus)
		assert.ElementsMatch(t, []string{"10.0.0.201", "10.0.0.202"}, memberAddresses(t, octavia, p.ID), "pool %s", p.Name)
	}
	deleteLB(t, c, svc)
}

// A cloud.conf without a region (the classic guide's form) takes the region
// of the catalog when it has only one, for the endpoints and the Nodes' label.
func TestContractRegionComesFromTheCatalogWhenNotConfigured(t *testing.T) {
	tg := newContractTarget(t)
	conf := regexp.MustCompile(`(?m)^region\s*=.*\n`).ReplaceAllString(tg.conf, "")
	require.NotEqual(t, tg.conf, conf, "the target's cloud.conf names a region")
	cfg, err := Read(strings.NewReader(conf))
	require.NoError(t, err)
	c, err := New(cfg)
	require.NoError(t, err)
	s := tg.server(t, contractName("region-node"))
	var md *cloudprovider.InstanceMetadata
	require.NoError(t, poll(time.Minute, func() error {
		var err error
		md, err = c.InstanceMetadata(t.Context(), contractNode(s.name, "", ""))
		return err
	}))
	assert.Equal(t, "RegionOne", md.Region, "the catalog's one region")
}

// settle calls EnsureLoadBalancer as the service controller does, again after
// a RetryError, and returns its first other answer.
func settle(t *testing.T, c *Cloud, svc *v1.Service) error {
	t.Helper()
	var last error
	require.NoError(t, poll(3*time.Minute, func() error {
		_, last = c.EnsureLoadBalancer(t.Context(), "contract", svc, nil)
		if errors.As(last, new(*api.RetryError)) {
			return last
		}
		return nil
	}))
	return last
}

// Check before you build: once Neutron has refused a floating IP for the
// project's quota, a new Service that needs one is refused before its load
// balancer is created, and is built once a floating IP is released.
func TestContractAFloatingIPQuotaKnownMetCreatesNothing(t *testing.T) {
	tg := newContractTarget(t)
	if tg.emu == nil {
		t.Skip("the project's quota is for an admin to change: the emulator's")
	}
	c := tg.cloud(t, "")
	tg.emu.SetQuota(emulator.QuotaFloatingIP, 1)
	lbsOf := func(svc *v1.Service) int {
		lb, err := c.lb.findLB(t.Context(), svc)
		require.NoError(t, err)
		if lb == nil {
			return 0
		}
		return 1
	}

	first := contractService(contractName("quota-first"), nil)
	ensure(t, c, first, nil)

	// The second learns the quota: its load balancer exists, its address waits.
	second := contractService(contractName("quota-second"), nil)
	err := settle(t, c, second)
	p, ok := outcome.AsProblem(err)
	require.True(t, ok, "a Problem, not %v", err)
	assert.Equal(t, reasonFloatingIPFailed, p.Reason)
	assert.Contains(t, p.Message, "Quota exceeded for resources: ['floatingip'].")
	assert.Equal(t, 1, lbsOf(second), "the second's load balancer waits for its address")

	// The third is refused before anything is built for it.
	third := contractService(contractName("quota-third"), nil)
	tg.emu.ResetCalls()
	err = settle(t, c, third)
	p, ok = outcome.AsProblem(err)
	require.True(t, ok, "a Problem, not %v", err)
	assert.Equal(t, outcome.ReasonQuotaExceeded, p.Reason)
	assert.Contains(t, p.Message, "no load balancer was created")
	assert.Equal(t, 0, lbsOf(third))
	for _, call := range tg.emu.Calls() {
		assert.Contains(t, []string{"GET", "HEAD"}, call.Method, "no write for the refused Service: %s", call.Route)
	}
	internal := contractService(contractName("quota-internal"), map[string]string{"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"})
	ensure(t, c, internal, nil)

	// The first is deleted: its floating IP is released, and both others get theirs.
	deleteLB(t, c, first)
	st := ensure(t, c, second, nil)
	assert.NotEmpty(t, st.Ingress)
	tg.emu.SetQuota(emulator.QuotaFloatingIP, 2)
	st = ensure(t, c, third, nil)
	assert.NotEmpty(t, st.Ingress)
	for _, svc := range []*v1.Service{second, third, internal} {
		deleteLB(t, c, svc)
	}
}
