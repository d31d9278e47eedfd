package oci

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// sideEndpoint is a service of the emulator on a TLS listener of its own
// beside the API (OKE's workload identity endpoint, an identity domain).
type sideEndpoint struct {
	mu  sync.Mutex
	srv *http.Server
	url string
}

// serve starts it on another port of apiAddr's IP: path goes through the
// emulator's core with via set in the context (counted as calls of its
// service, and subject to the faults injected for it); any other path is
// answered by notFound. An error names the endpoint (what).
func (s *sideEndpoint) serve(e *Emulator, what, apiAddr, path string, http1 bool, via any, notFound http.HandlerFunc) error {
	host, _, err := net.SplitHostPort(apiAddr)
	if err != nil {
		return fmt.Errorf("oci emulator: %s: %w", what, err)
	}
	serveTLS := core.ServeTLS
	if http1 {
		serveTLS = core.ServeTLSHTTP1
	}
	srv, url, err := serveTLS(net.JoinHostPort(host, "0"), e.ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			notFound(w, r)
			return
		}
		e.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), via, true)))
	}))
	if err != nil {
		return fmt.Errorf("oci emulator: %s: %w", what, err)
	}
	s.mu.Lock()
	s.srv, s.url = srv, url
	s.mu.Unlock()
	return nil
}

func (s *sideEndpoint) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		_ = s.srv.Close()
		s.srv = nil
	}
}

// URL is its base URL, "https://127.0.0.1:PORT", once started; "" otherwise.
func (s *sideEndpoint) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}
