package openstack

import (
	"sync"
	"sync/atomic"

	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// ProviderName is the name given to --cloud-provider.
const ProviderName = "openstack"

func init() {
	provider.Register(ProviderName, Read, New)
}

// Cloud is the OpenStack cloud provider.
type Cloud struct {
	provider.Base
	// Cycle runs the load balancers on Octavia's steps (cycle.go).
	*lbcycle.Cycle[lbSpec, osapi.LoadBalancer]

	cfg     Config
	api     osapi.API // every call to OpenStack (osapi)
	servers *snapshot.Snapshot[osapi.Server]
	ports   *portAddresses
	// lb is the load-balancer work (cycle.go).
	lb *steps

	mu    sync.Mutex
	nodes corelisters.NodeLister
	// global is the [Global] section in effect (setGlobal changes it).
	global atomic.Pointer[Global]
}

var (
	_ provider.Cloud             = (*Cloud)(nil)
	_ cloudprovider.InformerUser = (*Cloud)(nil)
)

// New validates cfg and builds the cloud; it does not call OpenStack (the first
// look-up authenticates, so a Keystone outage at start is retried, not fatal).
func New(cfg Config) (*Cloud, error) {
	if err := provider.Prepare(&cfg, ProviderName); err != nil {
		return nil, err
	}
	gw := osapi.New(cfg.Global.settings())
	c := &Cloud{cfg: cfg, api: gw, servers: newServerSnapshot(gw), ports: &portAddresses{api: gw}}
	c.global.Store(&cfg.Global)
	c.lb = newSteps(c)
	c.ports.floatingIPs = c.lb.index.fips.AllWithin
	c.Cycle = c.lb.cycle
	return c, nil
}

// Initialize starts the event recorder and learns the cluster's UID (the
// kube-system namespace's), which tags every load balancer this cluster owns.
func (c *Cloud) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.Start(clientBuilder, "overcast-openstack-cloud", stop)
	go provider.WatchConfig(stop, provider.CredentialsReload, ProviderName, c.cfg.path, &c.cfg, c.setGlobal)
}

// ProviderName returns "openstack".
func (c *Cloud) ProviderName() string { return ProviderName }

// LoadBalancer serves Services through Octavia unless [LoadBalancer] enabled=false.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	if e := c.cfg.LoadBalancer.Enabled; e != nil && !*e {
		return nil, false
	}
	return c, true
}

// InstancesV2 serves Node initialisation and lifecycle from Nova.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.GuardInstances(c), true }

// Routes are served through the [Route] router-id router's extraroutes.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if c.cfg.Route.RouterID == "" {
		return nil, false
	}
	return routes{c}, true
}

// SetInformers gives the cloud the controller manager's Node cache.
func (c *Cloud) SetInformers(f informers.SharedInformerFactory) {
	c.Base.SetInformers(f)
	lister := f.Core().V1().Nodes().Lister()
	c.mu.Lock()
	c.nodes = lister
	c.mu.Unlock()
}

// globals is the [Global] section in effect.
func (c *Cloud) globals() Global { return *c.global.Load() }

func (c *Cloud) nodeLister() corelisters.NodeLister {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes
}

// setGlobal makes cfg's [Global] settings (credentials, endpoint, TLS) take
// effect at the next call, which authenticates with them; other sections
// need a restart.
//
// Other credentials may see another project: the servers are listed anew in
// full (the changes since the last listing would not say that every server
// of the old view is out of this one), and the load balancers and floating
// IPs too.
func (c *Cloud) setGlobal(cfg Config) (bool, error) {
	c.global.Store(&cfg.Global)
	if !c.api.SetSettings(cfg.Global.settings()) {
		return false, nil
	}
	c.servers.Reset()
	c.lb.index.lbs.Invalidate()
	c.lb.index.fips.Invalidate()
	return true, nil
}
