package kit

import (
	"github.com/overcast-ccm/overcast/internal/emulator/oci"
)

func init() {
	Register(Kit{
		Name:     "oci",
		Emulator: "OCI emulator (signed requests; instances, VNICs, subnets, availability domains; load balancers with their work requests)",
		Emulate:  emulateOCI,
		Invalid:  [2]string{"oci.oraclecloud.com/load-balancer-type", "alb"},
	})
}

type ociEmulator struct{ *oci.Emulator }

func emulateOCI(o EmulatorOptions) (Emulator, error) {
	e, err := oci.New(oci.Options{Latency: o.Latency, Provisioning: o.Provisioning, MachineCIDR: o.MachineCIDR, PublicCIDR: o.PublicCIDR, ServeTraffic: o.ServeTraffic})
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
	return ociEmulator{e}, nil
}
