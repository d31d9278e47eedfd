package core

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// traceLimit bounds a trace (a long throttling run makes about a hundred
// thousand calls).
const traceLimit = 1 << 20

// Traced is one API call of a trace: when it was answered, what it asked
// (Object: the method, path, parameters and a digest of the body, so that a
// retry of the same call has the same Object) and the answer's code.
type Traced struct {
	At     time.Time
	Object string
	Code   int
}

// volatileParams change from one attempt of a call to the next (CloudStack's
// request signature and its expiry) and are left out of Traced.Object.
var volatileParams = map[string]bool{"signature": true, "expires": true, "signatureversion": true, "apikey": true}

// StartTrace records every API call from now on (at most traceLimit), for
// Trace: how often one and the same call is made again, e.g. after a 429.
func (s *Server) StartTrace() {
	s.callsMu.Lock()
	s.tracing, s.trace = true, nil
	s.callsMu.Unlock()
}

// Trace returns the calls recorded since StartTrace, in the order answered.
func (s *Server) Trace() []Traced {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	return append([]Traced(nil), s.trace...)
}

func (s *Server) traced(object string, code int) {
	s.callsMu.Lock()
	if s.tracing && len(s.trace) < traceLimit {
		s.trace = append(s.trace, Traced{At: time.Now(), Object: object, Code: code})
	}
	s.callsMu.Unlock()
}

// objectOf names what r asks so that its retries have the same name: the
// method, the path, the query and form parameters but the volatile ones,
// and a digest of any other body (which it reads and puts back).
func (s *Server) objectOf(r *http.Request) string {
	s.callsMu.Lock()
	on := s.tracing
	s.callsMu.Unlock()
	if !on {
		return ""
	}
	params := url.Values{}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if err := r.ParseForm(); err == nil {
			params = r.Form
		}
	} else {
		for k, v := range r.URL.Query() {
			params[k] = v
		}
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
			_ = r.Body.Close()
			r.Body = io.NopCloser(bytes.NewReader(body))
			if err == nil && len(body) > 0 {
				sum := sha256.Sum256(body)
				params.Set("body-sha256", hex.EncodeToString(sum[:8]))
			}
		}
	}
	kept := url.Values{}
	for k, v := range params {
		if !volatileParams[strings.ToLower(k)] {
			kept[k] = v
		}
	}
	return r.Method + " " + r.URL.Path + "?" + kept.Encode()
}
