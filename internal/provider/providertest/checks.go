package providertest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
)

// ChecksAgree holds a cloud's own reading of a Service to its annotation
// checks (what the admission policy is made of). In every context the
// table's scopes name (the annotations that put a Service in or out of
// each), a check without a scope is read: valid samples without a
// complaint about the annotation, invalid ones refused naming it and
// saying what is accepted as the check says it (the policy's message is
// the Event's). A scoped check is read so in its scope, and not at all
// out of it (the policy is never stricter than the cloud). base is a
// Service the cloud serves as it is; parse reads one, every problem in its
// error.
func ChecksAgree(t *testing.T, checks annotation.Checks, base func() *v1.Service, parse func(*v1.Service) error) {
	t.Helper()
	contexts := contextsOf(checks)
	for _, n := range checks.Names() {
		c := checks[n]
		switch {
		case !c.AtApply():
		case c.Scope.CEL == "":
			for _, ctx := range contexts {
				readAsChecked(t, n, c, func(v string) error { return parse(with(base(), ctx, n, v)) })
			}
		default:
			readAsChecked(t, n, c, func(v string) error { return parse(with(base(), c.Scope.Set, n, v)) })
			for _, v := range c.Invalid {
				if err := parse(with(base(), c.Scope.Out, n, v)); err != nil && strings.Contains(err.Error(), string(n)) {
					t.Errorf("%s=%s out of its check's scope (%v) is refused by the cloud: %v", n, strconv.Quote(v), c.Scope.Out, err)
				}
			}
		}
	}
}

// readAsChecked: parse reads n's values as its check says.
func readAsChecked(t *testing.T, n annotation.Name, c annotation.Check, parse func(v string) error) {
	t.Helper()
	invalid := "annotation " + string(n) + " has invalid value"
	for _, v := range c.Valid {
		if err := parse(v); err != nil && strings.Contains(err.Error(), invalid) {
			t.Errorf("%s=%s is valid by its check, and the cloud refuses it: %v", n, strconv.Quote(v), err)
		}
	}
	for _, v := range c.Invalid {
		err := parse(v)
		if err == nil || !strings.Contains(err.Error(), invalid) || !strings.Contains(err.Error(), "accepted values are "+c.Accepted) {
			t.Errorf("%s=%s is invalid by its check (accepted: %s), and the cloud says: %v", n, strconv.Quote(v), c.Accepted, err)
		}
	}
	for _, v := range c.EventOnly {
		if err := parse(v); err == nil || !strings.Contains(err.Error(), string(n)) {
			t.Errorf("%s=%s is left to the Event by its check, and the cloud says: %v", n, strconv.Quote(v), err)
		}
	}
}

// contextsOf are the annotations every scope of checks names, each once
// (and none).
func contextsOf(checks annotation.Checks) []map[string]string {
	seen := map[string]map[string]string{"": {}}
	for _, c := range checks {
		for _, m := range []map[string]string{c.Scope.Set, c.Scope.Out} {
			if m != nil {
				seen[fmt.Sprint(m)] = m
			}
		}
	}
	return slices.Collect(maps.Values(seen))
}

// with is svc with the annotations of ctx and n=v.
func with(svc *v1.Service, ctx map[string]string, n annotation.Name, v string) *v1.Service {
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	maps.Copy(svc.Annotations, ctx)
	svc.Annotations[string(n)] = v
	return svc
}
