package annotation

// The reference page, by make generate.
//go:generate go run ../../hack/gen-annotation-docs -pkg . -cloud openstack -prefix OpenStack -title "OpenStack cloud" -out ../../docs/reference/openstack-annotations.md

// The annotations this cloud writes on Services for its records.
func init() { record(OpenStackLoadBalancerAddress, OpenStackConverged) }

// Annotations of the openstack cloud (--cloud-provider=openstack). The names are
// cloud-provider-openstack's, so that Services written for it work unchanged.
const (
	// OpenStackFloatingNetworkID is the external Neutron network the load balancer's
	// floating IP comes from. It has no effect on an internal load balancer.
	// Type: Neutron network UUID
	// Default: the class's floating-network-id, then the cloud.conf [LoadBalancer]
	//   floating-network-id, then the only external network of the project
	OpenStackFloatingNetworkID Name = "loadbalancer.openstack.org/floating-network-id"

	// OpenStackFloatingSubnet picks the floating IP's subnet of the floating network
	// by name: a glob with * and ?, a regular expression after "~", either negated by
	// a leading "!". Subnets that match are tried in turn.
	// Type: subnet name pattern
	// Default: the cloud.conf [LoadBalancer] floating-subnet, else any subnet
	OpenStackFloatingSubnet Name = "loadbalancer.openstack.org/floating-subnet"

	// OpenStackFloatingSubnetID picks the floating IP's subnet of the floating network
	// by ID. It wins over floating-subnet and floating-subnet-tags.
	// Type: Neutron subnet UUID
	// Default: the cloud.conf [LoadBalancer] floating-subnet-id, else any subnet
	OpenStackFloatingSubnetID Name = "loadbalancer.openstack.org/floating-subnet-id"

	// OpenStackFloatingSubnetTags picks the floating IP's subnet of the floating network
	// by Neutron tags. A subnet matches when it carries at least one of the tags, or
	// all of them when the list starts with "&"; a leading "!" inverts the match.
	// Type: comma-separated tag list, optionally prefixed by "!", "&" or "!&"
	// Default: the cloud.conf [LoadBalancer] floating-subnet-tags, else any subnet
	OpenStackFloatingSubnetTags Name = "loadbalancer.openstack.org/floating-subnet-tags"

	// OpenStackKeepFloatingIP keeps the floating IP in the project when the Service is
	// deleted or turned internal, instead of releasing it. Floating IPs the CCM did not
	// allocate are never released either way.
	// Type: boolean
	// Default: false
	OpenStackKeepFloatingIP Name = "loadbalancer.openstack.org/keep-floatingip"

	// OpenStackPortID gives the load balancer an existing Neutron port as its VIP port
	// instead of a new one on subnet-id or network-id.
	// Type: Neutron port UUID
	// Default: a new VIP port
	OpenStackPortID Name = "loadbalancer.openstack.org/port-id"

	// OpenStackSubnetID is the Neutron subnet the load balancer's VIP is allocated on.
	// Type: Neutron subnet UUID
	// Default: the class's subnet-id, then the cloud.conf [LoadBalancer] subnet-id
	OpenStackSubnetID Name = "loadbalancer.openstack.org/subnet-id"

	// OpenStackNetworkID is the Neutron network the load balancer's VIP is allocated
	// on, when no subnet-id says which subnet of it.
	// Type: Neutron network UUID
	// Default: the class's network-id, then the cloud.conf [LoadBalancer] network-id,
	//   else the network of subnet-id
	OpenStackNetworkID Name = "loadbalancer.openstack.org/network-id"

	// OpenStackMemberSubnetID is the Neutron subnet through which the load balancer
	// reaches the nodes (its pool members).
	// Type: Neutron subnet UUID
	// Default: the class's member-subnet-id, then the cloud.conf [LoadBalancer]
	//   member-subnet-id, else the VIP subnet
	OpenStackMemberSubnetID Name = "loadbalancer.openstack.org/member-subnet-id"

	// OpenStackLoadBalancerAddress is written by the CCM, not read: it records the
	// address the load balancer is reached at (its floating IP, or the VIP of an
	// internal one). It is the one place that address shows when hostname replaces it
	// in the Service status. A value set by hand is overwritten.
	// Type: IP address
	// Default: set by the CCM
	OpenStackLoadBalancerAddress Name = "loadbalancer.openstack.org/load-balancer-address"

	// OpenStackConnectionLimit caps the concurrent connections of each listener.
	// Type: integer, -1 (no limit) or 1 to 2147483647
	// Default: -1
	OpenStackConnectionLimit Name = "loadbalancer.openstack.org/connection-limit"

	// OpenStackLBMethod is the algorithm the pools spread connections with. The OVN
	// provider supports only SOURCE_IP_PORT.
	// Type: one of ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP, SOURCE_IP_PORT
	// Default: the cloud.conf [LoadBalancer] lb-method (ROUND_ROBIN)
	OpenStackLBMethod Name = "loadbalancer.openstack.org/lb-method"

	// OpenStackProxyProtocol makes the pools send a PROXY protocol header to the nodes,
	// so that the backends learn the client's address; the Service status then reports
	// ipMode Proxy. It cannot be combined with x-forwarded-for, and the OVN provider
	// does not support it.
	// Type: "true" (same as "v1"), "v1", "v2" or "false"
	// Default: false
	OpenStackProxyProtocol Name = "loadbalancer.openstack.org/proxy-protocol"

	// OpenStackXForwardedFor turns the listeners into HTTP listeners that add an
	// X-Forwarded-For header with the client's address (TERMINATED_HTTPS listeners
	// when default-tls-container-ref is set). It cannot be combined with proxy-protocol,
	// and the OVN provider does not support it.
	// Type: boolean
	// Default: false
	OpenStackXForwardedFor Name = "loadbalancer.openstack.org/x-forwarded-for"

	// OpenStackTimeoutClientData is how long a listener keeps an idle client
	// connection open. The OVN provider ignores it.
	// Type: integer milliseconds (0 to 31536000000)
	// Default: 50000
	OpenStackTimeoutClientData Name = "loadbalancer.openstack.org/timeout-client-data"

	// OpenStackTimeoutMemberConnect is how long the load balancer waits for a
	// connection to a node to be established. The OVN provider ignores it.
	// Type: integer milliseconds (0 to 31536000000)
	// Default: 5000
	OpenStackTimeoutMemberConnect Name = "loadbalancer.openstack.org/timeout-member-connect"

	// OpenStackTimeoutMemberData is how long the load balancer keeps an idle
	// connection to a node open. The OVN provider ignores it.
	// Type: integer milliseconds (0 to 31536000000)
	// Default: 50000
	OpenStackTimeoutMemberData Name = "loadbalancer.openstack.org/timeout-member-data"

	// OpenStackTimeoutTCPInspect is how long a listener waits for more TCP data to
	// inspect the content of a connection. The OVN provider ignores it.
	// Type: integer milliseconds (0 to 31536000000)
	// Default: 0
	OpenStackTimeoutTCPInspect Name = "loadbalancer.openstack.org/timeout-tcp-inspect"

	// OpenStackDefaultTLSContainerRef makes the TCP listeners (those of tls-ports
	// when set) TERMINATED_HTTPS listeners with this certificate, their pools
	// HTTP (PROXY with proxy-protocol): the URL of a Barbican certificate
	// container or PKCS12 secret, such as https://barbican.example:9311/v1/containers/
	// followed by its UUID, checked in Barbican before anything is built; or any
	// reference when the cloud.conf [LoadBalancer] container-store is "external".
	// Type: string
	// Default: the cloud.conf [LoadBalancer] default-tls-container-ref, else no TLS
	OpenStackDefaultTLSContainerRef Name = "loadbalancer.openstack.org/default-tls-container-ref"

	// OpenStackTLSSecret (an Overcast extension) terminates TLS with the
	// certificate and key of a kubernetes.io/tls Secret of the Service's own
	// namespace: Overcast stores them in Barbican (a certificate container of
	// its own), replaces them when the Secret changes and deletes them with the
	// Service. It replaces default-tls-container-ref; the ports are chosen as
	// with it.
	// Type: the name of a Secret in the Service's namespace
	// Default: none
	OpenStackTLSSecret Name = "overcast.io/tls-secret"

	// OpenStackTLSPorts (an Overcast extension) names the ports that terminate
	// TLS (default-tls-container-ref or tls-secret); the others stay plain TCP.
	// Type: comma-separated TCP port numbers of the Service
	// Default: every TCP port of the Service
	OpenStackTLSPorts Name = "overcast.io/tls-ports"

	// OpenStackEnableHealthMonitor adds a health monitor to each pool, so that nodes
	// that fail it get no traffic. Services with externalTrafficPolicy Local need one;
	// it probes their healthCheckNodePort.
	// Type: boolean
	// Default: the cloud.conf [LoadBalancer] create-monitor (false)
	OpenStackEnableHealthMonitor Name = "loadbalancer.openstack.org/enable-health-monitor"

	// OpenStackHealthMonitorDelay is the time between two probes of a node.
	// Type: whole seconds such as "5", or a duration of whole seconds such as "5s"
	//   (1s to 24h)
	// Default: the cloud.conf [LoadBalancer] monitor-delay (5s)
	OpenStackHealthMonitorDelay Name = "loadbalancer.openstack.org/health-monitor-delay"

	// OpenStackHealthMonitorTimeout is how long a probe may take before it counts as
	// failed. It must not exceed the delay.
	// Type: whole seconds such as "3", or a duration of whole seconds such as "3s"
	//   (1s to 24h)
	// Default: the cloud.conf [LoadBalancer] monitor-timeout (3s)
	OpenStackHealthMonitorTimeout Name = "loadbalancer.openstack.org/health-monitor-timeout"

	// OpenStackHealthMonitorMaxRetries is how many probes in a row must pass before a
	// node counts as healthy.
	// Type: integer (1 to 10)
	// Default: the cloud.conf [LoadBalancer] monitor-max-retries (1)
	OpenStackHealthMonitorMaxRetries Name = "loadbalancer.openstack.org/health-monitor-max-retries"

	// OpenStackHealthMonitorMaxRetriesDown is how many probes in a row must fail before
	// a node counts as unhealthy.
	// Type: integer (1 to 10)
	// Default: the cloud.conf [LoadBalancer] monitor-max-retries-down (3)
	OpenStackHealthMonitorMaxRetriesDown Name = "loadbalancer.openstack.org/health-monitor-max-retries-down"

	// OpenStackNodeSelector limits the pool members to the nodes that carry these
	// labels: "key=value" requires that value, a bare "key" (or "key=") only the label.
	// An empty value selects every node, whatever the cloud.conf says.
	// Type: comma-separated list of key or key=value
	// Default: the cloud.conf [LoadBalancer] node-selector, else every node
	OpenStackNodeSelector Name = "loadbalancer.openstack.org/node-selector"

	// OpenStackClass names a [LoadBalancerClass "name"] section of the cloud.conf whose
	// network choices (floating network and subnet, VIP network and subnet, member
	// subnet) win over the matching annotations.
	// Type: string
	// Default: no class
	OpenStackClass Name = "loadbalancer.openstack.org/class"

	// OpenStackFlavorID is the Octavia flavor the load balancer is created with. The
	// OVN provider ignores it.
	// Type: Octavia flavor UUID
	// Default: the cloud.conf [LoadBalancer] flavor-id, else Octavia's default flavor
	OpenStackFlavorID Name = "loadbalancer.openstack.org/flavor-id"

	// OpenStackAvailabilityZone is the Octavia availability zone the load balancer is
	// created in (Octavia API 2.14 or later).
	// Type: string
	// Default: the cloud.conf [LoadBalancer] availability-zone, else Octavia's choice
	OpenStackAvailabilityZone Name = "loadbalancer.openstack.org/availability-zone"

	// OpenStackHostname puts this DNS name into the Service status instead of the
	// load balancer's address (see load-balancer-address). Useful with PROXY protocol,
	// where a hostname keeps kube-proxy from short-circuiting in-cluster traffic.
	// Type: DNS name
	// Default: the address; with PROXY protocol and the cloud.conf [LoadBalancer]
	//   enable-ingress-hostname, the address followed by the ingress-hostname-suffix
	OpenStackHostname Name = "loadbalancer.openstack.org/hostname"

	// OpenStackLoadBalancerID names an existing Octavia load balancer for the
	// Service to share: it gets listeners of its own there (tagged with its UID
	// and name) and only those are ever changed or deleted. Every Service on a
	// load balancer is named in its tags, as cloud-provider-openstack does, up to
	// [LoadBalancer] max-shared-lb; a port another Service holds, or an internal
	// Service, is refused with a Warning and nothing is built. The last Service on
	// a load balancer this cluster made deletes it; one a person made is never
	// deleted. Naming the load balancer cloud-provider-openstack made for this
	// very Service (it writes this annotation on every Service) takes it over as
	// it is. Overcast finds the load balancers it creates by their tags, so it
	// does not write this annotation. The annotations that shape a new load
	// balancer (subnet, flavor, availability zone) have no effect on a shared one.
	// Type: Octavia load balancer UUID
	// Default: a load balancer of the Service's own
	OpenStackLoadBalancerID Name = "loadbalancer.openstack.org/load-balancer-id"

	// OpenStackConverged is written by the CCM, not read from users: the Octavia
	// load balancer and a fingerprint of the Service's spec it was last converged
	// to. While it matches, a resync checks the load balancer with two reads
	// instead of walking its listeners, pools, members and monitors (a full walk
	// still happens once an hour). Removing it only forces a full walk.
	// A change of Nodes alone changes only the members' part of the
	// fingerprint, and is made by updating the pools' members alone.
	// Type: load balancer UUID "/" fingerprint of the configuration "." fingerprint of the members
	// Default: set by the CCM
	OpenStackConverged Name = "overcast.io/openstack-converged"

	// OpenStackInternalLoadBalancer keeps the load balancer private: no floating IP is
	// attached, and the Service status shows the VIP.
	// Type: boolean
	// Default: the cloud.conf [LoadBalancer] internal-lb (false)
	OpenStackInternalLoadBalancer Name = "service.beta.kubernetes.io/openstack-internal-load-balancer"

	// OpenStackPublishOnlyPublicAddress is an Overcast extension. With "true" the
	// Service status of a public load balancer shows only its floating IP, as
	// cloud-provider-openstack does; with "false" the VIP follows it, for clients
	// inside the OpenStack network.
	// Type: boolean
	// Default: the cloud.conf [LoadBalancer] publish-only-public-address (true)
	OpenStackPublishOnlyPublicAddress Name = "loadbalancer.openstack.org/publish-only-public-address"
)
