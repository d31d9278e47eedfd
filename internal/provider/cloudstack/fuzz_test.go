package cloudstack

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
)

func FuzzRead(f *testing.F) {
	for _, s := range []string{"", "[Global]\napi-url = https://c.example.com/client/api\napi-key = k\nsecret-key = s\n",
		"[Global]\napi-read-qps = -1\n", "[Global]\nssl-no-verify = maybe\n", "[Other]\nx=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, _ := Read(strings.NewReader(s))
		_ = c.Validate()
	})
}

// Every annotation of the table with one value: parsed or refused, never a
// panic.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"", "true", "10.0.0.0/8, 192.168.0.0/16", "leastconn", "/healthz", "30s", "host.example.com"} {
		f.Add(s, int32(80))
	}
	f.Fuzz(func(t *testing.T, v string, port int32) {
		svc := service("fuzz", v1.ServicePort{Name: "p", Protocol: v1.ProtocolTCP, Port: port, NodePort: 30080})
		svc.Annotations = map[string]string{}
		for _, n := range []annotation.Name{annotation.CloudStackProxyProtocol, annotation.CloudStackHostname, annotation.CloudStackSourceCIDRs,
			annotation.CloudStackIPAssociatedByController, annotation.CloudStackAlgorithm, annotation.CloudStackHealthCheckPath,
			annotation.CloudStackHealthCheckInterval} {
			svc.Annotations[string(n)] = v
		}
		svc.Spec.LoadBalancerIP = v
		_, _ = parseSpec(svc)
	})
}
