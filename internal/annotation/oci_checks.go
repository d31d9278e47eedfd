package annotation

import "fmt"

func init() { registerChecks("oci", ociChecks) }

// The scopes of the OCI table: the lb annotations are read for a load
// balancer, the nlb ones for a network load balancer, a flexible shape's
// bandwidths for a flexible shape.
var (
	ociLB = Scope{CEL: fmt.Sprintf("!(%[1]q in variables.annotations) || variables.annotations[%[1]q].trim().lowerAscii() != 'nlb'", OCILoadBalancerType),
		Out: map[string]string{string(OCILoadBalancerType): "nlb"}}
	ociNLB = Scope{CEL: fmt.Sprintf("%[1]q in variables.annotations && variables.annotations[%[1]q].trim().lowerAscii() == 'nlb'", OCILoadBalancerType),
		Set: map[string]string{string(OCILoadBalancerType): "nlb"}, Out: map[string]string{}}
	ociFlexible = Scope{CEL: "(" + ociLB.CEL + ") && " +
		fmt.Sprintf("(!(%[1]q in variables.annotations) || variables.annotations[%[1]q].trim().lowerAscii() == 'flexible')", OCIShape),
		Out: map[string]string{string(OCIShape): "100Mbps"}}
)

var ociChecks = Checks{
	OCILoadBalancerType:               OneOf("lb", "nlb"),
	OCIInternal:                       Bool().In(ociLB),
	OCIShape:                          NonEmpty().In(ociLB),
	OCIShapeFlexMin:                   Bandwidth().In(ociFlexible),
	OCIShapeFlexMax:                   Bandwidth().In(ociFlexible),
	OCISubnet1:                        OCID("subnet").In(ociLB),
	OCISubnet2:                        OCID("subnet").In(ociLB),
	OCIHealthCheckRetries:             Int(1, 10).In(ociLB),
	OCIHealthCheckTimeout:             Int(1, 600000).In(ociLB),
	OCIHealthCheckInterval:            Int(1000, 1800000).In(ociLB),
	OCIConnectionIdleTimeout:          Int(1, 7200).In(ociLB),
	OCIProxyProtocolVersion:           Int(1, 2).In(ociLB),
	OCISecurityListManagementMode:     OneOf("All", "Frontend", "None").In(ociLB),
	OCIBackendProtocol:                OneOf("TCP", "HTTP").In(ociLB),
	OCISSLPorts:                       Ports().In(ociLB),
	OCITLSSecret:                      SecretRef().In(ociLB),
	OCITLSBackendSetSecret:            SecretRef().In(ociLB),
	OCINetworkSecurityGroups:          OCIDs("networksecuritygroup", OCIMaxNetworkSecurityGroups).In(ociLB),
	OCIPolicy:                         OneOf("ROUND_ROBIN", "LEAST_CONNECTIONS", "IP_HASH").In(ociLB),
	OCIInitialDefinedTagsOverride:     ByTheCCM("JSON"),
	OCIInitialFreeformTagsOverride:    ByTheCCM("JSON"),
	OCINodeLabelSelector:              ByTheCCM("a label selector"),
	OCISecurityRuleManagementMode:     OneOf("SL-All", "SL-Frontend", "NSG", "None"),
	OCIBackendNetworkSecurityGroups:   OCIDs("networksecuritygroup", 0),
	OCIListenerSSLConfig:              ByTheCCM("JSON"),
	OCIBackendSetSSLConfig:            ByTheCCM("JSON"),
	OCIIngressIPMode:                  OneOf("VIP", "Proxy"),
	OCIRuleSets:                       ByTheCCM("JSON"),
	OCIWorkloadServiceAccount:         ServiceAccountName(),
	OCINLBInternal:                    Bool().In(ociNLB),
	OCINLBSubnet:                      OCID("subnet").In(ociNLB),
	OCINLBNetworkSecurityGroups:       OCIDs("networksecuritygroup", OCIMaxNetworkSecurityGroups).In(ociNLB),
	OCINLBInitialFreeformTagsOverride: ByTheCCM("JSON"),
	OCINLBInitialDefinedTagsOverride:  ByTheCCM("JSON"),
	OCINLBFreeformTags:                ByTheCCM("JSON"),
	OCINLBDefinedTags:                 ByTheCCM("JSON"),
	OCINLBHealthCheckRetries:          Int(1, 10).In(ociNLB),
	OCINLBHealthCheckTimeout:          Int(1, 600000).In(ociNLB),
	OCINLBHealthCheckInterval:         Int(1000, 1800000).In(ociNLB),
	OCINLBBackendPolicy:               OneOf("TWO_TUPLE", "THREE_TUPLE", "FIVE_TUPLE").In(ociNLB),
	OCINLBSecurityListManagementMode:  OneOf("All", "Frontend", "None").In(ociNLB),
	OCINLBNodeLabelSelector:           ByTheCCM("a label selector"),
	OCINLBIsPreserveSource:            Bool().In(ociNLB),
	OCINLBIsPPv2Enabled:               Bool().In(ociNLB),
	OCINLBExternalIPOnly:              Bool().In(ociNLB),
	// Read for either kind, not in ociNLB alone: on an lb any value is
	// refused (as the peer refuses it), an invalid one as invalid.
	OCINLBAssignedPrivateIPv4: IPv4(),
	OCINLBAssignedIPv6:        IPv6(),
	OCIConverged:              Written(),
}

// OCID is one OCID of kind (Name.OCID). The policy lets "" through (the
// Event says "an OCID"), and two.
func OCID(kind string) Check {
	c := OCIDs(kind, 1)
	c.EventOnly = append(c.EventOnly, "")
	return c
}

// OCIDs is a comma-separated list of OCIDs of kind, at most max (0: any)
// (Name.OCIDs). The policy does not count them (repeats count once): the
// Event refuses too many.
func OCIDs(kind string, max int) Check {
	accepted := fmt.Sprintf("comma-separated OCIDs (ocid1.%s.…)", kind)
	if max > 0 {
		accepted += fmt.Sprintf(", at most %d", max)
	}
	one := fmt.Sprintf("ocid1.%s.oc1.iad.aaaa", kind)
	c := Check{Accepted: accepted, Valid: []string{one, " " + one + " , "},
		Invalid: []string{"ocid1.vcn.oc1.iad.aaaa", "ocid1." + kind + ".oc1", fmt.Sprintf("ocid1.%s.oc1.iad.", kind), "my-" + kind},
		cel: func(x string) string {
			return fmt.Sprintf(`%s.split(',').all(i, i.trim() == '' || i.trim().matches('^ocid1\\.%s(\\.[^.]*){2,}\\.[^.]+$'))`, x, kind)
		}}
	if max > 0 {
		var many string
		for i := range max + 1 {
			many += fmt.Sprintf("ocid1.%s.oc1.iad.a%d,", kind, i)
		}
		c.EventOnly = []string{many}
	}
	return c
}

// Bandwidth is a flexible shape's bandwidth: whole Mbps from 10 to 8192,
// the unit optional (Name.Bandwidth).
func Bandwidth() Check {
	return Check{Accepted: `whole Mbps from 10 to 8192, such as "100" or "100Mbps"`, Valid: []string{"10", "8192Mbps", "100 mbps"},
		Invalid: []string{"9", "8193", "Mbps", "fast"},
		cel: func(x string) string {
			t := trimmed(x)
			n := t + ".lowerAscii().replace('mbps', '').trim()"
			return fmt.Sprintf(`(%s.matches('^[-+]?[0-9]{1,18}\\s*([mM][bB][pP][sS])?$') && int(%s) >= 10 && int(%s) <= 8192)`, t, n, n)
		}}
}
