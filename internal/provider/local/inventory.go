package local

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/providerid"
)

// providedNodeIPAnnotation is set by a kubelet started with --node-ip and
// --cloud-provider=external.
const providedNodeIPAnnotation = "alpha.kubernetes.io/provided-node-ip"

// inventory answers "which instance is this Node" from the configured instances,
// re-reading Config.InventoryFile while running. A file that cannot be read or is
// invalid never replaces the last good inventory: doubt never deletes a Node.
type inventory struct {
	cfg Config

	mu       sync.RWMutex
	byName   map[string]Instance
	byID     map[string]Instance
	raw      []byte
	lastErr  string
	loadedAt time.Time
}

func newInventory(cfg Config) (*inventory, error) {
	inv := &inventory{cfg: cfg}
	if cfg.InventoryFile == "" {
		inv.set(cfg.Instances, nil)
		return inv, nil
	}
	raw, instances, err := inv.read()
	if err != nil {
		return nil, err
	}
	inv.set(instances, raw)
	return inv, nil
}

func (inv *inventory) read() ([]byte, []Instance, error) {
	raw, err := os.ReadFile(inv.cfg.InventoryFile)
	if err != nil {
		return nil, nil, fmt.Errorf("inventoryFile: %w", err)
	}
	instances, err := ReadInventory(inv.cfg.InventoryFile)
	return raw, instances, err
}

func (inv *inventory) set(instances []Instance, raw []byte) {
	byName := make(map[string]Instance, len(instances))
	byID := make(map[string]Instance, len(instances))
	for _, in := range instances {
		if in.ProviderID == "" {
			in.ProviderID = providerid.Local(in.Name)
		}
		if in.State == "" {
			in.State = StateRunning
		}
		byName[in.Name] = in
		byID[in.ProviderID] = in
	}
	inv.mu.Lock()
	inv.byName, inv.byID, inv.raw, inv.loadedAt = byName, byID, raw, time.Now()
	inv.mu.Unlock()
}

// run re-reads the inventory file every ReloadInterval until stop.
func (inv *inventory) run(stop <-chan struct{}) {
	if inv.cfg.InventoryFile == "" {
		return
	}
	logger := klog.Background().WithName("local-inventory")
	wait.Until(func() { inv.reload(logger) }, inv.cfg.ReloadInterval.Duration, stop)
}

func (inv *inventory) reload(logger klog.Logger) {
	raw, instances, err := inv.read()
	inv.mu.RLock()
	same := err == nil && bytes.Equal(raw, inv.raw)
	lastErr := inv.lastErr
	inv.mu.RUnlock()
	if err != nil {
		if err.Error() != lastErr {
			logger.Error(err, "Keeping the last good inventory", "file", inv.cfg.InventoryFile)
			inv.mu.Lock()
			inv.lastErr = err.Error()
			inv.mu.Unlock()
		}
		return
	}
	if same {
		return
	}
	inv.set(instances, raw)
	inv.mu.Lock()
	inv.lastErr = ""
	inv.mu.Unlock()
	logger.Info("Reloaded the inventory", "file", inv.cfg.InventoryFile, "instances", len(instances))
}

// lookup finds the instance of node. found is false only when the inventory
// certainly has no such instance; err means "cannot tell".
func (inv *inventory) lookup(node *v1.Node) (Instance, bool, error) {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	if id := node.Spec.ProviderID; id != "" {
		if _, err := providerid.ParseLocal(id); err != nil {
			return Instance{}, false, err
		}
		if in, ok := inv.byID[id]; ok {
			return inv.complete(in, node), true, nil
		}
	} else if in, ok := inv.byName[node.Name]; ok {
		return inv.complete(in, node), true, nil
	}
	if inv.cfg.AutoInventory {
		return inv.complete(Instance{Name: node.Name, ProviderID: ProviderIDPrefix + node.Name, State: StateRunning}, node), true, nil
	}
	return Instance{}, false, nil
}

// complete fills what the inventory leaves out: defaults, and addresses from the
// Node itself (kubelet --node-ip) when the inventory lists none.
func (inv *inventory) complete(in Instance, node *v1.Node) Instance {
	if in.InstanceType == "" {
		in.InstanceType = inv.cfg.InstanceType
	}
	if in.Zone == "" {
		in.Zone = inv.cfg.Zone
	}
	if in.Region == "" {
		in.Region = inv.cfg.Region
	}
	if len(in.Addresses) == 0 {
		in.Addresses = nodeOwnAddresses(node)
	}
	return in
}

func nodeOwnAddresses(node *v1.Node) []Address {
	var out []Address
	seen := map[Address]bool{}
	addOnce := func(a Address) {
		if !seen[a] && a.Address != "" {
			seen[a] = true
			out = append(out, a)
		}
	}
	if ips, ok := node.Annotations[providedNodeIPAnnotation]; ok {
		for _, ip := range strings.Split(ips, ",") {
			addOnce(Address{Type: v1.NodeInternalIP, Address: strings.TrimSpace(ip)})
		}
	}
	for _, a := range node.Status.Addresses {
		addOnce(Address{Type: a.Type, Address: a.Address})
	}
	addOnce(Address{Type: v1.NodeHostName, Address: node.Name})
	return out
}
