package e2e

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/provider"
)

// explainCLI runs bin/overcast explain on the cloud's config, as an
// operator would.
func explainCLI(t *testing.T, cloud, conf string, args ...string) (string, int) {
	t.Helper()
	return env.RunClusterCLI(t, "explain", cloud, conf, args...)
}

// `overcast explain` as an operator runs it, on each cloud's emulator: a
// Service's load balancer with its address and nothing drifted (exit 0,
// text and JSON), a Service and a Node the cluster lacks (exit 1), a
// command line it cannot run (exit 2), a Node's machine (exit 0).
func TestExplainSaysWhatTheCloudHolds(t *testing.T) {
	for i, cloud := range lbClouds {
		if cloud.name == "local" {
			continue // its load balancers live in the CCM's process (cmd/overcast's tests explain it)
		}
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 110+i, 1)
			ns := namespace(t)
			lbService(t, ns, "web", nil)
			addr := waitIngressIP(t, ns, "web").String()

			out, code := explainCLI(t, c.name, c.conf, "service", ns+"/web")
			assert.Equal(t, 0, code)
			assert.Contains(t, out, "Service "+ns+"/web on "+c.name)
			assert.Contains(t, out, addr)

			out, code = explainCLI(t, c.name, c.conf, "service", ns+"/web", "-o", "json")
			require.Equal(t, 0, code)
			var e provider.ServiceExplanation
			require.NoError(t, json.Unmarshal([]byte(out), &e), out)
			assert.True(t, e.Found)
			assert.True(t, e.DriftChecked)
			assert.Empty(t, e.Drift, "the CCM converged it")

			_, code = explainCLI(t, c.name, c.conf, "service", ns+"/nope")
			assert.Equal(t, 1, code)
			_, code = explainCLI(t, c.name, c.conf, "service", "web")
			assert.Equal(t, 2, code)
			out, code = explainCLI(t, c.name, c.conf, "node", c.nodes[0].Name)
			assert.Equal(t, 0, code)
			assert.Contains(t, out, "the machine exists: the Node is not deleted")
		})
	}
}
