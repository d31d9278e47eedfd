package kit

import (
	"github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
)

func init() {
	Register(Kit{
		Name:     "cloudstack",
		Emulator: "CloudStack emulator (/client/api: machines, networks, public IPs, load balancer rules, firewall rules, ACLs, tags, async jobs)",
		Emulate:  emulateCloudStack,
		Dev:      devCloudStack,
		Invalid:  [2]string{"service.beta.kubernetes.io/cloudstack-load-balancer-proxy-protocol", "maybe"},
	})
}

type cloudStackEmulator struct{ *cloudstack.Emulator }

func emulateCloudStack(o EmulatorOptions) (Emulator, error) {
	e, err := cloudstack.New(cloudstack.Options{Latency: o.Latency, JobDelay: o.Provisioning,
		MachineCIDR: o.MachineCIDR, PublicCIDR: o.PublicCIDR, ServeTraffic: o.ServeTraffic})
	if err != nil {
		return nil, err
	}
	if err := e.Start(o.listen()); err != nil {
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
	return devOnEmulator(e, dir, "cloud-config", "CloudStack", "machines",
		"the public IP address of a load balancer rule of the emulator", nodes)
}
