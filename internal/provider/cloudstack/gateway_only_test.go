package cloudstack

import (
	"testing"

	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// sdk is cloudstack-go, which only the tests link (they drive the emulator
// with it, as the peer does; internal/arch's test keeps it out of
// overcast-ccm).
const sdk = "github.com/apache/cloudstack-go"

// Only csapi calls CloudStack: no file of the provider imports net/http or
// cloudstack-go, and csapi links no SDK. The provider holds csapi.API, never
// the client, and the compiler keeps csapi's insides out of its reach.
func TestOnlyTheAPIPackageCallsCloudStack(t *testing.T) {
	providertest.GatewayOnly(t, ".", nil, []string{sdk, "net/http"})
	providertest.GatewayOnly(t, "csapi", nil, []string{sdk})
}
