package e2e

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/devenv"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
	"github.com/overcast-ccm/overcast/test/framework"
)

// Taking over from cloudstack-kubernetes-provider: every shape of load
// balancer the peer makes is adopted as it is.

// The peer's annotations (its cloudstack_loadbalancer.go).
const (
	peerProxyProtocol = "service.beta.kubernetes.io/cloudstack-load-balancer-proxy-protocol"
	peerSourceCIDRs   = "service.beta.kubernetes.io/cloudstack-load-balancer-source-cidrs"
	peerIPAssociated  = "service.beta.kubernetes.io/cloudstack-load-balancer-ip-associated-by-controller"
)

// csObjects lists, sorted, the ids of every load balancer rule and firewall
// rule the emulator holds (the project's, inProject).
func csObjects(t *testing.T, admin *cs.CloudStackClient, inProject bool) (rules, firewall []string) {
	t.Helper()
	rp := admin.LoadBalancer.NewListLoadBalancerRulesParams()
	rp.SetListall(true)
	fp := admin.Firewall.NewListFirewallRulesParams()
	fp.SetListall(true)
	if inProject {
		rp.SetProjectid("-1")
		fp.SetProjectid("-1")
	}
	r, err := admin.LoadBalancer.ListLoadBalancerRules(rp)
	require.NoError(t, err)
	for _, x := range r.LoadBalancerRules {
		rules = append(rules, x.Id)
	}
	f, err := admin.Firewall.ListFirewallRules(fp)
	require.NoError(t, err)
	for _, x := range f.FirewallRules {
		firewall = append(firewall, x.Id)
	}
	slices.Sort(rules)
	slices.Sort(firewall)
	return rules, firewall
}

// csDeleteLeavesNothing deletes the Services (all at once, then each waited
// for) and asserts that no rule, firewall rule or address is left.
func csDeleteLeavesNothing(t *testing.T, admin *cs.CloudStackClient, inProject bool, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		require.NoError(t, env.Client.CoreV1().Services(ns).Delete(t.Context(), name, metav1.DeleteOptions{}))
	}
	for _, name := range names {
		deleteService(t, ns, name)
	}
	rules, firewall := csObjects(t, admin, inProject)
	assert.Empty(t, rules)
	assert.Empty(t, firewall)
	p := admin.Address.NewListPublicIpAddressesParams()
	p.SetListall(true)
	if inProject {
		p.SetProjectid("-1")
	}
	left, err := admin.Address.ListPublicIpAddresses(p)
	require.NoError(t, err)
	assert.Zero(t, left.Count, "every address goes with its Service")
}

// csWrites counts the API calls made with POST (cloudstack-go's writes).
func csWrites(e *emulator.Emulator) (n int) {
	for _, c := range e.Calls() {
		if c.Method == http.MethodPost {
			n += c.Count
		}
	}
	return n
}

// peerBuilt is what the peer made for a Service.
type peerBuilt struct {
	addrID, addr string
	rules        []string // ids
	firewall     []string // ids
}

// peerBuilds makes for svc what cloudstack-kubernetes-provider v1.2.0's
// EnsureLoadBalancer makes on an isolated network, call for call as its
// cloudstack_loadbalancer.go does: the address (the one loadBalancerIP
// names, associated if it is free, the Service then annotated as associated
// by the controller; else a new one), a rule per port named
// <lbname>-<proto>-<port> (tcp-proxy with the proxy-protocol annotation)
// whose cidrlist is the source-cidrs annotation or everyone, the machines
// assigned, and a firewall rule per port from spec.loadBalancerSourceRanges
// or everyone.
func peerBuilds(t *testing.T, e *emulator.Emulator, svc *v1.Service, machines []string) peerBuilt {
	t.Helper()
	fx := e.Fixture()
	user := cs.NewAsyncClient(e.URL()+"/client/api", fx.UserKey, fx.UserSecret, false)
	project := ""
	if strings.Contains(e.CloudConfig(), "project-id") {
		project = fx.ProjectID
	}
	var b peerBuilt
	b.addrID, b.addr = peerAddress(t, user, fx.NetworkID, project, svc)
	cidrs := []string{"0.0.0.0/0"}
	if a := svc.Annotations[peerSourceCIDRs]; a != "" {
		cidrs = strings.Split(a, ",")
	}
	sources := svc.Spec.LoadBalancerSourceRanges
	if len(sources) == 0 {
		sources = []string{"0.0.0.0/0"}
	}
	algorithm := "roundrobin"
	if svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		algorithm = "source"
	}
	for _, port := range svc.Spec.Ports {
		proto, l4 := strings.ToLower(string(port.Protocol)), strings.ToLower(string(port.Protocol))
		if port.Protocol == v1.ProtocolTCP && svc.Annotations[peerProxyProtocol] == "true" {
			proto = "tcp-proxy"
		}
		name := cloudprovider.DefaultLoadBalancerName(svc) + "-" + proto + "-" + strconv.Itoa(int(port.Port))
		rp := user.LoadBalancer.NewCreateLoadBalancerRuleParams(algorithm, name, int(port.NodePort), int(port.Port))
		rp.SetNetworkid(fx.NetworkID)
		rp.SetPublicipid(b.addrID)
		rp.SetProtocol(proto)
		rp.SetOpenfirewall(false)
		rp.SetCidrlist(cidrs)
		r, err := user.LoadBalancer.CreateLoadBalancerRule(rp)
		require.NoError(t, err)
		b.rules = append(b.rules, r.Id)
		as := user.LoadBalancer.NewAssignToLoadBalancerRuleParams(r.Id)
		as.SetVirtualmachineids(machines)
		_, err = user.LoadBalancer.AssignToLoadBalancerRule(as)
		require.NoError(t, err)
		fw := user.Firewall.NewCreateFirewallRuleParams(b.addrID, l4)
		fw.SetCidrlist(sources)
		fw.SetStartport(int(port.Port))
		fw.SetEndport(int(port.Port))
		f, err := user.Firewall.CreateFirewallRule(fw)
		require.NoError(t, err)
		b.firewall = append(b.firewall, f.Id)
	}
	return b
}

// peerAddress is the address the peer takes for svc, in project if not
// empty: the one loadBalancerIP names, associated if it is free (the
// Service then annotated as associated by the controller), else a new one.
func peerAddress(t *testing.T, user *cs.CloudStackClient, networkID, project string, svc *v1.Service) (id, addr string) {
	t.Helper()
	associate := func(ip string) {
		p := user.Address.NewAssociateIpAddressParams()
		p.SetNetworkid(networkID)
		if project != "" {
			p.SetProjectid(project)
		}
		if ip != "" {
			p.SetIpaddress(ip)
		}
		r, err := user.Address.AssociateIpAddress(p)
		require.NoError(t, err)
		id, addr = r.Id, r.Ipaddress
	}
	if ip := svc.Spec.LoadBalancerIP; ip != "" {
		p := user.Address.NewListPublicIpAddressesParams()
		p.SetIpaddress(ip)
		p.SetAllocatedonly(false)
		p.SetListall(true)
		if project != "" {
			p.SetProjectid(project)
		}
		l, err := user.Address.ListPublicIpAddresses(p)
		require.NoError(t, err)
		require.Equal(t, 1, l.Count, "loadBalancerIP %s is one of the zone's addresses", ip)
		id, addr = l.PublicIpAddresses[0].Id, l.PublicIpAddresses[0].Ipaddress
		if l.PublicIpAddresses[0].Allocated == "" {
			associate(ip)
			if svc.Annotations == nil {
				svc.Annotations = map[string]string{}
			}
			svc.Annotations[peerIPAssociated] = "true"
			_, err := env.Client.CoreV1().Services(svc.Namespace).Update(t.Context(), svc, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
	} else {
		associate("")
	}
	return id, addr
}

func TestCloudStackTakesOverEveryShapeThePeerMakes(t *testing.T) {
	for _, inProject := range []bool{false, true} {
		t.Run(map[bool]string{false: "account", true: "project"}[inProject], func(t *testing.T) {
			third := 66
			if inProject {
				third = 67
			}
			takeOver(t, third, inProject)
		})
	}
}

// takeOver has the peer build each shape, then starts Overcast in its place.
func takeOver(t *testing.T, third int, inProject bool) {
	ns := namespace(t)
	e, err := emulator.New(emulator.Options{JobDelay: 300 * time.Millisecond, ServeTraffic: true, InProject: inProject,
		MachineCIDR: "127.0." + strconv.Itoa(third) + ".0/24", PublicCIDR: "127.3." + strconv.Itoa(third) + ".0/24"})
	e = coretest.Serve(t, e, err)
	name := "cs" + strconv.Itoa(third) + "-node-1"
	_, ip := e.AddMachine(name)
	k := env.NewKubelet(t, name, ip)
	nodes := env.StartCCM(t, framework.CCMOptions{Cloud: "cloudstack", CloudConfig: e.CloudConfig(),
		Controllers: []string{"cloud-node", "cloud-node-lifecycle"}})
	machine := strings.TrimPrefix(waitNodeInitialised(t, k.Name).Spec.ProviderID, "external-cloudstack://")
	nodes.Stop()

	requested := "127.3." + strconv.Itoa(third) + ".200"
	shapes := map[string]func(*v1.Service){
		"tcp":   nil,
		"udp":   func(s *v1.Service) { s.Spec.Ports[0].Protocol, s.Spec.Ports[0].Port = v1.ProtocolUDP, 53 },
		"proxy": func(s *v1.Service) { s.Annotations[peerProxyProtocol] = "true" },
		"ports": func(s *v1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: "https", Protocol: v1.ProtocolTCP, Port: 443})
			s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
		},
		"ranges": func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"} },
		"cidrs":  func(s *v1.Service) { s.Annotations[peerSourceCIDRs] = "127.0.0.0/8" },
		"both": func(s *v1.Service) {
			s.Annotations[peerSourceCIDRs] = "127.0.0.0/8"
			s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/9"}
		},
		"requested": func(s *v1.Service) { s.Spec.LoadBalancerIP = requested },
	}
	built := map[string]peerBuilt{}
	svcs := map[string]*v1.Service{}
	for shape, mutate := range shapes {
		svc := lbService(t, ns, shape, func(s *v1.Service) {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			if mutate != nil {
				mutate(s)
			}
		})
		k.ServeService(t, svc, true)
		built[shape], svcs[shape] = peerBuilds(t, e, svc, []string{machine}), svc
	}
	admin := csAdmin(e)
	wantRules, wantFirewall := peerRuleIDs(built)
	e.ResetCalls()

	env.StartCCM(t, framework.CCMOptions{Cloud: "cloudstack", CloudConfig: e.CloudConfig()})
	for shape := range shapes {
		got := waitCondition(t, ns, shape, servicecontroller.ConditionReady, metav1.ConditionTrue, "")
		assert.Equal(t, built[shape].addr, ingressAddr(got), "%s: the peer's address", shape)
	}
	assert.Equal(t, k.Name, waitTCP(t, netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr(built["ranges"].addr), 80)),
		"traffic from a source the ranges let in")
	rules, firewall := csObjects(t, admin, inProject)
	assert.Equal(t, wantRules, rules, "the peer's rules, none rebuilt")
	assert.Equal(t, wantFirewall, firewall, "the peer's firewall rules, none rebuilt")
	writes := csWrites(e)
	// One write for every address the peer associated unasked: its tags.
	assert.Equal(t, len(shapes)-1, adoptedAddresses(t, admin, inProject), "every address the peer associated unasked is adopted")
	assert.Equal(t, len(shapes)-1, writes, "nothing written but the adopted addresses' tags")
	assert.Empty(t, warnings(t, ns))

	names := make([]string, 0, len(shapes))
	for shape := range shapes {
		names = append(names, shape)
	}
	csDeleteLeavesNothing(t, admin, inProject, ns, names...)
}

// peerRuleIDs are the ids of the rules and firewall rules the peer built,
// each sorted.
func peerRuleIDs(built map[string]peerBuilt) (rules, firewall []string) {
	for _, b := range built {
		rules, firewall = append(rules, b.rules...), append(firewall, b.firewall...)
	}
	slices.Sort(rules)
	slices.Sort(firewall)
	return rules, firewall
}

// adoptedAddresses counts the addresses tagged as this cluster's (its
// kube-system's UID), in every project if inProject.
func adoptedAddresses(t *testing.T, admin *cs.CloudStackClient, inProject bool) int {
	t.Helper()
	tagged := admin.Address.NewListPublicIpAddressesParams()
	tagged.SetListall(true)
	kubeSystem, err := env.Client.CoreV1().Namespaces().Get(t.Context(), "kube-system", metav1.GetOptions{})
	require.NoError(t, err)
	tagged.SetTags(map[string]string{"overcast-cluster": string(kubeSystem.UID)})
	if inProject {
		tagged.SetProjectid("-1")
	}
	adopted, err := admin.Address.ListPublicIpAddresses(tagged)
	require.NoError(t, err)
	return adopted.Count
}

// What is removed behind the CCM's back (a firewall rule, a load balancer
// rule, the address's association) is rebuilt by the drift check with no
// change to the Service, on the same address.
func TestCloudStackRepairsWhatIsRemovedBehindItsBack(t *testing.T) {
	ns := namespace(t)
	c, e := cloudStackLBCloudOn(t, 68, 1)
	admin := csAdmin(e)
	svc := lbService(t, ns, "web", func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8"} })
	c.nodes[0].ServeService(t, svc, true)
	got := waitCondition(t, ns, "web", servicecontroller.ConditionReady, metav1.ConditionTrue, "")
	addr := ingressAddr(got)
	to := netip.AddrPortFrom(netip.MustParseAddr(addr), 80)
	require.Equal(t, c.nodes[0].Name, waitTCP(t, netip.Addr{}, to))

	ids := func() (rules, openings []string) { return csObjects(t, admin, false) }
	firewall := func() []*cs.FirewallRule {
		p := admin.Firewall.NewListFirewallRulesParams()
		p.SetListall(true)
		r, err := admin.Firewall.ListFirewallRules(p)
		require.NoError(t, err)
		return r.FirewallRules
	}
	// removed waits until what remove took away is gone, then until the
	// drift check has put a rule and a firewall rule back (new ones).
	removed := func(what string, remove func(rule *cs.LoadBalancerRule, fw *cs.FirewallRule) string) {
		t.Helper()
		rules, openings := ids()
		require.Len(t, rules, 1)
		require.Len(t, openings, 1)
		gone := remove(csRules(t, admin)[0], firewall()[0])
		require.NoError(t, devenv.Poll(waitShort, tick, func() error {
			r, o := ids()
			if slices.Contains(append(r, o...), gone) {
				return fmt.Errorf("%s: %s is still there", what, gone)
			}
			return nil
		}), what)
		require.NoError(t, devenv.Poll(waitLong, tick, func() error {
			r, o := ids()
			if len(r) != 1 || len(o) != 1 || (slices.Equal(r, rules) && slices.Equal(o, openings)) {
				return fmt.Errorf("%s: rules %v, firewall rules %v: not repaired", what, r, o)
			}
			return nil
		}), what)
		assert.Equal(t, c.nodes[0].Name, waitTCP(t, netip.Addr{}, to), "%s: served on the same address", what)
		now, err := env.Client.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, addr, ingressAddr(now), what)
		assert.Equal(t, addr, csRules(t, admin)[0].Publicip, "%s: the same address", what)
	}

	removed("firewall rule deleted", func(_ *cs.LoadBalancerRule, fw *cs.FirewallRule) string {
		_, err := admin.Firewall.DeleteFirewallRule(admin.Firewall.NewDeleteFirewallRuleParams(fw.Id))
		require.NoError(t, err)
		return fw.Id
	})
	removed("load balancer rule deleted", func(r *cs.LoadBalancerRule, _ *cs.FirewallRule) string {
		_, err := admin.LoadBalancer.DeleteLoadBalancerRule(admin.LoadBalancer.NewDeleteLoadBalancerRuleParams(r.Id))
		require.NoError(t, err)
		return r.Id
	})
	removed("address released", func(r *cs.LoadBalancerRule, _ *cs.FirewallRule) string {
		_, err := admin.Address.DisassociateIpAddress(admin.Address.NewDisassociateIpAddressParams(r.Publicipid))
		require.NoError(t, err)
		return r.Id // its rules go with it
	})
	assert.Empty(t, warnings(t, ns))
	deleteService(t, ns, "web")
	assert.Empty(t, c.holds(t, got, ""), "a deleted Service leaves nothing")
}
