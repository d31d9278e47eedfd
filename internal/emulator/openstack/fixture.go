package openstack

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Fixture describes the objects New creates: one domain "default", one
// project, a user with a password, an application credential of that user,
// networks, a router, flavors and an image.
type Fixture struct {
	ProjectID, UserName, UserID, Password string
	AppCredentialID, AppCredentialSecret  string
	// NetworkID and SubnetID: the tenant network "private", subnet 10.0.0.0/24.
	NetworkID, SubnetID string
	// PublicNetworkID, PublicSubnetID: the external network "public"
	// (router:external=true), subnet 203.0.113.0/24; floating IPs come from
	// 203.0.113.10-203.0.113.250 (the router's gateway takes the first).
	PublicNetworkID, PublicSubnetID string
	// RouterID: the router on the private subnet (10.0.0.1), gateway on public.
	RouterID string
	// FlavorID and FlavorName: "2", "m1.small".
	FlavorID, FlavorName string
	ImageID              string
	AvailabilityZone     string // "nova"
}

// Fixture returns the ids and credentials of the fixture.
func (e *Emulator) Fixture() Fixture {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fx
}

// CloudConf returns an OCCM-style cloud.conf pointing at the emulator (at
// URL(), so Start it first).
func (e *Emulator) CloudConf() string { return e.cloudConf(e.URL()) }

func (e *Emulator) cloudConf(base string) string {
	fx := e.Fixture()
	return fmt.Sprintf(`[Global]
auth-url=%s/identity/v3
application-credential-id=%s
application-credential-secret=%s
region=%s

[LoadBalancer]
subnet-id=%s
floating-network-id=%s

[Route]
router-id=%s
`, base, fx.AppCredentialID, fx.AppCredentialSecret, e.opts.Region, fx.SubnetID, fx.PublicNetworkID, fx.RouterID)
}

func (e *Emulator) hexID() string { return strings.ReplaceAll(e.newID(), "-", "") }

// seedFixture creates the fixture; call with mu held.
func (e *Emulator) seedFixture() {
	now := e.clock()
	fx := &e.fx
	fx.ProjectID = e.hexID()
	e.projectName = "demo"
	fx.UserID, fx.UserName, fx.Password = e.hexID(), "demo", "secret-"+e.hexID()[:12]
	e.users[fx.UserID] = &user{ID: fx.UserID, Name: fx.UserName, Password: fx.Password, DefaultProjectID: fx.ProjectID}
	fx.AppCredentialID, fx.AppCredentialSecret = e.hexID(), "appcred-"+e.hexID()
	e.appCreds[fx.AppCredentialID] = &appCred{ID: fx.AppCredentialID, Name: "overcast", Secret: fx.AppCredentialSecret,
		UserID: fx.UserID, ProjectID: fx.ProjectID}

	for _, f := range []flavor{
		{ID: "1", Name: "m1.tiny", VCPUs: 1, RAM: 512, Disk: 1},
		{ID: "2", Name: "m1.small", VCPUs: 1, RAM: 2048, Disk: 20},
		{ID: "3", Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 40},
		{ID: "4", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 80},
	} {
		e.flavors.Add(f.ID, &f)
	}
	fx.FlavorID, fx.FlavorName = "2", "m1.small"
	fx.ImageID = e.newID()
	e.images[fx.ImageID] = "cirros-0.6.2-x86_64-disk"
	fx.AvailabilityZone = "nova"

	sg := &secGroup{ID: e.newID(), Name: "default", Description: "Default security group", Stateful: true, neutronStd: e.std(now)}
	e.secGroups.Add(sg.ID, sg)
	e.defaultSG = sg.ID
	for _, et := range []string{"IPv4", "IPv6"} {
		e.addSGRule(sg.ID, "egress", et, now)
		ru := &sgRule{ID: e.newID(), SecurityGroupID: sg.ID, Direction: "ingress", EtherType: et,
			RemoteGroupID: &sg.ID, neutronStd: e.std(now)}
		e.sgRules.Add(ru.ID, ru)
	}

	pub := e.addNetwork("public", true, 1500, now)
	var pubSub *subnet
	if e.opts.PublicCIDR == "" {
		pubSub = e.addSubnet(pub, "public-subnet", "203.0.113.0/24", "203.0.113.1",
			[][2]string{{"203.0.113.10", "203.0.113.250"}}, false, now)
	} else {
		p := mustIPv4Prefix("PublicCIDR", e.opts.PublicCIDR)
		base, last := ip4(p.Addr()), ip4(p.Addr())+uint32(1)<<(32-p.Bits())-1
		pubSub = e.addSubnet(pub, "public-subnet", p.String(), addr4(base+1).String(),
			[][2]string{{addr4(base + 10).String(), addr4(last - 1).String()}}, false, now)
	}
	priv := e.addNetwork("private", false, 1450, now)
	cidr := netip.MustParsePrefix("10.0.0.0/24")
	if e.opts.PrivateCIDR != "" {
		cidr = mustIPv4Prefix("PrivateCIDR", e.opts.PrivateCIDR)
	}
	base, last := ip4(cidr.Addr()), ip4(cidr.Addr())+uint32(1)<<(32-cidr.Bits())-1
	privSub := e.addSubnet(priv, "private-subnet", cidr.String(), addr4(base+1).String(),
		[][2]string{{addr4(base + 2).String(), addr4(last - 1).String()}}, true, now)
	fx.PublicNetworkID, fx.PublicSubnetID = pub.ID, pubSub.ID
	fx.NetworkID, fx.SubnetID = priv.ID, privSub.ID

	rt := &router{ID: e.newID(), Name: "router1", AdminStateUp: true, GatewayNetworkID: pub.ID, neutronStd: e.std(now)}
	gw, aerr := e.createPort(portSpec{NetworkID: pub.ID, DeviceID: rt.ID, DeviceOwner: ownerRouterGateway, AdminStateUp: true}, now)
	if aerr != nil {
		panic(aerr)
	}
	rt.GatewayIPs = gw.FixedIPs
	e.routers.Add(rt.ID, rt)
	e.attachInterface(rt, privSub, now)
	fx.RouterID = rt.ID
}

func (e *Emulator) addNetwork(name string, external bool, mtu int, now time.Time) *network {
	n := &network{ID: e.newID(), Name: name, AdminStateUp: true, Status: "ACTIVE", Subnets: []string{},
		External: external, MTU: mtu, PortSecurity: true, AZs: []string{"nova"}, neutronStd: e.std(now)}
	e.networks.Add(n.ID, n)
	return n
}

func (e *Emulator) addSubnet(n *network, name, cidr, gateway string, pools [][2]string, dhcp bool, now time.Time) *subnet {
	prefix := netip.MustParsePrefix(cidr)
	var ranges [][2]netip.Addr
	var ap []allocPool
	for _, p := range pools {
		ranges = append(ranges, [2]netip.Addr{netip.MustParseAddr(p[0]), netip.MustParseAddr(p[1])})
		ap = append(ap, allocPool{Start: p[0], End: p[1]})
	}
	version := 4
	if prefix.Addr().Is6() {
		version = 6
	}
	s := &subnet{ID: e.newID(), Name: name, NetworkID: n.ID, CIDR: cidr, IPVersion: version, GatewayIP: gateway,
		AllocationPools: ap, EnableDHCP: dhcp, DNSNameservers: []string{}, HostRoutes: []any{},
		ServiceTypes: []string{}, neutronStd: e.std(now), ipam: newIPAM(prefix, ranges)}
	if gateway != "" {
		s.ipam.claim(netip.MustParseAddr(gateway)) // the gateway is never handed out
	}
	e.subnets.Add(s.ID, s)
	n.Subnets = with(n.Subnets, s.ID)
	n.touch(now)
	return s
}

// attachInterface connects a subnet to a router with a port on the subnet's
// gateway address.
func (e *Emulator) attachInterface(rt *router, s *subnet, now time.Time) {
	p := &port{ID: e.newID(), NetworkID: s.NetworkID, AdminStateUp: true, MACAddress: e.newMAC(),
		FixedIPs: []fixedIP{{SubnetID: s.ID, IPAddress: s.GatewayIP}}, DeviceID: rt.ID, DeviceOwner: ownerRouterInterface,
		SecurityGroups: []string{}, AllowedAddressPairs: []addressPair{}, PortSecurity: true, VNICType: "normal",
		Status: "ACTIVE", neutronStd: e.std(now)}
	e.ports.Add(p.ID, p)
	e.indexPortDevice(p.ID, "", rt.ID)
	rt.Interfaces = with(rt.Interfaces, s.ID)
}

// addOverflowSubnet adds a /24 to a full network so that direct AddServer
// calls never run out of addresses (see the package documentation).
func (e *Emulator) addOverflowSubnet(networkID string, now time.Time) {
	n, _ := e.networks.Get(networkID)
	e.overflow[networkID]++
	k := e.overflow[networkID]
	first, _ := e.subnets.Get(n.Subnets[0])
	bits := first.ipam.prefix.Bits()
	size := uint32(1) << (32 - bits)
	// 10.0.0.0/24 -> 10.0.1.0/24, 10.0.2.0/24, ... (and on into the next /16);
	// a bigger first subnet is followed by ones of its size.
	u := ip4(first.ipam.prefix.Addr()) + uint32(k)*size
	cidr := netip.PrefixFrom(addr4(u), bits).String()
	gw, lo, hi := addr4(u+1).String(), addr4(u+2).String(), addr4(u+size-2).String()
	s := e.addSubnet(n, fmt.Sprintf("%s-overflow-%d", n.Name, k), cidr, gw, [][2]string{{lo, hi}}, true, now)
	for _, rt := range e.routers.All() {
		if has(rt.Interfaces, first.ID) {
			e.attachInterface(rt, s, now)
		}
	}
}

// ServerSpec describes a server for AddServer.
type ServerSpec struct {
	Name             string // default "server-<n>"
	FlavorID         string // default the fixture's flavor
	AvailabilityZone string // default "nova"
	NetworkID        string // default the private network
	Status           string // default ACTIVE
}

// AddServer creates a server directly (no HTTP, not counted) with a port
// and fixed IP on its network, and returns its id and address. When the
// network is full an overflow subnet is added. An unknown flavor or network
// panics: it is a bug in the caller.
func (e *Emulator) AddServer(s ServerSpec) (id string, fixedIP string) {
	now := e.lock()
	defer e.mu.Unlock()
	if s.FlavorID == "" {
		s.FlavorID = e.fx.FlavorID
	}
	if _, ok := e.flavors.Get(s.FlavorID); !ok {
		panic("openstack emulator: AddServer: unknown flavor " + s.FlavorID)
	}
	if s.NetworkID == "" {
		s.NetworkID = e.fx.NetworkID
	}
	if _, ok := e.networks.Get(s.NetworkID); !ok {
		panic("openstack emulator: AddServer: unknown network " + s.NetworkID)
	}
	if s.AvailabilityZone == "" {
		s.AvailabilityZone = e.fx.AvailabilityZone
	}
	if s.Status == "" {
		s.Status = "ACTIVE"
	}
	if s.Name == "" {
		s.Name = fmt.Sprintf("server-%d", e.servers.Len()+1)
	}
	srv := &server{ID: e.newID(), Name: s.Name, Status: strings.ToUpper(s.Status), FlavorID: s.FlavorID,
		ImageID: e.fx.ImageID, AZ: s.AvailabilityZone, UserID: e.fx.UserID, HostID: hostID(e.fx.ProjectID),
		Created: now, Updated: now, Metadata: map[string]string{}, Tags: []string{}}
	_ = e.addServer(srv, []string{s.NetworkID}, true, now)
	for _, pid := range e.portsByDev[srv.ID] {
		if p, ok := e.ports.Get(pid); ok && len(p.FixedIPs) > 0 {
			return srv.ID, p.FixedIPs[0].IPAddress
		}
	}
	return srv.ID, ""
}

// SetServerStatus sets a server's status (ACTIVE, SHUTOFF, ERROR, ...).
func (e *Emulator) SetServerStatus(id, status string) error {
	now := e.lock()
	defer e.mu.Unlock()
	s, ok := e.server(id)
	if !ok {
		return fmt.Errorf("server %s: %w", id, ErrNotFound)
	}
	if status == "" {
		return fmt.Errorf("server %s: empty status", id)
	}
	s.Status = strings.ToUpper(status)
	s.Updated = now
	return nil
}

// RemoveServer deletes a server and its ports.
func (e *Emulator) RemoveServer(id string) error {
	now := e.lock()
	defer e.mu.Unlock()
	if !e.removeServer(id, now) {
		return fmt.Errorf("server %s: %w", id, ErrNotFound)
	}
	return nil
}

// mustIPv4Prefix parses an Options CIDR: IPv4, /8 to /24. Anything else is a bug
// in the caller.
func mustIPv4Prefix(option, v string) netip.Prefix {
	p, err := netip.ParsePrefix(v)
	if err != nil || !p.Addr().Is4() || p.Bits() < 8 || p.Bits() > 24 {
		panic("openstack emulator: Options." + option + " must be an IPv4 prefix of /8 to /24, got " + v)
	}
	return p.Masked()
}
