package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
)

// gatedCloud is a cloud whose first load balancer build for one namespace
// waits until the test lets it finish, and which records the Nodes of every
// build and update there. Services of other namespaces are built at once.
type gatedCloud struct {
	ns      string
	entered chan struct{}
	release chan struct{}

	mu    sync.Mutex
	gated bool
	sets  [][]string
}

func (g *gatedCloud) record(svc *v1.Service, nodes []*v1.Node) bool {
	if svc.Namespace != g.ns {
		return false
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sets = append(g.sets, names)
	first := !g.gated
	g.gated = true
	return first
}

func (g *gatedCloud) lastSet() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.sets) == 0 {
		return nil
	}
	return g.sets[len(g.sets)-1]
}

var gatedStatus = &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "127.0.0.42"}}}

func (g *gatedCloud) GetLoadBalancer(context.Context, string, *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	return gatedStatus, true, nil
}
func (g *gatedCloud) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return string(svc.UID)
}
func (g *gatedCloud) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	if g.record(svc, nodes) {
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return gatedStatus, nil
}
func (g *gatedCloud) UpdateLoadBalancer(_ context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	g.record(svc, nodes)
	return nil
}
func (g *gatedCloud) EnsureLoadBalancerDeleted(context.Context, string, *v1.Service) error {
	return nil
}

func (g *gatedCloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (g *gatedCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return g, true }
func (g *gatedCloud) Instances() (cloudprovider.Instances, bool)                        { return nil, false }
func (g *gatedCloud) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return nil, false }
func (g *gatedCloud) Zones() (cloudprovider.Zones, bool)                                { return nil, false }
func (g *gatedCloud) Clusters() (cloudprovider.Clusters, bool)                          { return nil, false }
func (g *gatedCloud) Routes() (cloudprovider.Routes, bool)                              { return nil, false }
func (g *gatedCloud) ProviderName() string                                              { return "gated" }
func (g *gatedCloud) HasClusterID() bool                                                { return true }

// A Node that joins while a load balancer is being built for the first time
// reaches it: the pass read the Nodes before the Node loop could compare them
// with its record, so it looks again. (Before, the load balancer kept the old
// set until the next Node event.)
func TestANodeAddedWhileALoadBalancerIsBuiltReachesIt(t *testing.T) {
	ns := namespace(t)
	first := env.NewKubelet(t, "gated-node-1", "127.0.71.1")
	cloud := &gatedCloud{ns: ns, entered: make(chan struct{}), release: make(chan struct{})}

	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(env.Client, 0)
	c, err := servicecontroller.New(cloud, env.Client, factory.Core().V1().Services(), factory.Core().V1().Nodes(),
		servicecontroller.Options{ClusterName: "gated", Workers: 1, DriftPeriod: -1})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
	})

	lbService(t, ns, "gated", nil)
	select {
	case <-cloud.entered:
	case <-time.After(waitShort):
		t.Fatal("the load balancer was never built")
	}
	require.Contains(t, cloud.lastSet(), first.Name)
	second := env.NewKubelet(t, "gated-node-2", "127.0.71.2")
	require.NoError(t, devenv.Poll(waitShort, tick, func() error {
		_, err := factory.Core().V1().Nodes().Lister().Get(second.Name)
		return err
	}), "the controller's cache sees the new Node")
	time.Sleep(500 * time.Millisecond) // the Node loop has run by now (it did not see a record to compare)
	close(cloud.release)

	require.NoError(t, devenv.Poll(waitShort, tick, func() error {
		if set := cloud.lastSet(); !slices.Contains(set, second.Name) {
			return fmt.Errorf("the load balancer's Nodes are %v", set)
		}
		return nil
	}), "the Node added during the build backs the load balancer")
}
