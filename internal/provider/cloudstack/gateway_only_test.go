package cloudstack

import (
	"testing"

	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// Only the gateway calls CloudStack: no other file imports cloudstack-go or
// net/http.
func TestOnlyTheGatewayCallsCloudStack(t *testing.T) {
	providertest.GatewayOnly(t, ".", []string{"gateway.go", "calls.go"},
		[]string{"github.com/apache/cloudstack-go", "net/http"})
}
