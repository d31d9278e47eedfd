package osapi

// LoadBalancerCreate is what a load balancer is created with: bare (step by step),
// or fully populated with its listeners, each with its pool, members and
// health monitor. An unset field is not sent.
type LoadBalancerCreate struct {
	Name, Description                                string
	VipSubnetID, VipNetworkID, VipPortID, VipAddress string
	Provider, FlavorID, AvailabilityZone             string
	Tags                                             []string
	// AdditionalVips: a dual-stack load balancer's VIP of the other family.
	AdditionalVips []AdditionalVIP
	Listeners      []ListenerCreate
}

// Subnet is the part of a Neutron subnet the CCM reads.
type Subnet struct {
	ID, Name, NetworkID, CIDR string
	Tags                      []string
}

// SubnetQuery is which subnets to list ("", 0: any).
type SubnetQuery struct {
	NetworkID string
	IPVersion int
}

// FloatingIP is the part of a Neutron floating IP the CCM reads.
type FloatingIP struct {
	ID, FloatingIP    string // its id and address
	PortID            string // the port it is on, "" when free
	FloatingNetworkID string
	Description       string // whose it is (fipDescription)
}

// FloatingIPCreate is what a floating IP is allocated with: from
// FloatingNetworkID (on SubnetID, at the address FloatingIP when set), on
// PortID. An unset field is not sent.
type FloatingIPCreate struct {
	FloatingNetworkID, SubnetID, FloatingIP string
	PortID, Description                     string
}

// FloatingIPQuery is which floating IPs to list ("": any).
type FloatingIPQuery struct{ FloatingIP, Description, PortID string }

// Server is the part of a Nova server the CCM uses.
type Server struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Flavor struct {
		ID           string `json:"id"`
		OriginalName string `json:"original_name"`
	} `json:"flavor"`
	AvailabilityZone string                     `json:"OS-EXT-AZ:availability_zone"`
	Addresses        map[string][]ServerAddress `json:"addresses"`
	AccessIPv4       string                     `json:"accessIPv4"`
	AccessIPv6       string                     `json:"accessIPv6"`
	Updated          string                     `json:"updated"`
}

// Listener is the part of an Octavia listener the CCM reads.
type Listener struct {
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

// Monitor is the part of a health monitor the CCM compares.
type Monitor struct {
	ID, Name, Type                             string
	Delay, Timeout, MaxRetries, MaxRetriesDown int
	HTTPMethod, URLPath, ExpectedCodes         string
}

// Pool is the part of an Octavia pool the CCM reads.
type Pool struct {
	ID, Name           string
	Protocol, LBMethod string
	MonitorID          string // its health monitor's, "" with none
	// Listeners and Members name the listeners using it and its members.
	Listeners, Members []ObjectRef
}

// ListenerCreate is what a listener is created with: on its own
// (LoadBalancerID, and the pool it takes over by DefaultPoolID), or in a
// fully populated load balancer (with its DefaultPool). An unset field is
// not sent.
type ListenerCreate struct {
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
	DefaultPool            *PoolCreate
	Tags                   []string
}

// ListenerUpdate is what converge changes of a listener in place; nil is
// left as it is (a pointer to an empty AllowedCIDRs clears them).
type ListenerUpdate struct {
	InsertHeaders          *map[string]string
	AllowedCIDRs           *[]string
	ConnLimit              *int
	DefaultTLSContainerRef *string
	// The timeouts, in milliseconds.
	TimeoutClientData, TimeoutMemberConnect, TimeoutMemberData, TimeoutTCPInspect *int
}

// MonitorCreate is what a health monitor is created with (for PoolID, or in
// a fully populated load balancer).
type MonitorCreate struct {
	PoolID, Name, Type                         string
	Delay, Timeout, MaxRetries, MaxRetriesDown int
	HTTPMethod, URLPath, ExpectedCodes         string
}

// MonitorUpdate is what converge changes of a health monitor (a zero is
// not sent).
type MonitorUpdate struct {
	Delay, Timeout, MaxRetries, MaxRetriesDown int
	URLPath                                    string
	// HTTPMethod, ExpectedCodes: sent only when they differ.
	HTTPMethod, ExpectedCodes string
}

// PoolCreate is what a pool is created with: for a listener (ListenerID),
// or in a fully populated load balancer with its members and monitor.
type PoolCreate struct {
	ListenerID, Name   string
	Protocol, LBMethod string
	Members            []PoolMember
	Monitor            *MonitorCreate
}

// PoolMember is a pool's member as the CCM writes it: created with its
// pool, or in a batch update of all of them.
type PoolMember struct {
	Address      string
	ProtocolPort int
	SubnetID     string // "": Octavia's choice (the VIP's subnet)
	MonitorPort  *int   // nil: its ProtocolPort
}

// PoolUpdate is what converge changes of a pool ("": not sent).
type PoolUpdate struct {
	LBMethod string
}

// The fields of Neutron's ports, networks and trunks that make the servers'
// addresses; each list asks Neutron for these only.

// Port is a port: whose (its device), on which network, at which addresses.
type Port struct {
	ID          string    `json:"id"`
	DeviceID    string    `json:"device_id"`
	DeviceOwner string    `json:"device_owner"`
	NetworkID   string    `json:"network_id"`
	FixedIPs    []FixedIP `json:"fixed_ips"`
}

// FixedIP is one of a port's addresses.
type FixedIP struct {
	IPAddress string `json:"ip_address"`
}

// Network is a network's id and name.
type Network struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Trunk is a trunk's parent port and its sub-ports.
type Trunk struct {
	PortID   string `json:"port_id"`
	Subports []struct {
		PortID string `json:"port_id"`
	} `json:"sub_ports"`
}

// Route is one of the router's extraroutes.
type Route struct{ Destination, NextHop string }

// RuleKey identifies a rule as it is compared: what it lets in.
type RuleKey struct {
	Ether, Proto, Remote string
	Min, Max             int
}

// PortGroups is a port as last read or written.
type PortGroups struct {
	ID       string
	Groups   []string
	Revision int
}

// PortView are the fields of a port the placement reads.
type PortView struct {
	ID             string   `json:"id"`
	DeviceID       string   `json:"device_id"`
	SecurityGroups []string `json:"security_groups"`
	PortSecurity   *bool    `json:"port_security_enabled"`
	Revision       int      `json:"revision_number"`
	FixedIPs       []struct {
		IPAddress string `json:"ip_address"`
	} `json:"fixed_ips"`
}

// ServerAddress is one entry of a server's "addresses" map.
type ServerAddress struct {
	Addr    string `json:"addr"`
	Version int    `json:"version"`
	Type    string `json:"OS-EXT-IPS:type"` // fixed or floating
}
