// Package cloudstack is the Apache CloudStack cloud, a drop-in for
// cloudstack-kubernetes-provider: its cloud-config, providerIDs, annotations
// and load balancer rules work unchanged (--cloud-provider=cloudstack, or the
// peer's name external-cloudstack).
//
// Nodes are served from one paged listing of the account's virtual machines
// shared by every lookup; a Node is deleted only when a lookup by id answers
// that its machine is gone. A LoadBalancer Service gets a public IP address
// and one load balancer rule per port and protocol, named as the peer names
// them, with firewall rules (an isolated network) or network ACL items (a VPC
// tier) for its sources, on the load-balancer cycle (internal/lbcycle).
// Asynchronous jobs never hold a worker: a step starts them and the Service is
// looked at again.
package cloudstack

import (
	"errors"

	"context"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// ProviderName is the name given to --cloud-provider; PeerProviderName, the
// peer's, works as well.
const (
	ProviderName     = "cloudstack"
	PeerProviderName = "external-cloudstack"
)

func init() {
	for _, name := range []string{ProviderName, PeerProviderName} {
		provider.Register(name, Read, func(cfg Config) (*Cloud, error) { return New(cfg, name) })
	}
}

// Cloud is the CloudStack cloud provider.
type Cloud struct {
	provider.Base
	// Cycle runs the load balancers on CloudStack's steps (cycle.go).
	*lbcycle.Cycle[lbSpec, lbState]

	name     string
	cfg      Config
	api      csapi.API
	machines *snapshot.Snapshot[csapi.Machine]
	// lb is the load-balancer work (cycle.go), which the cycle, explain
	// and sweep run on.
	lb *steps
}

// lostWindow is how long after a lost answer its object may yet appear:
// an address is taken up only within associatingWindow of the time
// written on its Service (associating.go).
const lostWindow = associatingWindow + 2*clockPrecision

var _ provider.Cloud = (*Cloud)(nil)

// New validates cfg and builds the cloud under name; it makes no call (the
// first lookup does, so a management server down at start is retried, not
// fatal). Unlike the peer it needs no admin-only command: a user's keys, as
// CloudStack gives CKS clusters, are enough.
func New(cfg Config, name string) (*Cloud, error) {
	if err := provider.Prepare(&cfg, name); err != nil {
		return nil, err
	}
	api, err := csapi.New(cfg.Global.settings())
	if err != nil {
		return nil, err
	}
	c := &Cloud{name: name, cfg: cfg, api: api}
	c.machines = snapshot.NewMachines(ProviderName, c.listMachines, machineKeys)
	c.lb = &steps{api: api, cluster: &c.Cluster, kube: c.Kube, machines: c.machines,
		listing: newRuleListing(api), firewall: newFirewallListing(api), jobs: newJobs(), networks: map[string]csapi.Network{}, tagSettle: tagSettle,
		takingUp: cloudapi.NewTurn(), acls: aclPass{turn: cloudapi.NewTurn()}, ruleMachines: provider.Rotation[[]string]{PerPass: ruleReadsPerPass, Within: provider.WatchedWithin},
		ruleChecks: provider.Rotation[[]csapi.HealthCheck]{PerPass: ruleReadsPerPass, Within: provider.WatchedWithin}, unanswered: &provider.Unanswered{Window: lostWindow},
		records: &lbcycle.AnnotationRecords{Converged: annotation.CloudStackConverged, Kube: c.Kube, Ledger: c.Ledger(),
			Clear: []annotation.Name{annotation.CloudStackAssociating}}}
	c.Cycle = newCycle(c)
	return c, nil
}

// Initialize starts the event recorder, the watch of the cloud-config for
// rotated keys, and learns the cluster's UID (the kube-system namespace's),
// which tags every address this cluster associates.
func (c *Cloud) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.Start(clientBuilder, "overcast-cloudstack-cloud", stop)
	// New [Global] settings take effect at the next call.
	go provider.WatchConfig(stop, provider.CredentialsReload, c.name, c.cfg.path, &c.cfg,
		func(cfg Config) (bool, error) { return c.api.Set(cfg.Global.settings()) })
}

// ProviderName is the name the cloud was started under.
func (c *Cloud) ProviderName() string { return c.name }

// LoadBalancer serves LoadBalancer Services with load balancer rules.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c, true }

// InstancesV2 serves Node initialisation and lifecycle.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.GuardInstances(c), true }

// Routes is not served: CloudStack guest networks route between their machines themselves.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

// listMachines lists every machine for the snapshot, and looks up once each
// guest network their default NICs are on (a load balancer needs its
// network's kind: isolated or a VPC tier).
func (c *Cloud) listMachines(ctx context.Context) ([]csapi.Machine, error) {
	list, err := c.api.Machines(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, m := range list {
		if n := m.DefaultNIC().Network; n != "" && !seen[n] {
			seen[n] = true
			if _, err := c.lb.network(ctx, n); err != nil {
				klog.FromContext(ctx).V(2).Info("Cannot look up a guest network yet", "network", n, "err", err.Error())
			}
		}
	}
	return list, nil
}

// network is the guest network id's, looked up once.
func (s *steps) network(ctx context.Context, id string) (csapi.Network, error) {
	s.mu.Lock()
	n, ok := s.networks[id]
	s.mu.Unlock()
	if ok {
		return n, nil
	}
	n, err := s.api.Network(ctx, id)
	if err != nil {
		return csapi.Network{}, err
	}
	s.mu.Lock()
	s.networks[id] = n
	s.mu.Unlock()
	return n, nil
}

// isNotFound says whether the cloud answered that the object is not there.
func isNotFound(err error) bool { return errors.Is(err, outcome.ErrNotFound) }
