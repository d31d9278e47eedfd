package oci

import (
	"context"
	"net/http"
	"slices"
	"sync"
)

// Principals: every signed request is someone's, as OCI's audit log names
// them: a user's API key ("user:<OCID>"), the CCM host's instance principal
// ("instance:<OCID>"), an identity domain's token ("resource:…" or
// "user:…"), or a Kubernetes ServiceAccount's OKE workload identity
// ("workload:<namespace>/<name>", WorkloadPrincipal). The emulator keeps
// who made each request (Requests) and who created each load balancer and
// network load balancer (CreatedBy), so that a test can tell which
// principal did what. A principal's rights are its user's (AddUser's
// services) or, for a session, every service.

// maxRequests bounds the requests kept: the oldest are dropped.
const maxRequests = 100000

// Request is one signed request: its service (as Calls names it), method,
// path and principal.
type Request struct {
	Service, Method, Path, Principal string
}

type principals struct {
	mu       sync.Mutex
	requests []Request
	creators map[string]string
}

type principalKey struct{}

// WorkloadPrincipal is the principal of ServiceAccount namespace/name's
// OKE workload identity.
func WorkloadPrincipal(namespace, name string) string { return "workload:" + namespace + "/" + name }

// signedBy is r, known to be signed by principal, recorded.
func (e *Emulator) signedBy(r *http.Request, principal string) *http.Request {
	svc, _ := classify(r)
	p := &e.principals
	p.mu.Lock()
	if len(p.requests) >= maxRequests {
		p.requests = slices.Delete(p.requests, 0, len(p.requests)/2)
	}
	p.requests = append(p.requests, Request{Service: svc, Method: r.Method, Path: r.URL.Path, Principal: principal})
	p.mu.Unlock()
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, principal))
}

// principalOf is the principal who signed r ("" for an unsigned request).
func principalOf(r *http.Request) string {
	p, _ := r.Context().Value(principalKey{}).(string)
	return p
}

// made records that by created id.
func (p *principals) made(id, by string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.creators == nil {
		p.creators = map[string]string{}
	}
	p.creators[id] = by
}

// Requests are the signed requests since the start or ResetRequests, in
// order (the latest maxRequests at most).
func (e *Emulator) Requests() []Request {
	e.principals.mu.Lock()
	defer e.principals.mu.Unlock()
	return slices.Clone(e.principals.requests)
}

// ResetRequests forgets the requests kept.
func (e *Emulator) ResetRequests() {
	e.principals.mu.Lock()
	defer e.principals.mu.Unlock()
	e.principals.requests = nil
}

// CreatedBy is the principal who created the load balancer or network
// load balancer id; "" for one the emulator does not know.
func (e *Emulator) CreatedBy(id string) string {
	e.principals.mu.Lock()
	defer e.principals.mu.Unlock()
	return e.principals.creators[id]
}
