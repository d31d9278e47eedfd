package kit

import (
	"github.com/overcast-ccm/overcast/internal/emulator/core"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
)

func init() {
	Register(Kit{
		Name:     "openstack",
		Emulator: "OpenStack emulator (Keystone, Nova, Neutron, Octavia)",
		Emulate:  emulateOpenStack,
		Dev: OnEmulator{MachineCIDR: "127.0.60.0/24", PublicCIDR: "127.0.61.0/24",
			ConfigName: "cloud.conf", Cloud: "OpenStack", Machines: "servers",
			Address: "the floating IP of an Octavia load balancer of the emulator"}.Dev(emulateOpenStack),
		Invalid:           [2]string{"service.beta.kubernetes.io/openstack-internal-load-balancer", "maybe"},
		Churn:             [3]string{"loadbalancer.openstack.org/connection-limit", "1000", "2000"},
		LoadBalancerKinds: []string{"loadbalancers", "floatingips"},
	})
}

type openStackEmulator struct{ *emulator.Emulator }

func (e openStackEmulator) CloudConfig() string { return e.CloudConf() }
func (e openStackEmulator) Core() *core.Server  { return e.Server }
func (e openStackEmulator) Secrets() []string   { return []string{e.Fixture().AppCredentialSecret} }

func (e openStackEmulator) AddMachine(name string) (string, string) {
	return e.AddServer(emulator.ServerSpec{Name: name})
}

func emulateOpenStack(o EmulatorOptions) (Emulator, error) {
	e := emulator.New(emulator.Options{Latency: o.Latency, ProvisioningDelay: o.Provisioning,
		PrivateCIDR: o.MachineCIDR, PublicCIDR: o.PublicCIDR, ServeTraffic: o.ServeTraffic})
	if err := start(e, nil, o); err != nil {
		return nil, err
	}
	return openStackEmulator{e}, nil
}

// PasswordCloudConfig is CloudConfig with a user and password instead of an
// application credential: what TLS termination needs of Octavia.
func (e openStackEmulator) PasswordCloudConfig() string { return e.PasswordCloudConf() }
