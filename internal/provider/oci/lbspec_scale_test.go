package oci

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// cloudOfNodes is a cloud (on an emulator not served: no call is made) and
// n Nodes with addresses.
func cloudOfNodes(tb testing.TB, n int) (*Cloud, []*v1.Node) {
	tb.Helper()
	e, err := emulator.New(emulator.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := Read(strings.NewReader(e.CloudConfig()))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	c.Cluster.Set("cluster-uid")
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		nodes[i] = nodeAt(fmt.Sprintf("node-%04d", i), fmt.Sprintf("ocid1.instance.oc1.iad.node%04d", i), fmt.Sprintf("10.0.%d.%d", i/250, i%250+1))
	}
	return c, nodes
}

// BenchmarkASpecOn5000Nodes is one pass's spec of a Service on 5,000
// Nodes: what a restart pays for each Service (no call to the cloud).
func BenchmarkASpecOn5000Nodes(b *testing.B) {
	c, nodes := cloudOfNodes(b, 5000)
	svc := lbSvc("web", "uid-1", 30080)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.lb.Spec(b.Context(), "kubernetes", svc, nodes); err != nil {
			b.Fatal(err)
		}
	}
}

// The members' fingerprint is the one recorded by earlier versions (each
// backend "<set>=<ip>:<port>[/<target>]", listed): a new version does not
// see every load balancer's members as changed.
func TestTheMembersFingerprintIsTheOneRecordedBefore(t *testing.T) {
	s := lbSpec{backendSets: map[string]ociapi.BackendSet{
		"TCP-80":  {Backends: []ociapi.Backend{newBackend(ociapi.KindNLB, "10.0.0.1", 30080), newBackend(ociapi.KindNLB, "10.0.0.2", 30080)}},
		"TCP-443": {Backends: []ociapi.Backend{newBackend(ociapi.KindLB, "10.0.0.1", 30443)}},
		"UDP-53":  {},
	}}
	s.backendSets["TCP-80"].Backends[0].TargetID = "ocid1.instance.oc1.iad.a"
	var before []string
	for _, name := range []string{"TCP-443", "TCP-80"} {
		for _, b := range s.backendSets[name].Backends {
			m := fmt.Sprintf("%s=%s:%d", name, b.IPAddress, b.Port)
			if b.TargetID != "" {
				m += "/" + b.TargetID
			}
			before = append(before, m)
		}
	}
	if got, want := s.membersFingerprint(), lbcycle.MembersOf(before); got != want {
		t.Fatalf("members fingerprint %s, recorded before as %s", got, want)
	}
}

// A creation waiting its turn holds its spec without backends, and makes
// them again when it asks: the same spec, for either kind.
func TestASpecWithoutItsBackendsIsMadeWholeAgain(t *testing.T) {
	c, nodes := cloudOfNodes(t, 300)
	for _, kind := range []string{ociapi.KindLB, ociapi.KindNLB} {
		svc := lbSvc("web-"+kind, "uid-"+kind, 30080)
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Protocol: v1.ProtocolTCP, Port: 443, NodePort: 30443})
		if kind == ociapi.KindNLB {
			svc.Annotations = map[string]string{"oci.oraclecloud.com/load-balancer-type": "nlb"}
		}
		spec, _, err := c.lb.Spec(t.Context(), "kubernetes", svc, nodes)
		if err != nil {
			t.Fatal(err)
		}
		if spec.kind != kind {
			t.Fatalf("built a %s for %s", spec.kind, kind)
		}
		light := spec.withoutBackends()
		for name, bs := range light.backendSets {
			if len(bs.Backends) != 0 || len(spec.backendSets[name].Backends) != 300 {
				t.Fatalf("%s: set %s: %d backends left out of %d", kind, name, len(bs.Backends), len(spec.backendSets[name].Backends))
			}
		}
		light.fillBackends()
		if !reflect.DeepEqual(light, spec) {
			t.Fatalf("%s: made again, the spec differs", kind)
		}
	}
}
