package openstack

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// change is the part of a write that is a service's own: it runs under the
// emulator's lock at now and answers a reply, or an error and changes
// nothing.
type change[Req any] func(r *http.Request, req *Req, now time.Time) (core.Reply, *apiErr)

// writeOp serves a write of an OpenStack service with core.Write: decode
// (nil: no body) and do, under the emulator's lock (which settles the load
// balancers first), their errors answered by fail in the service's format.
func writeOp[Req any](e *Emulator, decode func(*http.Request, *Req) *apiErr, do change[Req], fail func(http.ResponseWriter, *apiErr)) http.HandlerFunc {
	wr := core.Write[Req, time.Time]{
		Lock: e.lock, Unlock: e.mu.Unlock,
		Do: func(r *http.Request, req *Req, now time.Time) (core.Reply, error) {
			rep, aerr := do(r, req, now)
			return rep, errOf(aerr)
		},
		Fail: func(w http.ResponseWriter, err error) { fail(w, asAPIErr(err)) },
	}
	if decode != nil {
		wr.Decode = func(r *http.Request, req *Req) error { return errOf(decode(r, req)) }
	}
	return wr.ServeHTTP
}

// errOf is a as an error, nil for none (not a nil *apiErr in an interface).
func errOf(a *apiErr) error {
	if a == nil {
		return nil
	}
	return a
}

// asAPIErr is the *apiErr of err; any other error is a 500.
func asAPIErr(err error) *apiErr {
	var a *apiErr
	if errors.As(err, &a) {
		return a
	}
	return errf(http.StatusInternalServerError, "", "%s", err.Error())
}

// keyed is the body {key: v} in which Neutron and Octavia wrap one object.
func keyed(key string, v any) map[string]any { return map[string]any{key: v} }

// ---- Octavia ----

// octaviaWrite serves an Octavia write whose body is {key: Req} (key "":
// none, a delete), its errors as Octavia's faults.
func octaviaWrite[Req any](e *Emulator, key string, do change[Req]) http.HandlerFunc {
	var decode func(*http.Request, *Req) *apiErr
	if key != "" {
		decode = octaviaBody[Req](key)
	}
	return writeOp(e, decode, do, octaviaErr)
}

// octaviaBody decodes {"<key>": ...} into req: Octavia (wsme) refuses a body
// that is not JSON, lacks the key or does not fit the type with a 400.
func octaviaBody[Req any](key string) func(*http.Request, *Req) *apiErr {
	return func(r *http.Request, req *Req) *apiErr {
		var b map[string]json.RawMessage
		if err := decodeJSON(r, &b); err != nil {
			return errf(400, "", "%s", "Invalid input: "+err.Error())
		}
		raw, ok := b[key]
		if !ok {
			return errf(400, "", "Invalid input: the body must be an object with the key %q.", key)
		}
		if err := json.Unmarshal(raw, req); err != nil {
			return errf(400, "", "%s", "Invalid input for "+key+": "+err.Error())
		}
		return nil
	}
}

// octaviaNotFound is Octavia's 404 for the object noun id.
func octaviaNotFound(noun, id string) *apiErr { return errf(404, "", "%s %s not found.", noun, id) }

// locker is the emulator's lock as a sync.Locker for core's helpers: Lock
// settles the load balancers' due transitions first, as every request does.
type locker struct{ e *Emulator }

// Lock takes the lock (Emulator.lock).
func (l locker) Lock() { l.e.lock() }

// Unlock releases it.
func (l locker) Unlock() { l.e.mu.Unlock() }
