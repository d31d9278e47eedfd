package oci

import (
	"testing"

	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// apiFiles are OCI's API: the gateway and its authentication transport
// (sign.go, principal.go, workloadidentity.go, tokenexchange.go and their
// session.go), the regions, the answers' types and decoding (many.go,
// backenddecode.go, securitytypes.go). They go to a package of their own
// next (issue 45), as CloudStack's went to csapi.
var apiFiles = []string{"gateway.go", "gateway_core.go", "gateway_loadbalancer.go", "sign.go", "principal.go",
	"workloadidentity.go", "tokenexchange.go", "session.go", "regions.go", "many.go", "backenddecode.go", "securitytypes.go"}

// Only the gateway calls OCI: no other file makes an HTTP request or reads
// a status code, nor imports OCI's SDK.
func TestOnlyTheGatewayCallsOCI(t *testing.T) {
	providertest.GatewayOnly(t, ".", apiFiles, []string{"github.com/oracle/oci-go-sdk", "net/http"})
}

// The API's files use nothing the rest of the provider declares: what they
// need (the config's endpoints, limits and principal) is passed in, so
// that they can be a package of their own with no change but the names.
func TestTheAPIsFilesStandOnTheirOwn(t *testing.T) {
	providertest.SelfContained(t, ".", apiFiles)
}
