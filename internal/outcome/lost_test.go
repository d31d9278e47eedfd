package outcome

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAWriteMayHaveActedUnlessTheCloudSaidWhyNot(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		may  bool
	}{
		{"no error", nil, false},
		{"a timeout", fmt.Errorf("creating: %w", context.DeadlineExceeded), true},
		{"a 500 of the API", errors.New("internal server error"), true},
		{"a 504 of a gateway", statusErr(504), true},
		{"refused (400)", statusErr(400), false},
		{"busy (409)", statusErr(409), false},
		{"throttled (429)", statusErr(429), false},
		{"credentials refused (401)", statusErr(401), false},
		{"not found (404)", statusErr(404), false},
		{"the CCM's own refusal", Refuse("Invalid", "no"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.may, MayHaveActed(tc.err))
		})
	}
}

// statusErr is an error classified by status as a gateway does.
func statusErr(status int) error {
	return fmt.Errorf("creating: %w", Classify(KindByStatus(status), fmt.Errorf("status %d", status)))
}
