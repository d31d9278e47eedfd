package cloudapi

import (
	"context"
	"sync/atomic"
)

type callCountKey struct{}

// WithCallCount returns a context under which every attempt a transport of
// this package sends is counted in n: what a listing of many pages cost.
func WithCallCount(ctx context.Context) (_ context.Context, n *atomic.Int64) {
	n = new(atomic.Int64)
	return context.WithValue(ctx, callCountKey{}, n), n
}

// countCall counts one attempt under ctx's counter, if it has one.
func countCall(ctx context.Context) {
	if n, ok := ctx.Value(callCountKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}
