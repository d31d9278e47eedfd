package oci

import (
	"context"
	"fmt"
	"sync"
	"time"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// The OCI cloud serves Nodes from one set of listings of the compartment
// (instances, VNIC attachments, the node subnets' private IPs, the public
// IPs), shared by every lookup, so its calls do not grow with the number of
// Nodes; a Node is deleted only when its instance is TERMINATING or
// TERMINATED, or a 404 is confirmed by listing the instance's compartment
// (instances.go).

func init() {
	provider.Register(ProviderName, Read, New)
}

// Cloud is the OCI cloud provider.
type Cloud struct {
	provider.Base
	// Cycle runs the load balancers on OCI's steps (cycle.go).
	*lbcycle.Cycle[lbSpec, ociapi.LB]

	cfg      Config
	api      ociapi.API
	creds    *ociapi.RotatingKey  // an API key (nil with session tokens)
	sessions *ociapi.SessionCache // session tokens: instance principal or workload identity (nil with an API key)
	machines *snapshot.Snapshot[machine]
	// lb is the load-balancer work (cycle.go).
	lb *steps

	mu sync.Mutex
	// primary says of each VNIC looked up whether it is its instance's
	// primary one (which never changes).
	primary map[string]bool
	// compartmentOf is each instance's compartment as a listing or a
	// lookup answered: what proves that a 404 means gone.
	compartmentOf map[string]string
	// confirmedGone are the instances a listing of their compartment
	// confirmed gone, and when: asked again (the lifecycle controller's next
	// pass, the Node deletion guard's survey), they are gone without asking
	// OCI, whose 404 alone would be doubt now that the compartment is
	// forgotten.
	confirmedGone map[string]time.Time
}

var _ provider.Cloud = (*Cloud)(nil)

// New validates cfg and builds the cloud; it makes no call (the first lookup
// does, so an OCI outage at start is retried, not fatal).
func New(cfg Config) (*Cloud, error) {
	if err := provider.Prepare(&cfg, ProviderName); err != nil {
		return nil, err
	}
	keys, sessions, err := credentialsOf(&cfg)
	if err != nil {
		return nil, err
	}
	var creds ociapi.Credentials = keys
	if sessions != nil {
		creds = sessions
	}
	gw, err := ociapi.New(cfg.endpoints(), creds, cfg.limits(), time.Now)
	if err != nil {
		return nil, err
	}
	c := &Cloud{cfg: cfg, api: gw, creds: keys, sessions: sessions, primary: map[string]bool{}, compartmentOf: map[string]string{}, confirmedGone: map[string]time.Time{}}
	c.machines = snapshot.NewMachines(ProviderName, c.listMachines, machineKeys)
	c.lb = newSteps(c, gw.WriteBurst())
	c.Cycle = c.lb.cycle
	return c, nil
}

// credentialsOf are what cfg's requests are signed with: an API key, or the
// session tokens of an instance principal or of workload identity (OKE's,
// or the peer's self-managed form).
func credentialsOf(cfg *Config) (*ociapi.RotatingKey, *ociapi.SessionCache, error) {
	switch {
	case cfg.UseInstancePrincipals:
		p, err := instancePrincipalOf(cfg)
		if err != nil {
			return nil, nil, err
		}
		return nil, p.Sessions(), nil
	case cfg.UseWorkloadIdentity:
		s, err := ociapi.WorkloadIdentitySessions(cfg.principal())
		return nil, s, err
	}
	key, err := apiKeyOf(cfg.Auth)
	if err != nil {
		return nil, nil, err
	}
	keys := &ociapi.RotatingKey{}
	keys.Set(key)
	return keys, nil, nil
}

// instancePrincipalOf is the instance principal of cfg. The region and the
// compartment default to the instance's: reading them is the one call New
// makes, when the config gives neither (set them to start without it).
func instancePrincipalOf(cfg *Config) (*ociapi.InstancePrincipal, error) {
	if cfg.Auth.Region == "" || cfg.CompartmentID == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		md, err := ociapi.NewInstancePrincipal(cfg.principal()).Instance(ctx)
		if err != nil {
			return nil, fmt.Errorf("useInstancePrincipals: %w; set auth.region and compartment to start without it", err)
		}
		if cfg.Auth.Region == "" {
			cfg.Auth.Region = md.CanonicalRegionName
		}
		if cfg.CompartmentID == "" {
			cfg.CompartmentID = md.CompartmentID
		}
	}
	return ociapi.NewInstancePrincipal(cfg.principal()), nil
}

// Initialize starts the event recorder, the watch of the config for a
// rotated API key, and learns the cluster's UID.
func (c *Cloud) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.Start(clientBuilder, "overcast-oci-cloud", stop)
	if c.creds != nil { // an API key, not session tokens
		go provider.WatchConfig(stop, provider.CredentialsReload, ProviderName, c.cfg.path, &c.cfg, c.setKey)
	}
}

// setKey makes cfg's API key sign the next call; it says whether it is
// another key.
func (c *Cloud) setKey(cfg Config) (bool, error) {
	key, err := apiKeyOf(cfg.Auth)
	if err != nil {
		return false, err
	}
	return c.creds.Set(key), nil
}

// ProviderName is "oci".
func (c *Cloud) ProviderName() string { return ProviderName }

// InstancesV2 serves Node initialisation and lifecycle.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.GuardInstances(c), true }

// LoadBalancer serves LoadBalancer Services with OCI load balancers, unless
// the config's loadBalancer.disabled.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	if lb := c.cfg.LoadBalancer; lb != nil && lb.Disabled {
		return nil, false
	}
	return c, true
}

// Routes is not served: a VCN routes between its subnets itself (as with the peer).
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }
