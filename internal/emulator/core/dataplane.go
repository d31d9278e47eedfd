package core

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/overcast-ccm/overcast/internal/l4proxy"
)

// The data plane: an emulator whose load balancers carry traffic says, for
// each load balancer, the listeners it should serve (Specs); DataPlane keeps
// internal/l4proxy serving exactly those, on loopback addresses only, until
// the emulator closes. A change of the emulator's state reaches the data plane
// within DataPlanePeriod.

// DataPlanePeriod is how soon a change reaches the data plane.
const DataPlanePeriod = 100 * time.Millisecond

// Loopback is where an emulator's served addresses must lie.
var Loopback = netip.MustParsePrefix("127.0.0.0/8")

// CheckLoopback refuses prefixes outside 127.0.0.0/8 (named by their option).
func CheckLoopback(prefixes map[string]string) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(prefixes)) {
		cidr := prefixes[name]
		p, err := netip.ParsePrefix(cidr)
		if err != nil || !Loopback.Contains(p.Addr()) || p.Bits() < Loopback.Bits() {
			errs = append(errs, fmt.Errorf("serving traffic: %s %q must be within 127.0.0.0/8", name, cidr))
		}
	}
	return errors.Join(errs...)
}

// StartServing starts s on addr and, when serve (an emulator's
// ServeTraffic), d serving what specs says until s closes.
func (s *Server) StartServing(addr string, serve bool, d *DataPlane, specs func() map[string][]l4proxy.ListenerSpec) error {
	if err := s.Start(addr); err != nil {
		return err
	}
	if serve {
		go d.Run(s.Done(), specs)
	}
	return nil
}

// DataPlane serves what Specs says, and remembers what it could not serve.
type DataPlane struct {
	mu   sync.Mutex
	errs map[string]string
}

// Run applies specs() to a proxy every DataPlanePeriod until done closes.
// Every address in a spec must be a loopback one; a spec with another is not
// served (and its error recorded).
func (d *DataPlane) Run(done <-chan struct{}, specs func() map[string][]l4proxy.ListenerSpec) {
	proxy := l4proxy.NewManager(l4proxy.Options{})
	defer proxy.Close()
	applied := map[string]string{} // load balancer → fingerprint of what is served
	t := time.NewTicker(DataPlanePeriod)
	defer t.Stop()
	for {
		want := specs()
		for id, s := range want {
			fp := fmt.Sprint(s)
			if applied[id] == fp {
				continue
			}
			applied[id] = fp
			err := loopbackOnly(s)
			if err == nil {
				err = proxy.Ensure(id, s)
			}
			d.set(id, err)
		}
		for id := range applied {
			if _, ok := want[id]; !ok {
				_ = proxy.Ensure(id, nil)
				delete(applied, id)
				d.set(id, nil)
			}
		}
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

func loopbackOnly(specs []l4proxy.ListenerSpec) error {
	for _, s := range specs {
		if !Loopback.Contains(s.Address.Addr()) {
			return fmt.Errorf("%s is not a loopback address: not served", s.Address)
		}
	}
	return nil
}

func (d *DataPlane) set(id string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.errs == nil {
		d.errs = map[string]string{}
	}
	if err == nil {
		delete(d.errs, id)
	} else {
		d.errs[id] = err.Error()
	}
}

// Errors are the load balancers the data plane could not serve, with why (an
// address taken, for example).
func (d *DataPlane) Errors() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.errs)
}

// Networks are an emulator's two IPv4 ranges: where its machines' addresses
// come from, and its public addresses.
type Networks struct {
	Machine, Public netip.Prefix
}

// ParseNetworks parses an emulator's MachineCIDR and PublicCIDR options
// (defMachine, defPublic when ""), IPv4 prefixes, within 127.0.0.0/8 when its
// load balancers serve traffic. name names the emulator in errors.
func ParseNetworks(name, machineCIDR, publicCIDR, defMachine, defPublic string, serveTraffic bool) (Networks, error) {
	machineCIDR, publicCIDR = cmp.Or(machineCIDR, defMachine), cmp.Or(publicCIDR, defPublic)
	if serveTraffic {
		if err := CheckLoopback(map[string]string{"MachineCIDR": machineCIDR, "PublicCIDR": publicCIDR}); err != nil {
			return Networks{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	var n Networks
	for _, p := range []struct {
		option, cidr string
		to           *netip.Prefix
	}{{"MachineCIDR", machineCIDR, &n.Machine}, {"PublicCIDR", publicCIDR, &n.Public}} {
		prefix, err := netip.ParsePrefix(p.cidr)
		if err != nil || !prefix.Addr().Is4() {
			return Networks{}, fmt.Errorf("%s: %s %q: want an IPv4 prefix", name, p.option, p.cidr)
		}
		*p.to = prefix.Masked()
	}
	return n, nil
}
