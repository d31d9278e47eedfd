package kit

import (
	"github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

func init() {
	Register(Kit{
		Name:     "cloudstack",
		Emulator: "CloudStack emulator (/client/api: machines, networks, public IPs, load balancer rules, firewall rules, ACLs, tags, async jobs)",
		Emulate:  emulateCloudStack,
		Dev: OnEmulator{MachineCIDR: "127.0.62.0/24", PublicCIDR: "127.0.63.0/24",
			ConfigName: "cloud-config", Cloud: "CloudStack", Machines: "machines",
			Address: "the public IP address of a load balancer rule of the emulator"}.Dev(emulateCloudStack),
		Invalid:           [2]string{"service.beta.kubernetes.io/cloudstack-load-balancer-proxy-protocol", "maybe"},
		Churn:             [3]string{"overcast.io/cloudstack-load-balancer-algorithm", "roundrobin", "leastconn"},
		LoadBalancerKinds: []string{"public-addresses"},
	})
}

type cloudStackEmulator struct{ *cloudstack.Emulator }

func (e cloudStackEmulator) Core() *core.Server { return e.Server }
func (e cloudStackEmulator) Secrets() []string  { return []string{e.Fixture().UserSecret} }

func emulateCloudStack(o EmulatorOptions) (Emulator, error) {
	e, err := cloudstack.New(cloudstack.Options{Latency: o.Latency, JobDelay: o.Provisioning,
		MachineCIDR: o.MachineCIDR, PublicCIDR: o.PublicCIDR, ServeTraffic: o.ServeTraffic})
	if err := start(e, err, o); err != nil {
		return nil, err
	}
	return cloudStackEmulator{e}, nil
}
