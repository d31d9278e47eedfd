package osapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
)

// What the services' errors say, read once here: every error a
// method returns is translated into the provider's kinds (internal/outcome)
// with the service's own words, by the service it called (call, do), so that
// the rest of the package wraps errors with its context and asks errors.Is.
// The few answers a caller tells apart that outcome has no kind for are
// asked of the predicates below (Forbidden, StaleRevision, MemberTaken,
// CertificateUnreadable, OverQuota): no other file reads an HTTP status.

// translate is err of a call to s, translated once (nil stays nil).
func (s Service) translate(err error) error {
	switch s {
	case Nova:
		return novaErr(err)
	case Neutron:
		return neutronErr(err)
	case Octavia:
		return octaviaErr(err)
	default:
		return barbicanErr(err)
	}
}

// octaviaErr is an error of Octavia translated once: redacted, and
// classified by its HTTP status (outcome.KindByStatus; Octavia's 409 is a
// load balancer that is PENDING, busy). nil stays nil.
func octaviaErr(err error) error { return serviceErr("Octavia", err, false) }

// neutronErr is a Neutron error translated once. Neutron's 409 is a conflict
// that waiting does not solve (OverQuota, IpAddressAlreadyAllocated,
// FloatingIPPortAlreadyAssociated: api-ref of the Networking API, "Floating
// IPs"), so it is a refusal, not a busy object.
func neutronErr(err error) error { return serviceErr("Neutron", err, true) }

// novaErr is an error of Nova translated once (the CCM only reads from it:
// as REST clouds mean their statuses). A 404 is only ever a lookup's answer
// (the session's own errors are Keystone's, keystoneErr): getServer's says
// the server is gone.
func novaErr(err error) error { return serviceErr("Nova", err, false) }

// barbicanErr is an error of Barbican translated once. Its 409 is a
// conflict (a container or secret as it already is), not a busy object.
func barbicanErr(err error) error { return serviceErr("Barbican", err, true) }

// keystoneErr is Keystone's answer to an authentication, translated once: a
// 401 is the credentials refused (outcome.ErrAuth); a 404 (an auth-url of
// no Keystone) is a refusal, never outcome.ErrNotFound, which would say that
// the object asked for is gone.
func keystoneErr(err error) error {
	if err == nil || translated(err) {
		return err
	}
	kind := outcome.KindByStatus(statusOf(err))
	if errors.Is(kind, outcome.ErrNotFound) || errors.Is(kind, outcome.ErrBusy) {
		kind = outcome.ErrRefused
	}
	return outcome.Classify(kind, answered("Keystone", err))
}

// serviceErr is err of service translated once: told in its words
// (answered) and classified by its status; conflict: its 409 is a refusal,
// not a busy object. An error already translated passes as it is: its
// message is not told twice.
func serviceErr(service string, err error, conflict bool) error {
	if err == nil || translated(err) {
		return err
	}
	kind := outcome.KindByStatus(statusOf(err))
	if conflict && errors.Is(kind, outcome.ErrBusy) {
		kind = outcome.ErrRefused
	}
	return outcome.Classify(kind, answered(service, err))
}

// translated says whether err was translated already (by the session, or by
// a gateway method another one calls).
func translated(err error) bool {
	var told *apiError
	var kind *outcome.CloudError
	return errors.As(err, &told) || errors.As(err, &kind)
}

// answered is an HTTP error of an OpenStack service told as a person reads
// it: "Neutron answered 409 (OverQuota): Quota exceeded for resources:
// ['floatingip']." from the body's own message (Neutron's NeutronError,
// Octavia's faultstring, Nova's and Keystone's message), instead of
// gophercloud's "Expected HTTP response code [...] when accessing [...]". The
// original stays in the chain. Any other error is only redacted.
func answered(service string, err error) error {
	var code gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &code) {
		return redact(err)
	}
	var body struct {
		NeutronError *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"NeutronError"`
		Faultstring string `json:"faultstring"`
		Message     string `json:"message"`
		Error       *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := ""
	if json.Unmarshal(code.Body, &body) == nil {
		switch {
		case body.NeutronError != nil:
			msg = ": " + body.NeutronError.Message
			if body.NeutronError.Type != "" {
				msg = " (" + body.NeutronError.Type + ")" + msg
			}
		case body.Faultstring != "":
			msg = ": " + body.Faultstring
		case body.Message != "":
			msg = ": " + body.Message
		case body.Error != nil && body.Error.Message != "":
			msg = ": " + body.Error.Message
		}
	}
	if msg == "" {
		// No message of its own (an HTML page of a proxy): the status and the
		// request, without its query.
		msg = " " + http.StatusText(code.Actual) + " to " + code.Method + " " + RedactURL(code.URL)
	}
	return &apiError{msg: fmt.Sprintf("%s answered %d%s", service, code.Actual, msg), err: redact(err)}
}

// apiError is an OpenStack service's error with a readable message.
type apiError struct {
	msg string
	err error
}

func (e *apiError) Error() string { return e.msg }

func (e *apiError) Unwrap() error { return e.err }

// statusOf is the HTTP status of gophercloud's error, 0 if it has none.
func statusOf(err error) int {
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) {
		return code.Actual
	}
	return 0
}

// alreadyGone is a delete's error, nil when the object was already gone.
func alreadyGone(err error) error {
	if hasStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// hasStatus says whether err is the service's answer with that HTTP status.
func hasStatus(err error, status int) bool { return gophercloud.ResponseCodeIs(err, status) }

// MemberTaken says whether err is Octavia's DuplicateMemberEntry: a 409
// "Another member on this pool is already using ip …" (octavia's
// common/exceptions.py), not the 409 of a load balancer that is busy.
func MemberTaken(err error) bool { return answerSays(err, http.StatusConflict, "is already using") }

// answerSays says whether err is the service's answer with that status whose
// body (or message) says says.
func answerSays(err error, status int, says string) bool {
	var code gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &code) || code.Actual != status {
		return false
	}
	return bytes.Contains(code.Body, []byte(says)) || strings.Contains(err.Error(), says)
}

// Forbidden says whether err is a service's 403: the credentials are good,
// but their user may not do this (a role missing in the project, an object
// of another project). outcome has it as a refusal among others.
func Forbidden(err error) bool { return hasStatus(err, http.StatusForbidden) }

// StaleRevision says whether err is Neutron's 412 to a write made If-Match a
// revision: the object changed since it was read.
func StaleRevision(err error) bool { return hasStatus(err, http.StatusPreconditionFailed) }

// CertificateUnreadable says whether err is Octavia's 400 "Could not
// retrieve certificate": Octavia could not read a listener's certificate in
// Barbican (tlsRefusal says why).
func CertificateUnreadable(err error) bool {
	return answerSays(err, http.StatusBadRequest, "Could not retrieve certificate")
}

// OverQuota says whether err is Neutron's OverQuota (neutron_lib's OverQuota,
// a 409 whose NeutronError type is "OverQuota"), with its message.
func OverQuota(err error) (string, bool) {
	var code gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &code) || code.Actual != http.StatusConflict || !bytes.Contains(code.Body, []byte(`"OverQuota"`)) {
		return "", false
	}
	var body struct {
		NeutronError struct {
			Message string `json:"message"`
		} `json:"NeutronError"`
	}
	if jsonErr := json.Unmarshal(code.Body, &body); jsonErr != nil || body.NeutronError.Message == "" {
		return "Neutron answered OverQuota", true
	}
	return body.NeutronError.Message, true
}
