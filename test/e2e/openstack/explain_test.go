package openstack

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// explain runs bin/overcast explain against the real OpenStack with the
// admin's kubeconfig, as an operator would.
func explain(t *testing.T, conf string, args ...string) (string, int) {
	t.Helper()
	return env.RunClusterCLI(t, "explain", "openstack", conf, args...)
}

// `overcast explain` on the real OpenStack: a converged Service's load
// balancer with its address and no drift; with the CCM stopped, a listener
// opened to other sources behind its back is the drift explain reports, and
// explaining leaves it as it found it (a read, never a repair).
func TestExplainOnTheRealOpenStack(t *testing.T) {
	octavia := octaviaClient(t)
	name := "os-explain-" + suffix()
	s := createServer(t, name)
	conf := cloudConf(t, "OVERCAST_OS_CLOUD_CONF")
	opts := ccmOptions(conf)
	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "service"}
	ccm := env.StartCCM(t, opts)
	env.NewKubelet(t, name, s.fixedIP())
	waitInitialised(t, name)
	ns := lbNamespace(t)
	svc := createService(t, ns, "web", []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}}, nil)
	ip := waitIngress(t, ns, "web")

	out, code := explain(t, conf, "service", ns+"/web")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, ip)
	e := explainJSON(t, conf, ns+"/web")
	assert.True(t, e.Found)
	assert.Empty(t, e.Drift, "converged")

	ccm.Stop()
	lbs := lbOf(t, octavia, svc)
	require.Len(t, lbs, 1)
	pages, err := listeners.List(octavia, listeners.ListOpts{LoadbalancerID: lbs[0].ID}).AllPages(t.Context())
	require.NoError(t, err)
	ls, err := listeners.ExtractListeners(pages)
	require.NoError(t, err)
	require.Len(t, ls, 1)
	cidrs := []string{"192.0.2.0/24"}
	_, err = listeners.Update(t.Context(), octavia, ls[0].ID, listeners.UpdateOpts{AllowedCIDRs: &cidrs}).Extract()
	require.NoError(t, err)
	require.NoError(t, devenv.Poll(2*time.Minute, time.Second, func() error { return lbActive(octavia, lbs[0].ID) }))

	e = explainJSON(t, conf, ns+"/web")
	require.NotEmpty(t, e.Drift, "the listener opened behind the CCM's back")
	assert.Contains(t, fmtDrift(e), "192.0.2.0/24")
	l, err := listeners.Get(context.Background(), octavia, ls[0].ID).Extract()
	require.NoError(t, err)
	assert.Equal(t, cidrs, l.AllowedCIDRs, "explaining changed nothing")

	env.StartCCM(t, opts) // to delete the Service and its load balancer
	require.NoError(t, env.Client.CoreV1().Services(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}))
	waitLBGone(t, octavia, "load balancer", lbs[0].ID)
}

func explainJSON(t *testing.T, conf, service string) provider.ServiceExplanation {
	t.Helper()
	out, code := explain(t, conf, "service", service, "-o", "json")
	require.Equal(t, 0, code, out)
	var e provider.ServiceExplanation
	require.NoError(t, json.Unmarshal([]byte(out), &e), out)
	return e
}

func fmtDrift(e provider.ServiceExplanation) string {
	b, _ := json.Marshal(e.Drift)
	return string(b)
}

// lbActive: the load balancer takes changes again.
func lbActive(octavia *gophercloud.ServiceClient, id string) error {
	lb, err := loadbalancers.Get(context.Background(), octavia, id).Extract()
	if err != nil {
		return err
	}
	if lb.ProvisioningStatus != "ACTIVE" {
		return fmt.Errorf("load balancer %s is %s", id, lb.ProvisioningStatus)
	}
	return nil
}
