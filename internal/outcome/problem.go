package outcome

import (
	"errors"
	"fmt"

	"github.com/overcast-ccm/overcast/internal/annotation"
)

// Event reasons every cloud's load balancers share. A cloud adds its own for what
// only it has (a floating IP, an IP pool).
const (
	// ReasonInvalidAnnotation: an annotation's value cannot be parsed or is out of range.
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonUnsupportedService: the Service asks what the cloud cannot do (a
	// protocol, a mix of ports, a setting).
	ReasonUnsupportedService = "UnsupportedService"
	// ReasonAddressUnavailable: the address the Service asks for is held by
	// something else, or does not exist.
	ReasonAddressUnavailable = "LoadBalancerIPUnavailable"
	// ReasonCloudRefused: the cloud refused the load balancer as asked (quota,
	// a flavor or network that does not exist); its answer says why.
	ReasonCloudRefused = "CloudRefusedLoadBalancer"
	// ReasonQuotaExceeded: a quota of the project is known to be met, so the
	// load balancer was not started (nothing was created).
	ReasonQuotaExceeded = "QuotaExceeded"
)

// Problem is why a Service's load balancer cannot be built or changed as the
// Service asks until a person acts. The service controller records it once as a
// Warning Event with Reason and the message, and shows it in the Service's
// conditions. A cloud returns a Problem before its first write: nothing is
// created for a Service it refuses.
type Problem struct {
	Reason  string
	Message string
	// Err is the cause, when there is one (for errors.Is and errors.As).
	Err error
}

func (p *Problem) Error() string { return p.Message }

func (p *Problem) Unwrap() error { return p.Err }

// Refuse returns a Problem with a message of its own.
func Refuse(reason, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Problem{Reason: reason, Message: err.Error(), Err: errors.Unwrap(err)}
}

// Invalid is the Problem of a Service the cloud's spec parser refused: an
// InvalidAnnotation when an annotation is at fault, an UnsupportedService
// otherwise. The message says that nothing was changed.
func Invalid(err error) error {
	reason := ReasonUnsupportedService
	if errors.As(err, new(*annotation.InvalidError)) {
		reason = ReasonInvalidAnnotation
	}
	return &Problem{Reason: reason, Message: err.Error() + "; the load balancer was left as it was", Err: err}
}

// AsProblem returns the Problem in err's chain, if any.
func AsProblem(err error) (*Problem, bool) {
	var p *Problem
	ok := errors.As(err, &p)
	return p, ok
}
