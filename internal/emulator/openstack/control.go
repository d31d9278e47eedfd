package openstack

import (
	"net/http"
	"time"
)

// routeControl registers the /_emulator endpoints: no token, no latency, not
// counted.
func (e *Emulator) routeControl() {
	bad := func(w http.ResponseWriter, msg string) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": msg})
	}
	e.ctl.HandleFunc("GET /_emulator/calls", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, e.Calls())
	})
	e.ctl.HandleFunc("POST /_emulator/calls/reset", func(w http.ResponseWriter, r *http.Request) {
		e.ResetCalls()
		w.WriteHeader(http.StatusNoContent)
	})
	e.ctl.HandleFunc("GET /_emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		out := make([]map[string]any, 0, len(e.faults))
		for _, fe := range e.faults {
			out = append(out, map[string]any{
				"id": fe.id, "Service": fe.f.Service, "Method": fe.f.Method, "Route": fe.f.Route,
				"Status": fe.f.Status, "RetryAfter": fe.f.RetryAfter.String(), "Hang": fe.f.Hang,
				"Rate": fe.f.Rate, "Count": fe.f.Count, "Left": fe.left, "From": fe.f.From, "Until": fe.f.Until,
			})
		}
		e.mu.Unlock()
		writeJSON(w, http.StatusOK, out)
	})
	e.ctl.HandleFunc("POST /_emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		var fj faultJSON
		if err := decodeJSON(r, &fj); err != nil {
			bad(w, "invalid fault: "+err.Error())
			return
		}
		f, err := fj.fault()
		if err != nil {
			bad(w, "invalid fault: "+err.Error())
			return
		}
		writeJSON(w, http.StatusCreated, map[string]int{"id": e.InjectFault(f)})
	})
	e.ctl.HandleFunc("DELETE /_emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		e.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	duration := func(set func(time.Duration)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			d, err := time.ParseDuration(r.URL.Query().Get("d"))
			if err != nil || d < 0 {
				bad(w, "want ?d=<Go duration >= 0>, such as 50ms")
				return
			}
			set(d)
			w.WriteHeader(http.StatusNoContent)
		}
	}
	e.ctl.HandleFunc("POST /_emulator/latency", duration(e.SetLatency))
	e.ctl.HandleFunc("POST /_emulator/provisioning-delay", duration(e.SetProvisioningDelay))
	e.ctl.HandleFunc("GET /_emulator/fixture", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, e.Fixture())
	})
	e.ctl.HandleFunc("GET /_emulator/cloud.conf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(e.cloudConf(baseURL(r))))
	})
}
