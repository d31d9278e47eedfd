package annotation

// The reference page, by make generate.
//go:generate go run ../../hack/gen-annotation-docs -pkg . -cloud cloudstack -prefix CloudStack -title "CloudStack cloud" -out ../../docs/reference/cloudstack-annotations.md

// The annotations this cloud writes on Services for its records.
func init() { record(CloudStackIPAssociatedByController, CloudStackConverged, CloudStackAssociating) }

// Annotations of the cloudstack cloud (--cloud-provider=cloudstack or
// external-cloudstack). The service.beta.kubernetes.io/cloudstack-load-balancer-*
// names are cloudstack-kubernetes-provider's, so that Services written for it
// work unchanged; the overcast.io/cloudstack-* ones are Overcast's own.
const (
	// CloudStackProxyProtocol makes the TCP ports' rules send a PROXY protocol
	// (v1) header to the nodes, so that the Service sees the clients' addresses
	// (the rules' protocol becomes tcp-proxy). UDP ports are not affected.
	// Type: boolean ("true" or "false").
	// Default: false.
	CloudStackProxyProtocol Name = "service.beta.kubernetes.io/cloudstack-load-balancer-proxy-protocol"

	// CloudStackHostname is published as the Service's status hostname instead
	// of the public IP address: use it when clients inside the cluster must go
	// through the load balancer (for the PROXY protocol) rather than be
	// short-cut by kube-proxy.
	// Type: a DNS name.
	// Default: none (the address is published).
	CloudStackHostname Name = "service.beta.kubernetes.io/cloudstack-load-balancer-hostname"

	// CloudStackSourceCIDRs limits the sources the load balancer rules accept
	// (their cidrlist), for all ports. spec.loadBalancerSourceRanges, when set,
	// is what the firewall rules (or network ACL items) let in; without it,
	// these ranges are used there too.
	// Type: comma-separated CIDRs ("" for none).
	// Default: 0.0.0.0/0.
	CloudStackSourceCIDRs Name = "service.beta.kubernetes.io/cloudstack-load-balancer-source-cidrs"

	// CloudStackIPAssociatedByController is written by the CCM, not read from
	// users (as the peer writes it): "true" when the Service's loadBalancerIP
	// was free and the CCM associated it, so that it is released with the
	// Service. An address the CCM did not associate is never released.
	// Type: boolean, written by the CCM.
	// Default: none.
	CloudStackIPAssociatedByController Name = "service.beta.kubernetes.io/cloudstack-load-balancer-ip-associated-by-controller"

	// CloudStackAlgorithm is how the rules spread connections over the nodes.
	// Without it, sessionAffinity ClientIP means source, else roundrobin.
	// Type: roundrobin, leastconn or source.
	// Default: from sessionAffinity.
	CloudStackAlgorithm Name = "overcast.io/cloudstack-load-balancer-algorithm"

	// CloudStackHealthCheckPath gives each rule a health-check policy: an HTTP
	// GET of this path on the nodes' node port, a node answering otherwise than
	// 2xx or 3xx is taken out. Without it, the load balancer checks nodes by TCP
	// connect (the virtual router's haproxy always does), which is what
	// externalTrafficPolicy Local needs: kube-proxy refuses the node port on
	// nodes without an endpoint. Only for HTTP Services.
	// Type: an absolute path, such as "/healthz".
	// Default: none (TCP connect checks).
	CloudStackHealthCheckPath Name = "overcast.io/cloudstack-health-check-path"

	// CloudStackHealthCheckInterval is the time between two HTTP checks of a
	// node (with the health-check path).
	// Type: whole seconds from 3 to 20940 (longer than the 2 s a check may take).
	// Default: 5.
	CloudStackHealthCheckInterval Name = "overcast.io/cloudstack-health-check-interval"

	// CloudStackConverged is written by the CCM, not read from users: the
	// public address and a fingerprint of the Service's spec the rules were
	// last converged to. While it matches, a resync reads one shared listing
	// instead of walking the rules.
	// Type: "<address id>/<fingerprint>", written by the CCM.
	// Default: none.
	CloudStackConverged Name = "overcast.io/cloudstack-converged"

	// CloudStackAssociating is written by the CCM, not read from users: when
	// it last began to associate a public address for the Service, written
	// before the association. CloudStack cannot tag an address as it
	// associates it; should the CCM stop between the two calls, the address
	// associated then (untagged, without rules, allocated within seconds
	// after) is taken up by the next pass instead of being left behind.
	// Type: an RFC 3339 time, written by the CCM.
	// Default: none.
	CloudStackAssociating Name = "overcast.io/cloudstack-associating"
)

// CloudStackAlgorithms are the algorithms a rule takes.
var CloudStackAlgorithms = []string{"roundrobin", "leastconn", "source"}
