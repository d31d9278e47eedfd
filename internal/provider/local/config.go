package local

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
	AutoInventory bool `json:"autoInventory"`
	// InventoryFile holds an Inventory document; it is re-read every ReloadInterval.
	InventoryFile  string             `json:"inventoryFile"`
	ReloadInterval cfgutil.Duration   `json:"reloadInterval"`
	Instances      []Instance         `json:"instances"`
	Region         string             `json:"region"`
	Zone           string             `json:"zone"`
	InstanceType   string             `json:"instanceType"`
	LoadBalancer   LoadBalancerConfig `json:"loadBalancer"`
}

// Inventory is the document of Config.InventoryFile.
type Inventory struct {
	Instances []Instance `json:"instances"`
}

// Instance is one machine of the local cloud.
type Instance struct {
	Name         string    `json:"name"`
	ProviderID   string    `json:"providerID"`
	InstanceType string    `json:"instanceType"`
	Zone         string    `json:"zone"`
	Region       string    `json:"region"`
	Addresses    []Address `json:"addresses"`
	State        State     `json:"state"`
}

// Address is one address of an instance.
type Address struct {
	Type    v1.NodeAddressType `json:"type"`
	Address string             `json:"address"`
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
	// Disabled turns the LoadBalancer interface off (another controller serves them).
	Disabled       bool              `json:"disabled"`
	Pools          []PoolConfig      `json:"pools"`
	HealthCheck    HealthCheckConfig `json:"healthCheck"`
	UDPIdleTimeout cfgutil.Duration  `json:"udpIdleTimeout"`
}

// PoolConfig is one address pool.
type PoolConfig struct {
	Name string `json:"name"`
	// Addresses are CIDRs ("127.0.200.0/24") or ranges ("127.0.201.10-127.0.201.20").
	Addresses []string `json:"addresses"`
	// Namespaces restricts the pool to these namespaces; empty means every namespace.
	Namespaces []string `json:"namespaces"`
}

// HealthCheckConfig is how the proxy probes backends.
type HealthCheckConfig struct {
	Interval           cfgutil.Duration `json:"interval"`
	Timeout            cfgutil.Duration `json:"timeout"`
	UnhealthyThreshold int              `json:"unhealthyThreshold"`
	HealthyThreshold   int              `json:"healthyThreshold"`
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
