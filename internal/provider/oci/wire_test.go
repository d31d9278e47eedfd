package oci

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/loadbalancer"
	"github.com/oracle/oci-go-sdk/v65/networkloadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// wireScenario is a Service that sets every annotation a write of its kind
// of load balancer carries (but SSL, which needs TLS Secrets: see
// fieldsLeftOut).
type wireScenario struct {
	name        string
	annotations map[string]string
	// local: externalTrafficPolicy Local (its health check node port).
	local bool
}

func wireScenarios() []wireScenario {
	return []wireScenario{
		{"lb", map[string]string{
			"oci.oraclecloud.com/loadbalancer-policy":                              "LEAST_CONNECTIONS",
			"service.beta.kubernetes.io/oci-load-balancer-backend-protocol":        "HTTP",
			"service.beta.kubernetes.io/oci-load-balancer-health-check-retries":    "4",
			"service.beta.kubernetes.io/oci-load-balancer-health-check-timeout":    "2000",
			"service.beta.kubernetes.io/oci-load-balancer-health-check-interval":   "5000",
			"service.beta.kubernetes.io/oci-load-balancer-connection-idle-timeout": "120",
			"oci.oraclecloud.com/oci-load-balancer-rule-sets":                      `{"allow": {"items": [{"action": "ADD_HTTP_REQUEST_HEADER", "header": "X-A", "value": "1"}]}}`,
		}, false},
		{"lb-tcp", map[string]string{
			"service.beta.kubernetes.io/oci-load-balancer-connection-idle-timeout":           "120",
			"service.beta.kubernetes.io/oci-load-balancer-connection-proxy-protocol-version": "2",
		}, false},
		{"nlb", map[string]string{
			"oci.oraclecloud.com/load-balancer-type":                                  "nlb",
			"oci-network-load-balancer.oraclecloud.com/backend-policy":                "THREE_TUPLE",
			"oci-network-load-balancer.oraclecloud.com/health-check-retries":          "4",
			"oci-network-load-balancer.oraclecloud.com/health-check-timeout":          "2000",
			"oci-network-load-balancer.oraclecloud.com/health-check-interval":         "5000",
			"oci-network-load-balancer.oraclecloud.com/is-preserve-source":            "true",
			"oci-network-load-balancer.oraclecloud.com/is-ppv2-enabled":               "true",
			"oci-network-load-balancer.oraclecloud.com/security-list-management-mode": "None",
		}, true},
		{"nsg", map[string]string{
			"oci.oraclecloud.com/security-rule-management-mode":      "NSG",
			"oci.oraclecloud.com/oci-backend-network-security-group": "ocid1.networksecuritygroup.oc1.iad.back",
		}, false},
	}
}

// wireBodies are the bodies the CCM writes for a scenario's Service, by
// name: "<scenario>/backendset" (UpdateBackendSetDetails; the create's is
// it and the name), "/listener" (UpdateListenerDetails), "/ruleset"
// (UpdateRuleSetDetails), and the security rules it adds.
func wireBodies(t *testing.T) map[string]string {
	e := startEmulator(t)
	c := clusterCloud(t, e, "wire-cluster")
	nodes := []*v1.Node{machineNode(e, "wire-a")}
	got := map[string]string{}
	body := func(name string, v any) {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		got[name] = string(b)
	}
	for _, sc := range wireScenarios() {
		svc := lbSvc("wire-"+sc.name, "uid-wire-"+sc.name, 30080)
		svc.Annotations = sc.annotations
		if sc.local {
			svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000
		}
		c.SetKube(fake.NewClientset(svc))
		spec, _, err := c.lb.Spec(t.Context(), "kubernetes", svc, nodes)
		require.NoError(t, err)
		require.Len(t, spec.backendSets, 1)
		for _, bs := range spec.backendSets {
			body(sc.name+"/backendset", unnamed(bs))
		}
		for _, l := range spec.listeners {
			body(sc.name+"/listener", unnamedListener(l))
		}
		for _, rs := range spec.ruleSets {
			body(sc.name+"/ruleset", rs)
		}
		if spec.mode == ModeNSG {
			front, back := nsgRulesWanted(svc, spec, "ocid1.networksecuritygroup.oc1.iad.front")
			body("nsg/frontend-rules", front)
			body("nsg/backend-rules", back["ocid1.networksecuritygroup.oc1.iad.back"])
			body("securitylist/ingress-rule", tcpRule(true, "0.0.0.0/0", 80, c.lb.mark(svc)))
			body("securitylist/egress-rule", tcpRule(false, "10.0.10.0/24", 30080, c.lb.mark(svc)))
		}
	}
	return got
}

// TestEveryRequestBodyIsAsPinned: the bodies the CCM writes to OCI for a
// load balancer's children and its security rules, built by its own spec,
// are byte for byte those pinned below; each decodes into oci-go-sdk's
// model of its request with no field the model lacks (the API's names,
// each kind's own: an NLB backend's isDrain, an LB backend's drain).
func TestEveryRequestBodyIsAsPinned(t *testing.T) {
	got := wireBodies(t)
	models := map[string]func() any{
		"lb/backendset":             func() any { return &loadbalancer.UpdateBackendSetDetails{} },
		"lb/listener":               func() any { return &loadbalancer.UpdateListenerDetails{} },
		"lb/ruleset":                func() any { return &loadbalancer.UpdateRuleSetDetails{} },
		"nlb/backendset":            func() any { return &networkloadbalancer.UpdateBackendSetDetails{} },
		"nlb/listener":              func() any { return &networkloadbalancer.UpdateListenerDetails{} },
		"securitylist/ingress-rule": func() any { return &core.IngressSecurityRule{} },
		"securitylist/egress-rule":  func() any { return &core.EgressSecurityRule{} },
		"nsg/frontend-rules":        func() any { return &[]core.AddSecurityRuleDetails{} },
		"nsg/backend-rules":         func() any { return &[]core.AddSecurityRuleDetails{} },
	}
	for _, other := range []string{"lb-tcp", "nsg"} { // LBs too
		models[other+"/backendset"], models[other+"/listener"] = models["lb/backendset"], models["lb/listener"]
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		model, ok := models[name]
		require.True(t, ok, "no oci-go-sdk model for %s", name)
		d := json.NewDecoder(bytes.NewReader([]byte(got[name])))
		d.DisallowUnknownFields()
		assert.NoError(t, d.Decode(model()), "%s is not oci-go-sdk's model of its request: %s", name, got[name])
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(pinnedBodies), "\n") {
		name, body, _ := strings.Cut(line, "\t")
		want[name] = body
	}
	if !assert.Equal(t, want, got) {
		for _, name := range slices.Sorted(maps.Keys(got)) {
			t.Logf("%s\t%s", name, got[name])
		}
	}
}

// pinnedBodies are the bodies as the CCM sends them, "<name>\t<body>".
const pinnedBodies = `
lb-tcp/backendset	{"policy":"ROUND_ROBIN","backends":[{"ipAddress":"10.0.10.2","port":30080,"weight":1,"drain":false,"backup":false,"offline":false}],"healthChecker":{"protocol":"HTTP","port":10256,"urlPath":"/healthz","returnCode":200,"retries":3,"timeoutInMillis":3000,"intervalInMillis":10000}}
lb-tcp/listener	{"defaultBackendSetName":"TCP-80","port":80,"protocol":"TCP","connectionConfiguration":{"idleTimeout":120,"backendTcpProxyProtocolVersion":2}}
lb/backendset	{"policy":"LEAST_CONNECTIONS","backends":[{"ipAddress":"10.0.10.2","port":30080,"weight":1,"drain":false,"backup":false,"offline":false}],"healthChecker":{"protocol":"HTTP","port":10256,"urlPath":"/healthz","returnCode":200,"retries":4,"timeoutInMillis":2000,"intervalInMillis":5000}}
lb/listener	{"defaultBackendSetName":"TCP-80","port":80,"protocol":"HTTP","connectionConfiguration":{"idleTimeout":120},"ruleSetNames":["allow"]}
lb/ruleset	{"items":[{"action":"ADD_HTTP_REQUEST_HEADER","header":"X-A","value":"1"}]}
nlb/backendset	{"policy":"THREE_TUPLE","backends":[{"ipAddress":"10.0.10.2","targetId":"ocid1.instance.oc1.iad.aaaaemulator000010","port":30080,"weight":1,"isDrain":false,"isBackup":false,"isOffline":false}],"healthChecker":{"protocol":"HTTP","port":32000,"urlPath":"/healthz","returnCode":200,"retries":4,"timeoutInMillis":2000,"intervalInMillis":5000},"isPreserveSource":true}
nlb/listener	{"defaultBackendSetName":"TCP-80","port":80,"protocol":"TCP","isPpv2Enabled":true}
nsg/backend-rules	[{"direction":"INGRESS","protocol":"6","source":"ocid1.networksecuritygroup.oc1.iad.front","sourceType":"NETWORK_SECURITY_GROUP","isStateless":false,"tcpOptions":{"destinationPortRange":{"min":10256,"max":10256}},"description":"service-uid-uid-wire-nsg"},{"direction":"INGRESS","protocol":"6","source":"ocid1.networksecuritygroup.oc1.iad.front","sourceType":"NETWORK_SECURITY_GROUP","isStateless":false,"tcpOptions":{"destinationPortRange":{"min":30080,"max":30080}},"description":"service-uid-uid-wire-nsg"}]
nsg/backendset	{"policy":"ROUND_ROBIN","backends":[{"ipAddress":"10.0.10.2","port":30080,"weight":1,"drain":false,"backup":false,"offline":false}],"healthChecker":{"protocol":"HTTP","port":10256,"urlPath":"/healthz","returnCode":200,"retries":3,"timeoutInMillis":3000,"intervalInMillis":10000}}
nsg/frontend-rules	[{"direction":"INGRESS","protocol":"6","source":"0.0.0.0/0","sourceType":"CIDR_BLOCK","isStateless":false,"tcpOptions":{"destinationPortRange":{"min":80,"max":80}},"description":"service-uid-uid-wire-nsg"},{"direction":"EGRESS","protocol":"6","destination":"ocid1.networksecuritygroup.oc1.iad.back","destinationType":"NETWORK_SECURITY_GROUP","isStateless":false,"tcpOptions":{"destinationPortRange":{"min":10256,"max":10256}},"description":"service-uid-uid-wire-nsg"},{"direction":"EGRESS","protocol":"6","destination":"ocid1.networksecuritygroup.oc1.iad.back","destinationType":"NETWORK_SECURITY_GROUP","isStateless":false,"tcpOptions":{"destinationPortRange":{"min":30080,"max":30080}},"description":"service-uid-uid-wire-nsg"}]
nsg/listener	{"defaultBackendSetName":"TCP-80","port":80,"protocol":"TCP","connectionConfiguration":{"idleTimeout":300}}
securitylist/egress-rule	{"protocol":"6","destination":"10.0.10.0/24","destinationType":"CIDR_BLOCK","isStateless":false,"tcpOptions":{"destinationPortRange":{"min":30080,"max":30080}},"description":"overcast:wire-cluster/uid-wire-nsg"}
securitylist/ingress-rule	{"protocol":"6","source":"0.0.0.0/0","sourceType":"CIDR_BLOCK","isStateless":false,"tcpOptions":{"destinationPortRange":{"min":80,"max":80}},"description":"overcast:wire-cluster/uid-wire-nsg"}
`
