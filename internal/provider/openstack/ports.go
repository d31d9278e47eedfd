package openstack

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// portAddressesMaxAge is how old the Neutron view of the servers' addresses may
// get. One refresh is four paged lists (ports, floating IPs, networks, trunks)
// for the whole project. The Node controller asks for every Node's addresses
// once per --node-status-update-frequency (5 min by default, the next pass
// starting 5 min after the last one ended). A bound of 5 min would meet that
// period head on, and milliseconds (how long a pass or a fetch takes) would
// decide between a refresh every pass and every other pass. 9.5 min, counted
// from the start of the fetch, decides it clearly: every other pass, whatever a
// pass takes up to 4.5 min, so a 10-minute cadence and 6 refreshes an hour. A new
// server is served from Nova's addresses meanwhile, so no new Node waits.
const portAddressesMaxAge = 9*time.Minute + 30*time.Second

// addressFIPsMaxAge is how old the listing of floating IPs the servers'
// addresses are read with may be: the drift pass lists them every 3 minutes
// (its default period) while there are Services, so that the addresses'
// refresh adds no listing of its own then, and each kind is listed once a
// period.
const addressFIPsMaxAge = 5 * time.Minute

// portAddresses is the servers' addresses as Neutron has them: the fixed IPs of
// every port a server owns (trunk subports included), by network name, with the
// floating IPs on them. A server it does not know yet (a new one) is served from
// Nova's addresses instead, so a new Node never waits for it.
type portAddresses struct {
	api osapi.API
	// floatingIPs lists the project's floating IPs, from a listing at most
	// the age given old (the Cloud's shared one).
	floatingIPs func(ctx context.Context, maxAge time.Duration) ([]osapi.FloatingIP, error)

	mu        sync.Mutex
	fetched   time.Time
	byID      map[string]map[string][]osapi.ServerAddress // server ID → network name → addresses
	loggedErr string
}

// of returns the server's addresses by network from Neutron, or false when it
// has none for the server (or cannot read Neutron: never an error for a Node).
func (p *portAddresses) of(ctx context.Context, serverID string) (map[string][]osapi.ServerAddress, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.fetched) > portAddressesMaxAge {
		p.fetched = time.Now() // at the start, and a failure waits a period too: no retry storm
		byID, err := p.fetch(ctx)
		if err != nil {
			if msg := err.Error(); msg != p.loggedErr {
				klog.FromContext(ctx).Error(err, "Cannot read the servers' ports from Neutron; Node addresses come from Nova until it answers")
				p.loggedErr = msg
			}
		} else {
			p.byID, p.loggedErr = byID, ""
		}
	}
	a, ok := p.byID[serverID]
	return a, ok
}

func (p *portAddresses) fetch(ctx context.Context) (map[string]map[string][]osapi.ServerAddress, error) {
	if err := p.api.Session(ctx, osapi.Neutron); err != nil {
		return nil, err
	}
	allPorts, err := p.api.ListLeanPorts(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing ports: %w", err)
	}
	nets, err := p.api.ListLeanNetworks(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing networks: %w", err)
	}
	fips, err := p.floatingIPs(ctx, addressFIPsMaxAge)
	if err != nil {
		return nil, fmt.Errorf("listing floating IPs: %w", err)
	}
	// Subports belong to the server of their trunk's parent port. A cloud
	// without the trunk extension answers 404: no subports then.
	subportOf := map[string]string{} // subport ID → parent port ID
	if ts, err := p.api.ListLeanTrunks(ctx); err == nil {
		for _, t := range ts {
			for _, sp := range t.Subports {
				subportOf[sp.PortID] = t.PortID
			}
		}
	}
	return serverAddresses(allPorts, nets, fips, subportOf), nil
}

// serverAddresses groups the fixed IPs of servers' ports by server and network
// name, each followed by the floating IPs on that port.
func serverAddresses(allPorts []osapi.Port, nets []osapi.Network, fips []osapi.FloatingIP, subportOf map[string]string) map[string]map[string][]osapi.ServerAddress {
	netName := make(map[string]string, len(nets))
	for _, n := range nets {
		netName[n.ID] = n.Name
	}
	floating := map[string][]string{}
	for _, f := range fips {
		if f.PortID != "" {
			floating[f.PortID] = append(floating[f.PortID], f.FloatingIP)
		}
	}
	owner := make(map[string]string, len(allPorts)) // port ID → server ID
	for _, p := range allPorts {
		if strings.HasPrefix(p.DeviceOwner, "compute:") {
			owner[p.ID] = p.DeviceID
		}
	}
	out := map[string]map[string][]osapi.ServerAddress{}
	for _, p := range allPorts {
		server := owner[p.ID]
		if server == "" {
			server = owner[subportOf[p.ID]]
		}
		if server == "" {
			continue
		}
		name := netName[p.NetworkID]
		if name == "" {
			name = p.NetworkID
		}
		if out[server] == nil {
			out[server] = map[string][]osapi.ServerAddress{}
		}
		for _, ip := range p.FixedIPs {
			out[server][name] = append(out[server][name], osapi.ServerAddress{Addr: ip.IPAddress, Type: "fixed"})
		}
		for _, f := range floating[p.ID] {
			out[server][name] = append(out[server][name], osapi.ServerAddress{Addr: f, Type: "floating"})
		}
	}
	return out
}
