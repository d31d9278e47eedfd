package outcome

import "errors"

// background marks progress of a change that leaves the Service as it is
// served: the members of its load balancer following a Node that joined or
// left. The service controller looks again after the delay, and writes no
// condition and no Event for it (at 2,000 Services, one Node joining would
// otherwise be 4,000 writes of Services and 2,000 Events).
type background struct{ err error }

func (b background) Error() string { return b.err.Error() }
func (b background) Unwrap() error { return b.err }

// Background is err (progress: an api.RetryError) marked as background work;
// nil stays nil.
func Background(err error) error {
	if err == nil {
		return nil
	}
	return background{err}
}

// IsBackground says whether err is progress of background work (Background).
func IsBackground(err error) bool { return errors.As(err, new(background)) }
