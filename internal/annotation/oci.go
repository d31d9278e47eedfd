package annotation

// The reference page, by make generate.
//go:generate go run ../../hack/gen-annotation-docs -pkg . -cloud oci -prefix OCI -title "OCI cloud" -out ../../docs/reference/oci-annotations.md

func init() { record(OCIConverged) }

// Annotations of the oci cloud (--cloud-provider=oci): every annotation of
// oci-cloud-controller-manager's docs/load-balancer-annotations.md, with the
// peer's three prefixes (service.beta.kubernetes.io/oci-load-balancer-*,
// oci.oraclecloud.com/*, oci-network-load-balancer.oraclecloud.com/*), so
// that Services written for it work unchanged.
const (
	// OCILoadBalancerType chooses the kind of load balancer: an OCI Load
	// Balancer (lb: TCP or HTTP listeners, SSL termination) or a Network Load
	// Balancer (nlb: TCP and UDP, the clients' addresses kept). Changing it
	// builds the other kind, then deletes the first (a new address).
	// Type: lb or nlb.
	// Default: lb.
	OCILoadBalancerType Name = "oci.oraclecloud.com/load-balancer-type"

	// OCIInternal makes the load balancer private: an address of its subnet
	// only. Cannot change once built.
	// Type: boolean.
	// Default: false.
	OCIInternal Name = "service.beta.kubernetes.io/oci-load-balancer-internal"

	// OCIShape is the load balancer's shape. flexible (the default) takes its
	// bandwidth from shape-flex-min and shape-flex-max; the fixed shapes
	// (10Mbps, 100Mbps, 400Mbps, 8000Mbps) are retired by OCI but still
	// honoured for load balancers that have them.
	// Type: flexible, or a fixed shape's name.
	// Default: flexible.
	OCIShape Name = "service.beta.kubernetes.io/oci-load-balancer-shape"

	// OCIShapeFlexMin is a flexible shape's minimum bandwidth.
	// Type: whole Mbps from 10 to 8192 ("100" or "100Mbps").
	// Default: 10.
	OCIShapeFlexMin Name = "service.beta.kubernetes.io/oci-load-balancer-shape-flex-min"

	// OCIShapeFlexMax is a flexible shape's maximum bandwidth.
	// Type: whole Mbps from 10 to 8192, at least shape-flex-min.
	// Default: 100.
	OCIShapeFlexMax Name = "service.beta.kubernetes.io/oci-load-balancer-shape-flex-max"

	// OCISubnet1 is the load balancer's subnet (a regional one, or the first
	// of two availability-domain ones). Cannot change once built.
	// Type: subnet OCID.
	// Default: loadBalancer.subnet1 of the config.
	OCISubnet1 Name = "service.beta.kubernetes.io/oci-load-balancer-subnet1"

	// OCISubnet2 is the second availability-domain subnet.
	// Type: subnet OCID.
	// Default: loadBalancer.subnet2 of the config.
	OCISubnet2 Name = "service.beta.kubernetes.io/oci-load-balancer-subnet2"

	// OCIHealthCheckRetries is how many failed checks take a node out.
	// Type: whole number from 1 to 10.
	// Default: 3.
	OCIHealthCheckRetries Name = "service.beta.kubernetes.io/oci-load-balancer-health-check-retries"

	// OCIHealthCheckTimeout is how long a check may take.
	// Type: milliseconds from 1 to 600000.
	// Default: 3000.
	OCIHealthCheckTimeout Name = "service.beta.kubernetes.io/oci-load-balancer-health-check-timeout"

	// OCIHealthCheckInterval is the time between two checks of a node.
	// Type: milliseconds from 1000 to 1800000.
	// Default: 10000.
	OCIHealthCheckInterval Name = "service.beta.kubernetes.io/oci-load-balancer-health-check-interval"

	// OCIConnectionIdleTimeout is how long a connection may stay idle.
	// Type: whole seconds from 1 to 7200.
	// Default: 300 for TCP listeners, 60 for HTTP ones.
	OCIConnectionIdleTimeout Name = "service.beta.kubernetes.io/oci-load-balancer-connection-idle-timeout"

	// OCIProxyProtocolVersion makes the TCP listeners send a PROXY protocol
	// header to the nodes.
	// Type: 1 or 2.
	// Default: none.
	OCIProxyProtocolVersion Name = "service.beta.kubernetes.io/oci-load-balancer-connection-proxy-protocol-version"

	// OCISecurityListManagementMode is which security list rules the CCM
	// manages for the load balancer (oci.oraclecloud.com/
	// security-rule-management-mode overrides it).
	// Type: All, Frontend or None.
	// Default: loadBalancer.securityListManagementMode of the config.
	OCISecurityListManagementMode Name = "service.beta.kubernetes.io/oci-load-balancer-security-list-management-mode"

	// OCIBackendProtocol is the listeners' protocol.
	// Type: TCP or HTTP.
	// Default: TCP.
	OCIBackendProtocol Name = "service.beta.kubernetes.io/oci-load-balancer-backend-protocol"

	// OCISSLPorts lists the ports whose listeners terminate SSL with the
	// certificate of tls-secret.
	// Type: comma-separated port numbers of the Service.
	// Default: none.
	OCISSLPorts Name = "service.beta.kubernetes.io/oci-load-balancer-ssl-ports"

	// OCITLSSecret is the kubernetes.io/tls Secret whose certificate the SSL
	// listeners present.
	// Type: "<name>" (the Service's namespace) or "<namespace>/<name>".
	// Default: none.
	OCITLSSecret Name = "service.beta.kubernetes.io/oci-load-balancer-tls-secret"

	// OCITLSBackendSetSecret is the Secret whose certificate the backend sets
	// use toward the nodes (SSL to the backends).
	// Type: "<name>" or "<namespace>/<name>".
	// Default: none.
	OCITLSBackendSetSecret Name = "service.beta.kubernetes.io/oci-load-balancer-tls-backendset-secret"

	// OCINetworkSecurityGroups lists network security groups the load balancer
	// joins.
	// Type: comma-separated NSG OCIDs, at most 5.
	// Default: none.
	OCINetworkSecurityGroups Name = "oci.oraclecloud.com/oci-network-security-groups"

	// OCIPolicy is how the load balancer spreads connections.
	// Type: ROUND_ROBIN, LEAST_CONNECTIONS or IP_HASH.
	// Default: ROUND_ROBIN.
	OCIPolicy Name = "oci.oraclecloud.com/loadbalancer-policy"

	// OCIInitialDefinedTagsOverride gives the defined tags of the load balancer,
	// set when it is built, instead of the config's.
	// Type: JSON {"namespace": {"key": "value"}}.
	// Default: the config's tags.
	OCIInitialDefinedTagsOverride Name = "oci.oraclecloud.com/initial-defined-tags-override"

	// OCIInitialFreeformTagsOverride gives the freeform tags of the load balancer,
	// set when it is built, instead of the config's.
	// Type: JSON {"key": "value"}.
	// Default: the config's tags.
	OCIInitialFreeformTagsOverride Name = "oci.oraclecloud.com/initial-freeform-tags-override"

	// OCINodeLabelSelector chooses the nodes that are backends.
	// Type: a label selector ("key=value,key2 in (a,b)").
	// Default: every eligible node.
	OCINodeLabelSelector Name = "oci.oraclecloud.com/node-label-selector"

	// OCISecurityRuleManagementMode is which security rules the CCM manages,
	// in security lists or network security groups; it overrides the
	// security-list-management-mode annotations.
	// Type: SL-All, SL-Frontend, NSG or None.
	// Default: the security list mode.
	OCISecurityRuleManagementMode Name = "oci.oraclecloud.com/security-rule-management-mode"

	// OCIBackendNetworkSecurityGroups lists the nodes' network security groups,
	// where the NSG mode adds the rules letting the load balancer in.
	// Type: comma-separated NSG OCIDs.
	// Default: none.
	OCIBackendNetworkSecurityGroups Name = "oci.oraclecloud.com/oci-backend-network-security-group"

	// OCIListenerSSLConfig is the SSL listeners' cipher suite and protocols.
	// Type: JSON {"CipherSuiteName": "...", "Protocols": ["TLSv1.2"]}.
	// Default: OCI's.
	OCIListenerSSLConfig Name = "oci.oraclecloud.com/oci-load-balancer-listener-ssl-config"

	// OCIBackendSetSSLConfig is the backend sets' cipher suite and protocols.
	// Type: JSON {"CipherSuiteName": "...", "Protocols": ["TLSv1.2"]}.
	// Default: OCI's.
	OCIBackendSetSSLConfig Name = "oci.oraclecloud.com/oci-load-balancer-backendset-ssl-config"

	// OCIIngressIPMode is the status's ingress ipMode: VIP (kube-proxy
	// short-cuts traffic to the address) or Proxy (it goes through the load
	// balancer).
	// Type: VIP or Proxy (any case).
	// Default: VIP.
	OCIIngressIPMode Name = "oci.oraclecloud.com/ingress-ip-mode"

	// OCIRuleSets gives rule sets attached to every listener.
	// Type: JSON {"name": RuleSetDetails} (the OCI API's form).
	// Default: none.
	OCIRuleSets Name = "oci.oraclecloud.com/oci-load-balancer-rule-sets"

	// OCIWorkloadServiceAccount is the per-Service OKE workload identity:
	// the calls of the Service's load balancer (the Load Balancer and
	// Network Load Balancer APIs, and the lookup of its reserved IP) are
	// made as that ServiceAccount of the Service's namespace, whose token
	// the CCM asks for (create on serviceaccounts/token, an opt-in grant:
	// the chart's oci.workloadServiceAccounts) and trades at OKE's
	// workload identity endpoint; subnets, NSGs and security lists stay the
	// CCM's own calls. A ServiceAccount that does not exist, or a refused
	// exchange, is a Warning Event and nothing is built or changed.
	// Type: a ServiceAccount's name (a DNS-1123 subdomain).
	// Default: none.
	OCIWorkloadServiceAccount Name = "oci.oraclecloud.com/workload-service-account"

	// OCINLBInternal makes the network load balancer private. Cannot change
	// once built.
	// Type: boolean.
	// Default: false.
	OCINLBInternal Name = "oci-network-load-balancer.oraclecloud.com/internal"

	// OCINLBSubnet is the network load balancer's subnet. Cannot change once
	// built.
	// Type: subnet OCID.
	// Default: loadBalancer.subnet1 of the config.
	OCINLBSubnet Name = "oci-network-load-balancer.oraclecloud.com/subnet"

	// OCINLBNetworkSecurityGroups lists network security groups the network load
	// balancer joins.
	// Type: comma-separated NSG OCIDs, at most 5.
	// Default: none.
	OCINLBNetworkSecurityGroups Name = "oci-network-load-balancer.oraclecloud.com/oci-network-security-groups"

	// OCINLBInitialFreeformTagsOverride gives the freeform tags of the network load
	// balancer, set when it is built, instead of the config's.
	// Type: JSON {"key": "value"}.
	// Default: the config's tags.
	OCINLBInitialFreeformTagsOverride Name = "oci-network-load-balancer.oraclecloud.com/initial-freeform-tags-override"

	// OCINLBInitialDefinedTagsOverride gives the defined tags of the network load
	// balancer, set when it is built, instead of the config's.
	// Type: JSON {"namespace": {"key": "value"}}.
	// Default: the config's tags.
	OCINLBInitialDefinedTagsOverride Name = "oci-network-load-balancer.oraclecloud.com/initial-defined-tags-override"

	// OCINLBFreeformTags gives the freeform tags of the network load balancer, kept
	// as the annotation says.
	// Type: JSON {"key": "value"}.
	// Default: none.
	OCINLBFreeformTags Name = "oci-network-load-balancer.oraclecloud.com/freeform-tags"

	// OCINLBDefinedTags gives the defined tags of the network load balancer, kept
	// as the annotation says.
	// Type: JSON {"namespace": {"key": "value"}}.
	// Default: none.
	OCINLBDefinedTags Name = "oci-network-load-balancer.oraclecloud.com/defined-tags"

	// OCINLBHealthCheckRetries is how many failed checks take a node out.
	// Type: whole number from 1 to 10.
	// Default: 3.
	OCINLBHealthCheckRetries Name = "oci-network-load-balancer.oraclecloud.com/health-check-retries"

	// OCINLBHealthCheckTimeout is how long a check may take.
	// Type: milliseconds from 1 to 600000.
	// Default: 3000.
	OCINLBHealthCheckTimeout Name = "oci-network-load-balancer.oraclecloud.com/health-check-timeout"

	// OCINLBHealthCheckInterval is the time between two checks of a node.
	// Type: milliseconds from 1000 to 1800000.
	// Default: 10000.
	OCINLBHealthCheckInterval Name = "oci-network-load-balancer.oraclecloud.com/health-check-interval"

	// OCINLBBackendPolicy is how the network load balancer spreads flows.
	// Type: TWO_TUPLE, THREE_TUPLE or FIVE_TUPLE.
	// Default: FIVE_TUPLE.
	OCINLBBackendPolicy Name = "oci-network-load-balancer.oraclecloud.com/backend-policy"

	// OCINLBSecurityListManagementMode is which security list rules the CCM
	// manages for the network load balancer.
	// Type: All, Frontend or None.
	// Default: None.
	OCINLBSecurityListManagementMode Name = "oci-network-load-balancer.oraclecloud.com/security-list-management-mode"

	// OCINLBNodeLabelSelector chooses the nodes that are backends.
	// Type: a label selector.
	// Default: every eligible node.
	OCINLBNodeLabelSelector Name = "oci-network-load-balancer.oraclecloud.com/node-label-selector"

	// OCINLBIsPreserveSource keeps the clients' addresses on the way to the
	// nodes; only with externalTrafficPolicy Local.
	// Type: boolean.
	// Default: true with externalTrafficPolicy Local, else false.
	OCINLBIsPreserveSource Name = "oci-network-load-balancer.oraclecloud.com/is-preserve-source"

	// OCINLBIsPPv2Enabled makes the listeners send a PROXY protocol v2 header.
	// Type: boolean.
	// Default: false.
	OCINLBIsPPv2Enabled Name = "oci-network-load-balancer.oraclecloud.com/is-ppv2-enabled"

	// OCINLBExternalIPOnly publishes the public address alone in the status
	// (not the private one too).
	// Type: boolean.
	// Default: false.
	OCINLBExternalIPOnly Name = "oci-network-load-balancer.oraclecloud.com/external-ip-only"

	// OCINLBAssignedPrivateIPv4 is the private IPv4 address the network load
	// balancer takes in its subnet: one of the subnet's CIDR (not its first
	// two or its last, which OCI keeps), held by nothing else, checked before
	// anything is built. It is the network load balancer's for good: kept
	// when a FAILED one is built anew, never changed in place (a Service
	// asking for another is refused with a Warning). Refused on an lb, as the
	// peer refuses it.
	// Type: IPv4 address.
	// Default: one OCI chooses.
	OCINLBAssignedPrivateIPv4 Name = "oci-network-load-balancer.oraclecloud.com/assigned-private-ipv4"

	// OCINLBAssignedIPv6 is the IPv6 address the network load balancer takes
	// in its subnet, which must serve IPv6 (spec.ipFamilies): one of the
	// subnet's IPv6 prefixes, held by nothing else, checked before anything
	// is built; kept and never changed as assigned-private-ipv4 is. Refused
	// on an lb, as the peer refuses it.
	// Type: IPv6 address.
	// Default: one OCI chooses.
	OCINLBAssignedIPv6 Name = "oci-network-load-balancer.oraclecloud.com/assigned-ipv6"

	// OCIConverged is written by the CCM, not read from users: the load
	// balancer's OCID and a fingerprint of the Service's spec it was last
	// converged to, and its address. While it matches, a resync reads one
	// shared listing instead of the load balancer.
	// Type: "<load balancer OCID>/<fingerprint>/<address>", written by the CCM.
	// Default: none.
	OCIConverged Name = "overcast.io/oci-converged"
)
