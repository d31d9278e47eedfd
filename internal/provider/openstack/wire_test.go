package openstack

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// TestEveryRequestBodyIsAsPinned: the bodies the CCM writes to Octavia and
// Neutron, and the queries it lists floating IPs and subnets with, built
// from its own options through the gateway's conversions, are byte for
// byte those it sent when it built gophercloud's options itself (pinned
// below from that code): every field, pointer, empty list and omission as
// it was.
func TestEveryRequestBodyIsAsPinned(t *testing.T) {
	got := map[string]string{}
	for _, sc := range wireScenarios() {
		c := specCloud(t, sc.conf)
		c.Cluster.Set("cluster-1")
		svc := specService(sc.ann, sc.mutate)
		s, err := c.lb.spec("k8s", svc, []*v1.Node{node("a", "10.0.0.1", nil), node("b", "10.0.0.2", nil)})
		require.NoError(t, err)
		loadBalancerBodies(t, c, svc, s, sc.name, got)
		for i, p := range s.ports {
			portBodies(t, c, svc, s, p, fmt.Sprintf("%s/%%s-%d", sc.name, i), i == 0, got)
		}
	}
	limit, ms, ref := 100, 5000, "ref-1"
	for i, u := range []osapi.ListenerUpdate{
		{AllowedCIDRs: &[]string{}},
		{AllowedCIDRs: &[]string{"10.0.0.0/8"}, ConnLimit: &limit, DefaultTLSContainerRef: &ref},
		{TimeoutClientData: &ms, TimeoutMemberConnect: &ms, TimeoutMemberData: &ms, TimeoutTCPInspect: &ms},
	} {
		got[fmt.Sprintf("listener-update-%d", i)] = body(t, u)
	}
	desc := fipDescription + "uid-1"
	for i, o := range []osapi.FloatingIPCreate{
		{FloatingNetworkID: "net-1", SubnetID: "", PortID: "port-1", Description: desc},
		{FloatingNetworkID: "net-1", SubnetID: "sub-1", PortID: "port-1", Description: desc},
		{FloatingIP: "203.0.113.7", PortID: "port-1", FloatingNetworkID: "net-1", Description: desc},
	} {
		got[fmt.Sprintf("fip-create-%d", i)] = body(t, o)
	}
	for i, q := range []osapi.FloatingIPQuery{{FloatingIP: "203.0.113.7"}, {Description: desc}, {PortID: "port-1"}, {}} {
		got[fmt.Sprintf("fip-list-%d", i)] = body(t, q)
	}
	for i, q := range []osapi.SubnetQuery{{NetworkID: "net-1", IPVersion: 6}, {NetworkID: "net-1"}, {}} {
		got[fmt.Sprintf("subnet-list-%d", i)] = body(t, q)
	}

	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(pinnedBodies), "\n") {
		name, body, _ := strings.Cut(line, "\t")
		want[name] = body
	}
	assert.Equal(t, want, got)
}

// loadBalancerBodies are the bodies creating the load balancer of s: fully
// populated, and bare (step by step) with an additional VIP.
func loadBalancerBodies(t *testing.T, c *Cloud, svc *v1.Service, s lbSpec, name string, got map[string]string) {
	t.Helper()
	got[name+"/create"] = body(t, c.lb.createOpts(svc, s))
	c.lb.serial.Store(true)
	bare := c.lb.createOpts(svc, s)
	bare.AdditionalVips = []osapi.AdditionalVIP{{SubnetID: "sub-6"}}
	got[name+"/create-serial"] = body(t, bare)
}

// portBodies are the bodies creating the listener, pool and monitor of p
// one by one, updating the monitor, putting the members, and adding one.
func portBodies(t *testing.T, c *Cloud, svc *v1.Service, s lbSpec, p v1.ServicePort, name string, first bool, got map[string]string) {
	t.Helper()
	l := listenerOpts(svc, s, p)
	l.LoadBalancerID = "lb-1"
	if first {
		l.DefaultPoolID = "pool-1"
	}
	got[fmt.Sprintf(name, "listener")] = body(t, l)
	po := poolOpts(s, p)
	po.ListenerID = "l-1"
	got[fmt.Sprintf(name, "pool")] = body(t, po)
	if s.monitor != nil {
		want := monitorOpts(s, p)
		want.PoolID = "pool-1"
		got[fmt.Sprintf(name, "monitor")] = body(t, want)
		u := osapi.MonitorUpdate{Delay: want.Delay, Timeout: want.Timeout, MaxRetries: want.MaxRetries, MaxRetriesDown: want.MaxRetriesDown, URLPath: want.URLPath}
		got[fmt.Sprintf(name, "monitor-update")] = body(t, u)
	}
	got[fmt.Sprintf(name, "members")] = body(t, memberOpts(s, p))
	got[fmt.Sprintf(name, "member")] = body(t, memberOpt(s, p, "10.0.0.3"))
}

// body is what the API sends for opts.
func body(t *testing.T, opts any) string {
	t.Helper()
	b, err := osapi.RequestBody(opts)
	require.NoError(t, err)
	return b
}

type wireScenario struct {
	name, conf string
	ann        map[string]string
	mutate     func(*v1.Service)
}

// wireScenarios are Services that set every option a write carries.
func wireScenarios() []wireScenario {
	const ref = "https://barbican.example:9311/v1/containers/0b5d8f3e-8a3c-4c1e-9f0e-2b7d6c5a4e31"
	return []wireScenario{
		{name: "plain", mutate: func(*v1.Service) {}},
		{name: "local-timeouts", ann: map[string]string{
			"loadbalancer.openstack.org/timeout-client-data":    "5000",
			"loadbalancer.openstack.org/timeout-member-connect": "3000",
			"loadbalancer.openstack.org/timeout-member-data":    "6000",
			"loadbalancer.openstack.org/timeout-tcp-inspect":    "100",
			"loadbalancer.openstack.org/connection-limit":       "100",
			"loadbalancer.openstack.org/member-subnet-id":       "99999999-8888-4777-8666-555555555555",
		}, mutate: func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 32000
			s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "192.168.0.0/16"}
		}},
		{name: "xff-monitor", conf: "create-monitor=true\nlb-provider=amphora\nflavor-id=f-1\navailability-zone=az-1", ann: map[string]string{
			"loadbalancer.openstack.org/x-forwarded-for": "true",
		}, mutate: func(*v1.Service) {}},
		{name: "tls-proxy", ann: map[string]string{
			"loadbalancer.openstack.org/default-tls-container-ref": ref, "loadbalancer.openstack.org/tls-ports": "443",
			"loadbalancer.openstack.org/proxy-protocol": "v2",
		}, mutate: func(s *v1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: "https", Protocol: v1.ProtocolTCP, Port: 443, NodePort: 30443})
		}},
	}
}

// pinnedBodies: name, a tab, the body (or query) the CCM sent when it built
// gophercloud's options itself.
const pinnedBodies = `
plain/create	{"loadbalancer":{"name":"kube_service_k8s_shop_web","description":"Kubernetes Service shop/web","vip_subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c","listeners":[{"protocol":"TCP","protocol_port":80,"name":"kube_service_k8s_shop_web_tcp_80","default_pool":{"lb_algorithm":"ROUND_ROBIN","protocol":"TCP","name":"kube_service_k8s_shop_web_tcp_80","members":[{"address":"10.0.0.1","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]},"connection_limit":-1,"allowed_cidrs":["0.0.0.0/0"],"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]},{"protocol":"UDP","protocol_port":53,"name":"kube_service_k8s_shop_web_udp_53","default_pool":{"lb_algorithm":"ROUND_ROBIN","protocol":"UDP","name":"kube_service_k8s_shop_web_udp_53","members":[{"address":"10.0.0.1","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]},"connection_limit":-1,"allowed_cidrs":["0.0.0.0/0"],"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}],"tags":["kube_service_k8s_shop_web","overcast-service-uid=uid-1","overcast-cluster-uid=cluster-1"]}}
plain/create-serial	{"loadbalancer":{"name":"kube_service_k8s_shop_web","description":"Kubernetes Service shop/web","vip_subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c","tags":["kube_service_k8s_shop_web","overcast-service-uid=uid-1","overcast-cluster-uid=cluster-1"],"additional_vips":[{"subnet_id":"sub-6"}]}}
plain/listener-0	{"listener":{"allowed_cidrs":["0.0.0.0/0"],"connection_limit":-1,"default_pool_id":"pool-1","loadbalancer_id":"lb-1","name":"kube_service_k8s_shop_web_tcp_80","protocol":"TCP","protocol_port":80,"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}}
plain/pool-0	{"pool":{"lb_algorithm":"ROUND_ROBIN","listener_id":"l-1","name":"kube_service_k8s_shop_web_tcp_80","protocol":"TCP"}}
plain/members-0	{"members":[{"address":"10.0.0.1","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]}
plain/listener-1	{"listener":{"allowed_cidrs":["0.0.0.0/0"],"connection_limit":-1,"loadbalancer_id":"lb-1","name":"kube_service_k8s_shop_web_udp_53","protocol":"UDP","protocol_port":53,"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}}
plain/pool-1	{"pool":{"lb_algorithm":"ROUND_ROBIN","listener_id":"l-1","name":"kube_service_k8s_shop_web_udp_53","protocol":"UDP"}}
plain/members-1	{"members":[{"address":"10.0.0.1","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]}
plain/member-0	{"member":{"address":"10.0.0.3","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}}
plain/member-1	{"member":{"address":"10.0.0.3","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}}
local-timeouts/create	{"loadbalancer":{"name":"kube_service_k8s_shop_web","description":"Kubernetes Service shop/web","vip_subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c","listeners":[{"protocol":"TCP","protocol_port":80,"name":"kube_service_k8s_shop_web_tcp_80","default_pool":{"lb_algorithm":"ROUND_ROBIN","protocol":"TCP","name":"kube_service_k8s_shop_web_tcp_80","members":[{"address":"10.0.0.1","protocol_port":30080,"subnet_id":"99999999-8888-4777-8666-555555555555","monitor_port":32000},{"address":"10.0.0.2","protocol_port":30080,"subnet_id":"99999999-8888-4777-8666-555555555555","monitor_port":32000}],"healthmonitor":{"type":"HTTP","delay":5,"timeout":3,"max_retries":1,"max_retries_down":3,"url_path":"/healthz","http_method":"GET","expected_codes":"200","name":"kube_service_k8s_shop_web_tcp_80"}},"connection_limit":100,"timeout_client_data":5000,"timeout_member_data":6000,"timeout_member_connect":3000,"timeout_tcp_inspect":100,"allowed_cidrs":["10.0.0.0/8","192.168.0.0/16"],"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]},{"protocol":"UDP","protocol_port":53,"name":"kube_service_k8s_shop_web_udp_53","default_pool":{"lb_algorithm":"ROUND_ROBIN","protocol":"UDP","name":"kube_service_k8s_shop_web_udp_53","members":[{"address":"10.0.0.1","protocol_port":30053,"subnet_id":"99999999-8888-4777-8666-555555555555","monitor_port":32000},{"address":"10.0.0.2","protocol_port":30053,"subnet_id":"99999999-8888-4777-8666-555555555555","monitor_port":32000}],"healthmonitor":{"type":"HTTP","delay":5,"timeout":3,"max_retries":1,"max_retries_down":3,"url_path":"/healthz","http_method":"GET","expected_codes":"200","name":"kube_service_k8s_shop_web_udp_53"}},"connection_limit":100,"allowed_cidrs":["10.0.0.0/8","192.168.0.0/16"],"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}],"tags":["kube_service_k8s_shop_web","overcast-service-uid=uid-1","overcast-cluster-uid=cluster-1"]}}
local-timeouts/create-serial	{"loadbalancer":{"name":"kube_service_k8s_shop_web","description":"Kubernetes Service shop/web","vip_subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c","tags":["kube_service_k8s_shop_web","overcast-service-uid=uid-1","overcast-cluster-uid=cluster-1"],"additional_vips":[{"subnet_id":"sub-6"}]}}
local-timeouts/listener-0	{"listener":{"allowed_cidrs":["10.0.0.0/8","192.168.0.0/16"],"connection_limit":100,"default_pool_id":"pool-1","loadbalancer_id":"lb-1","name":"kube_service_k8s_shop_web_tcp_80","protocol":"TCP","protocol_port":80,"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"],"timeout_client_data":5000,"timeout_member_connect":3000,"timeout_member_data":6000,"timeout_tcp_inspect":100}}
local-timeouts/pool-0	{"pool":{"lb_algorithm":"ROUND_ROBIN","listener_id":"l-1","name":"kube_service_k8s_shop_web_tcp_80","protocol":"TCP"}}
local-timeouts/monitor-0	{"healthmonitor":{"delay":5,"expected_codes":"200","http_method":"GET","max_retries":1,"max_retries_down":3,"name":"kube_service_k8s_shop_web_tcp_80","pool_id":"pool-1","timeout":3,"type":"HTTP","url_path":"/healthz"}}
local-timeouts/monitor-update-0	{"healthmonitor":{"delay":5,"max_retries":1,"max_retries_down":3,"timeout":3,"url_path":"/healthz"}}
local-timeouts/members-0	{"members":[{"address":"10.0.0.1","protocol_port":30080,"subnet_id":"99999999-8888-4777-8666-555555555555","monitor_port":32000},{"address":"10.0.0.2","protocol_port":30080,"subnet_id":"99999999-8888-4777-8666-555555555555","monitor_port":32000}]}
local-timeouts/listener-1	{"listener":{"allowed_cidrs":["10.0.0.0/8","192.168.0.0/16"],"connection_limit":100,"loadbalancer_id":"lb-1","name":"kube_service_k8s_shop_web_udp_53","protocol":"UDP","protocol_port":53,"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}}
local-timeouts/pool-1	{"pool":{"lb_algorithm":"ROUND_ROBIN","listener_id":"l-1","name":"kube_service_k8s_shop_web_udp_53","protocol":"UDP"}}
local-timeouts/monitor-1	{"healthmonitor":{"delay":5,"expected_codes":"200","http_method":"GET","max_retries":1,"max_retries_down":3,"name":"kube_service_k8s_shop_web_udp_53","pool_id":"pool-1","timeout":3,"type":"HTTP","url_path":"/healthz"}}
local-timeouts/monitor-update-1	{"healthmonitor":{"delay":5,"max_retries":1,"max_retries_down":3,"timeout":3,"url_path":"/healthz"}}
local-timeouts/members-1	{"members":[{"address":"10.0.0.1","protocol_port":30053,"subnet_id":"99999999-8888-4777-8666-555555555555","monitor_port":32000},{"address":"10.0.0.2","protocol_port":30053,"subnet_id":"99999999-8888-4777-8666-555555555555","monitor_port":32000}]}
local-timeouts/member-0	{"member":{"address":"10.0.0.3","monitor_port":32000,"protocol_port":30080,"subnet_id":"99999999-8888-4777-8666-555555555555"}}
local-timeouts/member-1	{"member":{"address":"10.0.0.3","monitor_port":32000,"protocol_port":30053,"subnet_id":"99999999-8888-4777-8666-555555555555"}}
xff-monitor/create	{"loadbalancer":{"name":"kube_service_k8s_shop_web","description":"Kubernetes Service shop/web","vip_subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c","flavor_id":"f-1","availability_zone":"az-1","provider":"amphora","listeners":[{"protocol":"HTTP","protocol_port":80,"name":"kube_service_k8s_shop_web_tcp_80","default_pool":{"lb_algorithm":"ROUND_ROBIN","protocol":"HTTP","name":"kube_service_k8s_shop_web_tcp_80","members":[{"address":"10.0.0.1","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}],"healthmonitor":{"type":"TCP","delay":5,"timeout":3,"max_retries":1,"max_retries_down":3,"name":"kube_service_k8s_shop_web_tcp_80"}},"connection_limit":-1,"insert_headers":{"X-Forwarded-For":"true"},"allowed_cidrs":["0.0.0.0/0"],"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]},{"protocol":"UDP","protocol_port":53,"name":"kube_service_k8s_shop_web_udp_53","default_pool":{"lb_algorithm":"ROUND_ROBIN","protocol":"UDP","name":"kube_service_k8s_shop_web_udp_53","members":[{"address":"10.0.0.1","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}],"healthmonitor":{"type":"UDP-CONNECT","delay":5,"timeout":3,"max_retries":1,"max_retries_down":3,"name":"kube_service_k8s_shop_web_udp_53"}},"connection_limit":-1,"allowed_cidrs":["0.0.0.0/0"],"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}],"tags":["kube_service_k8s_shop_web","overcast-service-uid=uid-1","overcast-cluster-uid=cluster-1"]}}
xff-monitor/create-serial	{"loadbalancer":{"name":"kube_service_k8s_shop_web","description":"Kubernetes Service shop/web","vip_subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c","flavor_id":"f-1","availability_zone":"az-1","provider":"amphora","tags":["kube_service_k8s_shop_web","overcast-service-uid=uid-1","overcast-cluster-uid=cluster-1"],"additional_vips":[{"subnet_id":"sub-6"}]}}
xff-monitor/listener-0	{"listener":{"allowed_cidrs":["0.0.0.0/0"],"connection_limit":-1,"default_pool_id":"pool-1","insert_headers":{"X-Forwarded-For":"true"},"loadbalancer_id":"lb-1","name":"kube_service_k8s_shop_web_tcp_80","protocol":"HTTP","protocol_port":80,"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}}
xff-monitor/pool-0	{"pool":{"lb_algorithm":"ROUND_ROBIN","listener_id":"l-1","name":"kube_service_k8s_shop_web_tcp_80","protocol":"HTTP"}}
xff-monitor/monitor-0	{"healthmonitor":{"delay":5,"max_retries":1,"max_retries_down":3,"name":"kube_service_k8s_shop_web_tcp_80","pool_id":"pool-1","timeout":3,"type":"TCP"}}
xff-monitor/monitor-update-0	{"healthmonitor":{"delay":5,"max_retries":1,"max_retries_down":3,"timeout":3}}
xff-monitor/members-0	{"members":[{"address":"10.0.0.1","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]}
xff-monitor/listener-1	{"listener":{"allowed_cidrs":["0.0.0.0/0"],"connection_limit":-1,"loadbalancer_id":"lb-1","name":"kube_service_k8s_shop_web_udp_53","protocol":"UDP","protocol_port":53,"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}}
xff-monitor/pool-1	{"pool":{"lb_algorithm":"ROUND_ROBIN","listener_id":"l-1","name":"kube_service_k8s_shop_web_udp_53","protocol":"UDP"}}
xff-monitor/monitor-1	{"healthmonitor":{"delay":5,"max_retries":1,"max_retries_down":3,"name":"kube_service_k8s_shop_web_udp_53","pool_id":"pool-1","timeout":3,"type":"UDP-CONNECT"}}
xff-monitor/monitor-update-1	{"healthmonitor":{"delay":5,"max_retries":1,"max_retries_down":3,"timeout":3}}
xff-monitor/members-1	{"members":[{"address":"10.0.0.1","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]}
xff-monitor/member-0	{"member":{"address":"10.0.0.3","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}}
xff-monitor/member-1	{"member":{"address":"10.0.0.3","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}}
tls-proxy/create	{"loadbalancer":{"name":"kube_service_k8s_shop_web","description":"Kubernetes Service shop/web","vip_subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c","listeners":[{"protocol":"TERMINATED_HTTPS","protocol_port":80,"name":"kube_service_k8s_shop_web_tcp_80","default_pool":{"lb_algorithm":"ROUND_ROBIN","protocol":"PROXYV2","name":"kube_service_k8s_shop_web_tcp_80","members":[{"address":"10.0.0.1","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]},"connection_limit":-1,"default_tls_container_ref":"https://barbican.example:9311/v1/containers/0b5d8f3e-8a3c-4c1e-9f0e-2b7d6c5a4e31","allowed_cidrs":["0.0.0.0/0"],"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]},{"protocol":"TERMINATED_HTTPS","protocol_port":443,"name":"kube_service_k8s_shop_web_tcp_443","default_pool":{"lb_algorithm":"ROUND_ROBIN","protocol":"PROXYV2","name":"kube_service_k8s_shop_web_tcp_443","members":[{"address":"10.0.0.1","protocol_port":30443,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30443,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]},"connection_limit":-1,"default_tls_container_ref":"https://barbican.example:9311/v1/containers/0b5d8f3e-8a3c-4c1e-9f0e-2b7d6c5a4e31","allowed_cidrs":["0.0.0.0/0"],"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]},{"protocol":"UDP","protocol_port":53,"name":"kube_service_k8s_shop_web_udp_53","default_pool":{"lb_algorithm":"ROUND_ROBIN","protocol":"UDP","name":"kube_service_k8s_shop_web_udp_53","members":[{"address":"10.0.0.1","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]},"connection_limit":-1,"allowed_cidrs":["0.0.0.0/0"],"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}],"tags":["kube_service_k8s_shop_web","overcast-service-uid=uid-1","overcast-cluster-uid=cluster-1"]}}
tls-proxy/create-serial	{"loadbalancer":{"name":"kube_service_k8s_shop_web","description":"Kubernetes Service shop/web","vip_subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c","tags":["kube_service_k8s_shop_web","overcast-service-uid=uid-1","overcast-cluster-uid=cluster-1"],"additional_vips":[{"subnet_id":"sub-6"}]}}
tls-proxy/listener-0	{"listener":{"allowed_cidrs":["0.0.0.0/0"],"connection_limit":-1,"default_pool_id":"pool-1","default_tls_container_ref":"https://barbican.example:9311/v1/containers/0b5d8f3e-8a3c-4c1e-9f0e-2b7d6c5a4e31","loadbalancer_id":"lb-1","name":"kube_service_k8s_shop_web_tcp_80","protocol":"TERMINATED_HTTPS","protocol_port":80,"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}}
tls-proxy/pool-0	{"pool":{"lb_algorithm":"ROUND_ROBIN","listener_id":"l-1","name":"kube_service_k8s_shop_web_tcp_80","protocol":"PROXYV2"}}
tls-proxy/members-0	{"members":[{"address":"10.0.0.1","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]}
tls-proxy/listener-1	{"listener":{"allowed_cidrs":["0.0.0.0/0"],"connection_limit":-1,"default_tls_container_ref":"https://barbican.example:9311/v1/containers/0b5d8f3e-8a3c-4c1e-9f0e-2b7d6c5a4e31","loadbalancer_id":"lb-1","name":"kube_service_k8s_shop_web_tcp_443","protocol":"TERMINATED_HTTPS","protocol_port":443,"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}}
tls-proxy/pool-1	{"pool":{"lb_algorithm":"ROUND_ROBIN","listener_id":"l-1","name":"kube_service_k8s_shop_web_tcp_443","protocol":"PROXYV2"}}
tls-proxy/members-1	{"members":[{"address":"10.0.0.1","protocol_port":30443,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30443,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]}
tls-proxy/listener-2	{"listener":{"allowed_cidrs":["0.0.0.0/0"],"connection_limit":-1,"loadbalancer_id":"lb-1","name":"kube_service_k8s_shop_web_udp_53","protocol":"UDP","protocol_port":53,"tags":["overcast-service-uid=uid-1","kube_service_k8s_shop_web"]}}
tls-proxy/pool-2	{"pool":{"lb_algorithm":"ROUND_ROBIN","listener_id":"l-1","name":"kube_service_k8s_shop_web_udp_53","protocol":"UDP"}}
tls-proxy/members-2	{"members":[{"address":"10.0.0.1","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"},{"address":"10.0.0.2","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}]}
tls-proxy/member-0	{"member":{"address":"10.0.0.3","protocol_port":30080,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}}
tls-proxy/member-1	{"member":{"address":"10.0.0.3","protocol_port":30443,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}}
tls-proxy/member-2	{"member":{"address":"10.0.0.3","protocol_port":30053,"subnet_id":"6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c"}}
listener-update-0	{"listener":{"allowed_cidrs":[]}}
listener-update-1	{"listener":{"allowed_cidrs":["10.0.0.0/8"],"connection_limit":100,"default_tls_container_ref":"ref-1"}}
listener-update-2	{"listener":{"timeout_client_data":5000,"timeout_member_connect":5000,"timeout_member_data":5000,"timeout_tcp_inspect":5000}}
fip-create-0	{"floatingip":{"description":"overcast-ccm floating IP of Service UID uid-1","floating_network_id":"net-1","port_id":"port-1"}}
fip-create-1	{"floatingip":{"description":"overcast-ccm floating IP of Service UID uid-1","floating_network_id":"net-1","port_id":"port-1","subnet_id":"sub-1"}}
fip-create-2	{"floatingip":{"description":"overcast-ccm floating IP of Service UID uid-1","floating_ip_address":"203.0.113.7","floating_network_id":"net-1","port_id":"port-1"}}
fip-list-0	"?floating_ip_address=203.0.113.7"
fip-list-1	"?description=overcast-ccm+floating+IP+of+Service+UID+uid-1"
fip-list-2	"?port_id=port-1"
fip-list-3	""
subnet-list-0	"?ip_version=6\u0026network_id=net-1"
subnet-list-1	"?network_id=net-1"
subnet-list-2	""
`
