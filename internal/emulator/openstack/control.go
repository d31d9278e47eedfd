package openstack

import (
	"net/http"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// routeControl adds OpenStack's own /_emulator endpoints to the core's (calls,
// faults, latency): no token, no latency, not counted.
func (e *Emulator) routeControl() {
	ctl := e.Control()
	ctl.HandleFunc("POST /_emulator/provisioning-delay", core.DurationSetter(e.SetProvisioningDelay))
	ctl.HandleFunc("GET /_emulator/fixture", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, e.Fixture())
	})
	ctl.HandleFunc("GET /_emulator/cloud.conf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(e.cloudConf(baseURL(r))))
	})
}
