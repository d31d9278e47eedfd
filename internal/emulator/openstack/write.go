package openstack

import (
	"encoding/json"
	"errors"
	"fmt"
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

// ---- Neutron ----

// neutronWrite serves a Neutron write: decode reads the body (nil: none),
// errors are NeutronError bodies.
func neutronWrite[Req any](e *Emulator, decode func(*http.Request, *Req) *apiErr, do change[Req]) http.HandlerFunc {
	return writeOp(e, decode, do, neutronErr)
}

// neutronBody decodes the body into req as neutron-server reads it: a body
// that is not JSON is a 400 HTTPBadRequest.
func neutronBody[Req any](r *http.Request, req *Req) *apiErr {
	if err := decodeJSON(r, req); err != nil {
		return badRequest("Invalid input: " + err.Error())
	}
	return nil
}

// badRequest is Neutron's 400 HTTPBadRequest.
func badRequest(msg string) *apiErr { return &apiErr{code: 400, typ: "HTTPBadRequest", msg: msg} }

// badRequestf is badRequest of a formatted message.
func badRequestf(format string, args ...any) *apiErr { return badRequest(fmt.Sprintf(format, args...)) }

// missing makes Neutron's 404 of a resource: its error type and its message
// format of the id (they differ by resource, as neutron-server words them).
func missing(typ, format string) func(id string) *apiErr {
	return func(id string) *apiErr { return errf(http.StatusNotFound, typ, format, id) }
}

// The 404s of Neutron's writes (a GET words its own: routeNeutron).
var (
	networkMissing  = missing("NetworkNotFound", "Network %s could not be found.")
	subnetMissing   = missing("SubnetNotFound", "Subnet %s could not be found.")
	portMissing     = missing("PortNotFound", "Port %s could not be found.")
	fipMissing      = missing("FloatingIPNotFound", "Floating IP %s could not be found.")
	routerMissing   = missing("RouterNotFound", "Router %s could not be found")
	secGroupMissing = missing("SecurityGroupNotFound", "Security group %s does not exist")
	sgRuleMissing   = missing("SecurityGroupRuleNotFound", "Security group rule %s does not exist")
)

// onObject makes do a change of the object {id} of st, found first (else
// the 404 notFound makes): the step every update and delete of a Neutron
// resource begins with.
func onObject[T, Req any](st *core.Store[T], notFound func(string) *apiErr, do func(o T, r *http.Request, req *Req, now time.Time) (core.Reply, *apiErr)) change[Req] {
	return func(r *http.Request, req *Req, now time.Time) (core.Reply, *apiErr) {
		o, aerr := lookup(st, r.PathValue("id"), notFound)
		if aerr != nil {
			return core.Reply{}, aerr
		}
		return do(o, r, req, now)
	}
}

// lookup is st's object id, or the 404 notFound makes of id.
func lookup[T any](st *core.Store[T], id string, notFound func(string) *apiErr) (T, *apiErr) {
	o, ok := st.Get(id)
	if !ok {
		return o, notFound(id)
	}
	return o, nil
}
