package oci

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// ociWrite serves an OCI write with core.Write: the body read by decode
// (jsonBody; nil: none), do run under mu at the emulator's time, its errors
// answered as OCI's {"code", "message"} (writeAPIErr).
func ociWrite[Req any](e *Emulator, decode func(*http.Request, *Req) error, do func(r *http.Request, req *Req, now time.Time) (core.Reply, error)) http.HandlerFunc {
	return core.Write[Req, time.Time]{
		Decode: decode,
		Lock:   func() time.Time { e.mu.Lock(); return e.opts.Clock() },
		Unlock: e.mu.Unlock,
		Do:     do,
		Fail:   writeAPIErr,
	}.ServeHTTP
}

// jsonBody reads a JSON body into req (readBody).
func jsonBody[Req any](r *http.Request, req *Req) error { return readBody(r, req) }

// revised is an object whose etag is a revision that each change bumps.
type revised interface {
	etag() string
	bump()
}

// ifMatch makes apply an update of the object {id} of st (entity, in a
// 412's message) under the request's If-Match: found, and its etag
// matched, first; then its revision goes up and the answer is its view
// with the new etag.
func ifMatch[T revised, Req any](st *core.Store[T], entity string, view func(T) any, apply func(o T, req *Req)) func(*http.Request, *Req, time.Time) (core.Reply, error) {
	return func(r *http.Request, req *Req, _ time.Time) (core.Reply, error) {
		id := r.PathValue("id")
		o, err := find(st, id)
		if err != nil {
			return core.Reply{}, err
		}
		if err := etagMismatch(r, entity, id, o.etag()); err != nil {
			return core.Reply{}, err
		}
		apply(o, req)
		o.bump()
		return tagged(view(o), o.etag()), nil
	}
}

// replaceIf sets *dst to *v when an update gives v: OCI's updates replace
// each attribute given and keep the others.
func replaceIf[T any](dst, v *T) {
	if v != nil {
		*dst = *v
	}
}

// readBody reads a JSON body into v; one that is not JSON is 400
// CannotParseRequest.
func readBody(r *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v); err != nil {
		return &apiErr{http.StatusBadRequest, "CannotParseRequest", "The request body is not valid JSON: " + err.Error()}
	}
	return nil
}

// errNotFound is OCI's answer for an object that does not exist or that the
// caller may not see (writeNotFound).
var errNotFound = &apiErr{http.StatusNotFound, "NotAuthorizedOrNotFound", "Authorization failed or requested resource not found."}

// find is st's object id, or errNotFound. Call with mu held.
func find[T any](st *core.Store[T], id string) (T, error) {
	o, ok := st.Get(id)
	if !ok {
		return o, errNotFound
	}
	return o, nil
}

// viewCopy is a copy of an object to encode outside the lock (its slices
// and maps are replaced, never changed in place).
func viewCopy[T any](o *T) any { c := *o; return &c }

// tagged is the reply 200 with body and the object's etag.
func tagged(body any, etag string) core.Reply {
	return core.Reply{Status: http.StatusOK, Body: body, Header: map[string]string{"etag": etag}}
}

// requireNamed refuses a create without compartmentId or displayName, as
// both load balancing APIs do (400 MissingParameter).
func requireNamed(compartment, displayName string) error {
	switch {
	case compartment == "":
		return &apiErr{http.StatusBadRequest, "MissingParameter", "compartmentId is required."}
	case displayName == "":
		return &apiErr{http.StatusBadRequest, "MissingParameter", "displayName is required."}
	}
	return nil
}

// checkSubnets checks that the subnets exist. Call with mu held.
func (e *Emulator) checkSubnets(ids ...string) error {
	for _, id := range ids {
		if _, ok := e.subnets.Get(id); !ok {
			return &apiErr{http.StatusBadRequest, "RelatedResourceNotAuthorizedOrNotFound", fmt.Sprintf("Subnet %s not found.", id)}
		}
	}
	return nil
}

// checkNamed names each child of *m by its key (the APIs key a load
// balancer's children by name; nil becomes empty) and checks it against
// the others.
func checkNamed[T any](m *map[string]*T, name func(*T) *string, check func(c *T, others map[string]*T) error) error {
	if *m == nil {
		*m = map[string]*T{}
	}
	for k, c := range *m {
		*name(c) = k
		if err := check(c, without(*m, k)); err != nil {
			return err
		}
	}
	return nil
}
