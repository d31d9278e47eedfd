package annotation

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The table holds every annotation cloud-provider-openstack accepts, under its own
// name, plus the one Overcast extension.
func TestOpenStackNamesAreThePeers(t *testing.T) {
	got := []Name{
		OpenStackFloatingNetworkID, OpenStackFloatingSubnet, OpenStackFloatingSubnetID,
		OpenStackFloatingSubnetTags, OpenStackKeepFloatingIP, OpenStackPortID, OpenStackSubnetID,
		OpenStackNetworkID, OpenStackMemberSubnetID, OpenStackLoadBalancerAddress,
		OpenStackConnectionLimit, OpenStackLBMethod, OpenStackProxyProtocol, OpenStackXForwardedFor,
		OpenStackTimeoutClientData, OpenStackTimeoutMemberConnect, OpenStackTimeoutMemberData,
		OpenStackTimeoutTCPInspect, OpenStackDefaultTLSContainerRef, OpenStackEnableHealthMonitor,
		OpenStackHealthMonitorDelay, OpenStackHealthMonitorTimeout, OpenStackHealthMonitorMaxRetries,
		OpenStackHealthMonitorMaxRetriesDown, OpenStackNodeSelector, OpenStackClass, OpenStackFlavorID,
		OpenStackAvailabilityZone, OpenStackHostname, OpenStackLoadBalancerID,
	}
	var suffixes []string
	for _, n := range got {
		s, ok := strings.CutPrefix(string(n), "loadbalancer.openstack.org/")
		require.True(t, ok, "%s has the peer's prefix", n)
		suffixes = append(suffixes, s)
	}
	assert.Equal(t, []string{
		"floating-network-id", "floating-subnet", "floating-subnet-id", "floating-subnet-tags",
		"keep-floatingip", "port-id", "subnet-id", "network-id", "member-subnet-id",
		"load-balancer-address", "connection-limit", "lb-method", "proxy-protocol",
		"x-forwarded-for", "timeout-client-data", "timeout-member-connect", "timeout-member-data",
		"timeout-tcp-inspect", "default-tls-container-ref", "enable-health-monitor",
		"health-monitor-delay", "health-monitor-timeout", "health-monitor-max-retries",
		"health-monitor-max-retries-down", "node-selector", "class", "flavor-id",
		"availability-zone", "hostname", "load-balancer-id",
	}, suffixes)
	assert.Equal(t, Name("service.beta.kubernetes.io/openstack-internal-load-balancer"), OpenStackInternalLoadBalancer)
	assert.Equal(t, Name("loadbalancer.openstack.org/publish-only-public-address"), OpenStackPublishOnlyPublicAddress)
}

type parserCase struct {
	name string
	run  func() (any, error)
	want any
	// invalid names the annotation the error must name; empty for a valid value.
	invalid Name
}

func runParserCases(t *testing.T, tests []parserCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.run()
			if tt.invalid == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			var inv *InvalidError
			require.ErrorAs(t, err, &inv)
			assert.Equal(t, tt.invalid, inv.Name)
			assert.Contains(t, err.Error(), string(tt.invalid), "the error names the annotation")
			assert.Contains(t, err.Error(), "accepted values are", "the error lists what is accepted")
		})
	}
}

func wrap[T any](v T, err error) (any, error) { return v, err }

func TestParseProxyProtocol(t *testing.T) {
	p := func(v string) func() (any, error) { return func() (any, error) { return wrap(ParseProxyProtocol(v)) } }
	runParserCases(t, []parserCase{
		{"true means PROXY v1, as in the peer", p("true"), ProxyProtocolV1, ""},
		{"v1 is PROXY v1", p("v1"), ProxyProtocolV1, ""},
		{"v2 is PROXY v2", p("v2"), ProxyProtocolV2, ""},
		{"false turns it off", p("false"), ProxyProtocolNone, ""},
		{"case and blanks do not matter", p(" V2 "), ProxyProtocolV2, ""},
		{"an unknown version is refused", p("v3"), nil, OpenStackProxyProtocol},
		{"yes is not a boolean here either", p("yes"), nil, OpenStackProxyProtocol},
		{"an empty value is refused", p(""), nil, OpenStackProxyProtocol},
	})
}

func TestParseLBMethod(t *testing.T) {
	p := func(v string) func() (any, error) { return func() (any, error) { return wrap(ParseLBMethod(v)) } }
	runParserCases(t, []parserCase{
		{"ROUND_ROBIN is accepted", p("ROUND_ROBIN"), LBMethodRoundRobin, ""},
		{"LEAST_CONNECTIONS is accepted", p("LEAST_CONNECTIONS"), LBMethodLeastConnections, ""},
		{"SOURCE_IP is accepted", p("SOURCE_IP"), LBMethodSourceIP, ""},
		{"SOURCE_IP_PORT is accepted", p("SOURCE_IP_PORT"), LBMethodSourceIPPort, ""},
		{"lower case is normalised to Octavia's upper case", p(" least_connections "), LBMethodLeastConnections, ""},
		{"a neutron-lbaas spelling is refused", p("LEAST_CONNECTION"), nil, OpenStackLBMethod},
		{"an empty value is refused", p(""), nil, OpenStackLBMethod},
	})
}

func TestParseConnectionLimit(t *testing.T) {
	p := func(v string) func() (any, error) {
		return func() (any, error) { return wrap(ParseConnectionLimit(v)) }
	}
	runParserCases(t, []parserCase{
		{"-1 means no limit", p("-1"), -1, ""},
		{"1 is the smallest limit", p("1"), 1, ""},
		{"the largest 32-bit number is the largest limit", p("2147483647"), 2147483647, ""},
		{"blanks are trimmed", p(" 500 "), 500, ""},
		{"0 is refused", p("0"), nil, OpenStackConnectionLimit},
		{"-2 is refused", p("-2"), nil, OpenStackConnectionLimit},
		{"a number above 32 bits is refused", p("2147483648"), nil, OpenStackConnectionLimit},
		{"a word is refused", p("unlimited"), nil, OpenStackConnectionLimit},
	})
}

func TestParseNodeSelector(t *testing.T) {
	p := func(v string) func() (any, error) { return func() (any, error) { return wrap(ParseNodeSelector(v)) } }
	runParserCases(t, []parserCase{
		{"key=value pairs require those values", p("zone=a,tier=lb"), map[string]string{"zone": "a", "tier": "lb"}, ""},
		{"a bare key requires only the label", p("node-role.kubernetes.io/lb"), map[string]string{"node-role.kubernetes.io/lb": ""}, ""},
		{"key= is the same as a bare key", p("lb="), map[string]string{"lb": ""}, ""},
		{"blanks and empty items are skipped", p(" zone = a ,, lb ,"), map[string]string{"zone": "a", "lb": ""}, ""},
		{"an empty value selects every node", p(""), map[string]string{}, ""},
		{"a key repeated with the same value is fine", p("a=1,a=1"), map[string]string{"a": "1"}, ""},
		{"a key repeated with another value is refused", p("a=1,a=2"), nil, OpenStackNodeSelector},
		{"a key with a space is refused", p("my key=v"), nil, OpenStackNodeSelector},
		{"an empty key is refused", p("=v"), nil, OpenStackNodeSelector},
		{"a value with a slash is refused", p("zone=a/b"), nil, OpenStackNodeSelector},
		{"a value longer than 63 characters is refused", p("k=" + strings.Repeat("a", 64)), nil, OpenStackNodeSelector},
		{"a second = belongs to the value, which is then refused", p("k=v=w"), nil, OpenStackNodeSelector},
	})
}

func TestParseTags(t *testing.T) {
	p := func(v string) func() (any, error) { return func() (any, error) { return wrap(ParseTags(v)) } }
	runParserCases(t, []parserCase{
		{"one tag is a list", p("public"), []string{"public"}, ""},
		{"tags are split on commas and trimmed", p(" public , k8s-lb "), []string{"public", "k8s-lb"}, ""},
		{"a repeated tag is listed once", p("a,b,a"), []string{"a", "b"}, ""},
		{"a tag of 60 characters is accepted", p(strings.Repeat("t", 60)), []string{strings.Repeat("t", 60)}, ""},
		{"an empty value is refused", p(""), nil, OpenStackFloatingSubnetTags},
		{"an empty tag between commas is refused", p("a,,b"), nil, OpenStackFloatingSubnetTags},
		{"a tag of 61 characters is refused", p(strings.Repeat("t", 61)), nil, OpenStackFloatingSubnetTags},
		{"a control character is refused", p("a\tb"), nil, OpenStackFloatingSubnetTags},
		{"invalid UTF-8 is refused", p("\xff"), nil, OpenStackFloatingSubnetTags},
	})
}

func TestParseSubnetTags(t *testing.T) {
	p := func(v string) func() (any, error) { return func() (any, error) { return wrap(ParseSubnetTags(v)) } }
	runParserCases(t, []parserCase{
		{"a plain list matches any of its tags", p("a,b"), SubnetTags{Tags: []string{"a", "b"}}, ""},
		{"& asks for all the tags", p("&a,b"), SubnetTags{Tags: []string{"a", "b"}, All: true}, ""},
		{"! negates the match", p("!a"), SubnetTags{Tags: []string{"a"}, Negate: true}, ""},
		{"!& negates the all-tags match", p("!&a,b"), SubnetTags{Tags: []string{"a", "b"}, All: true, Negate: true}, ""},
		{"a prefix without tags is refused", p("!&"), nil, OpenStackFloatingSubnetTags},
		{"an empty value is refused", p(""), nil, OpenStackFloatingSubnetTags},
	})
	t.Run("the error quotes the whole value, prefixes included", func(t *testing.T) {
		_, err := ParseSubnetTags("&a,,b")
		var inv *InvalidError
		require.ErrorAs(t, err, &inv)
		assert.Equal(t, "&a,,b", inv.Value)
	})
	t.Run("matching follows any, all and negation", func(t *testing.T) {
		subnet := []string{"a", "c"}
		assert.True(t, SubnetTags{Tags: []string{"a", "b"}}.Match(subnet))
		assert.False(t, SubnetTags{Tags: []string{"a", "b"}, All: true}.Match(subnet))
		assert.True(t, SubnetTags{Tags: []string{"a", "c"}, All: true}.Match(subnet))
		assert.False(t, SubnetTags{Tags: []string{"a"}, Negate: true}.Match(subnet))
		assert.True(t, SubnetTags{Tags: []string{"a", "b"}, All: true, Negate: true}.Match(subnet))
	})
}

func TestParseSubnetPattern(t *testing.T) {
	tests := []struct {
		name       string
		value      string
		match      []string
		noMatch    []string
		wantErrMsg string
	}{
		{name: "a plain name matches only itself", value: "public.v4", match: []string{"public.v4"}, noMatch: []string{"publicXv4", "public.v4-2"}},
		{name: "a glob star matches any run of characters", value: "public-*", match: []string{"public-", "public-v4"}, noMatch: []string{"private-v4"}},
		{name: "a glob question mark matches one character", value: "net?", match: []string{"net1"}, noMatch: []string{"net", "net12"}},
		{name: "~ starts a regular expression matching the whole name", value: "~ext-[0-9]+", match: []string{"ext-12"}, noMatch: []string{"ext-", "my-ext-1"}},
		{name: "! negates a glob", value: "!internal-*", match: []string{"public"}, noMatch: []string{"internal-a"}},
		{name: "! negates a regular expression", value: "!~int.*", match: []string{"public"}, noMatch: []string{"internal"}},
		{name: "an unbalanced expression cannot escape the anchors", value: "~a)|(b", wantErrMsg: "unexpected )"},
		{name: "an expression that nests too deeply once anchored is refused, not a panic", value: "~" + strings.Repeat("(", 999) + "a" + strings.Repeat(")", 999), wantErrMsg: "nests too deeply"},
		{name: "a broken regular expression is refused", value: "~[a-", wantErrMsg: "missing closing ]"},
		{name: "an empty value is refused", value: "", wantErrMsg: "empty"},
		{name: "a lone ! is refused", value: "!", wantErrMsg: "empty"},
		{name: "a lone ~ is refused", value: "~", wantErrMsg: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseSubnetPattern(tt.value)
			if tt.wantErrMsg != "" {
				var inv *InvalidError
				require.ErrorAs(t, err, &inv)
				assert.Equal(t, OpenStackFloatingSubnet, inv.Name)
				assert.Contains(t, err.Error(), string(OpenStackFloatingSubnet))
				assert.Contains(t, err.Error(), "accepted values are")
				assert.Contains(t, err.Error(), tt.wantErrMsg)
				return
			}
			require.NoError(t, err)
			for _, name := range tt.match {
				assert.True(t, p.Match(name), "%q matches %q", tt.value, name)
			}
			for _, name := range tt.noMatch {
				assert.False(t, p.Match(name), "%q does not match %q", tt.value, name)
			}
		})
	}
}

func TestParseMilliseconds(t *testing.T) {
	n := OpenStackTimeoutClientData
	p := func(v string) func() (any, error) {
		return func() (any, error) { return wrap(ParseMilliseconds(n, v, 0, OctaviaTimeoutMaxMillis)) }
	}
	runParserCases(t, []parserCase{
		{"a whole number is milliseconds", p("50000"), 50 * time.Second, ""},
		{"zero is accepted where the minimum is zero", p("0"), time.Duration(0), ""},
		{"one year is the largest Octavia timeout", p("31536000000"), 365 * 24 * time.Hour, ""},
		{"blanks are trimmed", p(" 5000 "), 5 * time.Second, ""},
		{"more than a year is refused", p("31536000001"), nil, n},
		{"a negative number is refused", p("-1"), nil, n},
		{"a Go duration is refused, the peer takes milliseconds", p("50s"), nil, n},
		{"a fraction is refused", p("1.5"), nil, n},
		{"a number beyond 64 bits is refused", p("99999999999999999999"), nil, n},
	})
	t.Run("the error says the unit and the range", func(t *testing.T) {
		_, err := ParseMilliseconds(n, "x", 0, 1000)
		assert.ErrorContains(t, err, "whole numbers of milliseconds from 0 to 1000")
	})
}

func TestParseSecondsOrDuration(t *testing.T) {
	n := OpenStackHealthMonitorDelay
	p := func(v string) func() (any, error) {
		return func() (any, error) {
			return wrap(ParseSecondsOrDuration(n, v, OctaviaMonitorIntervalMin, OctaviaMonitorIntervalMax))
		}
	}
	runParserCases(t, []parserCase{
		{"a whole number is seconds, as the peer reads it", p("5"), 5 * time.Second, ""},
		{"a duration is accepted too", p("5s"), 5 * time.Second, ""},
		{"a compound duration of whole seconds is accepted", p("1m30s"), 90 * time.Second, ""},
		{"the lower bound is inclusive", p("1"), time.Second, ""},
		{"the upper bound is inclusive", p("24h"), 24 * time.Hour, ""},
		{"blanks are trimmed", p(" 10 "), 10 * time.Second, ""},
		{"zero seconds is refused", p("0"), nil, n},
		{"a negative duration is refused", p("-5s"), nil, n},
		{"a duration above the range is refused", p("25h"), nil, n},
		{"seconds above the range are refused", p("86401"), nil, n},
		{"a fraction of a second is refused, Octavia takes whole seconds", p("1500ms"), nil, n},
		{"a huge number of seconds is refused without overflow", p("9223372036854775807"), nil, n},
		{"a word is refused", p("soon"), nil, n},
	})
}

func TestParseUUID(t *testing.T) {
	n := OpenStackFloatingNetworkID
	p := func(v string) func() (any, error) { return func() (any, error) { return wrap(ParseUUID(n, v)) } }
	runParserCases(t, []parserCase{
		{"a lower-case UUID is accepted", p("a57af0a0-da92-49be-a98a-345ceca004b3"), "a57af0a0-da92-49be-a98a-345ceca004b3", ""},
		{"an upper-case UUID is lowered", p(" A57AF0A0-DA92-49BE-A98A-345CECA004B3 "), "a57af0a0-da92-49be-a98a-345ceca004b3", ""},
		{"a UUID without dashes is refused", p("a57af0a0da9249bea98a345ceca004b3"), nil, n},
		{"a name is refused", p("public"), nil, n},
		{"a non-hex digit is refused", p("g57af0a0-da92-49be-a98a-345ceca004b3"), nil, n},
		{"an empty value is refused", p(""), nil, n},
	})
}

func TestParseHostname(t *testing.T) {
	p := func(v string) func() (any, error) { return func() (any, error) { return wrap(ParseHostname(v)) } }
	runParserCases(t, []parserCase{
		{"a DNS name is accepted", p("lb.example.com"), "lb.example.com", ""},
		{"blanks are trimmed", p(" lb.example.com "), "lb.example.com", ""},
		{"an IP address is refused, the status needs a name", p("192.0.2.10"), nil, OpenStackHostname},
		{"upper case is refused", p("LB.example.com"), nil, OpenStackHostname},
		{"an underscore is refused", p("my_lb.example.com"), nil, OpenStackHostname},
		{"an empty value is refused", p(""), nil, OpenStackHostname},
	})
}

// The generic getters serve the plain annotations of the table.
func TestOpenStackGenericGetters(t *testing.T) {
	svc := svcWith(
		string(OpenStackKeepFloatingIP), "true",
		string(OpenStackHealthMonitorMaxRetries), "11",
		string(OpenStackLoadBalancerAddress), "203.0.113.7",
	)
	keep, err := OpenStackKeepFloatingIP.Bool(svc)
	require.NoError(t, err)
	assert.True(t, keep)
	_, err = OpenStackHealthMonitorMaxRetries.Int(svc, OctaviaMaxRetriesMin, OctaviaMaxRetriesMax)
	assert.ErrorContains(t, err, "whole numbers from 1 to 10")
	addr, err := OpenStackLoadBalancerAddress.IP(svc)
	require.NoError(t, err)
	assert.Equal(t, "203.0.113.7", addr.String())
	_, err = OpenStackPublishOnlyPublicAddress.Bool(svc)
	assert.ErrorIs(t, err, ErrNotSet)
}

// The OpenStack parsers never panic and either accept a value or explain it with an
// InvalidError naming the annotation.
func FuzzOpenStackParsers(f *testing.F) {
	for _, s := range []string{
		"", " ", ",", "=", "!", "&", "~", "!&", "!~", "true", "v1", "V2", "false", "round_robin",
		"SOURCE_IP_PORT", "-1", "0", "1", "2147483648", "31536000001", "5", "5s", "1500ms", "-5s",
		"9223372036854775807", "a=b,c", "k=v=w", "a,,b", "&a,b", "!&a", "~a)|(b", "~[a-", "~(?i)x",
		"public-*", "a57af0a0-da92-49be-a98a-345ceca004b3", "lb.example.com", "192.0.2.1", "\xff", "\x00",
		strings.Repeat("(", 1001) + strings.Repeat(")", 1001),
		"~" + strings.Repeat("(", 999) + "a" + strings.Repeat(")", 999),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		check := func(n Name, err error) {
			t.Helper()
			if err == nil {
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("error %v is not an InvalidError", err)
			}
			if inv.Name != n {
				t.Fatalf("error %v names %s, want %s", err, inv.Name, n)
			}
		}
		pp, err := ParseProxyProtocol(v)
		check(OpenStackProxyProtocol, err)
		if err == nil && pp != ProxyProtocolNone && pp != ProxyProtocolV1 && pp != ProxyProtocolV2 {
			t.Fatalf("ParseProxyProtocol(%q) = %q", v, pp)
		}
		m, err := ParseLBMethod(v)
		check(OpenStackLBMethod, err)
		if err == nil && !slices.Contains(lbMethods, m) {
			t.Fatalf("ParseLBMethod(%q) = %q", v, m)
		}
		limit, err := ParseConnectionLimit(v)
		check(OpenStackConnectionLimit, err)
		if err == nil && limit != -1 && (limit < 1 || limit > OctaviaConnectionLimitMax) {
			t.Fatalf("ParseConnectionLimit(%q) = %d", v, limit)
		}
		_, err = ParseNodeSelector(v)
		check(OpenStackNodeSelector, err)
		tags, err := ParseTags(v)
		check(OpenStackFloatingSubnetTags, err)
		if err == nil && len(tags) == 0 {
			t.Fatalf("ParseTags(%q) accepted an empty list", v)
		}
		_, err = ParseSubnetTags(v)
		check(OpenStackFloatingSubnetTags, err)
		pat, err := ParseSubnetPattern(v)
		check(OpenStackFloatingSubnet, err)
		if err == nil {
			pat.Match(v)
		}
		ms, err := ParseMilliseconds(OpenStackTimeoutMemberData, v, 0, OctaviaTimeoutMaxMillis)
		check(OpenStackTimeoutMemberData, err)
		if err == nil && (ms < 0 || ms > OctaviaTimeoutMaxMillis*time.Millisecond) {
			t.Fatalf("ParseMilliseconds(%q) = %s", v, ms)
		}
		d, err := ParseSecondsOrDuration(OpenStackHealthMonitorTimeout, v, OctaviaMonitorIntervalMin, OctaviaMonitorIntervalMax)
		check(OpenStackHealthMonitorTimeout, err)
		if err == nil && (d < OctaviaMonitorIntervalMin || d > OctaviaMonitorIntervalMax || d%time.Second != 0) {
			t.Fatalf("ParseSecondsOrDuration(%q) = %s", v, d)
		}
		_, err = ParseUUID(OpenStackSubnetID, v)
		check(OpenStackSubnetID, err)
		_, err = ParseHostname(v)
		check(OpenStackHostname, err)
	})
}
