package oci

import (
	"testing"

	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// sdk is oci-go-sdk, which only the tests link (they drive the emulator
// with it; internal/arch's test keeps it out of overcast-ccm).
const sdk = "github.com/oracle/oci-go-sdk"

// Only ociapi calls OCI: no file of the provider imports net/http or the
// SDK, and ociapi links no SDK. The provider holds ociapi.API, never the
// client (but at its construction), and the compiler keeps ociapi's
// insides out of its reach.
func TestOnlyTheAPIPackageCallsOCI(t *testing.T) {
	providertest.GatewayOnly(t, ".", nil, []string{sdk, "net/http"})
	providertest.GatewayOnly(t, "ociapi", nil, []string{sdk})
}
