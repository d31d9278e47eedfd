package outcome

import "errors"

// MayHaveActed says whether a failed write may have been carried out all
// the same: its answer was lost (a timeout, a connection cut after the
// request went out) or was no answer of the API's own (a 5xx, a gateway's
// 502 or 504). A write the cloud answered with one of the kinds above
// (refused, busy, throttled, not found, credentials refused) did nothing;
// a Problem is the CCM's own refusal, made before any write.
func MayHaveActed(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := AsProblem(err); ok {
		return false
	}
	for _, kind := range []error{ErrNotFound, ErrBusy, ErrAuth, ErrThrottled, ErrRefused} {
		if errors.Is(err, kind) {
			return false
		}
	}
	return true
}
