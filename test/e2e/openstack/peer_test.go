package openstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
)

// peerBuilt is what the peer built for a Service, read from OpenStack.
type peerBuilt struct {
	lbID, addr string
	listeners  []string // ID/pool ID, sorted
}

func listenerIDsOf(t *testing.T, octavia *gophercloud.ServiceClient, lbID string) []string {
	t.Helper()
	pages, err := listeners.List(octavia, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(context.Background())
	require.NoError(t, err)
	ls, err := listeners.ExtractListeners(pages)
	require.NoError(t, err)
	var out []string
	for _, l := range ls {
		out = append(out, l.ID+"/"+l.DefaultPoolID)
	}
	slices.Sort(out)
	return out
}

func groupNamed(t *testing.T, network *gophercloud.ServiceClient, name string) string {
	t.Helper()
	pages, err := groups.List(network, groups.ListOpts{Name: name}).AllPages(context.Background())
	require.NoError(t, err)
	gs, err := groups.ExtractGroups(pages)
	require.NoError(t, err)
	if len(gs) != 1 {
		return ""
	}
	return gs[0].ID
}

// TestOpenStackTakesOverFromThePeerItself runs the unmodified
// cloud-provider-openstack (its openstack-cloud-controller-manager binary
// named by OVERCAST_PEER_OPENSTACK; docs/openstack.md says how to build it)
// on the real OpenStack with security groups managed and two Services, one
// sharing the other's load balancer, then Overcast in its place with the same
// cloud.conf, as docs/openstack.md's migration says: every address, load
// balancer, listener, pool and security group kept, and deleting the Services
// leaves nothing. Run by hand: the peer is not built by make test-openstack.
func TestOpenStackTakesOverFromThePeerItself(t *testing.T) {
	bin := peerBinary(t)
	octavia, network := octaviaClient(t), networkClient(t)
	s := createServer(t, "os-peer-"+suffix())
	// Octavia's no-op driver of the harness leaves the children of a fully
	// populated load balancer pending: the peer builds step by step.
	conf := cloudConf(t, "OVERCAST_OS_CLOUD_CONF") + "\n[LoadBalancer]\nmanage-security-groups = true\nprovider-requires-serial-api-calls = true\n"
	opts := ccmOptions(conf)
	opts.Controllers = []string{"cloud-node", "service"}
	peer := env.StartBinary(t, bin, "openstack-cloud-controller-manager", opts)
	env.NewKubelet(t, s.Name, s.fixedIP())
	waitInitialised(t, s.Name)

	ns := lbNamespace(t)
	web := createService(t, ns, "web", []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}, {Name: "dns", Protocol: v1.ProtocolUDP, Port: 53}}, nil)
	webLB := peerLBIDOf(t, ns, "web")
	api := createService(t, ns, "api", []v1.ServicePort{{Name: "api", Protocol: v1.ProtocolTCP, Port: 8080}},
		map[string]string{"loadbalancer.openstack.org/load-balancer-id": webLB})
	require.Equal(t, webLB, peerLBIDOf(t, ns, "api"), "the peer shares web's load balancer with api")
	addr := waitIngress(t, ns, "web")
	require.NoError(t, devenv.Poll(5*time.Minute, time.Second, func() error {
		if groupNamed(t, network, fmt.Sprintf("lb-sg-%s-%s-api", api.UID, ns)) == "" {
			return fmt.Errorf("the peer has not made api's security group yet")
		}
		return nil
	}))
	before := peerBuilt{lbID: webLB, addr: addr, listeners: listenerIDsOf(t, octavia, webLB)}
	require.Len(t, before.listeners, 3, "web's two listeners and api's one")
	groupsBefore := map[string]string{}
	for _, svc := range []*v1.Service{web, api} {
		name := fmt.Sprintf("lb-sg-%s-%s-%s", svc.UID, ns, svc.Name)
		groupsBefore[svc.Name] = groupNamed(t, network, name)
		require.NotEmpty(t, groupsBefore[svc.Name], "the peer's group %s", name)
	}
	peer.Stop()

	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "service"}
	env.StartCCM(t, opts)
	for _, name := range []string{"web", "api"} {
		assert.Equal(t, addr, waitReady(t, ns, name), "%s keeps the address", name)
	}
	lb, err := loadbalancers.Get(t.Context(), octavia, webLB).Extract()
	require.NoError(t, err)
	assert.Equal(t, "ACTIVE", lb.ProvisioningStatus)
	assert.Contains(t, lb.Tags, "overcast-service-uid="+string(web.UID), "web's load balancer is taken over")
	assert.Equal(t, before.listeners, listenerIDsOf(t, octavia, webLB), "no listener or pool rebuilt")
	for _, svc := range []*v1.Service{web, api} {
		g := groupOf(t, network, string(svc.UID))
		require.NotNil(t, g, "%s's group, tagged", svc.Name)
		assert.Equal(t, groupsBefore[svc.Name], g.ID, "%s keeps the peer's group", svc.Name)
		assert.Contains(t, groupsOnServer(t, network, s.ID), g.ID)
	}

	// The owner first: the load balancer stays for api, then goes with it.
	deleteSvcAndWait(t, ns, "web")
	_, err = loadbalancers.Get(t.Context(), octavia, webLB).Extract()
	require.NoError(t, err, "api still shares it")
	assert.Len(t, listenerIDsOf(t, octavia, webLB), 1)
	assert.Equal(t, addr, waitIngress(t, ns, "api"))
	deleteSvcAndWait(t, ns, "api")
	waitLBGone(t, octavia, "load balancer", webLB)
	pages, err := floatingips.List(network, floatingips.ListOpts{FloatingIP: addr}).AllPages(t.Context())
	require.NoError(t, err)
	fips, err := floatingips.ExtractFloatingIPs(pages)
	require.NoError(t, err)
	assert.Empty(t, fips, "the peer's floating IP is released with the load balancer")
	for name, id := range groupsBefore {
		_, err := groups.Get(t.Context(), network, id).Extract()
		assert.True(t, gophercloud.ResponseCodeIs(err, 404), "%s's group is gone", name)
	}
}

// createService creates the LoadBalancer Service ns/name with its ports
// and annotations.
func createService(t *testing.T, ns, name string, ports []v1.ServicePort, annotations map[string]string) *v1.Service {
	t.Helper()
	svc, err := env.Client.CoreV1().Services(ns).Create(t.Context(), &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name}, Ports: ports},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return svc
}

// peerLBIDOf waits until the peer has served the Service ns/name (an
// ingress and its load balancer's ID annotated) and returns that ID.
func peerLBIDOf(t *testing.T, ns, name string) string {
	t.Helper()
	var id string
	require.NoError(t, devenv.Poll(5*time.Minute, time.Second, func() error {
		got, err := env.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if id = got.Annotations["loadbalancer.openstack.org/load-balancer-id"]; id == "" || len(got.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("the peer has not served %s yet", name)
		}
		return nil
	}))
	return id
}

// waitLBGone waits until the load balancer id (what says whose) is gone
// from Octavia.
func waitLBGone(t *testing.T, octavia *gophercloud.ServiceClient, what, id string) {
	t.Helper()
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error {
		if _, err := loadbalancers.Get(context.Background(), octavia, id).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
			return fmt.Errorf("%s %s still there (%w)", what, id, err)
		}
		return nil
	}))
}

// waitReady waits for the Service's ingress from overcast-ccm (its Ready
// condition) and returns the address.
func waitReady(t *testing.T, ns, name string) string {
	t.Helper()
	var addr string
	require.NoError(t, devenv.Poll(5*time.Minute, time.Second, func() error {
		got, err := env.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == "LoadBalancerReady" && c.Status == metav1.ConditionTrue && len(got.Status.LoadBalancer.Ingress) > 0 {
				addr = got.Status.LoadBalancer.Ingress[0].IP
				return nil
			}
		}
		return fmt.Errorf("%s/%s is not Ready yet", ns, name)
	}))
	return addr
}

// TestOpenStackTakesOverThePeersTLSLoadBalancer: the unmodified
// cloud-provider-openstack (OVERCAST_PEER_OPENSTACK) serves a Service
// terminating TLS with a Barbican container (default-tls-container-ref),
// then Overcast in its place: the same address, the same TERMINATED_HTTPS
// listener and HTTP pool (same IDs, same certificate); deleting the Service
// leaves no load balancer and the container as the person made it. Both
// CCMs authenticate with a password (Octavia cannot read a certificate for
// an application credential).
func TestOpenStackTakesOverThePeersTLSLoadBalancer(t *testing.T) {
	bin := peerBinary(t)
	octavia, km := octaviaClient(t), keyManagerClient(t)
	s := createServer(t, "os-peer-tls-"+suffix())
	ref := storeByHand(t, km, "os-peer-tls-"+suffix())
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_PASSWORD_CONF") + "\n[LoadBalancer]\nprovider-requires-serial-api-calls = true\n")
	opts.Controllers = []string{"cloud-node", "service"}
	peer := env.StartBinary(t, bin, "openstack-cloud-controller-manager", opts)
	env.NewKubelet(t, s.Name, s.fixedIP())
	waitInitialised(t, s.Name)

	ns := lbNamespace(t)
	_, err := env.Client.CoreV1().Services(ns).Create(t.Context(), &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: ns, Annotations: map[string]string{"loadbalancer.openstack.org/default-tls-container-ref": ref}},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "https", Protocol: v1.ProtocolTCP, Port: 443}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var lbID string
	require.NoError(t, devenv.Poll(5*time.Minute, time.Second, func() error {
		got, err := env.Client.CoreV1().Services(ns).Get(context.Background(), "tls", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lbID = got.Annotations["loadbalancer.openstack.org/load-balancer-id"]; lbID == "" || len(got.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("the peer has not served it yet")
		}
		return nil
	}))
	addr := waitIngress(t, ns, "tls")
	gotRef, proto, err := tlsListener(t, octavia, lbID, 443)
	require.NoError(t, err)
	require.Equal(t, ref, gotRef, "the peer's listener terminates TLS with the container")
	require.Equal(t, "HTTP", proto)
	before := listenerIDsOf(t, octavia, lbID)
	peer.Stop()

	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "service"}
	env.StartCCM(t, opts)
	assert.Equal(t, addr, waitReady(t, ns, "tls"), "the address is kept")
	assert.Equal(t, before, listenerIDsOf(t, octavia, lbID), "no listener or pool rebuilt")
	gotRef, proto, err = tlsListener(t, octavia, lbID, 443)
	require.NoError(t, err)
	assert.Equal(t, ref, gotRef)
	assert.Equal(t, "HTTP", proto)

	deleteSvcAndWait(t, ns, "tls")
	waitLBGone(t, octavia, "load balancer", lbID)
	_, err = containers.Get(t.Context(), km, ref[strings.LastIndex(ref, "/")+1:]).Extract()
	assert.NoError(t, err, "the person's container is left as it was")
}

// logWrites marks where the access logs of octavia-api and neutron-server
// are now; its writes are the POST, PUT and DELETE requests either logged
// since.
type logWrites map[string]int64

var writeLines = map[string]*regexp.Regexp{
	"octavia-api.log": regexp.MustCompile(`\] (POST|PUT|DELETE) (/v2\S*)`),
	"neutron.log":     regexp.MustCompile(`"(POST|PUT|DELETE) (/v2\.0\S*)`),
}

func markLogs(t *testing.T) logWrites {
	t.Helper()
	m := logWrites{}
	for name := range writeLines {
		st, err := os.Stat(filepath.Join(stateDir(), "log", name))
		require.NoError(t, err)
		m[name] = st.Size()
	}
	return m
}

func (m logWrites) writes(t *testing.T) []string {
	t.Helper()
	var out []string
	for name, re := range writeLines {
		data, err := os.ReadFile(filepath.Join(stateDir(), "log", name))
		require.NoError(t, err)
		for _, w := range re.FindAllStringSubmatch(string(data[m[name]:]), -1) {
			out = append(out, w[1]+" "+w[2])
		}
	}
	return out
}

// TestOpenStackGoesBackToThePeerItself: the way back. Overcast serves the
// shapes the peer makes (two protocols on one load balancer, a second
// Service sharing it, source ranges, PROXY protocol, an internal one), with
// security groups managed; it is stopped and the unmodified
// cloud-provider-openstack (OVERCAST_PEER_OPENSTACK) starts in its place
// with the same cloud.conf: it syncs every Service and writes nothing to
// Octavia or Neutron (their access logs), every address, load balancer,
// listener and security group kept. Overcast back deletes them all and
// leaves nothing.
func TestOpenStackGoesBackToThePeerItself(t *testing.T) {
	bin := peerBinary(t)
	octavia, network := octaviaClient(t), networkClient(t)
	s := createServer(t, "os-back-"+suffix())
	conf := cloudConf(t, "OVERCAST_OS_CLOUD_CONF") + "\n[LoadBalancer]\nmanage-security-groups = true\nprovider-requires-serial-api-calls = true\n"
	opts := ccmOptions(conf)
	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "service"}
	ccm := env.StartCCM(t, opts)
	env.NewKubelet(t, s.Name, s.fixedIP())
	waitInitialised(t, s.Name)

	ns := lbNamespace(t)
	served := overcastServesThePeersShapes(t, octavia, ns)
	names, addrs, lbs, uids := served.names, served.addrs, served.lbs, served.uids
	before := served.state(t, octavia, network)
	ccm.Stop()

	mark := markLogs(t)
	ensured := map[string]int32{}
	for _, name := range names {
		ensured[name] = eventCount(t, ns, name, "EnsuredLoadBalancer")
	}
	opts.Controllers = []string{"cloud-node", "service"}
	peer := env.StartBinary(t, bin, "openstack-cloud-controller-manager", opts)
	require.NoError(t, devenv.Poll(5*time.Minute, time.Second, func() error {
		for _, name := range names {
			if eventCount(t, ns, name, "EnsuredLoadBalancer") == ensured[name] {
				return fmt.Errorf("the peer has not synced %s yet", name)
			}
		}
		return nil
	}))
	time.Sleep(15 * time.Second) // anything it does after its first pass
	assert.Empty(t, mark.writes(t), "the peer writes nothing to Octavia or Neutron")
	assert.Equal(t, before, served.state(t, octavia, network), "every listener, pool, member and security group rule as it was")
	for _, name := range names {
		assert.Equal(t, addrs[name], waitIngress(t, ns, name), "%s keeps its address", name)
	}
	peer.Stop()

	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "service"}
	env.StartCCM(t, opts)
	for _, name := range []string{"api", "web", "ranged", "proxy", "internal"} {
		deleteSvcAndWait(t, ns, name)
	}
	for name, id := range lbs {
		waitLBGone(t, octavia, name+"'s load balancer", id)
	}
	for _, name := range names {
		assert.Empty(t, ownFloatingIPs(t, network, uids[name]), "%s's floating IP released", name)
		assert.Nil(t, groupOf(t, network, uids[name]), "%s's security group deleted", name)
	}
}

// peerShapes are the shapes the peer makes, each a Service of its own: two
// protocols on one load balancer, source ranges, PROXY protocol, an
// internal one.
var peerShapes = []struct {
	name        string
	ports       []v1.ServicePort
	annotations map[string]string
	ranges      []string
}{
	{name: "web", ports: []v1.ServicePort{tcpPort(80), {Name: "dns", Protocol: v1.ProtocolUDP, Port: 53}}},
	{name: "ranged", ports: []v1.ServicePort{tcpPort(80)}, ranges: []string{"127.0.0.0/8"}},
	{name: "proxy", ports: []v1.ServicePort{tcpPort(80)}, annotations: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "true"}},
	{name: "internal", ports: []v1.ServicePort{tcpPort(80)}, annotations: map[string]string{"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"}},
}

// tcpPort is the TCP port p<port>.
func tcpPort(port int32) v1.ServicePort {
	return v1.ServicePort{Name: fmt.Sprintf("p%d", port), Protocol: v1.ProtocolTCP, Port: port}
}

// servedShapes are the Services Overcast serves in the shapes the peer
// makes, and api sharing web's load balancer: their names, and by name
// their addresses, load balancers' IDs and UIDs.
type servedShapes struct {
	names            []string
	addrs, lbs, uids map[string]string
}

// overcastServesThePeersShapes creates a Service of each of peerShapes in
// ns, then api sharing web's load balancer, and waits until Overcast has
// served each.
func overcastServesThePeersShapes(t *testing.T, octavia *gophercloud.ServiceClient, ns string) servedShapes {
	for _, sh := range peerShapes {
		_, err := env.Client.CoreV1().Services(ns).Create(t.Context(), &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: sh.name, Namespace: ns, Annotations: sh.annotations},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": sh.name}, Ports: sh.ports,
				LoadBalancerSourceRanges: sh.ranges},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	s := servedShapes{names: []string{"web", "ranged", "proxy", "internal", "api"},
		addrs: map[string]string{}, lbs: map[string]string{}, uids: map[string]string{}}
	for _, sh := range peerShapes {
		s.addrs[sh.name] = waitReady(t, ns, sh.name)
		own := lbOf(t, octavia, getSvc(t, ns, sh.name))
		require.Len(t, own, 1, "%s's load balancer", sh.name)
		s.lbs[sh.name] = own[0].ID
	}
	_, err := env.Client.CoreV1().Services(ns).Create(t.Context(), &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns, Annotations: map[string]string{"loadbalancer.openstack.org/load-balancer-id": s.lbs["web"]}},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "api"}, Ports: []v1.ServicePort{tcpPort(8080)}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	s.addrs["api"], s.lbs["api"] = waitReady(t, ns, "api"), s.lbs["web"]
	require.Equal(t, s.addrs["web"], s.addrs["api"], "api shares web's load balancer")
	for _, name := range s.names {
		s.uids[name] = string(getSvc(t, ns, name).UID)
	}
	return s
}

// state is what OpenStack has of each Service, sorted: its load balancer's
// listeners and shape, its security group and the group's rules.
func (s servedShapes) state(t *testing.T, octavia, network *gophercloud.ServiceClient) map[string][]string {
	out := map[string][]string{}
	for _, name := range s.names {
		out[name] = append(listenerIDsOf(t, octavia, s.lbs[name]), shape(t, octavia, s.lbs[name])...)
		if g := groupOf(t, network, s.uids[name]); g != nil {
			out[name] = append(out[name], g.ID)
			for _, r := range g.Rules {
				out[name] = append(out[name], fmt.Sprintf("rule %s %s %s %s %s %d-%d", r.ID, r.Direction, r.EtherType, r.Protocol, r.RemoteIPPrefix, r.PortRangeMin, r.PortRangeMax))
			}
		}
		slices.Sort(out[name])
	}
	return out
}

// peerBinary is the unmodified cloud-provider-openstack's binary named by
// OVERCAST_PEER_OPENSTACK (docs/openstack.md says how to build it); the test
// is skipped without one.
func peerBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("OVERCAST_PEER_OPENSTACK")
	if bin == "" {
		t.Skip("OVERCAST_PEER_OPENSTACK names no openstack-cloud-controller-manager binary")
	}
	return bin
}
