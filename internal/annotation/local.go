package annotation

// The reference page, by make generate.
//go:generate go run ../../hack/gen-annotation-docs -pkg . -cloud local -prefix Local -title "local cloud" -out ../../docs/reference/local-annotations.md

// Annotations of the local cloud (--cloud-provider=local).
const (
	// LocalPool names the address pool the Service's IP is taken from. The pool must
	// exist in the cloud config and be open to the Service's namespace.
	// Type: string
	// Default: the pools reserved for the namespace first, then the global pools
	LocalPool Name = "local.overcast.io/pool"

	// LocalLoadBalancerIP asks for a specific IP. It must lie in a pool open to the
	// Service and be free (or shareable, see allow-shared-ip). It takes precedence over
	// the deprecated spec.loadBalancerIP, which is honoured too.
	// Type: IP address
	// Default: the lowest free address of the first pool that has one
	LocalLoadBalancerIP Name = "local.overcast.io/load-balancer-ip"

	// LocalAllowSharedIP opts the Service into sharing its IP with other Services that
	// carry the same key, as long as no two of them use the same protocol and port.
	// Type: string
	// Default: not shared
	LocalAllowSharedIP Name = "local.overcast.io/allow-shared-ip"

	// LocalHealthCheckInterval is how often the proxy probes each backend node.
	// Type: duration (1s to 5m)
	// Default: the cloud config's loadBalancer.healthCheck.interval (2s)
	LocalHealthCheckInterval Name = "local.overcast.io/health-check-interval"

	// LocalUDPIdleTimeout is how long a UDP flow through the proxy lives without packets.
	// Type: duration (1s to 1h)
	// Default: the cloud config's loadBalancer.udpIdleTimeout (60s)
	LocalUDPIdleTimeout Name = "local.overcast.io/udp-idle-timeout"
)
