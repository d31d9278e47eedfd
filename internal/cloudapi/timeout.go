package cloudapi

import (
	"context"
	"time"
)

// An API may need longer than Config.Timeout for some calls (Octavia's
// create of a load balancer answers in tens of seconds under load: its API
// allocates the VIP port in Neutron before it answers). WithAttemptTimeout
// sets, for the requests made with ctx, how long one attempt may take.

type attemptTimeoutKey struct{}

// WithAttemptTimeout returns ctx whose requests' attempts may take up to d
// (Config.Timeout when d <= 0).
func WithAttemptTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, attemptTimeoutKey{}, d)
}

// attemptTimeout is how long one attempt of a request made with ctx may
// take: WithAttemptTimeout's, else def.
func attemptTimeout(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Value(attemptTimeoutKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return def
}
