package openstack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/test/framework"
)

func ccmOptions(conf string) framework.CCMOptions {
	return framework.CCMOptions{Cloud: "openstack", CloudConfig: conf, Controllers: []string{"cloud-node", "cloud-node-lifecycle"}}
}

func waitInitialised(t *testing.T, name string) *v1.Node {
	t.Helper()
	var node *v1.Node
	require.NoError(t, devenv.Poll(2*time.Minute, 250*time.Millisecond, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, tn := range n.Spec.Taints {
			if tn.Key == devenv.UninitializedTaint {
				return fmt.Errorf("%s still has the uninitialized taint", name)
			}
		}
		node = n
		return nil
	}))
	return node
}

func suffix() string { return fmt.Sprintf("%d", time.Now().UnixNano()%1000000) }

func TestNodesAreInitialisedFromNovaServers(t *testing.T) {
	name := "os-init-" + suffix()
	s := createServer(t, name)
	env.StartCCM(t, ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF")))
	env.NewKubelet(t, name, s.fixedIP())
	unknown := "os-unknown-" + suffix()
	env.NewKubelet(t, unknown, "127.0.61.2")

	n := waitInitialised(t, name)
	assert.Equal(t, "openstack:///"+s.ID, n.Spec.ProviderID)
	assert.Equal(t, osEnv["OVERCAST_OS_FLAVOR_NAME"], n.Labels[v1.LabelInstanceTypeStable])
	assert.Equal(t, s.AvailabilityZone, n.Labels[v1.LabelTopologyZone])
	assert.Equal(t, osEnv["OS_REGION_NAME"], n.Labels[v1.LabelTopologyRegion])
	require.NoError(t, devenv.Poll(30*time.Second, 250*time.Millisecond, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: s.fixedIP()}, {Type: v1.NodeHostName, Address: name}}
		if !assert.ObjectsAreEqual(want, n.Status.Addresses) {
			return fmt.Errorf("addresses %v, want %v", n.Status.Addresses, want)
		}
		return nil
	}))

	// A Node that matches no server: a Warning Event, and it stays uninitialised.
	require.NoError(t, devenv.Poll(time.Minute, 250*time.Millisecond, func() error {
		evs, err := env.Client.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Name == unknown && ev.Reason == "InstanceNotFound" {
				return nil
			}
		}
		return fmt.Errorf("no InstanceNotFound event on %s", unknown)
	}))
}

func TestTheClassicPasswordCloudConfWorks(t *testing.T) {
	name := "os-classic-" + suffix()
	s := createServer(t, name)
	env.StartCCM(t, ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_PASSWORD_CONF")))
	env.NewKubelet(t, name, s.fixedIP())
	assert.Equal(t, "openstack:///"+s.ID, waitInitialised(t, name).Spec.ProviderID)
}

func TestNodeLifecycleFollowsNova(t *testing.T) {
	gone, stopped := "os-gone-"+suffix(), "os-stopped-"+suffix()
	gs := createServer(t, gone)
	ss := createServer(t, stopped)
	env.StartCCM(t, ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF")))
	kg := env.NewKubelet(t, gone, gs.fixedIP())
	ks := env.NewKubelet(t, stopped, ss.fixedIP())
	waitInitialised(t, gone)
	waitInitialised(t, stopped)

	require.NoError(t, servers.Stop(context.Background(), compute, ss.ID).ExtractErr())
	deleteServer(t, gs.ID)
	kg.StopHeartbeats(true)
	ks.StopHeartbeats(true)

	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error {
		_, err := env.Client.CoreV1().Nodes().Get(context.Background(), gone, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("node %s still exists (%w)", gone, err)
	}), "the Node of a deleted server is deleted")
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), stopped, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, tn := range n.Spec.Taints {
			if tn.Key == devenv.ShutdownTaint {
				return nil
			}
		}
		return fmt.Errorf("no shutdown taint on %s yet", stopped)
	}), "the Node of a SHUTOFF server is tainted, not deleted")
}

func TestOpenStackManifestsAreValid(t *testing.T) {
	d, err := env.Client.AppsV1().Deployments("kube-system").Get(t.Context(), "overcast-ccm", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--cloud-provider=openstack")
	_, err = env.Client.CoreV1().Secrets("kube-system").Get(t.Context(), "overcast-ccm-openstack", metav1.GetOptions{})
	require.NoError(t, err)
}
