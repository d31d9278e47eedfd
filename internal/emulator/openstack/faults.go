package openstack

import (
	"net/http"
	"strings"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Fault makes matching API calls fail (see core.Fault). Its Service is
// "identity", "compute", "network", "load-balancer" or "" for all; its Route a
// route template as in Calls ("GET /compute/v2.1/servers/detail").
type Fault = core.Fault

// CallCount is the number of API calls with one service, method, route
// template and response code (see core.CallCount).
type CallCount = core.CallCount

// writeFault answers a call with an injected fault, in the error shape of
// the service it was made to.
func writeFault(w http.ResponseWriter, _ *http.Request, service string, status int, msg string) {
	switch {
	case status == http.StatusUnauthorized:
		writeUnauthorized(w)
	case service == "compute":
		novaError(w, status, msg)
	case service == "network":
		neutronError(w, status, strings.ReplaceAll(http.StatusText(status), " ", ""), msg)
	case service == "load-balancer":
		octaviaError(w, status, msg)
	default:
		keystoneError(w, status, msg)
	}
}
