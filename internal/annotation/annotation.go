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

// IsSet reports whether the annotation is present on the Service.
func (n Name) IsSet(svc *v1.Service) bool {
	_, ok := n.lookup(svc)
	return ok
}
