// Package local is the local cloud: instances from an inventory (or the Nodes
// themselves), load balancers from address pools served by a real L4 proxy inside
// the controller manager. It is the default cloud of `make run`, useful on bare
// metal, in development and in demos.
package local

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// ProviderName is the name given to --cloud-provider.
const ProviderName = "local"

func init() {
	provider.Register(ProviderName, Read, New)
}

// Cloud is the local cloud provider.
type Cloud struct {
	provider.Base
	// Cycle runs the load balancers on the local steps (cycle.go).
	*lbcycle.Cycle[lbSpec, servedLB]

	cfg Config
	inv *inventory
	// lb is the load balancers (cycle.go).
	lb *steps
}

var (
	_ provider.Cloud             = (*Cloud)(nil)
	_ cloudprovider.InformerUser = (*Cloud)(nil)
)

// New validates cfg and builds the cloud. Every problem of cfg is in the error.
func New(cfg Config) (*Cloud, error) {
	if err := provider.Prepare(&cfg, ProviderName); err != nil {
		return nil, err
	}
	pools, err := ParsePools(cfg.LoadBalancer.Pools)
	if err != nil {
		return nil, err
	}
	inv, err := newInventory(cfg)
	if err != nil {
		return nil, err
	}
	c := &Cloud{cfg: cfg, inv: inv, lb: newSteps(cfg, pools, inv)}
	c.Cycle = c.lb.cycle
	return c, nil
}

// Initialize starts the inventory reload and the event recorder; stop ends both and
// closes every load balancer listener of this process.
func (c *Cloud) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.Start(clientBuilder, "overcast-local-cloud", stop)
	go c.inv.run(stop)
	go func() {
		<-stop
		c.lb.proxy.Close()
	}()
}

// SetInformers gives the cloud the Service and Node caches of the controller manager.
func (c *Cloud) SetInformers(f informers.SharedInformerFactory) {
	c.Base.SetInformers(f)
	svc := f.Core().V1().Services()
	node := f.Core().V1().Nodes()
	c.lb.infMu.Lock()
	defer c.lb.infMu.Unlock()
	c.lb.services = svc.Lister()
	c.lb.nodes = node.Lister()
	c.lb.synced = []cache.InformerSynced{svc.Informer().HasSynced, node.Informer().HasSynced}
}

// event records an Event on obj (a Service or a Node).
func (c *Cloud) event(obj runtime.Object, eventType, reason, format string, args ...any) {
	c.Events.Eventf(obj, eventType, reason, format, args...)
}

// ProviderName returns "local".
func (c *Cloud) ProviderName() string { return ProviderName }

// LoadBalancer is served unless loadBalancer.disabled is set.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	if c.cfg.LoadBalancer.Disabled {
		return nil, false
	}
	return c, true
}

// InstancesV2 serves Node initialisation and lifecycle from the inventory.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.GuardInstances(c), true }

// Routes is not implemented: the local cloud has no routers; pod networking is the CNI's job.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

func (c *Cloud) String() string { return fmt.Sprintf("local cloud (%d pools)", len(c.lb.pools)) }
