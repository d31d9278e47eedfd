package openstack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
)

// What the services' errors say, read once here: translated into the
// provider's kinds (internal/outcome) with the service's own words, and the
// statuses the callers tell apart (gone, refused, a stale revision).

// octaviaErr is an error of Octavia (or of another service answering as REST
// clouds do) translated once: redacted, and classified by its HTTP status
// (outcome.KindByStatus; Octavia's 409 is a load balancer that is PENDING,
// busy). nil stays nil.
func octaviaErr(err error) error {
	if err == nil {
		return nil
	}
	return outcome.Classify(outcome.KindByStatus(statusOf(err)), answered("Octavia", err))
}

// neutronErr is a Neutron error translated once. Neutron's 409 is a conflict
// that waiting does not solve (OverQuota, IpAddressAlreadyAllocated,
// FloatingIPPortAlreadyAssociated: api-ref of the Networking API, "Floating
// IPs"), so it is a refusal, not a busy object.
func neutronErr(err error) error {
	if err == nil {
		return nil
	}
	kind := outcome.KindByStatus(statusOf(err))
	if errors.Is(kind, outcome.ErrBusy) {
		kind = outcome.ErrRefused
	}
	return outcome.Classify(kind, answered("Neutron", err))
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
		msg = " " + http.StatusText(code.Actual) + " to " + code.Method + " " + redactURL(code.URL)
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

// overQuota says whether err is Neutron's OverQuota (neutron_lib's OverQuota,
// a 409 whose NeutronError type is "OverQuota"), with its message.
func overQuota(err error) (string, bool) {
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
