package cloudstack

import (
	"testing"

	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// sdk is cloudstack-go, which only the tests link (they drive the emulator
// with it, as the peer does; internal/arch's test keeps it out of
// overcast-ccm).
const sdk = "github.com/apache/cloudstack-go"

// Only the gateway calls CloudStack: no other file imports cloudstack-go or
// net/http.
func TestOnlyTheGatewayCallsCloudStack(t *testing.T) {
	providertest.GatewayOnly(t, ".", []string{"gateway.go", "calls.go"},
		[]string{sdk, "net/http"})
}
