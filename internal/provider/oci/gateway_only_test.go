package oci

import (
	"testing"

	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// Only the gateway calls OCI: no other file makes an HTTP request or reads
// a status code (sign.go, principal.go, workloadidentity.go and
// tokenexchange.go are its authentication transport), nor imports OCI's SDK.
func TestOnlyTheGatewayCallsOCI(t *testing.T) {
	providertest.GatewayOnly(t, ".", []string{"gateway.go", "gateway_core.go", "gateway_loadbalancer.go", "sign.go", "principal.go", "workloadidentity.go", "tokenexchange.go"},
		[]string{"github.com/oracle/oci-go-sdk", "net/http"})
}
