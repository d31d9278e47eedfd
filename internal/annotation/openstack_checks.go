package annotation

import "fmt"

func init() { registerChecks("openstack", openStackChecks) }

var openStackChecks = Checks{
	OpenStackFloatingNetworkID:           UUID(),
	OpenStackFloatingSubnet:              ByTheCCM("a subnet name pattern"),
	OpenStackFloatingSubnetID:            UUID(),
	OpenStackFloatingSubnetTags:          ByTheCCM("a tag expression"),
	OpenStackKeepFloatingIP:              Bool(),
	OpenStackPortID:                      UUID(),
	OpenStackSubnetID:                    UUID(),
	OpenStackNetworkID:                   UUID(),
	OpenStackMemberSubnetID:              UUID(),
	OpenStackLoadBalancerAddress:         Written(),
	OpenStackConnectionLimit:             connectionLimit(),
	OpenStackLBMethod:                    OneOf(string(LBMethodRoundRobin), string(LBMethodLeastConnections), string(LBMethodSourceIP), string(LBMethodSourceIPPort)).Saying("ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP or SOURCE_IP_PORT"),
	OpenStackProxyProtocol:               OneOf("true", "v1", "v2", "false").Saying(`"true" or "v1" (PROXY v1), "v2" (PROXY v2), or "false"`),
	OpenStackXForwardedFor:               Bool(),
	OpenStackTimeoutClientData:           Milliseconds(0, OctaviaTimeoutMaxMillis),
	OpenStackTimeoutMemberConnect:        Milliseconds(0, OctaviaTimeoutMaxMillis),
	OpenStackTimeoutMemberData:           Milliseconds(0, OctaviaTimeoutMaxMillis),
	OpenStackTimeoutTCPInspect:           Milliseconds(0, OctaviaTimeoutMaxMillis),
	OpenStackDefaultTLSContainerRef:      NonEmpty(),
	OpenStackTLSSecret:                   NonEmpty(),
	OpenStackTLSPorts:                    Ports(),
	OpenStackEnableHealthMonitor:         Bool(),
	OpenStackHealthMonitorDelay:          SecondsOrDuration(OctaviaMonitorIntervalMin, OctaviaMonitorIntervalMax),
	OpenStackHealthMonitorTimeout:        SecondsOrDuration(OctaviaMonitorIntervalMin, OctaviaMonitorIntervalMax),
	OpenStackHealthMonitorMaxRetries:     Int(OctaviaMaxRetriesMin, OctaviaMaxRetriesMax),
	OpenStackHealthMonitorMaxRetriesDown: Int(OctaviaMaxRetriesMin, OctaviaMaxRetriesMax),
	OpenStackNodeSelector:                ByTheCCM("a label selector"),
	OpenStackClass:                       class(),
	OpenStackFlavorID:                    UUID(),
	OpenStackAvailabilityZone:            NonEmpty(),
	OpenStackHostname:                    Hostname(),
	OpenStackLoadBalancerID:              Free(),
	OpenStackConverged:                   Written(),
	OpenStackInternalLoadBalancer:        Bool(),
	OpenStackPublishOnlyPublicAddress:    Bool(),
}

// connectionLimit is -1 or a whole number from 1 (ParseConnectionLimit).
func connectionLimit() Check {
	c := Int(-1, OctaviaConnectionLimitMax).Saying(fmt.Sprintf("-1 (no limit) or whole numbers from 1 to %d", OctaviaConnectionLimitMax))
	c.Invalid = append(c.Invalid, "0")
	whole := c.cel
	c.cel = func(x string) string { return "(" + whole(x) + " && int(" + trimmed(x) + ") != 0)" }
	return c
}

// class is a class's name: the policy knows no cloud.conf, so a name that
// is not one of its classes is the Event's.
func class() Check {
	c := NonEmpty()
	c.Valid, c.EventOnly = nil, []string{"no-such-class"}
	return c
}
