package openstack

// lbCreate is what a load balancer is created with: bare (step by step),
// or fully populated with its listeners, each with its pool, members and
// health monitor. An unset field is not sent.
type lbCreate struct {
	Name, Description                                string
	VipSubnetID, VipNetworkID, VipPortID, VipAddress string
	Provider, FlavorID, AvailabilityZone             string
	Tags                                             []string
	// AdditionalVips: a dual-stack load balancer's VIP of the other family.
	AdditionalVips []additionalVIP
	Listeners      []listenerCreate
}

// subnet is the part of a Neutron subnet the CCM reads.
type subnet struct {
	ID, Name, NetworkID, CIDR string
	Tags                      []string
}

// subnetQuery is which subnets to list ("", 0: any).
type subnetQuery struct {
	NetworkID string
	IPVersion int
}

// floatingIP is the part of a Neutron floating IP the CCM reads.
type floatingIP struct {
	ID, FloatingIP    string // its id and address
	PortID            string // the port it is on, "" when free
	FloatingNetworkID string
	Description       string // whose it is (fipDescription)
}

// floatingIPCreate is what a floating IP is allocated with: from
// FloatingNetworkID (on SubnetID, at the address FloatingIP when set), on
// PortID. An unset field is not sent.
type floatingIPCreate struct {
	FloatingNetworkID, SubnetID, FloatingIP string
	PortID, Description                     string
}

// floatingIPQuery is which floating IPs to list ("": any).
type floatingIPQuery struct{ FloatingIP, Description, PortID string }

// server is the part of a Nova server the CCM uses.
type server struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Flavor struct {
		ID           string `json:"id"`
		OriginalName string `json:"original_name"`
	} `json:"flavor"`
	AvailabilityZone string                   `json:"OS-EXT-AZ:availability_zone"`
	Addresses        map[string][]novaAddress `json:"addresses"`
	AccessIPv4       string                   `json:"accessIPv4"`
	AccessIPv6       string                   `json:"accessIPv6"`
	Updated          string                   `json:"updated"`
}

// lbListener is the part of an Octavia listener the CCM reads.
type lbListener struct {
	ID, Name               string
	Protocol               string
	ProtocolPort           int
	DefaultPoolID          string
	DefaultTLSContainerRef string
	AllowedCIDRs           []string
	ConnLimit              int
	// The timeouts, in milliseconds.
	TimeoutClientData, TimeoutMemberConnect, TimeoutMemberData, TimeoutTCPInspect int
	// Tags name the Service the listener is for (sharing.go).
	Tags          []string
	InsertHeaders map[string]string
}

// lbMonitor is the part of a health monitor the CCM compares.
type lbMonitor struct {
	ID, Name, Type                             string
	Delay, Timeout, MaxRetries, MaxRetriesDown int
	HTTPMethod, URLPath, ExpectedCodes         string
}

// lbPool is the part of an Octavia pool the CCM reads.
type lbPool struct {
	ID, Name           string
	Protocol, LBMethod string
	MonitorID          string // its health monitor's, "" with none
	// Listeners and Members name the listeners using it and its members.
	Listeners, Members []objectRef
}

// listenerCreate is what a listener is created with: on its own
// (LoadBalancerID, and the pool it takes over by DefaultPoolID), or in a
// fully populated load balancer (with its DefaultPool). An unset field is
// not sent.
type listenerCreate struct {
	LoadBalancerID, Name string
	Protocol             string
	ProtocolPort         int
	AllowedCIDRs         []string
	ConnLimit            *int
	// The timeouts, in milliseconds; nil: Octavia's default.
	TimeoutClientData, TimeoutMemberConnect, TimeoutMemberData, TimeoutTCPInspect *int
	// InsertHeaders: X-Forwarded-For, on an HTTP listener.
	InsertHeaders          map[string]string
	DefaultTLSContainerRef string
	DefaultPoolID          string
	DefaultPool            *poolCreate
	Tags                   []string
}

// listenerUpdate is what converge changes of a listener in place; nil is
// left as it is (a pointer to an empty AllowedCIDRs clears them).
type listenerUpdate struct {
	InsertHeaders          *map[string]string
	AllowedCIDRs           *[]string
	ConnLimit              *int
	DefaultTLSContainerRef *string
	// The timeouts, in milliseconds.
	TimeoutClientData, TimeoutMemberConnect, TimeoutMemberData, TimeoutTCPInspect *int
}

// monitorCreate is what a health monitor is created with (for PoolID, or in
// a fully populated load balancer).
type monitorCreate struct {
	PoolID, Name, Type                         string
	Delay, Timeout, MaxRetries, MaxRetriesDown int
	HTTPMethod, URLPath, ExpectedCodes         string
}

// monitorUpdate is what converge changes of a health monitor (a zero is
// not sent).
type monitorUpdate struct {
	Delay, Timeout, MaxRetries, MaxRetriesDown int
	URLPath                                    string
	// HTTPMethod, ExpectedCodes: sent only when they differ.
	HTTPMethod, ExpectedCodes string
}

// poolCreate is what a pool is created with: for a listener (ListenerID),
// or in a fully populated load balancer with its members and monitor.
type poolCreate struct {
	ListenerID, Name   string
	Protocol, LBMethod string
	Members            []poolMember
	Monitor            *monitorCreate
}

// poolMember is a pool's member as the CCM writes it: created with its
// pool, or in a batch update of all of them.
type poolMember struct {
	Address      string
	ProtocolPort int
	SubnetID     string // "": Octavia's choice (the VIP's subnet)
	MonitorPort  *int   // nil: its ProtocolPort
}

// poolUpdate is what converge changes of a pool ("": not sent).
type poolUpdate struct {
	LBMethod string
}

// The fields of Neutron's ports, networks and trunks that make the servers'
// addresses; each list asks Neutron for these only.
type (
	leanPort struct {
		ID          string        `json:"id"`
		DeviceID    string        `json:"device_id"`
		DeviceOwner string        `json:"device_owner"`
		NetworkID   string        `json:"network_id"`
		FixedIPs    []leanFixedIP `json:"fixed_ips"`
	}
	leanFixedIP struct {
		IPAddress string `json:"ip_address"`
	}
	leanNetwork struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	leanTrunk struct {
		PortID   string `json:"port_id"`
		Subports []struct {
			PortID string `json:"port_id"`
		} `json:"sub_ports"`
	}
)

// extraRoute is one of the router's extraroutes.
type extraRoute struct{ destination, nextHop string }

// sgRuleKey identifies a rule as it is compared: what it lets in.
type sgRuleKey struct {
	ether, proto, remote string
	min, max             int
}

// sgKnownPort is a port as last read or written.
type sgKnownPort struct {
	id       string
	groups   []string
	revision int
}

// sgPortFields are the fields of a port the placement reads.
type sgPortView struct {
	ID             string   `json:"id"`
	DeviceID       string   `json:"device_id"`
	SecurityGroups []string `json:"security_groups"`
	PortSecurity   *bool    `json:"port_security_enabled"`
	Revision       int      `json:"revision_number"`
	FixedIPs       []struct {
		IPAddress string `json:"ip_address"`
	} `json:"fixed_ips"`
}

// novaAddress is one entry of a server's "addresses" map.
type novaAddress struct {
	Addr    string `json:"addr"`
	Version int    `json:"version"`
	Type    string `json:"OS-EXT-IPS:type"` // fixed or floating
}
