package local

// The reference page, by make generate.
//go:generate go run ../../../hack/gen-config-docs -format yaml -file config.go -root Config -title "local cloud-config.yaml" -out ../../../docs/reference/local-cloud-config-yaml.md

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
	"github.com/overcast-ccm/overcast/internal/providerid"
)

// Config is the local cloud's --cloud-config file (YAML).
//
//	autoInventory: false            # adopt every Node as an instance with its own addresses
//	inventoryFile: /etc/overcast/inventory.yaml   # instances, re-read while running
//	instances: [...]                # or inline instances (read once)
//	region: local                   # defaults for instances that name none
//	zone: local-a
//	loadBalancer:
//	  pools:
//	  - name: default
//	    addresses: ["127.0.200.0/24", "127.0.201.10-127.0.201.20"]
//	    namespaces: []              # empty: every namespace
type Config struct {
	// Every Node is an instance, with the addresses its kubelet reports
	// (--node-ip). Listed instances still take precedence. Nodes are then
	// never deleted for a missing instance.
	// Default: false
	AutoInventory bool `json:"autoInventory"`
	// A file "instances: [...]" (the form of instances), re-read every
	// reloadInterval. An unreadable or invalid file keeps the last good
	// inventory. Not together with instances.
	// Default: none
	InventoryFile string `json:"inventoryFile"`
	// How often inventoryFile is re-read (100ms to 1h).
	// Default: 2s
	ReloadInterval cfgutil.Duration `json:"reloadInterval"`
	// Inline instances (read once).
	// Default: none
	Instances []Instance `json:"instances"`
	// The instances' default region (label topology.kubernetes.io/region).
	// Default: local
	Region string `json:"region"`
	// The instances' default zone (label topology.kubernetes.io/zone).
	// Default: local-a
	Zone string `json:"zone"`
	// The instances' default type (label node.kubernetes.io/instance-type).
	// Default: local.standard
	InstanceType string `json:"instanceType"`
	// The load balancers: address pools served by an L4 proxy in overcast-ccm.
	LoadBalancer LoadBalancerConfig `json:"loadBalancer"`
}

// Inventory is the document of Config.InventoryFile.
type Inventory struct {
	Instances []Instance `json:"instances"`
}

// Instance is one machine of the local cloud.
type Instance struct {
	// The Node's name (an RFC 1123 subdomain), unique. Required.
	// Default: none
	Name string `json:"name"`
	// Starts with local://, unique.
	// Default: local://<name>
	ProviderID string `json:"providerID"`
	// Label node.kubernetes.io/instance-type.
	// Default: instanceType
	InstanceType string `json:"instanceType"`
	// Label topology.kubernetes.io/zone.
	// Default: zone
	Zone string `json:"zone"`
	// Label topology.kubernetes.io/region.
	// Default: region
	Region string `json:"region"`
	// The Node's addresses, each {type, address}; type is one of InternalIP,
	// ExternalIP, Hostname, InternalDNS, ExternalDNS.
	// Default: the kubelet's --node-ip and the Node's name
	Addresses []Address `json:"addresses"`
	// running, shutdown (the NotReady Node gets the
	// node.cloudprovider.kubernetes.io/shutdown taint) or terminated (the
	// NotReady Node is deleted, as when the instance is removed).
	// Default: running
	State State `json:"state"`
}

// Address is one address of an instance.
type Address struct {
	// InternalIP, ExternalIP, Hostname, InternalDNS or ExternalDNS. Required.
	// Default: none
	Type v1.NodeAddressType `json:"type"`
	// The address. Required.
	// Default: none
	Address string `json:"address"`
}

// State is the power state of an instance.
type State string

// Instance states.
const (
	StateRunning    State = "running"
	StateShutdown   State = "shutdown"
	StateTerminated State = "terminated"
)

// LoadBalancerConfig configures IPAM and the L4 proxy.
type LoadBalancerConfig struct {
	// Leave LoadBalancer Services to another controller.
	// Default: false
	Disabled bool `json:"disabled"`
	// The address pools.
	// Default: none
	Pools []PoolConfig `json:"pools"`
	// How the proxy probes the backends.
	HealthCheck HealthCheckConfig `json:"healthCheck"`
	// A UDP flow without packets for this long is dropped (1s to 1h).
	// Default: 60s
	UDPIdleTimeout cfgutil.Duration `json:"udpIdleTimeout"`
}

// PoolConfig is one address pool.
type PoolConfig struct {
	// Unique; a Service picks it with the annotation local.overcast.io/pool.
	// Required.
	// Default: none
	Name string `json:"name"`
	// CIDRs (127.0.200.0/24; for IPv4 prefixes up to /30 the network and
	// broadcast addresses are left out), ranges (127.0.201.10-127.0.201.20)
	// or single addresses. No address may be in two places. Required.
	// Default: none
	Addresses []string `json:"addresses"`
	// Reserve the pool for these namespaces; their Services use it before
	// the global pools.
	// Default: every namespace
	Namespaces []string `json:"namespaces"`
}

// HealthCheckConfig is how the proxy probes backends.
type HealthCheckConfig struct {
	// Backend probe interval (100ms to 5m).
	// Default: 2s
	Interval cfgutil.Duration `json:"interval"`
	// Probe timeout, at most the interval.
	// Default: 1s
	Timeout cfgutil.Duration `json:"timeout"`
	// Failed probes before a backend is taken out (1 to 10).
	// Default: 2
	UnhealthyThreshold int `json:"unhealthyThreshold"`
	// Good probes before it is put back (1 to 10).
	// Default: 1
	HealthyThreshold int `json:"healthyThreshold"`
}

// Defaults.
const (
	DefaultRegion         = "local"
	DefaultZone           = "local-a"
	DefaultInstanceType   = "local.standard"
	DefaultReloadInterval = 2 * time.Second
	ProviderIDPrefix      = providerid.LocalPrefix
)

// Read parses a config and fills defaults; it reports every unknown key and type
// error at once, and returns what it could decode even then, so that Validate can
// add the remaining problems. It does not validate meaning: call Validate.
func Read(r io.Reader) (Config, error) {
	c, _, err := cfgutil.Read[Config](r, "the local cloud needs one (see deploy/local/cloud-config.yaml)", cfgutil.DecodeYAML)
	c.setDefaults()
	return c, err
}

func (c *Config) setDefaults() {
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.Zone == "" {
		c.Zone = DefaultZone
	}
	if c.InstanceType == "" {
		c.InstanceType = DefaultInstanceType
	}
	if c.ReloadInterval.Duration == 0 {
		c.ReloadInterval.Duration = DefaultReloadInterval
	}
	hc := &c.LoadBalancer.HealthCheck
	if hc.Interval.Duration == 0 {
		hc.Interval.Duration = 2 * time.Second
	}
	if hc.Timeout.Duration == 0 {
		hc.Timeout.Duration = time.Second
	}
	if hc.UnhealthyThreshold == 0 {
		hc.UnhealthyThreshold = 2
	}
	if hc.HealthyThreshold == 0 {
		hc.HealthyThreshold = 1
	}
	if c.LoadBalancer.UDPIdleTimeout.Duration == 0 {
		c.LoadBalancer.UDPIdleTimeout.Duration = 60 * time.Second
	}
}

// Validate reports every problem of the config, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.InventoryFile != "" && len(c.Instances) > 0 {
		add("inventoryFile and instances: give one or the other, not both")
	}
	if c.InventoryFile == "" && len(c.Instances) == 0 && !c.AutoInventory {
		add("instances: no instances, no inventoryFile and autoInventory is false: no Node could ever be initialised")
	}
	if c.ReloadInterval.Duration < 100*time.Millisecond || c.ReloadInterval.Duration > time.Hour {
		add("reloadInterval: %s is outside 100ms..1h", c.ReloadInterval.Duration)
	}
	errs = append(errs, validateInstances("instances", c.Instances))
	lb := c.LoadBalancer
	if _, err := ParsePools(lb.Pools); err != nil {
		errs = append(errs, err)
	}
	if !lb.Disabled && len(lb.Pools) == 0 {
		add("loadBalancer.pools: no pools: LoadBalancer Services could never get an IP (set loadBalancer.disabled: true to leave them to another controller)")
	}
	hc := lb.HealthCheck
	if hc.Interval.Duration < 100*time.Millisecond || hc.Interval.Duration > 5*time.Minute {
		add("loadBalancer.healthCheck.interval: %s is outside 100ms..5m", hc.Interval.Duration)
	}
	if hc.Timeout.Duration <= 0 || hc.Timeout.Duration > hc.Interval.Duration {
		add("loadBalancer.healthCheck.timeout: %s must be positive and at most the interval (%s)", hc.Timeout.Duration, hc.Interval.Duration)
	}
	if hc.UnhealthyThreshold < 1 || hc.UnhealthyThreshold > 10 {
		add("loadBalancer.healthCheck.unhealthyThreshold: %d is outside 1..10", hc.UnhealthyThreshold)
	}
	if hc.HealthyThreshold < 1 || hc.HealthyThreshold > 10 {
		add("loadBalancer.healthCheck.healthyThreshold: %d is outside 1..10", hc.HealthyThreshold)
	}
	if d := lb.UDPIdleTimeout.Duration; d < time.Second || d > time.Hour {
		add("loadBalancer.udpIdleTimeout: %s is outside 1s..1h", d)
	}
	return errors.Join(errs...)
}

var addressTypes = map[v1.NodeAddressType]bool{
	v1.NodeInternalIP: true, v1.NodeExternalIP: true, v1.NodeHostName: true,
	v1.NodeInternalDNS: true, v1.NodeExternalDNS: true,
}

func validateInstances(key string, instances []Instance) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	names := map[string]int{}
	ids := map[string]int{}
	for i, in := range instances {
		k := fmt.Sprintf("%s[%d]", key, i)
		if in.Name == "" {
			add("%s.name: required", k)
		} else {
			if msgs := validation.IsDNS1123Subdomain(in.Name); len(msgs) > 0 {
				add("%s.name: %q is not a valid Node name: %s", k, in.Name, strings.Join(msgs, "; "))
			}
			if j, dup := names[in.Name]; dup {
				add("%s.name: %q is also the name of %s[%d]", k, in.Name, key, j)
			}
			names[in.Name] = i
		}
		if in.ProviderID != "" {
			if !strings.HasPrefix(in.ProviderID, ProviderIDPrefix) || len(in.ProviderID) == len(ProviderIDPrefix) {
				add("%s.providerID: %q must look like %s<id>", k, in.ProviderID, ProviderIDPrefix)
			}
			if j, dup := ids[in.ProviderID]; dup {
				add("%s.providerID: %q is also the providerID of %s[%d]", k, in.ProviderID, key, j)
			}
			ids[in.ProviderID] = i
		}
		switch in.State {
		case "", StateRunning, StateShutdown, StateTerminated:
		default:
			add("%s.state: %q is not one of running, shutdown, terminated", k, in.State)
		}
		for j, a := range in.Addresses {
			ak := fmt.Sprintf("%s.addresses[%d]", k, j)
			if !addressTypes[a.Type] {
				add("%s.type: %q is not one of InternalIP, ExternalIP, Hostname, InternalDNS, ExternalDNS", ak, a.Type)
				continue
			}
			if a.Type == v1.NodeInternalIP || a.Type == v1.NodeExternalIP {
				if ip, err := netip.ParseAddr(a.Address); err != nil || ip.Zone() != "" {
					add("%s.address: %q is not an IP address", ak, a.Address)
				}
			} else if a.Address == "" {
				add("%s.address: required", ak)
			}
		}
	}
	return errors.Join(errs...)
}

// ReadInventory reads and validates an inventory file.
func ReadInventory(path string) ([]Instance, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("inventoryFile: %w", err)
	}
	var inv Inventory
	if err := cfgutil.DecodeYAML(data, &inv); err != nil {
		return nil, fmt.Errorf("inventoryFile %s: %w", path, err)
	}
	if err := validateInstances("instances", inv.Instances); err != nil {
		return nil, fmt.Errorf("inventoryFile %s: %w", path, err)
	}
	return inv.Instances, nil
}
