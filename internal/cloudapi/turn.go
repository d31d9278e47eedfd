package cloudapi

import (
	"context"
	"fmt"
)

// Turn is a lock held across calls to a cloud whose waiters give up when
// their context ends: a sync.Mutex would hold a waiter past its deadline for
// as long as the holder's calls last (a cloud that never answers).
type Turn chan struct{}

// NewTurn is a free Turn.
func NewTurn() Turn { return make(Turn, 1) }

// Take waits for the turn as long as ctx allows; the returned func gives it
// back. what names what the caller waited for, in the error.
func (t Turn) Take(ctx context.Context, what string) (func(), error) {
	select {
	case t <- struct{}{}:
		return func() { <-t }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
	}
}
