package kit

import (
	"strings"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/emulator/oci"
)

func init() {
	Register(Kit{
		Name:     "oci",
		Emulator: "OCI emulator (signed requests; instances, VNICs, subnets, availability domains; load balancers with their work requests)",
		Emulate:  emulateOCI,
		Dev: OnEmulator{MachineCIDR: "127.0.56.0/24", PublicCIDR: "127.0.57.0/24",
			ConfigName: "cloud-provider.yaml", Cloud: "OCI", Machines: "instances",
			Address: "the public IP address of a load balancer of the emulator"}.Dev(emulateOCI),
		Invalid:           [2]string{"oci.oraclecloud.com/load-balancer-type", "alb"},
		Churn:             [3]string{"service.beta.kubernetes.io/oci-load-balancer-connection-idle-timeout", "100", "200"},
		LoadBalancerKinds: []string{"loadBalancer"},
		// OKE's kubelets are started with --provider-id, which the peer needs.
		ProviderID: func(id string) string { return "oci://" + id },
	})
}

type ociEmulator struct{ *oci.Emulator }

func (e ociEmulator) Core() *core.Server { return e.Server }

// Secrets are the lines of the private key's PEM between its armour.
func (e ociEmulator) Secrets() []string {
	key := strings.Split(strings.TrimSpace(e.Fixture().PrivateKeyPEM), "\n")
	return key[1 : len(key)-1]
}

func emulateOCI(o EmulatorOptions) (Emulator, error) {
	e, err := oci.New(oci.Options{Latency: o.Latency, Provisioning: o.Provisioning, MachineCIDR: o.MachineCIDR, PublicCIDR: o.PublicCIDR, ServeTraffic: o.ServeTraffic})
	if err := start(e, err, o); err != nil {
		return nil, err
	}
	return ociEmulator{e}, nil
}
