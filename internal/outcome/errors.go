// Package outcome is the engine's vocabulary of what a cloud's answer means
// (ErrNotFound, ErrBusy, …: a cloud's gateway translates its SDK's errors into
// them once) and of why a Service cannot be served until a person acts
// (Problem, with its Event reason). lbcycle, the service controller and every
// provider speak it; it imports none of them.
package outcome

import (
	"errors"
	"fmt"
)

// What a cloud's answer means, whatever the cloud: a cloud's gateway (the one
// place its SDK's errors pass through) translates each error once into one of
// these, and everything above it asks errors.Is. The original error stays in
// the chain for its message and for errors.As.
var (
	// ErrNotFound: the object does not exist (HTTP 404, CloudStack 431 on a
	// lookup by id). Never, by itself, proof that a Node's machine is gone:
	// only a direct lookup by id may say that.
	ErrNotFound = errors.New("not found")
	// ErrBusy: the object is being changed by the cloud and refuses another
	// change until it is done (Octavia's 409 on a PENDING load balancer). The
	// work is retried soon; it is progress, not failure.
	ErrBusy = errors.New("busy")
	// ErrAuth: the credentials were refused (401). Retried; a person must fix
	// the credentials if it lasts.
	ErrAuth = errors.New("credentials refused")
	// ErrThrottled: the cloud asked to slow down (429). Retried later.
	ErrThrottled = errors.New("throttled")
	// ErrRefused: the cloud refused the request for what it asks (a bad value,
	// a quota met, something it names that does not exist, not allowed): the
	// same request fails again until a person acts.
	ErrRefused = errors.New("refused")
)

// CloudError is a cloud's error with its meaning (one of the Err* kinds).
type CloudError struct {
	Kind error
	Err  error
}

// Classify wraps err with its kind; a nil err or kind returns err unchanged.
func Classify(kind, err error) error {
	if err == nil || kind == nil {
		return err
	}
	return &CloudError{Kind: kind, Err: err}
}

func (e *CloudError) Error() string { return e.Err.Error() }

// Unwrap gives both the kind (for errors.Is) and the cloud's error.
func (e *CloudError) Unwrap() []error { return []error{e.Kind, e.Err} }

// KindByStatus is the kind of an HTTP status of a REST cloud's answer, as most
// clouds mean it: 404 not found, 409 busy, 401 auth, 429 throttled, any other
// 4xx refused; 408 and 5xx have no kind (transient: retried). A cloud whose
// codes mean otherwise (Neutron's 409 is a conflict such as a quota met, not
// a busy object) translates them itself.
func KindByStatus(status int) error {
	switch {
	case status == 404:
		return ErrNotFound
	case status == 409:
		return ErrBusy
	case status == 401:
		return ErrAuth
	case status == 429:
		return ErrThrottled
	case status == 408:
		return nil
	case status >= 400 && status < 500:
		return ErrRefused
	}
	return nil
}

// RefusedProblem makes a Problem with reason of an error the cloud refused
// (ErrRefused); any other error is returned as it is.
func RefusedProblem(reason string, err error) error {
	if err == nil || !errors.Is(err, ErrRefused) {
		return err
	}
	if _, ok := AsProblem(err); ok {
		return err
	}
	return &Problem{Reason: reason, Message: capitalise(err.Error()), Err: err}
}

func capitalise(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return fmt.Sprintf("%c%s", s[0]-'a'+'A', s[1:])
}
