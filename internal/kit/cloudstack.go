package kit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
)

func init() {
	Register(Kit{
		Name:     "cloudstack",
		Emulator: "CloudStack emulator (/client/api: machines, networks, public IPs, load balancer rules, firewall rules, ACLs, tags, async jobs)",
		Emulate:  emulateCloudStack,
		Dev:      devCloudStack,
	})
}

type cloudStackEmulator struct{ *cloudstack.Emulator }

func emulateCloudStack(o EmulatorOptions) (Emulator, error) {
	e, err := cloudstack.New(cloudstack.Options{Latency: o.Latency, JobDelay: o.Provisioning,
		MachineCIDR: o.MachineCIDR, PublicCIDR: o.PublicCIDR, ServeTraffic: o.ServeTraffic})
	if err != nil {
		return nil, err
	}
	listen := o.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	if err := e.Start(listen); err != nil {
		return nil, err
	}
	return cloudStackEmulator{e}, nil
}

// devCloudStack runs the emulator with a virtual machine per dev node, on a
// loopback guest network so the simulated kubelets can listen on the
// machines' addresses, and load balancer rules that carry traffic.
func devCloudStack(dir string, nodes []Node) (*Dev, error) {
	e, err := emulateCloudStack(EmulatorOptions{Provisioning: emulatorProvisioning, ServeTraffic: true,
		MachineCIDR: "127.0.62.0/24", PublicCIDR: "127.0.63.0/24"})
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
	d.Config = filepath.Join(dir, "cloud-config")
	if err := os.WriteFile(d.Config, []byte(e.CloudConfig()), 0o600); err != nil {
		d.Close()
		return nil, err
	}
	d.Started = fmt.Sprintf("CloudStack emulator at %s (calls: GET %[1]s/_emulator/calls); machines %s", e.URL(), strings.Join(list, " "))
	d.Address = "the public IP address of a load balancer rule of the emulator"
	d.Note = "cloud-config: " + d.Config
	return d, nil
}
