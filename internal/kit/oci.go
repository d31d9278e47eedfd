package kit

import (
	"github.com/overcast-ccm/overcast/internal/emulator/oci"
)

func init() {
	Register(Kit{
		Name:     "oci",
		Emulator: "OCI emulator (signed requests; instances, VNICs, subnets, availability domains; load balancers with their work requests)",
		Emulate:  emulateOCI,
		Dev:      devOCI,
		Invalid:  [2]string{"oci.oraclecloud.com/load-balancer-type", "alb"},
		// OKE's kubelets are started with --provider-id, which the peer needs.
		ProviderID: func(id string) string { return "oci://" + id },
	})
}

type ociEmulator struct{ *oci.Emulator }

func emulateOCI(o EmulatorOptions) (Emulator, error) {
	e, err := oci.New(oci.Options{Latency: o.Latency, Provisioning: o.Provisioning, MachineCIDR: o.MachineCIDR, PublicCIDR: o.PublicCIDR, ServeTraffic: o.ServeTraffic})
	if err != nil {
		return nil, err
	}
	if err := e.Start(o.listen()); err != nil {
		return nil, err
	}
	return ociEmulator{e}, nil
}

// devOCI runs the emulator with an instance per dev node, on a loopback node
// subnet so the simulated kubelets can listen on the instances' addresses,
// and load balancers that carry traffic.
func devOCI(dir string, nodes []Node) (*Dev, error) {
	e, err := emulateOCI(EmulatorOptions{Provisioning: emulatorProvisioning, ServeTraffic: true,
		MachineCIDR: "127.0.56.0/24", PublicCIDR: "127.0.57.0/24"})
	if err != nil {
		return nil, err
	}
	return devOnEmulator(e, dir, "cloud-provider.yaml", "OCI", "instances",
		"the public IP address of a load balancer of the emulator", nodes)
}
