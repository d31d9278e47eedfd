package local

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

var ip = netip.MustParseAddr

func TestParseRange(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		first, last string
		wantErr     string
	}{
		{name: "an IPv4 /24 leaves out the network and broadcast addresses", in: "127.0.200.0/24", first: "127.0.200.1", last: "127.0.200.254"},
		{name: "an IPv4 /30 leaves out the network and broadcast addresses", in: "127.0.0.4/30", first: "127.0.0.5", last: "127.0.0.6"},
		{name: "an IPv4 /31 keeps both addresses", in: "127.0.0.4/31", first: "127.0.0.4", last: "127.0.0.5"},
		{name: "an IPv4 /32 is a single address", in: "127.0.0.9/32", first: "127.0.0.9", last: "127.0.0.9"},
		{name: "an IPv6 /126 keeps every address", in: "fd00::/126", first: "fd00::", last: "fd00::3"},
		{name: "an IPv6 /128 is a single address", in: "::1/128", first: "::1", last: "::1"},
		{name: "a range of two IPv4 addresses is inclusive", in: "127.0.201.10-127.0.201.20", first: "127.0.201.10", last: "127.0.201.20"},
		{name: "a range may have blanks around its parts", in: "  127.0.201.10 - 127.0.201.20 ", first: "127.0.201.10", last: "127.0.201.20"},
		{name: "a range of one address is allowed", in: "127.0.0.1-127.0.0.1", first: "127.0.0.1", last: "127.0.0.1"},
		{name: "a range of IPv6 addresses is inclusive", in: "fd00::10-fd00::20", first: "fd00::10", last: "fd00::20"},
		{name: "an IPv4-mapped range is read as IPv4", in: "::ffff:127.0.0.1-::ffff:127.0.0.3", first: "127.0.0.1", last: "127.0.0.3"},
		{name: "a single address is a range of one", in: "127.0.0.7", first: "127.0.0.7", last: "127.0.0.7"},
		{name: "a single IPv6 address is a range of one", in: "fd00::7", first: "fd00::7", last: "fd00::7"},
		{name: "a reversed range is refused", in: "127.0.0.9-127.0.0.1", wantErr: "ends before it starts"},
		{name: "a range mixing IPv4 and IPv6 is refused", in: "127.0.0.1-::1", wantErr: "mixes IPv4 and IPv6"},
		{name: "a range with a bad end is refused", in: "127.0.0.1-x", wantErr: "is not a range of two addresses"},
		{name: "a range with a zone is refused", in: "fe80::1%eth0-fe80::2%eth0", wantErr: "is not a range of two addresses"},
		{name: "a range with a missing end is refused", in: "127.0.0.1-", wantErr: "is not a range of two addresses"},
		{name: "a CIDR with host bits set suggests the masked prefix", in: "127.0.200.7/24", wantErr: `"127.0.200.7/24" has host bits set; did you mean 127.0.200.0/24?`},
		{name: "an IPv6 CIDR with host bits set suggests the masked prefix", in: "fd00::1/64", wantErr: "did you mean fd00::/64?"},
		{name: "an IPv4-mapped CIDR is refused", in: "::ffff:127.0.0.0/120", wantErr: "write IPv4 prefixes without the ::ffff: form"},
		{name: "an IPv4-mapped CIDR with host bits set is refused for the prefix first", in: "::ffff:127.0.0.1/120", wantErr: "write IPv4 prefixes without the ::ffff: form"},
		{name: "a CIDR with a bad length is refused", in: "127.0.0.0/33", wantErr: "is not a CIDR such as 10.0.0.0/24"},
		{name: "garbage is refused", in: "nonsense", wantErr: "is not a CIDR, a range or an address"},
		{name: "an empty string is refused", in: "", wantErr: "is not a CIDR, a range or an address"},
		{name: "an address with a zone is refused", in: "fe80::1%eth0", wantErr: "is not a CIDR, a range or an address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRange(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, Range{ip(tt.first), ip(tt.last)}, r)
		})
	}
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{
		"127.0.200.0/24", "127.0.0.4/31", "127.0.0.9/32", "0.0.0.0/0", "::/0", "fd00::/126",
		"127.0.201.10-127.0.201.20", "127.0.0.9-127.0.0.1", "127.0.0.1-::1", "::ffff:127.0.0.0/120",
		"::ffff:127.0.0.1-::ffff:127.0.0.3", "::ffff:127.0.0.1-127.0.0.3", "255.255.255.255/32", "fe80::1%eth0",
		"127.0.0.1", "-", "/", "", "1-2-3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRange(s)
		if err != nil {
			return
		}
		require.True(t, r.First.IsValid() && r.Last.IsValid(), "%q: %v", s, r)
		assert.Equal(t, r.First.BitLen(), r.Last.BitLen(), "%q gave a range of two families: %v", s, r)
		assert.LessOrEqual(t, r.First.Compare(r.Last), 0, "%q gave a range that ends before it starts: %v", s, r)
		assert.False(t, r.First.Is4In6() || r.Last.Is4In6(), "%q gave an IPv4-mapped range: %v", s, r)
		assert.Empty(t, r.First.Zone()+r.Last.Zone(), "%q gave a range with a zone: %v", s, r)
	})
}

// refusedPools are pools ParsePools refuses, each with the lines its error
// must have (one line per problem).
var refusedPools = []struct {
	name    string
	pools   []PoolConfig
	wantErr []string
}{
	{
		name:    "a pool without a name is refused",
		pools:   []PoolConfig{{Addresses: []string{"127.0.0.1"}}},
		wantErr: []string{"loadBalancer.pools[0].name: required"},
	},
	{
		name:    "duplicate pool names are refused",
		pools:   []PoolConfig{{Name: "a", Addresses: []string{"127.0.0.1"}}, {Name: "a", Addresses: []string{"127.0.0.2"}}},
		wantErr: []string{`loadBalancer.pools[1].name: "a" is also the name of loadBalancer.pools[0]`},
	},
	{
		name:    "a pool without addresses is refused",
		pools:   []PoolConfig{{Name: "a"}},
		wantErr: []string{"loadBalancer.pools[0].addresses: required"},
	},
	{
		name:    "addresses overlapping across pools are refused",
		pools:   []PoolConfig{{Name: "a", Addresses: []string{"127.0.0.0/24"}}, {Name: "b", Addresses: []string{"127.0.0.200-127.0.1.5"}}},
		wantErr: []string{`loadBalancer.pools[1].addresses[0]: "127.0.0.200-127.0.1.5" overlaps loadBalancer.pools[0].addresses[0]`},
	},
	{
		name:    "addresses overlapping inside a pool are refused",
		pools:   []PoolConfig{{Name: "a", Addresses: []string{"127.0.0.5", "127.0.0.0/29"}}},
		wantErr: []string{`loadBalancer.pools[0].addresses[1]: "127.0.0.0/29" overlaps loadBalancer.pools[0].addresses[0]`},
	},
	{
		name:    "a bad namespace name is refused",
		pools:   []PoolConfig{{Name: "a", Addresses: []string{"127.0.0.1"}, Namespaces: []string{"ok", "Not_OK"}}},
		wantErr: []string{`loadBalancer.pools[0].namespaces[1]: "Not_OK" is not a namespace name`},
	},
	{
		name: "every problem is reported together",
		pools: []PoolConfig{
			{Name: "a", Addresses: []string{"127.0.0.0/24", "bad"}},
			{Name: "a", Addresses: []string{"127.0.0.10"}, Namespaces: []string{"UPPER"}},
			{Name: "c"},
			{Addresses: []string{"127.0.1.1/24"}},
		},
		wantErr: []string{
			`loadBalancer.pools[0].addresses[1]: "bad" is not a CIDR`,
			`loadBalancer.pools[1].name: "a" is also the name of loadBalancer.pools[0]`,
			`loadBalancer.pools[1].addresses[0]: "127.0.0.10" overlaps loadBalancer.pools[0].addresses[0]`,
			`loadBalancer.pools[1].namespaces[0]: "UPPER" is not a namespace name`,
			"loadBalancer.pools[2].addresses: required",
			"loadBalancer.pools[3].name: required",
			"loadBalancer.pools[3].addresses[0]: \"127.0.1.1/24\" has host bits set",
		},
	},
}

func TestParsePools(t *testing.T) {
	t.Run("valid pools are parsed in order", func(t *testing.T) {
		pools, err := ParsePools([]PoolConfig{
			{Name: "default", Addresses: []string{"127.0.200.0/24", "127.0.201.10-127.0.201.20"}},
			{Name: "team", Addresses: []string{"fd00::/126"}, Namespaces: []string{"team-a"}},
		})
		require.NoError(t, err)
		assert.Equal(t, []Pool{
			{Name: "default", Ranges: []Range{{ip("127.0.200.1"), ip("127.0.200.254")}, {ip("127.0.201.10"), ip("127.0.201.20")}}},
			{Name: "team", Ranges: []Range{{ip("fd00::"), ip("fd00::3")}}, Namespaces: []string{"team-a"}},
		}, pools)
	})
	t.Run("no pools are no error", func(t *testing.T) {
		pools, err := ParsePools(nil)
		require.NoError(t, err)
		assert.Empty(t, pools)
	})
	for _, tt := range refusedPools {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePools(tt.pools)
			require.Error(t, err)
			for _, want := range tt.wantErr {
				assert.Contains(t, err.Error(), want)
			}
			assert.Len(t, strings.Split(err.Error(), "\n"), len(tt.wantErr), "one line per problem:\n%s", err)
		})
	}
}

func TestPoolsOfDifferentFamiliesDoNotOverlap(t *testing.T) {
	// ::7f00:1 has the same low 32 bits as 127.0.0.1 but is another address.
	_, err := ParsePools([]PoolConfig{{Name: "a", Addresses: []string{"127.0.0.1"}}, {Name: "b", Addresses: []string{"::7f00:1"}}})
	require.NoError(t, err)
}

func testPools(t *testing.T) []Pool {
	t.Helper()
	pools, err := ParsePools([]PoolConfig{
		{Name: "default", Addresses: []string{"127.0.200.1-127.0.200.3", "fd00::1-fd00::3"}},
		{Name: "spare", Addresses: []string{"127.0.202.1-127.0.202.2"}},
		{Name: "team", Addresses: []string{"127.0.201.1-127.0.201.2"}, Namespaces: []string{"team-a"}},
		{Name: "other-team", Addresses: []string{"127.0.203.1"}, Namespaces: []string{"team-b"}},
	})
	require.NoError(t, err)
	return pools
}

func tcp(port int32) PortKey { return PortKey{Protocol: v1.ProtocolTCP, Port: port} }
func udp(port int32) PortKey { return PortKey{Protocol: v1.ProtocolUDP, Port: port} }

// allocation is a case of TestAllocate: the addresses in use, the request,
// and the address or the error (with its text) expected.
type allocation struct {
	name    string
	used    map[netip.Addr][]Holder
	req     Request
	want    string
	wantErr error
	errText string
}

// allocations are TestAllocate's cases, each against testPools.
var allocations = []allocation{
	{
		name: "the lowest free address of the first global pool is taken",
		req:  Request{Key: "default/a", Namespace: "default"},
		want: "127.0.200.1",
	},
	{
		name: "addresses held by other Services are skipped",
		used: map[netip.Addr][]Holder{ip("127.0.200.1"): {{Key: "default/x"}}, ip("127.0.200.2"): {{Key: "default/y"}}},
		req:  Request{Key: "default/a", Namespace: "default"},
		want: "127.0.200.3",
	},
	{
		name: "the next range of a pool is used when the first is full, family permitting",
		used: map[netip.Addr][]Holder{ip("127.0.200.1"): {{Key: "default/x"}}, ip("127.0.200.2"): {{Key: "default/y"}}, ip("127.0.200.3"): {{Key: "default/z"}}},
		req:  Request{Key: "default/a", Namespace: "default"},
		want: "fd00::1",
	},
	{
		name: "the current address is kept while it is valid",
		used: map[netip.Addr][]Holder{ip("127.0.200.3"): {{Key: "default/a"}}},
		req:  Request{Key: "default/a", Namespace: "default", Current: ip("127.0.200.3")},
		want: "127.0.200.3",
	},
	{
		name: "a current address outside the candidate pools is replaced",
		req:  Request{Key: "default/a", Namespace: "default", Pool: "spare", Current: ip("127.0.200.3")},
		want: "127.0.202.1",
	},
	{
		name: "a current address in no pool at all is replaced",
		req:  Request{Key: "default/a", Namespace: "default", Current: ip("127.0.99.1")},
		want: "127.0.200.1",
	},
	{
		name: "a current address of the wrong family is replaced",
		req:  Request{Key: "default/a", Namespace: "default", Current: ip("fd00::2"), Family: v1.IPv4Protocol},
		want: "127.0.200.1",
	},
	{
		name: "a current address now held by another Service is replaced",
		used: map[netip.Addr][]Holder{ip("127.0.200.1"): {{Key: "default/x"}}},
		req:  Request{Key: "default/a", Namespace: "default", Current: ip("127.0.200.1")},
		want: "127.0.200.2",
	},
	{
		name: "a requested address is honoured",
		req:  Request{Key: "default/a", Namespace: "default", IP: ip("127.0.200.2")},
		want: "127.0.200.2",
	},
	{
		name: "a requested IPv4-mapped address is honoured as IPv4",
		req:  Request{Key: "default/a", Namespace: "default", IP: ip("::ffff:127.0.200.2")},
		want: "127.0.200.2",
	},
	{
		name: "a requested address wins over the current one",
		req:  Request{Key: "default/a", Namespace: "default", IP: ip("127.0.200.2"), Current: ip("127.0.200.1")},
		want: "127.0.200.2",
	},
	{
		name:    "a requested address in use is unavailable and names the holder",
		used:    map[netip.Addr][]Holder{ip("127.0.200.2"): {{Key: "default/holder"}}},
		req:     Request{Key: "default/a", Namespace: "default", IP: ip("127.0.200.2")},
		wantErr: ErrIPUnavailable,
		errText: "127.0.200.2 is in use by default/holder",
	},
	{
		name:    "a requested address outside every pool is unavailable",
		req:     Request{Key: "default/a", Namespace: "default", IP: ip("127.0.99.1")},
		wantErr: ErrIPUnavailable,
		errText: `127.0.99.1 is in no pool open to namespace "default"`,
	},
	{
		name:    "a requested address outside the named pool is unavailable",
		req:     Request{Key: "default/a", Namespace: "default", Pool: "spare", IP: ip("127.0.200.1")},
		wantErr: ErrIPUnavailable,
		errText: `(pool "spare")`,
	},
	{
		name:    "a requested address in a pool of another namespace is unavailable",
		req:     Request{Key: "default/a", Namespace: "default", IP: ip("127.0.201.1")},
		wantErr: ErrIPUnavailable,
	},
	{
		name:    "a requested address of the wrong family is unavailable",
		req:     Request{Key: "default/a", Namespace: "default", IP: ip("fd00::1"), Family: v1.IPv4Protocol},
		wantErr: ErrIPUnavailable,
		errText: "not of the Service's IP family IPv4",
	},
	{
		name: "pools reserved for the namespace are preferred over global pools",
		req:  Request{Key: "team-a/a", Namespace: "team-a"},
		want: "127.0.201.1",
	},
	{
		name: "global pools serve a namespace once its own pools are full",
		used: map[netip.Addr][]Holder{ip("127.0.201.1"): {{Key: "team-a/x"}}, ip("127.0.201.2"): {{Key: "team-a/y"}}},
		req:  Request{Key: "team-a/a", Namespace: "team-a"},
		want: "127.0.200.1",
	},
	{
		name: "a pool is chosen by name",
		req:  Request{Key: "default/a", Namespace: "default", Pool: "spare"},
		want: "127.0.202.1",
	},
	{
		name:    "an unknown pool is refused and the configured ones are listed",
		req:     Request{Key: "default/a", Namespace: "default", Pool: "nope"},
		wantErr: ErrUnknownPool,
		errText: `"nope" (configured: default, spare, team, other-team)`,
	},
	{
		name:    "a pool of another namespace is refused",
		req:     Request{Key: "default/a", Namespace: "default", Pool: "team"},
		wantErr: ErrPoolNotAllowed,
		errText: "reserved for namespaces team-a",
	},
	{
		name:    "an exhausted pool is reported",
		used:    map[netip.Addr][]Holder{ip("127.0.202.1"): {{Key: "default/x"}}, ip("127.0.202.2"): {{Key: "default/y"}}},
		req:     Request{Key: "default/a", Namespace: "default", Pool: "spare"},
		wantErr: ErrPoolExhausted,
		errText: `in pools spare open to namespace "default"`,
	},
	{
		name: "the only IPv4 addresses being taken exhausts an IPv4 request",
		used: map[netip.Addr][]Holder{
			ip("127.0.200.1"): {{Key: "default/x"}}, ip("127.0.200.2"): {{Key: "default/x"}}, ip("127.0.200.3"): {{Key: "default/x"}},
			ip("127.0.202.1"): {{Key: "default/x"}}, ip("127.0.202.2"): {{Key: "default/x"}},
		},
		req:     Request{Key: "default/a", Namespace: "default", Family: v1.IPv4Protocol},
		wantErr: ErrPoolExhausted,
	},
	{
		name: "an IPv6 request skips IPv4 ranges",
		req:  Request{Key: "default/a", Namespace: "default", Family: v1.IPv6Protocol},
		want: "fd00::1",
	},
	{
		name:    "an IPv6 request in a pool without IPv6 is exhausted",
		req:     Request{Key: "default/a", Namespace: "default", Pool: "spare", Family: v1.IPv6Protocol},
		wantErr: ErrPoolExhausted,
	},
	{
		name: "the same sharing key and disjoint ports share the address",
		used: map[netip.Addr][]Holder{ip("127.0.200.2"): {{Key: "default/x", SharingKey: "k", Ports: []PortKey{tcp(80)}}}},
		req:  Request{Key: "default/a", Namespace: "default", SharingKey: "k", Ports: []PortKey{tcp(443)}},
		want: "127.0.200.2",
	},
	{
		name: "the same port number of another protocol shares the address",
		used: map[netip.Addr][]Holder{ip("127.0.200.2"): {{Key: "default/x", SharingKey: "k", Ports: []PortKey{tcp(53)}}}},
		req:  Request{Key: "default/a", Namespace: "default", SharingKey: "k", Ports: []PortKey{udp(53)}},
		want: "127.0.200.2",
	},
	{
		name: "a requested address is shared with the same key and disjoint ports",
		used: map[netip.Addr][]Holder{ip("127.0.200.2"): {{Key: "default/x", SharingKey: "k", Ports: []PortKey{tcp(80)}}}},
		req:  Request{Key: "default/a", Namespace: "default", IP: ip("127.0.200.2"), SharingKey: "k", Ports: []PortKey{tcp(443)}},
		want: "127.0.200.2",
	},
	{
		name: "the same sharing key and the same port do not share the address",
		used: map[netip.Addr][]Holder{ip("127.0.200.1"): {{Key: "default/x", SharingKey: "k", Ports: []PortKey{tcp(80)}}}},
		req:  Request{Key: "default/a", Namespace: "default", SharingKey: "k", Ports: []PortKey{tcp(80)}},
		want: "127.0.200.2",
	},
	{
		name:    "a requested address with the same key and the same port is unavailable",
		used:    map[netip.Addr][]Holder{ip("127.0.200.1"): {{Key: "default/x", SharingKey: "k", Ports: []PortKey{tcp(80)}}}},
		req:     Request{Key: "default/a", Namespace: "default", IP: ip("127.0.200.1"), SharingKey: "k", Ports: []PortKey{tcp(80)}},
		wantErr: ErrIPUnavailable,
		errText: "in use by default/x",
	},
	{
		name: "a different sharing key does not share the address",
		used: map[netip.Addr][]Holder{ip("127.0.200.1"): {{Key: "default/x", SharingKey: "other", Ports: []PortKey{tcp(80)}}}},
		req:  Request{Key: "default/a", Namespace: "default", SharingKey: "k", Ports: []PortKey{tcp(443)}},
		want: "127.0.200.2",
	},
	{
		name: "a holder that does not share keeps its address to itself",
		used: map[netip.Addr][]Holder{ip("127.0.200.1"): {{Key: "default/x", Ports: []PortKey{tcp(80)}}}},
		req:  Request{Key: "default/a", Namespace: "default", SharingKey: "k", Ports: []PortKey{tcp(443)}},
		want: "127.0.200.2",
	},
	{
		name: "a Service without a sharing key never shares",
		used: map[netip.Addr][]Holder{ip("127.0.200.1"): {{Key: "default/x", SharingKey: "k", Ports: []PortKey{tcp(80)}}}},
		req:  Request{Key: "default/a", Namespace: "default", Ports: []PortKey{tcp(443)}},
		want: "127.0.200.2",
	},
	{
		name: "every holder of a shared address must share the key",
		used: map[netip.Addr][]Holder{ip("127.0.200.1"): {
			{Key: "default/x", SharingKey: "k", Ports: []PortKey{tcp(80)}},
			{Key: "default/y", SharingKey: "other", Ports: []PortKey{tcp(81)}},
		}},
		req:  Request{Key: "default/a", Namespace: "default", SharingKey: "k", Ports: []PortKey{tcp(443)}},
		want: "127.0.200.2",
	},
	{
		name: "a shared address outside the candidate pools is not joined",
		used: map[netip.Addr][]Holder{ip("127.0.200.2"): {{Key: "default/x", SharingKey: "k", Ports: []PortKey{tcp(80)}}}},
		req:  Request{Key: "default/a", Namespace: "default", Pool: "spare", SharingKey: "k", Ports: []PortKey{tcp(443)}},
		want: "127.0.202.1",
	},
	{
		name: "a Service never conflicts with itself on its current address",
		used: map[netip.Addr][]Holder{ip("127.0.200.3"): {{Key: "default/a", Ports: []PortKey{tcp(80)}}}},
		req:  Request{Key: "default/a", Namespace: "default", Current: ip("127.0.200.3"), Ports: []PortKey{tcp(80)}},
		want: "127.0.200.3",
	},
	{
		name: "a Service never conflicts with itself on a requested address",
		used: map[netip.Addr][]Holder{ip("127.0.200.3"): {{Key: "default/a", SharingKey: "k", Ports: []PortKey{tcp(80)}}}},
		req:  Request{Key: "default/a", Namespace: "default", IP: ip("127.0.200.3"), SharingKey: "k", Ports: []PortKey{tcp(80)}},
		want: "127.0.200.3",
	},
	{
		name: "an address held only by the Service itself counts as free",
		used: map[netip.Addr][]Holder{ip("127.0.200.1"): {{Key: "default/a"}}},
		req:  Request{Key: "default/a", Namespace: "default"},
		want: "127.0.200.1",
	},
}

func TestAllocate(t *testing.T) {
	for _, tt := range allocations {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Allocate(testPools(t), tt.used, tt.req)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Contains(t, err.Error(), tt.errText)
				assert.False(t, got.IsValid(), "an error comes with no address")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, ip(tt.want), got)
		})
	}
}

func TestAllocateWithEveryPoolReservedForOtherNamespaces(t *testing.T) {
	pools, err := ParsePools([]PoolConfig{{Name: "team", Addresses: []string{"127.0.201.1"}, Namespaces: []string{"team-a"}}})
	require.NoError(t, err)
	_, err = Allocate(pools, nil, Request{Key: "default/a", Namespace: "default"})
	require.ErrorIs(t, err, ErrPoolNotAllowed)
	assert.Contains(t, err.Error(), `"default"`)
}

func TestAllocateAtTheEndOfTheAddressSpace(t *testing.T) {
	pools, err := ParsePools([]PoolConfig{{Name: "top", Addresses: []string{"255.255.255.254-255.255.255.255"}}})
	require.NoError(t, err)
	used := map[netip.Addr][]Holder{ip("255.255.255.254"): {{Key: "default/x"}}, ip("255.255.255.255"): {{Key: "default/y"}}}
	_, err = Allocate(pools, used, Request{Key: "default/a", Namespace: "default"})
	require.ErrorIs(t, err, ErrPoolExhausted)
}

func TestAllocateDoesNotWalkAHugeFreeRange(t *testing.T) {
	pools, err := ParsePools([]PoolConfig{{Name: "huge", Addresses: []string{"fd00::/64"}}})
	require.NoError(t, err)
	got, err := Allocate(pools, map[netip.Addr][]Holder{ip("fd00::"): {{Key: "default/x"}}}, Request{Key: "default/a", Namespace: "default"})
	require.NoError(t, err)
	assert.Equal(t, ip("fd00::1"), got)
}
