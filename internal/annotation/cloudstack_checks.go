package annotation

import "fmt"

func init() { registerChecks("cloudstack", cloudStackChecks) }

// cloudStackChecked: a health check's interval is read with its path.
var cloudStackChecked = Scope{CEL: fmt.Sprintf("%[1]q in variables.annotations && variables.annotations[%[1]q].trim() != ''", CloudStackHealthCheckPath),
	Set: map[string]string{string(CloudStackHealthCheckPath): "/healthz"}, Out: map[string]string{}}

var cloudStackChecks = Checks{
	CloudStackProxyProtocol:            Bool(),
	CloudStackHostname:                 Free(),
	CloudStackSourceCIDRs:              CIDRs(),
	CloudStackIPAssociatedByController: Written(),
	CloudStackAlgorithm:                OneOf(CloudStackAlgorithms...),
	CloudStackHealthCheckPath: {Accepted: "an absolute path such as /healthz", Valid: []string{"/healthz"}, Invalid: []string{"healthz"},
		cel: func(x string) string { return trimmed(x) + ".startsWith('/')" }},
	CloudStackHealthCheckInterval: Int(3, 20940).In(cloudStackChecked),
	CloudStackConverged:           Written(),
	CloudStackAssociating:         Written(),
}
