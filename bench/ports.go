package main

import (
	"fmt"
	"time"
)

// serialConf is what makes OpenStack build a load balancer one Octavia
// change a pass, as on an Octavia whose provider needs it (CI's, many
// production ones): cloud-provider-openstack's key, in a second
// [LoadBalancer] section (read as one with the first).
const serialConf = "[LoadBalancer]\nprovider-requires-serial-api-calls=true\n"

// portsScenario: one Service with 1, 8 and 24 ports (issue 44, item 7),
// built in OpenStack's serial mode: the time to its ingress and the cloud
// calls it made. On another cloud the Service is built as that cloud builds
// it.
func portsScenario(o options) ([]*figure, error) {
	var figures []*figure
	if o.cloud == "openstack" {
		o.confExtra = serialConf
	}
	for _, n := range o.portCounts {
		took := &figure{scenario: "8", name: fmt.Sprintf("one Service of %d port(s), serial: time to ingress", n), unit: "s"}
		cost := &figure{scenario: "8", name: fmt.Sprintf("one Service of %d port(s), serial: cloud API calls", n), unit: "calls"}
		o.ports = n
		for r := range o.runs {
			fmt.Printf("== ports %d, run %d/%d\n", n, r+1, o.runs)
			err := withBed(o, 3, func(b *bed) error {
				t, err := b.timed("ports", 1, 30*time.Minute, cost)
				if err != nil {
					return err
				}
				took.values = append(took.values, t.Seconds())
				fmt.Printf("   %d ports: %.1fs, %.0f calls\n", n, t.Seconds(), cost.values[len(cost.values)-1])
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		figures = append(figures, took, cost)
	}
	return figures, nil
}
