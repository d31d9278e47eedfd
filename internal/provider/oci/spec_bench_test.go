package oci

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// BenchmarkASpecOn5000Nodes is one pass's spec of a Service on 5,000
// Nodes: what a restart pays for each Service (no call to the cloud).
func BenchmarkASpecOn5000Nodes(b *testing.B) {
	e, err := emulator.New(emulator.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := Read(strings.NewReader(e.CloudConfig()))
	if err != nil {
		b.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c.Cluster.Set("cluster-uid")
	nodes := make([]*v1.Node, 5000)
	for i := range nodes {
		nodes[i] = nodeAt(fmt.Sprintf("node-%04d", i), fmt.Sprintf("ocid1.instance.oc1.iad.node%04d", i), fmt.Sprintf("10.0.%d.%d", i/250, i%250+1))
	}
	svc := lbSvc("web", "uid-1", 30080)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := (steps{c}).Spec(b.Context(), "kubernetes", svc, nodes); err != nil {
			b.Fatal(err)
		}
	}
}

// The members' fingerprint is the one recorded by earlier versions (each
// backend "<set>=<ip>:<port>[/<target>]", listed): a new version does not
// see every load balancer's members as changed.
func TestTheMembersFingerprintIsTheOneRecordedBefore(t *testing.T) {
	s := lbSpec{backendSets: map[string]BackendSet{
		"TCP-80":  {Backends: []Backend{newBackend(kindNLB, "10.0.0.1", 30080), newBackend(kindNLB, "10.0.0.2", 30080)}},
		"TCP-443": {Backends: []Backend{newBackend(kindLB, "10.0.0.1", 30443)}},
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
