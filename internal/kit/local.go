package kit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// emulatorProvisioning is how long an emulated load balancer takes in the
// dev cluster: long enough to see it progress, short enough to wait for.
const emulatorProvisioning = 2 * time.Second

// devPool is where the local cloud's load balancer addresses come from in the
// dev cluster: loopback, so the proxy can serve them without privileges.
const devPool = "127.0.240.0/28"

func init() {
	Register(Kit{Name: "local", Dev: devLocal, Invalid: [2]string{"local.overcast.io/health-check-interval", "forever"}})
}

// devLocal writes the local cloud's inventory of the dev nodes and its config.
func devLocal(dir string, nodes []Node) (*Dev, error) {
	var inv strings.Builder
	inv.WriteString("# Instances of the local cloud; overcast-ccm re-reads this file every 2s.\ninstances:\n")
	for _, n := range nodes {
		fmt.Fprintf(&inv, "- name: %s\n  instanceType: %s\n  zone: %s\n  addresses:\n  - {type: InternalIP, address: %s}\n  - {type: Hostname, address: %s}\n", n.Name, n.InstanceType, n.Zone, n.IP, n.Name)
	}
	invPath := filepath.Join(dir, "inventory.yaml")
	if err := os.WriteFile(invPath, []byte(inv.String()), 0o644); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`inventoryFile: %s
region: dc1
loadBalancer:
  pools:
  - name: default
    addresses: [%q]
`, invPath, devPool)
	path := filepath.Join(dir, "cloud-config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	return &Dev{
		Config:  path,
		Nodes:   nodes,
		Address: "from pool " + devPool,
		Note:    invPath + " lists the instances; overcast-ccm re-reads it while running.",
		Close:   func() {},
	}, nil
}
