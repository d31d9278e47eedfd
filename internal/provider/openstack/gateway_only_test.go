package openstack

import (
	"testing"

	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// sdk is the import path of every package of the SDK.
const sdk = "github.com/gophercloud"

// Only osapi calls OpenStack: no file of the provider imports net/http or
// gophercloud (its tests do, to change the cloud as someone else would). The
// provider holds osapi.API, never the client, and the compiler keeps
// osapi's insides out of its reach.
func TestOnlyTheAPIPackageCallsOpenStack(t *testing.T) {
	providertest.GatewayOnly(t, ".", nil, []string{sdk, "net/http"})
}
