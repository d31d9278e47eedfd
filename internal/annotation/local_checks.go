package annotation

import "time"

func init() { registerChecks("local", localChecks) }

var localChecks = Checks{
	LocalPool:                NonEmpty(),
	LocalLoadBalancerIP:      IP(),
	LocalAllowSharedIP:       NonEmpty(),
	LocalHealthCheckInterval: Duration(time.Second, 5*time.Minute),
	LocalUDPIdleTimeout:      Duration(time.Second, time.Hour),
}
