package annotation

// The value types of the OpenStack table and their parsers.

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of the OpenStack annotations' values: Octavia's own, except for the health
// monitor interval, whose range is Overcast's (Octavia takes any whole seconds).
const (
	// OctaviaConnectionLimitMax is the largest connection-limit.
	OctaviaConnectionLimitMax = math.MaxInt32
	// OctaviaTimeoutMaxMillis is the largest listener and member timeout: one year.
	OctaviaTimeoutMaxMillis = min(365*24*60*60*1000, math.MaxInt)
	// OctaviaMonitorIntervalMin and OctaviaMonitorIntervalMax bound the health
	// monitor's delay and timeout.
	OctaviaMonitorIntervalMin = time.Second
	OctaviaMonitorIntervalMax = 24 * time.Hour
	// OctaviaMaxRetriesMin and OctaviaMaxRetriesMax bound health-monitor-max-retries
	// and health-monitor-max-retries-down.
	OctaviaMaxRetriesMin = 1
	OctaviaMaxRetriesMax = 10
	// NeutronTagMaxLength is the longest Neutron tag, in characters.
	NeutronTagMaxLength = 60
)

// ProxyProtocol is the PROXY protocol version a pool speaks to its members.
type ProxyProtocol string

// The values of the proxy-protocol annotation.
const (
	ProxyProtocolNone ProxyProtocol = ""
	ProxyProtocolV1   ProxyProtocol = "v1"
	ProxyProtocolV2   ProxyProtocol = "v2"
)

// ParseProxyProtocol parses the proxy-protocol annotation: "true" or "v1" is
// version 1, "v2" version 2, "false" none (case-insensitive).
func ParseProxyProtocol(v string) (ProxyProtocol, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "v1":
		return ProxyProtocolV1, nil
	case "v2":
		return ProxyProtocolV2, nil
	case "false":
		return ProxyProtocolNone, nil
	}
	return ProxyProtocolNone, &InvalidError{Name: OpenStackProxyProtocol, Value: v, Accepted: `"true" or "v1" (PROXY v1), "v2" (PROXY v2), or "false"`}
}

// LBMethod is an Octavia pool's load-balancing algorithm.
type LBMethod string

// The values of the lb-method annotation.
const (
	LBMethodRoundRobin       LBMethod = "ROUND_ROBIN"
	LBMethodLeastConnections LBMethod = "LEAST_CONNECTIONS"
	LBMethodSourceIP         LBMethod = "SOURCE_IP"
	LBMethodSourceIPPort     LBMethod = "SOURCE_IP_PORT"
)

var lbMethods = []LBMethod{LBMethodRoundRobin, LBMethodLeastConnections, LBMethodSourceIP, LBMethodSourceIPPort}

// ParseLBMethod parses the lb-method annotation. Case does not matter; the result
// is in Octavia's upper case.
func ParseLBMethod(v string) (LBMethod, error) {
	m := LBMethod(strings.ToUpper(strings.TrimSpace(v)))
	if slices.Contains(lbMethods, m) {
		return m, nil
	}
	return "", &InvalidError{Name: OpenStackLBMethod, Value: v, Accepted: "ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP or SOURCE_IP_PORT"}
}

// ParseConnectionLimit parses the connection-limit annotation: -1 for no limit, or
// a positive number of connections.
func ParseConnectionLimit(v string) (int, error) {
	i, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || (i != -1 && (i < 1 || i > OctaviaConnectionLimitMax)) {
		return 0, &InvalidError{Name: OpenStackConnectionLimit, Value: v,
			Accepted: fmt.Sprintf("-1 (no limit) or whole numbers from 1 to %d", OctaviaConnectionLimitMax)}
	}
	return i, nil
}

// ParseNodeSelector parses the node-selector annotation (ParseLabelSelector).
func ParseNodeSelector(v string) (map[string]string, error) {
	return ParseLabelSelector(OpenStackNodeSelector, v)
}

// ParseHostname parses the hostname annotation (ParseHostnameOf).
func ParseHostname(v string) (string, error) { return ParseHostnameOf(OpenStackHostname, v) }

// ParseUUID parses an OpenStack resource ID such as a network, subnet, port, flavor
// or load balancer ID: a UUID in its 8-4-4-4-12 hexadecimal form. The result is in
// lower case.
func ParseUUID(n Name, v string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	valid := len(s) == 36
	for i := 0; valid && i < len(s); i++ {
		switch c := s[i]; i {
		case 8, 13, 18, 23:
			valid = c == '-'
		default:
			valid = ('0' <= c && c <= '9') || ('a' <= c && c <= 'f')
		}
	}
	if !valid {
		return "", &InvalidError{Name: n, Value: v, Accepted: "OpenStack IDs (UUIDs) such as 6f1a2b3c-4d5e-4f60-8a9b-0c1d2e3f4a5b"}
	}
	return s, nil
}

// ParseTags parses a bare comma-separated list of Neutron tags, as in the
// floating-subnet-tags annotation after its optional "!" and "&" prefixes (see
// ParseSubnetTags, which the annotation's value should go through). Blanks around
// tags are trimmed; every tag must be 1 to 60 printable characters.
func ParseTags(v string) ([]string, error) {
	const accepted = "comma-separated Neutron tags of 1 to 60 printable characters each, optionally prefixed by \"!\" (none of them), \"&\" (all of them) or \"!&\""
	var tags []string
	seen := map[string]bool{}
	for t := range strings.SplitSeq(v, ",") {
		t = strings.TrimSpace(t)
		var problem string
		switch {
		case t == "":
			problem = "an empty tag"
		case !utf8.ValidString(t):
			problem = "a tag that is not valid UTF-8"
		case utf8.RuneCountInString(t) > NeutronTagMaxLength:
			problem = fmt.Sprintf("tag %q is longer than %d characters", t, NeutronTagMaxLength)
		case strings.ContainsFunc(t, func(r rune) bool { return !unicode.IsPrint(r) }):
			problem = fmt.Sprintf("tag %q has a control character", t)
		}
		if problem != "" {
			return nil, &InvalidError{Name: OpenStackFloatingSubnetTags, Value: v, Accepted: accepted, Err: fmt.Errorf("%s", problem)}
		}
		if !seen[t] {
			seen[t] = true
			tags = append(tags, t)
		}
	}
	return tags, nil
}

// SubnetTags is the parsed floating-subnet-tags annotation.
type SubnetTags struct {
	Tags []string
	// All: a subnet must carry every tag, not just one of them.
	All bool
	// Negate: a subnet matches when the condition above does not hold.
	Negate bool
}

// Match reports whether a subnet with the given tags matches.
func (s SubnetTags) Match(subnetTags []string) bool {
	has := func(t string) bool { return slices.Contains(subnetTags, t) }
	var ok bool
	if s.All {
		ok = !slices.ContainsFunc(s.Tags, func(t string) bool { return !has(t) })
	} else {
		ok = slices.ContainsFunc(s.Tags, has)
	}
	return ok != s.Negate
}

// ParseSubnetTags parses the floating-subnet-tags annotation: an optional "!"
// (negate), then an optional "&" (all tags), then a tag list (see ParseTags).
func ParseSubnetTags(v string) (SubnetTags, error) {
	var s SubnetTags
	rest := strings.TrimSpace(v)
	rest, s.Negate = strings.CutPrefix(rest, "!")
	rest, s.All = strings.CutPrefix(rest, "&")
	tags, err := ParseTags(rest)
	if err != nil {
		var inv *InvalidError
		if errors.As(err, &inv) {
			inv.Value = v // name the whole value, prefixes included
		}
		return SubnetTags{}, err
	}
	s.Tags = tags
	return s, nil
}

// SubnetPattern is the parsed floating-subnet annotation.
type SubnetPattern struct {
	// Negate: a subnet matches when its name does not match Regexp.
	Negate bool
	// Regexp matches the whole subnet name.
	Regexp *regexp.Regexp
}

// Match reports whether a subnet with this name matches.
func (p SubnetPattern) Match(name string) bool {
	return p.Regexp.MatchString(name) != p.Negate
}

// ParseSubnetPattern parses the floating-subnet annotation: an optional "!"
// (negate), then either "~" and a regular expression (RE2 syntax) or a glob in which
// "*" matches any run of characters and "?" one character. Either must match the
// whole subnet name.
func ParseSubnetPattern(v string) (SubnetPattern, error) {
	const accepted = `a subnet name, a glob such as "public-*", or "~" and a regular expression, each optionally negated by a leading "!"`
	var p SubnetPattern
	rest := strings.TrimSpace(v)
	rest, p.Negate = strings.CutPrefix(rest, "!")
	var expr string
	if re, ok := strings.CutPrefix(rest, "~"); ok {
		expr = re
	} else {
		var b strings.Builder
		for _, r := range rest {
			switch r {
			case '*':
				b.WriteString(".*")
			case '?':
				b.WriteString(".")
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		expr = b.String()
	}
	if rest == "" || expr == "" {
		return SubnetPattern{}, &InvalidError{Name: OpenStackFloatingSubnet, Value: v, Accepted: accepted, Err: fmt.Errorf("the pattern is empty")}
	}
	// Compile the expression on its own first: only a balanced one may be anchored
	// by wrapping it, or "a)|(b" would escape the anchors.
	re, err := regexp.Compile(expr)
	if err == nil {
		re, err = regexp.Compile(`^(?:` + expr + `)$`)
	}
	if err != nil {
		return SubnetPattern{}, &InvalidError{Name: OpenStackFloatingSubnet, Value: v, Accepted: accepted, Err: err}
	}
	p.Regexp = re
	return p, nil
}
