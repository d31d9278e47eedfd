package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/test/framework"
)

// sweep runs bin/overcast sweep on the cloud's config, with the admin's
// kubeconfig, as an operator would.
func sweep(t *testing.T, cloud, conf string, args ...string) (string, int) {
	t.Helper()
	return sweepOf(t, env, cloud, conf, args...)
}

// sweepOf runs it on the cluster of e.
func sweepOf(t *testing.T, e *framework.Env, cloud, conf string, args ...string) (string, int) {
	t.Helper()
	return e.RunClusterCLI(t, "sweep", cloud, conf, args...)
}

// A Service deleted with its finalizer removed by hand while the CCM was
// down leaves its load balancer behind: `overcast sweep` lists it (and
// changes nothing), --delete removes it and only it, and a sweep after
// finds nothing. On each cloud's emulator.
func TestSweepRemovesWhatAServiceDeletedBehindTheCCMsBackLeft(t *testing.T) {
	for i, cloud := range lbClouds {
		if cloud.name == "local" {
			continue // its load balancers live in the CCM's process
		}
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 80+i, 1)
			ns := namespace(t)
			lbService(t, ns, "kept", nil)
			gone := lbService(t, ns, "gone", nil)
			keptAddr, goneAddr := waitIngressIP(t, ns, "kept").String(), waitIngressIP(t, ns, "gone").String()
			kept := getService(t, ns, "kept")
			require.NotEmpty(t, c.holds(t, gone, goneAddr))
			keptHolds := c.holds(t, kept, keptAddr)
			require.NotEmpty(t, keptHolds)

			c.ccm.Stop()
			ctx := context.Background()
			_, err := env.Client.CoreV1().Services(ns).Patch(ctx, "gone", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			require.NoError(t, env.Client.CoreV1().Services(ns).Delete(ctx, "gone", metav1.DeleteOptions{}))
			require.NoError(t, devenv.Poll(waitShort, tick, func() error {
				_, err := env.Client.CoreV1().Services(ns).Get(ctx, "gone", metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			}))

			out, code := sweep(t, c.name, c.conf)
			assert.Equal(t, 0, code)
			assert.Contains(t, out, "Dry run: nothing was changed")
			assert.Contains(t, out, ns+"/gone")
			assert.NotContains(t, out, ns+"/kept")
			assert.NotEmpty(t, c.holds(t, gone, goneAddr), "a dry run changes nothing")

			out, code = sweep(t, c.name, c.conf, "--delete")
			assert.Equal(t, 0, code, "everything removable was removed")
			assert.Contains(t, out, "none is left")
			assert.Empty(t, c.holds(t, gone, goneAddr), "the gone Service's load balancer is removed")
			assert.Equal(t, keptHolds, c.holds(t, kept, keptAddr), "the live one's is untouched")

			out, code = sweep(t, c.name, c.conf)
			assert.Equal(t, 0, code)
			assert.Contains(t, out, "No leftovers")
		})
	}
}
