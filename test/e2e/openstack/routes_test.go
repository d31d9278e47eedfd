package openstack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/devenv"
)

func networkClient(t *testing.T) *gophercloud.ServiceClient {
	t.Helper()
	n, err := gopenstack.NewNetworkV2(compute.ProviderClient, gophercloud.EndpointOpts{Region: osEnv["OS_REGION_NAME"]})
	require.NoError(t, err)
	return n
}

func routerRoutes(t *testing.T, network *gophercloud.ServiceClient) []routers.Route {
	t.Helper()
	r, err := routers.Get(context.Background(), network, osEnv["OVERCAST_OS_ROUTER_ID"]).Extract()
	require.NoError(t, err)
	return r.Routes
}

func TestRoutesFollowNodePodCIDRs(t *testing.T) {
	network := networkClient(t)
	name := "os-route-" + suffix()
	s := createServer(t, name)
	const podCIDR = "10.244.7.0/24"
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF"))
	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "route"}
	opts.ExtraArgs = []string{"--configure-cloud-routes=true", "--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16", "--route-reconciliation-period=2s"}
	env.StartCCM(t, opts)

	k := env.NewKubelet(t, name, s.fixedIP())
	// kube-controller-manager's IPAM would give the Node its pod CIDR.
	_, err := env.Client.CoreV1().Nodes().Patch(t.Context(), name, types.MergePatchType,
		[]byte(fmt.Sprintf(`{"spec":{"podCIDR":%q,"podCIDRs":[%q]}}`, podCIDR, podCIDR)), metav1.PatchOptions{})
	require.NoError(t, err)
	waitInitialised(t, name)

	has := func() bool {
		for _, rt := range routerRoutes(t, network) {
			if rt.DestinationCIDR == podCIDR && rt.NextHop == s.fixedIP() {
				return true
			}
		}
		return false
	}
	require.NoError(t, devenv.Poll(time.Minute, time.Second, func() error {
		if !has() {
			return fmt.Errorf("router has no route %s via %s: %v", podCIDR, s.fixedIP(), routerRoutes(t, network))
		}
		return nil
	}), "the route to the Node's pod CIDR is created via its InternalIP")

	// The Node goes away: its route goes too.
	require.NoError(t, k.Remove(context.Background()))
	require.NoError(t, devenv.Poll(time.Minute, time.Second, func() error {
		if has() {
			return fmt.Errorf("route %s still on the router", podCIDR)
		}
		return nil
	}), "the route of a deleted Node is removed")
}
