package kit

import (
	"github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
)

// The CloudStack emulator is here ahead of its provider (issue 10): `overcast
// emulate cloudstack` runs it; the dev cluster and the bench follow with the
// provider.
func init() {
	Register(Kit{
		Name:     "cloudstack",
		Emulator: "CloudStack emulator (/client/api: machines, networks, public IPs, load balancer rules, firewall rules, ACLs, tags, async jobs)",
		Emulate:  emulateCloudStack,
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
