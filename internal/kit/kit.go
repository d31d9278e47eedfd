// Package kit is the registry of what each cloud brings to the tools around
// overcast-ccm: `overcast dev`, `overcast emulate` and the bench find a cloud
// here by its --cloud-provider name, and nowhere else ask which cloud it is.
// (overcast-ccm itself finds its clouds in k8s.io/cloud-provider's registry
// and never links an emulator.) A cloud adds a file that registers its Kit.
package kit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Kit is one cloud's part of the tools.
type Kit struct {
	// Name is the cloud's --cloud-provider name.
	Name string
	// Emulator names what Emulate runs ("OpenStack emulator (Keystone, Nova,
	// Neutron, Octavia)"); "" when the cloud has none.
	Emulator string
	// Emulate starts the cloud's emulator on loopback; nil when it has none
	// (the local cloud is real on this machine).
	Emulate func(EmulatorOptions) (Emulator, error)
	// Dev readies the cloud of the dev cluster for its nodes; nil while the
	// cloud has no dev cluster.
	Dev func(dir string, nodes []Node) (*Dev, error)
	// Invalid is an annotation and a value of it the cloud refuses (the
	// conformance suite checks that such a Service changes nothing).
	Invalid [2]string
	// ProviderID is the providerID a kubelet of the cloud's is started with
	// (--provider-id) for the machine id; nil where kubelets are not.
	ProviderID func(id string) string
	// Churn is an annotation whose change reaches the cloud (a listener's
	// setting) and two values of it, which the chaos tests swap.
	Churn [3]string
	// LoadBalancerKinds are the kinds of the emulator's Objects of which a
	// Service's load balancer has exactly one: more is a duplicate, one
	// after its deletion an orphan.
	LoadBalancerKinds []string
}

// EmulatorOptions are what every emulator takes.
type EmulatorOptions struct {
	// Listen is where its API is served: a loopback IP:PORT.
	Listen string
	// Latency is added to every API call.
	Latency time.Duration
	// Provisioning is how long a load balancer (or an asynchronous job)
	// takes to finish.
	Provisioning time.Duration
	// ServeTraffic makes its load balancers carry traffic; MachineCIDR and
	// PublicCIDR must then be loopback prefixes.
	ServeTraffic bool
	// MachineCIDR is where machines' (and internal load balancers')
	// addresses come from; PublicCIDR where public addresses come from. ""
	// for the emulator's defaults.
	MachineCIDR, PublicCIDR string
}

// listen is where an emulator is served: Listen, else a free loopback port.
func (o EmulatorOptions) listen() string {
	if o.Listen == "" {
		return "127.0.0.1:0"
	}
	return o.Listen
}

// Emulator is a running emulator.
type Emulator interface {
	// URL is its API's base URL.
	URL() string
	// CloudConfig is a --cloud-config for overcast-ccm that points at it.
	CloudConfig() string
	// AddMachine adds a running machine named name (a Node's name) and
	// returns its id and its address.
	AddMachine(name string) (id, ip string)
	// Calls are the API calls made so far, by operation.
	Calls() []core.CallCount
	// Objects counts what a CCM may create, by kind: the same counts before
	// a Service and after its deletion mean nothing of it was left.
	Objects() map[string]int
	// Core is the emulator core it runs on: faults, calls, traces.
	Core() *core.Server
	// Secrets are the secret parts of CloudConfig (a key, a password), as
	// written there: what must never be shown.
	Secrets() []string
	ResetCalls()
	Close() error
}

// Node is a node of the dev cluster.
type Node struct {
	Name, IP, InstanceType, Zone string
}

// Dev is the dev cluster's cloud.
type Dev struct {
	// Config is the path of the --cloud-config written for overcast-ccm.
	Config string
	// Nodes are the nodes with the addresses their machines have.
	Nodes []Node
	// Started says what was started, one line ("" when nothing was).
	Started string
	// Address says where a load balancer's address comes from.
	Address string
	// Note tells the user where the cloud can be looked at or changed.
	Note string
	// Close stops what Dev started.
	Close func()
}

var (
	mu    sync.Mutex
	kits  = map[string]Kit{}
	names []string
)

// Register adds k; registering a name twice is a bug and panics.
func Register(k Kit) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := kits[k.Name]; dup {
		panic("kit: " + k.Name + " registered twice")
	}
	kits[k.Name] = k
	names = append(names, k.Name)
	slices.Sort(names)
}

// Get is the kit of the cloud named name, or an error naming the clouds there are.
func Get(name string) (Kit, error) {
	mu.Lock()
	defer mu.Unlock()
	if k, ok := kits[name]; ok {
		return k, nil
	}
	return Kit{}, fmt.Errorf("no cloud %q: the clouds are %s", name, strings.Join(names, ", "))
}

// Emulated is the kit of the cloud named name when it has an emulator.
func Emulated(name string) (Kit, error) {
	k, err := Get(name)
	if err == nil && k.Emulate == nil {
		err = fmt.Errorf("the %s cloud has no emulator; the clouds with one are %s", name, strings.Join(EmulatedNames(), ", "))
	}
	return k, err
}

// DevCloud is the kit of the cloud named name when it has a dev cluster.
func DevCloud(name string) (Kit, error) {
	k, err := Get(name)
	if err == nil && k.Dev == nil {
		err = fmt.Errorf("the %s cloud has no dev cluster yet; the clouds with one are %s", name, strings.Join(DevNames(), ", "))
	}
	return k, err
}

// DevNames are the clouds with a dev cluster, sorted.
func DevNames() []string { return namesWhere(func(k Kit) bool { return k.Dev != nil }) }

// Names are the registered clouds, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(names)
}

// EmulatedNames are the clouds with an emulator, sorted.
func EmulatedNames() []string { return namesWhere(func(k Kit) bool { return k.Emulate != nil }) }

// namesWhere are the registered clouds whose kit has, sorted.
func namesWhere(has func(Kit) bool) []string {
	mu.Lock()
	defer mu.Unlock()
	var out []string
	for _, n := range names {
		if has(kits[n]) {
			out = append(out, n)
		}
	}
	return out
}

// OnEmulator is how the dev cluster runs on a cloud's emulator: a machine per
// dev node on MachineCIDR (a loopback prefix of the cloud's own, so the
// simulated kubelets listen on the machines' addresses), load balancers that
// carry traffic on PublicCIDR, and the words the dev command prints.
type OnEmulator struct {
	MachineCIDR, PublicCIDR string
	// ConfigName is the cloud config's file name ("cloud.conf").
	ConfigName string
	// Cloud names the cloud in prose; Machines its machines ("servers").
	Cloud, Machines string
	// Address says where a load balancer's address comes from.
	Address string
}

// Dev is the Kit.Dev of a cloud whose dev cluster runs on emulate.
func (o OnEmulator) Dev(emulate func(EmulatorOptions) (Emulator, error)) func(dir string, nodes []Node) (*Dev, error) {
	return func(dir string, nodes []Node) (*Dev, error) {
		e, err := emulate(EmulatorOptions{Provisioning: emulatorProvisioning, ServeTraffic: true,
			MachineCIDR: o.MachineCIDR, PublicCIDR: o.PublicCIDR})
		if err != nil {
			return nil, err
		}
		d := &Dev{Close: func() { _ = e.Close() }}
		var list []string
		for _, n := range nodes {
			_, ip := e.AddMachine(n.Name)
			d.Nodes = append(d.Nodes, Node{Name: n.Name, IP: ip})
			list = append(list, n.Name+"="+ip)
		}
		d.Config = filepath.Join(dir, o.ConfigName)
		if err := os.WriteFile(d.Config, []byte(e.CloudConfig()), 0o600); err != nil {
			d.Close()
			return nil, err
		}
		d.Started = fmt.Sprintf("%s emulator at %s (calls: GET %[2]s/_emulator/calls); %s %s", o.Cloud, e.URL(), o.Machines, strings.Join(list, " "))
		d.Address = o.Address
		d.Note = o.ConfigName + ": " + d.Config
		return d, nil
	}
}

// start serves a new emulator (made with err) where o says.
func start(e interface{ Start(addr string) error }, err error, o EmulatorOptions) error {
	if err != nil {
		return err
	}
	return e.Start(o.listen())
}
