package core

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ServeTLS serves h over HTTPS on addr, which must be a loopback address
// ("127.0.0.1:0"), with a certificate for its IP from ca, in the background
// until the returned server is closed; url is "https://IP:PORT". An
// endpoint a client reaches only over TLS verified by a CA it is given (the
// OCI emulator's workload identity endpoint) listens so.
func ServeTLS(addr string, ca *CA, h http.Handler) (srv *http.Server, url string, err error) {
	return serveTLS(addr, ca, h, false)
}

// ServeTLSHTTP1 is ServeTLS without HTTP/2: a small answer then reaches the
// client as one HTTP/1.1 message, its body with its headers, for a client
// that reads the body only after it has cancelled the request's context (as
// oci-go-sdk's token exchange does: over HTTP/2 the body's DATA frame often
// loses that race, and the client fails with "context canceled").
func ServeTLSHTTP1(addr string, ca *CA, h http.Handler) (srv *http.Server, url string, err error) {
	return serveTLS(addr, ca, h, true)
}

func serveTLS(addr string, ca *CA, h http.Handler, http1 bool) (srv *http.Server, url string, err error) {
	if err := LoopbackOnly(addr); err != nil {
		return nil, "", err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", err
	}
	leaf, err := ca.leaf(host)
	if err != nil {
		return nil, "", err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen: %w", err)
	}
	srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*leaf}}}
	if http1 {
		// A non-nil, empty map turns HTTP/2 off (net/http's Server.TLSNextProto).
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	return srv, "https://" + ln.Addr().String(), nil
}
