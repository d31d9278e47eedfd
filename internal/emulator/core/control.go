package core

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// routeControl registers the shared /_emulator endpoints: the calls, the
// faults and the latency.
func (s *Server) routeControl() {
	s.ctl.HandleFunc("GET /_emulator/calls", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, s.Calls())
	})
	s.ctl.HandleFunc("POST /_emulator/calls/reset", func(w http.ResponseWriter, r *http.Request) {
		s.ResetCalls()
		w.WriteHeader(http.StatusNoContent)
	})
	s.ctl.HandleFunc("GET /_emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		out := make([]map[string]any, 0, len(s.faults))
		for _, fe := range s.faults {
			out = append(out, map[string]any{
				"id": fe.id, "Service": fe.f.Service, "Method": fe.f.Method, "Route": fe.f.Route,
				"Status": fe.f.Status, "RetryAfter": fe.f.RetryAfter.String(), "Hang": fe.f.Hang,
				"Rate": fe.f.Rate, "Count": fe.f.Count, "Left": fe.left, "From": fe.f.From, "Until": fe.f.Until,
			})
		}
		s.mu.Unlock()
		WriteJSON(w, http.StatusOK, out)
	})
	s.ctl.HandleFunc("POST /_emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		var fj faultJSON
		if err := DecodeJSON(r, &fj); err != nil {
			BadControl(w, "invalid fault: "+err.Error())
			return
		}
		f, err := fj.fault()
		if err == nil {
			err = s.validate(f)
		}
		if err != nil {
			BadControl(w, "invalid fault: "+err.Error())
			return
		}
		WriteJSON(w, http.StatusCreated, map[string]int{"id": s.InjectFault(f)})
	})
	s.ctl.HandleFunc("DELETE /_emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	s.ctl.HandleFunc("POST /_emulator/latency", DurationSetter(s.SetLatency))
}

// DurationSetter is a control endpoint that sets a duration from ?d=50ms.
func DurationSetter(set func(time.Duration)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get("d"))
		if err != nil || d < 0 {
			BadControl(w, "want ?d=<Go duration >= 0>, such as 50ms")
			return
		}
		set(d)
		w.WriteHeader(http.StatusNoContent)
	}
}

// BadControl answers a bad control request.
func BadControl(w http.ResponseWriter, msg string) {
	WriteJSON(w, http.StatusBadRequest, map[string]string{"error": msg})
}

// WriteJSON writes v as JSON with code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	WriteJSONType(w, code, v, "application/json")
}

// WriteJSONType writes v as JSON with code and the Content-Type a cloud
// gives its JSON (CloudStack's names its charset).
func WriteJSONType(w http.ResponseWriter, code int, v any, contentType string) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// DecodeJSON reads a JSON request body (up to 16 MiB) into v.
func DecodeJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return errors.New("the request body is empty")
	}
	return json.Unmarshal(b, v)
}
