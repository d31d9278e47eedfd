package openstack

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
)

const (
	confSubnet   = "6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"
	confFloating = "7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"
	classSubnet  = "11111111-2222-4333-8444-555555555555"
	annotSubnet  = "99999999-8888-4777-8666-555555555555"
)

func specCloud(t *testing.T, extra string) *Cloud {
	t.Helper()
	c, err := Read(strings.NewReader(`[Global]
auth-url=http://127.0.0.1:5000/v3
application-credential-id=abc
application-credential-secret=xyz
[LoadBalancer]
subnet-id=` + confSubnet + `
floating-network-id=` + confFloating + `
` + extra + `
[LoadBalancerClass "inside"]
subnet-id=` + classSubnet + `
`))
	require.NoError(t, err)
	cloud, err := New(c)
	require.NoError(t, err)
	return cloud
}

func specService(annotations map[string]string, mutate ...func(*v1.Service)) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1", Annotations: annotations},
		Spec: v1.ServiceSpec{
			Type:  v1.ServiceTypeLoadBalancer,
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080}, {Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func node(name, ip string, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "203.0.113.9"}, {Type: v1.NodeInternalIP, Address: ip}}}}
}

func TestSpecDefaultsComeFromTheCloudConf(t *testing.T) {
	c := specCloud(t, "")
	s, err := c.lb.spec("k8s", specService(nil), []*v1.Node{node("b", "10.0.0.2", nil), node("a", "10.0.0.1", nil)})
	require.NoError(t, err)
	assert.Equal(t, "kube_service_k8s_shop_web", s.name)
	assert.Equal(t, confSubnet, s.subnetID)
	assert.Equal(t, confSubnet, s.memberSubnetID, "members are reached through the VIP subnet by default")
	assert.Equal(t, confFloating, s.floatingNetworkID)
	assert.Equal(t, "ROUND_ROBIN", s.method)
	assert.Equal(t, -1, s.connLimit)
	assert.Nil(t, s.monitor, "no monitor for a Cluster traffic policy without create-monitor")
	assert.True(t, s.onlyPublic)
	assert.Equal(t, []string{"10.0.0.1", "10.0.0.2"}, s.members, "InternalIPs, sorted")
	assert.Equal(t, "TCP", s.poolProtocol(s.ports[0]))
	assert.Equal(t, []string{"TCP/00080", "UDP/00053"}, []string{s.listenerKey(s.ports[0]), s.listenerKey(s.ports[1])})
}

func TestSpecClassWinsOverAnnotations(t *testing.T) {
	c := specCloud(t, "")
	s, err := c.lb.spec("k8s", specService(map[string]string{
		string(annotation.OpenStackClass):    "inside",
		string(annotation.OpenStackSubnetID): annotSubnet,
	}), nil)
	require.NoError(t, err)
	assert.Equal(t, classSubnet, s.subnetID)

	_, err = c.lb.spec("k8s", specService(map[string]string{string(annotation.OpenStackClass): "outside"}), nil)
	var inv *annotation.InvalidError
	require.ErrorAs(t, err, &inv)
	assert.Contains(t, err.Error(), "inside", "the error lists the classes there are")
}

func TestSpecMonitorIsOnForLocalTrafficAndProbesTheHealthCheckNodePort(t *testing.T) {
	c := specCloud(t, "monitor-delay=10s\nmonitor-timeout=4s")
	local := func(s *v1.Service) {
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 32000
	}
	s, err := c.lb.spec("k8s", specService(nil, local), nil)
	require.NoError(t, err)
	require.NotNil(t, s.monitor)
	assert.Equal(t, 32000, s.monitor.httpPort)
	assert.Equal(t, "HTTP", s.monitor.monitorType(v1.ProtocolUDP), "UDP pools are probed on the HTTP health port too")
	assert.Equal(t, 10, s.monitor.delay)
	assert.Equal(t, 4, s.monitor.timeout)

	s, err = c.lb.spec("k8s", specService(map[string]string{string(annotation.OpenStackEnableHealthMonitor): "false"}, local), nil)
	require.NoError(t, err)
	assert.Nil(t, s.monitor, "the annotation turns it off")

	s, err = c.lb.spec("k8s", specService(map[string]string{string(annotation.OpenStackEnableHealthMonitor): "true"}), nil)
	require.NoError(t, err)
	require.NotNil(t, s.monitor)
	assert.Equal(t, "TCP", s.monitor.monitorType(v1.ProtocolTCP))
	assert.Equal(t, "UDP-CONNECT", s.monitor.monitorType(v1.ProtocolUDP))

	specRefuses(t, c, map[string]string{
		string(annotation.OpenStackEnableHealthMonitor):  "true",
		string(annotation.OpenStackHealthMonitorDelay):   "2",
		string(annotation.OpenStackHealthMonitorTimeout): "5",
	}, "must not exceed")
}

func TestSpecListenerAndPoolOptions(t *testing.T) {
	c := specCloud(t, "")
	s, err := c.lb.spec("k8s", specService(map[string]string{
		string(annotation.OpenStackProxyProtocol):        "v2",
		string(annotation.OpenStackConnectionLimit):      "500",
		string(annotation.OpenStackTimeoutClientData):    "60000",
		string(annotation.OpenStackTimeoutMemberConnect): "4000",
		string(annotation.OpenStackLBMethod):             "source_ip",
	}), nil)
	require.NoError(t, err)
	assert.Equal(t, "PROXYV2", s.poolProtocol(s.ports[0]))
	assert.Equal(t, "UDP", s.poolProtocol(s.ports[1]), "no PROXY header over UDP")
	assert.Equal(t, 500, s.connLimit)
	require.NotNil(t, s.timeouts.clientData)
	assert.Equal(t, 60000, *s.timeouts.clientData)
	assert.Equal(t, 4000, *s.timeouts.memberConnect)
	assert.Nil(t, s.timeouts.memberData, "unset timeouts are left to Octavia")
	assert.Equal(t, "SOURCE_IP", s.method)

	specRefuses(t, c, map[string]string{
		string(annotation.OpenStackProxyProtocol): "true",
		string(annotation.OpenStackXForwardedFor): "true",
	}, "cannot be combined")
}

func TestSpecCollectsEveryProblem(t *testing.T) {
	c := specCloud(t, "")
	err := specRefuses(t, c, map[string]string{
		string(annotation.OpenStackConnectionLimit): "lots",
		string(annotation.OpenStackLBMethod):        "RANDOM",
		string(annotation.OpenStackSubnetID):        "not-a-uuid",
	}, "connection-limit", "lb-method", "subnet-id")
	var inv *annotation.InvalidError
	assert.True(t, errors.As(err, &inv))
}

func TestSpecNodeSelectorPicksMembers(t *testing.T) {
	c := specCloud(t, "node-selector=pool=edge")
	nodes := []*v1.Node{node("a", "10.0.0.1", map[string]string{"pool": "edge"}), node("b", "10.0.0.2", map[string]string{"pool": "core"}), node("c", "10.0.0.3", nil)}
	s, err := c.lb.spec("k8s", specService(nil), nodes)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1"}, s.members, "the cloud.conf's selector")

	s, err = c.lb.spec("k8s", specService(map[string]string{string(annotation.OpenStackNodeSelector): "pool"}), nodes)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1", "10.0.0.2"}, s.members, "a bare key requires only the label")

	s, err = c.lb.spec("k8s", specService(map[string]string{string(annotation.OpenStackNodeSelector): ""}), nodes)
	require.NoError(t, err)
	assert.Len(t, s.members, 3, "an empty annotation selects every node")
}

func TestSpecLoadBalancerIPIsTheFloatingIPOrTheVIP(t *testing.T) {
	c := specCloud(t, "")
	withIP := func(s *v1.Service) { s.Spec.LoadBalancerIP = "203.0.113.7" }
	s, err := c.lb.spec("k8s", specService(nil, withIP), nil)
	require.NoError(t, err)
	assert.Equal(t, "203.0.113.7", s.floatingIP)
	assert.Empty(t, s.vipAddress)

	s, err = c.lb.spec("k8s", specService(map[string]string{string(annotation.OpenStackInternalLoadBalancer): "true"}, withIP), nil)
	require.NoError(t, err)
	assert.Empty(t, s.floatingIP)
	assert.Equal(t, "203.0.113.7", s.vipAddress)
}

func TestStatusPublishesWhatIsAsked(t *testing.T) {
	c := specCloud(t, "")
	st := c.lb.statusFor(lbSpec{onlyPublic: true}, "203.0.113.7", "10.0.0.50")
	require.Len(t, st.Ingress, 1)
	assert.Equal(t, "203.0.113.7", st.Ingress[0].IP)
	assert.Equal(t, v1.LoadBalancerIPModeVIP, *st.Ingress[0].IPMode)

	st = c.lb.statusFor(lbSpec{onlyPublic: false, proxy: annotation.ProxyProtocolV1}, "203.0.113.7", "10.0.0.50")
	require.Len(t, st.Ingress, 2)
	assert.Equal(t, "10.0.0.50", st.Ingress[1].IP)
	assert.Equal(t, v1.LoadBalancerIPModeProxy, *st.Ingress[0].IPMode)

	st = c.lb.statusFor(lbSpec{onlyPublic: true, hostname: "shop.example.com"}, "203.0.113.7", "10.0.0.50")
	assert.Equal(t, []v1.LoadBalancerIngress{{Hostname: "shop.example.com"}}, st.Ingress)

	c = specCloud(t, "enable-ingress-hostname=true\ningress-hostname-suffix=lb.example.net")
	st = c.lb.statusFor(lbSpec{onlyPublic: true, proxy: annotation.ProxyProtocolV2}, "203.0.113.7", "10.0.0.50")
	assert.Equal(t, []v1.LoadBalancerIngress{{Hostname: "203.0.113.7.lb.example.net"}}, st.Ingress)
}

func TestFingerprintFollowsWhatConvergeActsOn(t *testing.T) {
	c := specCloud(t, "")
	nodes := []*v1.Node{node("a", "10.0.0.1", nil)}
	base, err := c.lb.spec("k8s", specService(map[string]string{string(annotation.OpenStackTimeoutClientData): "60000"}), nodes)
	require.NoError(t, err)
	same, err := c.lb.spec("k8s", specService(map[string]string{string(annotation.OpenStackTimeoutClientData): "60000"}), nodes)
	require.NoError(t, err)
	assert.Equal(t, base.fingerprint(), same.fingerprint(), "the same ask, the same fingerprint (no pointer addresses in it)")
	assert.Len(t, base.fingerprint(), 16+1+8)

	for name, svc := range map[string]*v1.Service{
		"a timeout":   specService(map[string]string{string(annotation.OpenStackTimeoutClientData): "60001"}),
		"a port":      specService(map[string]string{string(annotation.OpenStackTimeoutClientData): "60000"}, func(s *v1.Service) { s.Spec.Ports[0].Port = 81 }),
		"a NodePort":  specService(map[string]string{string(annotation.OpenStackTimeoutClientData): "60000"}, func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30081 }),
		"the monitor": specService(map[string]string{string(annotation.OpenStackTimeoutClientData): "60000", string(annotation.OpenStackEnableHealthMonitor): "true"}),
	} {
		other, err := c.lb.spec("k8s", svc, nodes)
		require.NoError(t, err)
		assert.NotEqual(t, base.fingerprint(), other.fingerprint(), name)
		assert.NotEqual(t, base.configFingerprint(), other.configFingerprint(), name)
	}
	more, err := c.lb.spec("k8s", specService(map[string]string{string(annotation.OpenStackTimeoutClientData): "60000"}), append(nodes, node("b", "10.0.0.2", nil)))
	require.NoError(t, err)
	assert.NotEqual(t, base.fingerprint(), more.fingerprint(), "a new member")
	assert.Equal(t, base.configFingerprint(), more.configFingerprint(), "a new member changes the members alone")
	assert.NotEqual(t, base.membersFingerprint(), more.membersFingerprint())
}

func TestSpecOfIPv6AndDualStackServices(t *testing.T) {
	c := specCloud(t, "")
	dualNode := node("a", "10.0.0.1", nil)
	dualNode.Status.Addresses = append(dualNode.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "fd00::1"})
	v4Only := node("b", "10.0.0.2", nil)
	v6 := specService(nil, func(s *v1.Service) {
		s.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol}
		s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24", "2001:db8::/32"}
	})
	s, err := c.lb.spec("k8s", v6, []*v1.Node{dualNode, v4Only})
	require.NoError(t, err)
	assert.Equal(t, v1.IPv6Protocol, s.family)
	assert.Empty(t, s.subnetID, "found in the network when the load balancer is created")
	assert.Equal(t, confSubnet, s.vipSubnetOf, "the network of the IPv4 VIP subnet")
	assert.Equal(t, []string{"fd00::1"}, s.members, "IPv6 addresses only")
	assert.Equal(t, []string{"2001:db8::/32"}, s.allowedCIDRs, "the ranges of its family")
	assert.True(t, s.noFloatingIP())

	named := specService(map[string]string{string(annotation.OpenStackSubnetID): annotSubnet}, func(s *v1.Service) { s.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol} })
	s, err = c.lb.spec("k8s", named, nil)
	require.NoError(t, err)
	assert.Equal(t, annotSubnet, s.subnetID, "the annotation names it")
	s, err = specCloud(t, "ipv6-subnet-id="+classSubnet).lb.spec("k8s", specService(nil, func(s *v1.Service) { s.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol} }), nil)
	require.NoError(t, err)
	assert.Equal(t, classSubnet, s.subnetID, "the cloud.conf names it")

	onlyV4Ranges := specService(nil, func(s *v1.Service) {
		s.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol}
		s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	})
	_, err = c.lb.spec("k8s", onlyV4Ranges, nil)
	require.ErrorContains(t, err, "hold no IPv6 range", "never opened to everyone instead")

	for _, tc := range []struct {
		policy      v1.IPFamilyPolicy
		families    []v1.IPFamily
		requireDual bool
	}{
		{v1.IPFamilyPolicyRequireDualStack, []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}, true},
		{v1.IPFamilyPolicyPreferDualStack, []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}, false},
	} {
		dual := specService(nil, func(s *v1.Service) { s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = tc.families, &tc.policy })
		s, err = c.lb.spec("k8s", dual, nil)
		require.NoError(t, err)
		assert.Equal(t, tc.families[0], s.family)
		assert.Equal(t, tc.families[1], s.secondFamily)
		assert.Equal(t, tc.requireDual, s.requireDual)
		assert.False(t, s.noFloatingIP(), "its IPv4 VIP takes a floating IP")
		if tc.families[1] == v1.IPv4Protocol {
			assert.Equal(t, confSubnet, s.secondSubnetID, "the cloud.conf's subnet-id is the IPv4 one")
		}
	}
}

func TestSpecTLS(t *testing.T) {
	const ref = "https://barbican.example:9311/v1/containers/0b5d8f3e-8a3c-4c1e-9f0e-2b7d6c5a4e31"
	tcp443 := func(s *v1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: "https", Protocol: v1.ProtocolTCP, Port: 443, NodePort: 30443})
	}
	byKey := func(s lbSpec) map[string]string {
		out := map[string]string{}
		for _, p := range s.ports {
			out[s.listenerKey(p)] = s.poolProtocol(p)
		}
		return out
	}

	// The cloud.conf's certificate: every TCP port terminates TLS, UDP stays.
	s, err := specCloud(t, "default-tls-container-ref="+ref).lb.spec("k8s", specService(nil, tcp443), nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"TERMINATED_HTTPS/00080": "HTTP", "TERMINATED_HTTPS/00443": "HTTP", "UDP/00053": "UDP"}, byKey(s))
	assert.Equal(t, ref, s.tls.ref)

	// tls-ports picks; PROXY stays PROXY behind TLS.
	s, err = specCloud(t, "").lb.spec("k8s", specService(map[string]string{
		string(annotation.OpenStackDefaultTLSContainerRef): ref, string(annotation.OpenStackTLSPorts): "443",
		string(annotation.OpenStackProxyProtocol): "v2",
	}, tcp443), nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"TCP/00080": "PROXYV2", "TERMINATED_HTTPS/00443": "PROXYV2", "UDP/00053": "UDP"}, byKey(s))

	// Without TLS the fingerprint is as before TLS existed; with it, it changes.
	plain, err := specCloud(t, "").lb.spec("k8s", specService(nil), nil)
	require.NoError(t, err)
	assert.Empty(t, plain.tlsFingerprint())
	withTLS, err := specCloud(t, "default-tls-container-ref="+ref).lb.spec("k8s", specService(nil), nil)
	require.NoError(t, err)
	assert.NotEqual(t, plain.configFingerprint(), withTLS.configFingerprint())

	for _, tc := range []struct {
		name, conf string
		ann        map[string]string
		want       string
	}{
		{"not a Barbican URL", "", map[string]string{string(annotation.OpenStackDefaultTLSContainerRef): "my-cert"}, "is not the URL of a Barbican container or secret"},
		{"two certificates", "", map[string]string{string(annotation.OpenStackDefaultTLSContainerRef): ref, string(annotation.OpenStackTLSSecret): "web-tls"}, "both name a certificate"},
		{"a Secret with an external store", "container-store=external", map[string]string{string(annotation.OpenStackTLSSecret): "web-tls"}, "container-store = external"},
		{"a Secret of another namespace", "", map[string]string{string(annotation.OpenStackTLSSecret): "other/web-tls"}, "the Service's own namespace"},
		{"ports without a certificate", "", map[string]string{string(annotation.OpenStackTLSPorts): "80"}, "no certificate is named"},
		{"a UDP port", "", map[string]string{string(annotation.OpenStackTLSSecret): "web-tls", string(annotation.OpenStackTLSPorts): "53"}, "port 53 is UDP"},
		{"a port the Service lacks", "", map[string]string{string(annotation.OpenStackTLSSecret): "web-tls", string(annotation.OpenStackTLSPorts): "8443"}, "port 8443 is not a port of the Service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specRefuses(t, specCloud(t, tc.conf), tc.ann, tc.want)
		})
	}

	// An external store passes any reference on unread.
	s, err = specCloud(t, "container-store=external").lb.spec("k8s", specService(map[string]string{string(annotation.OpenStackDefaultTLSContainerRef): "vault:my-cert"}), nil)
	require.NoError(t, err)
	assert.False(t, s.tls.check)
}

func TestConfigTLSKeys(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{"container-store=vault", `container-store: "vault" is not barbican or external`},
		{"default-tls-container-ref=my-cert", "default-tls-container-ref: \"my-cert\" is not the URL"},
	} {
		cfg, err := Read(strings.NewReader("[Global]\nauth-url=http://127.0.0.1:5000/v3\napplication-credential-id=a\napplication-credential-secret=b\n[LoadBalancer]\n" + tc.extra + "\n"))
		if err == nil {
			err = cfg.Validate()
		}
		require.Error(t, err, tc.extra)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// A listener open to everyone is written as the peer writes it (the whole
// of the VIP's family), and an empty list is taken as the same: neither CCM
// rewrites the other's listeners (TestOpenStackGoesBackToThePeerItself ran
// it with the peer).
func TestAListenerOpenToAllIsWrittenAsThePeerWritesIt(t *testing.T) {
	assert.Equal(t, []string{"0.0.0.0/0"}, lbSpec{family: v1.IPv4Protocol}.listenerCIDRs())
	assert.Equal(t, []string{"::/0"}, lbSpec{family: v1.IPv6Protocol}.listenerCIDRs())
	assert.Equal(t, []string{"198.51.100.0/24"}, lbSpec{family: v1.IPv4Protocol, allowedCIDRs: []string{"198.51.100.0/24"}}.listenerCIDRs())
	assert.Empty(t, lbSpec{family: v1.IPv4Protocol, secondFamily: v1.IPv6Protocol}.listenerCIDRs(),
		"dual-stack: none (Octavia refuses 0.0.0.0/0 for the IPv6 VIP)")
	for _, open := range [][]string{nil, {}, {"0.0.0.0/0"}, {"::/0"}, {"0.0.0.0/0", "::/0"}} {
		assert.True(t, openToAll(open), "%v", open)
	}
	assert.False(t, openToAll([]string{"0.0.0.0/0", "198.51.100.0/24"}))
}

// specRefuses says that the Service with these annotations has no spec, for
// problems that name each of want; it returns them.
func specRefuses(t *testing.T, c *Cloud, annotations map[string]string, want ...string) error {
	t.Helper()
	_, err := c.lb.spec("k8s", specService(annotations), nil)
	require.Error(t, err)
	for _, w := range want {
		assert.Contains(t, err.Error(), w)
	}
	return err
}
