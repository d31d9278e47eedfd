// Package annotation holds one typed table of Service annotations per cloud.
//
// Every annotation is a constant of type Name whose doc comment carries a
// description, a "Type:" line and a "Default:" line; hack/gen-annotation-docs turns
// those comments into docs/reference/*-annotations.md. Getters return ErrNotSet when
// the annotation is absent and an *InvalidError naming the annotation and the accepted
// values when it is malformed, so callers can raise a Warning Event and change nothing.
package annotation

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Name is the name of a Service annotation.
type Name string

// Recorded are the annotations the CCM writes on Services for its own records
// (their doc says "written by the CCM"): a change of them is not a change of
// what the Service asks, and starts no sync. Each cloud's table adds its own
// (record, in an init of its file); a test checks that none is missing.
var Recorded []Name

// record adds names to Recorded.
func record(names ...Name) { Recorded = append(Recorded, names...) }

// ErrNotSet is returned by the getters when the annotation is absent.
var ErrNotSet = errors.New("annotation not set")

// InvalidError says that an annotation's value cannot be used.
type InvalidError struct {
	Name     Name
	Value    string
	Accepted string
	Err      error
}

func (e *InvalidError) Error() string {
	msg := fmt.Sprintf("annotation %s has invalid value %q: accepted values are %s", e.Name, e.Value, e.Accepted)
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg
}

func (e *InvalidError) Unwrap() error { return e.Err }

func (n Name) lookup(svc *v1.Service) (string, bool) {
	if svc == nil || svc.Annotations == nil {
		return "", false
	}
	v, ok := svc.Annotations[string(n)]
	return v, ok
}

// String returns the raw value. An empty value counts as set.
func (n Name) String(svc *v1.Service) (string, error) {
	v, ok := n.lookup(svc)
	if !ok {
		return "", ErrNotSet
	}
	return v, nil
}

// NonEmptyString returns the value, which must not be empty or only blanks.
func (n Name) NonEmptyString(svc *v1.Service) (string, error) {
	v, ok := n.lookup(svc)
	if !ok {
		return "", ErrNotSet
	}
	if strings.TrimSpace(v) == "" {
		return "", &InvalidError{Name: n, Value: v, Accepted: "a non-empty string"}
	}
	return strings.TrimSpace(v), nil
}

// Bool parses "true" or "false" (case-insensitive).
func (n Name) Bool(svc *v1.Service) (bool, error) {
	v, ok := n.lookup(svc)
	if !ok {
		return false, ErrNotSet
	}
	return ParseBool(n, v)
}

// ParseBool parses a boolean annotation value.
func ParseBool(n Name, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, &InvalidError{Name: n, Value: v, Accepted: `"true" or "false"`}
}

// Duration parses a positive Go duration such as "30s" or "2m".
func (n Name) Duration(svc *v1.Service, min, max time.Duration) (time.Duration, error) {
	v, ok := n.lookup(svc)
	if !ok {
		return 0, ErrNotSet
	}
	return ParseDuration(n, v, min, max)
}

// ParseDuration parses a duration within [min, max].
func ParseDuration(n Name, v string, min, max time.Duration) (time.Duration, error) {
	accepted := fmt.Sprintf("durations from %s to %s such as \"30s\" or \"2m\"", min, max)
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return 0, &InvalidError{Name: n, Value: v, Accepted: accepted}
	}
	if d < min || d > max {
		return 0, &InvalidError{Name: n, Value: v, Accepted: accepted}
	}
	return d, nil
}

// Int parses a decimal integer within [min, max].
func (n Name) Int(svc *v1.Service, min, max int) (int, error) {
	v, ok := n.lookup(svc)
	if !ok {
		return 0, ErrNotSet
	}
	return ParseInt(n, v, min, max)
}

// ParseInt parses an integer within [min, max].
func ParseInt(n Name, v string, min, max int) (int, error) {
	i, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || i < min || i > max {
		return 0, &InvalidError{Name: n, Value: v, Accepted: fmt.Sprintf("whole numbers from %d to %d", min, max)}
	}
	return i, nil
}

// IP parses a single IPv4 or IPv6 address.
func (n Name) IP(svc *v1.Service) (netip.Addr, error) {
	v, ok := n.lookup(svc)
	if !ok {
		return netip.Addr{}, ErrNotSet
	}
	return ParseIP(n, v)
}

// ParseIP parses an IP address annotation value.
func ParseIP(n Name, v string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(v))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, &InvalidError{Name: n, Value: v, Accepted: "one IPv4 or IPv6 address such as 192.0.2.10"}
	}
	return a.Unmap(), nil
}

// IsSet reports whether the annotation is present on the Service.
func (n Name) IsSet(svc *v1.Service) bool {
	_, ok := n.lookup(svc)
	return ok
}
