package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// failing is an InstancesV2 whose every lookup fails with err (nil: answers).
type failing struct {
	cloudprovider.InstancesV2
	err error
}

func (f *failing) InstanceExists(context.Context, *v1.Node) (bool, error)   { return f.err == nil, f.err }
func (f *failing) InstanceShutdown(context.Context, *v1.Node) (bool, error) { return false, f.err }

// Every lookup failing alike, for 40 NotReady Nodes over an hour of the
// lifecycle controller's 5-s passes: nothing deleted or tainted, one Warning
// (naming the likely cause), not one per Node per pass; a new cause is a
// Warning of its own; answers again end it.
func TestLookupsThatFailForEveryNodeAreOneWarningNamingTheCause(t *testing.T) {
	cases := map[string]struct {
		err   error
		cause string
	}{
		"404 of a missing policy": {outcome.Classify(outcome.ErrNotFound, errors.New("404 NotAuthorizedOrNotFound")), "a removed policy"},
		"401":                     {outcome.Classify(outcome.ErrAuth, errors.New("401")), "refuses the credentials"},
		"403":                     {outcome.Classify(outcome.ErrRefused, errors.New("403")), "does not allow reading the machines"},
		"not the API":             {fmt.Errorf("listing: %w", &cloudapi.NotAPIError{Cloud: "oci", Endpoint: "auth.region"}), "check auth.region"},
		"unreachable":             {errors.New("dial tcp 127.0.0.1:9: connection refused"), "fails or cannot be reached"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := record.NewFakeRecorder(1000)
			var b Base
			b.Events.Set(rec)
			cloud := &failing{err: tc.err}
			inst := b.GuardInstances(cloud)
			now := time.Now()
			b.doubt.now = func() time.Time { return now }
			for pass := range 720 { // an hour of 5-s passes, less one
				for i := range 40 {
					node := guardNode(fmt.Sprintf("n%02d", i), nil)
					exists, err := inst.InstanceExists(t.Context(), node)
					require.NoError(t, err)
					require.True(t, exists, "doubt is never a machine gone")
					down, err := inst.InstanceShutdown(t.Context(), node)
					require.NoError(t, err)
					require.False(t, down, "doubt is never a machine shut down")
					if pass%60 == 0 && i == 0 { // the node controller's 5-min status pass
						_ = b.Looked(t.Context(), node, "instance", false, tc.err, "by name")
					}
				}
				now = now.Add(5 * time.Second)
			}
			events := drain(rec)
			require.Len(t, events, 1, "one Warning for the hour, not one per Node: %v", events)
			assert.Contains(t, events[0], "Warning "+ReasonLookupsFailing)
			assert.Contains(t, events[0], tc.cause)
			assert.Contains(t, events[0], "No Node is deleted or tainted")

			now = now.Add(5 * time.Second)
			_, _ = inst.InstanceExists(t.Context(), guardNode("n00", nil))
			assert.Len(t, drain(rec), 1, "a second hour: one reminder")

			cloud.err = nil
			for i := range 40 {
				_, _ = inst.InstanceExists(t.Context(), guardNode(fmt.Sprintf("n%02d", i), nil))
			}
			cloud.err = tc.err
			_, _ = inst.InstanceExists(t.Context(), guardNode("n00", nil))
			assert.Len(t, drain(rec), 1, "failing again after the cloud answered is told again")
		})
	}
}

func drain(rec *record.FakeRecorder) (out []string) {
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestLikelyCauseNamesEveryKind(t *testing.T) {
	seen := map[string]bool{}
	for _, kind := range []error{outcome.ErrNotFound, outcome.ErrAuth, outcome.ErrRefused, outcome.ErrThrottled, context.DeadlineExceeded, errors.New("other")} {
		c := likelyCause(outcome.Classify(kind, errors.New("x")))
		assert.False(t, seen[c], "each kind its own cause: %s", c)
		seen[c] = true
		assert.False(t, strings.HasSuffix(c, "."), c)
	}
}
