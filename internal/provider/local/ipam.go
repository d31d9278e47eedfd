package local

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/overcast-ccm/overcast/internal/netaddr"
)

// IPAM errors. Each reaches the Service as a Warning Event.
var (
	ErrPoolExhausted  = errors.New("no free address left")
	ErrIPUnavailable  = errors.New("requested address is not available")
	ErrUnknownPool    = errors.New("no such pool")
	ErrPoolNotAllowed = errors.New("pool is not open to this namespace")
)

// Pool is a parsed address pool.
type Pool struct {
	Name       string
	Ranges     []Range
	Namespaces []string // empty: every namespace
}

// Range is an inclusive range of addresses of one family.
type Range struct{ First, Last netip.Addr }

func (r Range) contains(a netip.Addr) bool {
	return a.BitLen() == r.First.BitLen() && r.First.Compare(a) <= 0 && a.Compare(r.Last) <= 0
}

func (r Range) overlaps(o Range) bool {
	return r.First.BitLen() == o.First.BitLen() && r.First.Compare(o.Last) <= 0 && o.First.Compare(r.Last) <= 0
}

// Contains reports whether a lies in the pool.
func (p *Pool) Contains(a netip.Addr) bool {
	return slices.ContainsFunc(p.Ranges, func(r Range) bool { return r.contains(a) })
}

// Allows reports whether Services of namespace ns may use the pool.
func (p *Pool) Allows(ns string) bool {
	return len(p.Namespaces) == 0 || slices.Contains(p.Namespaces, ns)
}

// ParseRange parses "10.0.0.0/24" (network and broadcast addresses of IPv4 prefixes
// up to /30 left out), "10.0.0.5-10.0.0.9" or a single address.
func ParseRange(s string) (Range, error) {
	s = strings.TrimSpace(s)
	if first, last, ok := strings.Cut(s, "-"); ok {
		a, err1 := netip.ParseAddr(strings.TrimSpace(first))
		b, err2 := netip.ParseAddr(strings.TrimSpace(last))
		if err1 != nil || err2 != nil || a.Zone() != "" || b.Zone() != "" {
			return Range{}, fmt.Errorf("%q is not a range of two addresses such as 10.0.0.5-10.0.0.9", s)
		}
		a, b = a.Unmap(), b.Unmap()
		if a.BitLen() != b.BitLen() {
			return Range{}, fmt.Errorf("%q mixes IPv4 and IPv6", s)
		}
		if b.Less(a) {
			return Range{}, fmt.Errorf("%q ends before it starts", s)
		}
		return Range{a, b}, nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Range{}, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/24", s)
		}
		// Checked before host bits, so that the suggested prefix is one that parses.
		if p.Addr().Is4In6() {
			return Range{}, fmt.Errorf("%q: write IPv4 prefixes without the ::ffff: form", s)
		}
		if p.Masked() != p {
			return Range{}, fmt.Errorf("%q has host bits set; did you mean %s?", s, p.Masked())
		}
		first := p.Addr()
		last := netaddr.Last(p)
		if first.Is4() && p.Bits() <= 30 {
			first, last = first.Next(), last.Prev()
		}
		return Range{first, last}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return Range{}, fmt.Errorf("%q is not a CIDR, a range or an address", s)
	}
	return Range{a.Unmap(), a.Unmap()}, nil
}

// ParsePools parses and checks the configured pools: names unique, addresses well
// formed, no address in two places, namespaces valid. Every problem is reported.
func ParsePools(cfg []PoolConfig) ([]Pool, error) {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	type placed struct {
		r   Range
		key string
	}
	var all []placed
	names := map[string]int{}
	pools := make([]Pool, 0, len(cfg))
	for i, pc := range cfg {
		k := fmt.Sprintf("loadBalancer.pools[%d]", i)
		p := Pool{Name: pc.Name, Namespaces: pc.Namespaces}
		if pc.Name == "" {
			add("%s.name: required", k)
		} else if j, dup := names[pc.Name]; dup {
			add("%s.name: %q is also the name of loadBalancer.pools[%d]", k, pc.Name, j)
		} else {
			names[pc.Name] = i
		}
		if len(pc.Addresses) == 0 {
			add("%s.addresses: required (CIDRs such as 127.0.200.0/24 or ranges such as 127.0.201.10-127.0.201.20)", k)
		}
		for j, s := range pc.Addresses {
			ak := fmt.Sprintf("%s.addresses[%d]", k, j)
			r, err := ParseRange(s)
			if err != nil {
				add("%s: %v", ak, err)
				continue
			}
			for _, o := range all {
				if r.overlaps(o.r) {
					add("%s: %q overlaps %s", ak, s, o.key)
				}
			}
			all = append(all, placed{r, ak})
			p.Ranges = append(p.Ranges, r)
		}
		for j, ns := range pc.Namespaces {
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				add("%s.namespaces[%d]: %q is not a namespace name: %s", k, j, ns, strings.Join(msgs, "; "))
			}
		}
		pools = append(pools, p)
	}
	return pools, errors.Join(errs...)
}

// PortKey is one protocol and port of a Service.
type PortKey struct {
	Protocol v1.Protocol
	Port     int32
}

// Holder is a Service that holds an address.
type Holder struct {
	Key        string // namespace/name
	SharingKey string
	Ports      []PortKey
}

// Request asks for an address for one Service.
type Request struct {
	Key        string // namespace/name
	Namespace  string
	Pool       string      // a pool by name, or "" for any open to the namespace
	IP         netip.Addr  // a specific address, or zero
	Current    netip.Addr  // the address in the Service's status, kept when still valid
	Family     v1.IPFamily // "" for any
	SharingKey string
	Ports      []PortKey
}

// Allocate picks the address for req given who holds which address. It never
// returns an address held by another Service unless both opted into sharing with the
// same key and their ports are disjoint.
func Allocate(pools []Pool, used map[netip.Addr][]Holder, req Request) (netip.Addr, error) {
	candidates, err := candidatePools(pools, req)
	if err != nil {
		return netip.Addr{}, err
	}
	inCandidates := func(a netip.Addr) bool {
		return slices.ContainsFunc(candidates, func(p *Pool) bool { return p.Contains(a) })
	}
	if req.IP.IsValid() {
		ip := req.IP.Unmap()
		switch {
		case !inCandidates(ip):
			return netip.Addr{}, fmt.Errorf("%w: %s is in no pool open to namespace %q%s", ErrIPUnavailable, ip, req.Namespace, poolHint(req))
		case !familyOK(ip, req.Family):
			return netip.Addr{}, fmt.Errorf("%w: %s is not of the Service's IP family %s", ErrIPUnavailable, ip, req.Family)
		case !usable(used[ip], req):
			return netip.Addr{}, fmt.Errorf("%w: %s is in use by %s", ErrIPUnavailable, ip, holderNames(used[ip], req.Key))
		}
		return ip, nil
	}
	if c := req.Current; c.IsValid() && inCandidates(c) && familyOK(c, req.Family) && usable(used[c], req) {
		return c, nil
	}
	if req.SharingKey != "" {
		var shared []netip.Addr
		for a, hs := range used {
			if inCandidates(a) && familyOK(a, req.Family) && len(others(hs, req.Key)) > 0 && usable(hs, req) {
				shared = append(shared, a)
			}
		}
		if len(shared) > 0 {
			slices.SortFunc(shared, netip.Addr.Compare)
			return shared[0], nil
		}
	}
	for _, p := range candidates {
		for _, r := range p.Ranges {
			if !familyOK(r.First, req.Family) {
				continue
			}
			// At most len(used)+1 steps: every step past a free address returns.
			for a := r.First; a.IsValid() && a.Compare(r.Last) <= 0; a = a.Next() {
				if len(others(used[a], req.Key)) == 0 {
					return a, nil
				}
			}
		}
	}
	names := make([]string, len(candidates))
	for i, p := range candidates {
		names[i] = p.Name
	}
	return netip.Addr{}, fmt.Errorf("%w in pools %s open to namespace %q", ErrPoolExhausted, strings.Join(names, ", "), req.Namespace)
}

func poolHint(req Request) string {
	if req.Pool != "" {
		return fmt.Sprintf(" (pool %q)", req.Pool)
	}
	return ""
}

func candidatePools(pools []Pool, req Request) ([]*Pool, error) {
	if req.Pool != "" {
		for i := range pools {
			if pools[i].Name == req.Pool {
				if !pools[i].Allows(req.Namespace) {
					return nil, fmt.Errorf("%w: pool %q is reserved for namespaces %s", ErrPoolNotAllowed, req.Pool, strings.Join(pools[i].Namespaces, ", "))
				}
				return []*Pool{&pools[i]}, nil
			}
		}
		names := make([]string, len(pools))
		for i := range pools {
			names[i] = pools[i].Name
		}
		return nil, fmt.Errorf("%w: %q (configured: %s)", ErrUnknownPool, req.Pool, strings.Join(names, ", "))
	}
	var own, global []*Pool
	for i := range pools {
		switch {
		case len(pools[i].Namespaces) == 0:
			global = append(global, &pools[i])
		case pools[i].Allows(req.Namespace):
			own = append(own, &pools[i])
		}
	}
	out := slices.Concat(own, global)
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: every pool is reserved for other namespaces than %q", ErrPoolNotAllowed, req.Namespace)
	}
	return out, nil
}

func familyOK(a netip.Addr, f v1.IPFamily) bool {
	switch f {
	case v1.IPv4Protocol:
		return a.Is4()
	case v1.IPv6Protocol:
		return a.Is6()
	}
	return true
}

func others(hs []Holder, self string) []Holder {
	var out []Holder
	for _, h := range hs {
		if h.Key != self {
			out = append(out, h)
		}
	}
	return out
}

// usable: nobody else holds the address, or everybody who does shares with req's key
// and no two use the same port.
func usable(hs []Holder, req Request) bool {
	hs = others(hs, req.Key)
	if len(hs) == 0 {
		return true
	}
	if req.SharingKey == "" {
		return false
	}
	for _, h := range hs {
		if h.SharingKey != req.SharingKey {
			return false
		}
		for _, p := range h.Ports {
			if slices.Contains(req.Ports, p) {
				return false
			}
		}
	}
	return true
}

func holderNames(hs []Holder, self string) string {
	var names []string
	for _, h := range others(hs, self) {
		names = append(names, h.Key)
	}
	return strings.Join(names, ", ")
}
