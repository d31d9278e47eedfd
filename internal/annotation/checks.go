package annotation

// What each annotation's value must be, said once per annotation: the
// admission policy is generated from it (a Service whose value is wrong is
// refused at kubectl apply, with the message its Warning Event would give),
// the reference says where each annotation is checked, and the tests take
// their samples from it and hold the providers' own parsing to it.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Check is what one annotation's value must be.
type Check struct {
	// Accepted says what is accepted, as the parser's InvalidError says it.
	Accepted string
	// Valid and Invalid are values the cloud's parsing accepts and refuses.
	Valid, Invalid []string
	// cel is a CEL expression over x, the value (a CEL string expression),
	// true when the value is valid; nil when only the CCM can check it.
	cel func(x string) string
	// Where says where a value the policy cannot check is checked (the
	// Service's Warning Event, or nowhere: a value written by the CCM).
	Where string
	// EventOnly are invalid values the policy lets through (what CEL
	// cannot tell): the Service's Warning Event refuses them.
	EventOnly []string
	// Scope is when the CCM reads the annotation; the zero Scope: always.
	Scope Scope
}

// Scope is when a cloud reads an annotation (of one kind of load balancer,
// say): a CEL condition over variables.annotations (the Service's
// annotations); Set and Out are annotations that put a Service in it and
// out of it, for the tests that hold the scope to the cloud's reading.
type Scope struct {
	CEL      string
	Set, Out map[string]string
}

// In is the check, read only in scope.
func (c Check) In(s Scope) Check { c.Scope = s; return c }

// Checks are a cloud's checks, by annotation.
type Checks map[Name]Check

// CEL is the check's CEL expression over the value expression x; "" when
// only the CCM checks it.
func (c Check) CEL(x string) string {
	if c.cel == nil {
		return ""
	}
	return c.cel(x)
}

// AtApply says whether the admission policy checks the annotation.
func (c Check) AtApply() bool { return c.cel != nil }

// Message is the CEL expression of the refusal's message: the Warning
// Event's (InvalidError's) words, the value quoted.
func (c Check) Message(n Name, x string) string {
	return fmt.Sprintf("'annotation %s has invalid value \"' + %s + '\": accepted values are ' + %s", n, x, celString(c.Accepted))
}

// checks are every cloud's, by cloud name.
var checks = map[string]Checks{}

func registerChecks(cloud string, c Checks) { checks[cloud] = c }

// ChecksOf are the checks of a cloud's annotations (nil for a cloud
// without a table).
func ChecksOf(cloud string) Checks { return checks[cloud] }

// Names are the checked annotations, sorted.
func (cs Checks) Names() []Name {
	return slices.Sorted(func(yield func(Name) bool) {
		for n := range cs {
			if !yield(n) {
				return
			}
		}
	})
}

// celString is s as a CEL string literal.
func celString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// trimmed is x without the blanks around it, as the parsers read values.
func trimmed(x string) string { return x + ".trim()" }

// Bool is "true" or "false", any case (ParseBool).
func Bool() Check {
	return Check{Accepted: `"true" or "false"`, Valid: []string{"true", "False", " TRUE "}, Invalid: []string{"maybe", "1", ""},
		cel: func(x string) string { return trimmed(x) + ".lowerAscii() in ['true', 'false']" }}
}

// OneOf is one of values, any case (Name.OneOf).
func OneOf(values ...string) Check {
	lower := make([]string, len(values))
	for i, v := range values {
		lower[i] = celString(strings.ToLower(v))
	}
	return Check{Accepted: strings.Join(values, ", "), Valid: []string{values[0], strings.ToLower(values[len(values)-1])},
		Invalid: []string{"none-of-these", ""},
		cel:     func(x string) string { return trimmed(x) + ".lowerAscii() in [" + strings.Join(lower, ", ") + "]" }}
}

// wholeNumber is CEL: x is a whole number within [min, max] (Atoi's form:
// an optional sign, decimal digits).
func wholeNumber(x string, min, max int64) string {
	t := trimmed(x)
	return fmt.Sprintf(`(%s.matches('^[-+]?[0-9]{1,18}$') && int(%s) >= %d && int(%s) <= %d)`, t, t, min, t, max)
}

func numberSamples(min, max int64) (valid, invalid []string) {
	return []string{fmt.Sprint(min), fmt.Sprint(max)}, []string{fmt.Sprint(min - 1), fmt.Sprint(max + 1), "ten", "1.5"}
}

// Int is a whole number within [min, max] (Name.Int).
func Int(min, max int) Check {
	valid, invalid := numberSamples(int64(min), int64(max))
	return Check{Accepted: fmt.Sprintf("whole numbers from %d to %d", min, max), Valid: valid, Invalid: invalid,
		cel: func(x string) string { return wholeNumber(x, int64(min), int64(max)) }}
}

// Milliseconds is a whole number of milliseconds within [min, max]
// (ParseMilliseconds).
func Milliseconds(min, max int) Check {
	valid, invalid := numberSamples(int64(min), int64(max))
	return Check{Accepted: fmt.Sprintf("whole numbers of milliseconds from %d to %d", min, max), Valid: valid, Invalid: invalid,
		cel: func(x string) string { return wholeNumber(x, int64(min), int64(max)) }}
}

// goDuration is CEL: x is a Go duration within [min, max].
func goDuration(x string, min, max time.Duration) string {
	t := trimmed(x)
	return fmt.Sprintf(`(%s.matches('^([0-9]+(\\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') && duration(%s) >= duration('%s') && duration(%s) <= duration('%s'))`,
		t, t, min, t, max)
}

// Duration is a Go duration within [min, max] (ParseDuration).
func Duration(min, max time.Duration) Check {
	return Check{Accepted: fmt.Sprintf("durations from %s to %s such as \"30s\" or \"2m\"", min, max),
		Valid: []string{min.String(), max.String()}, Invalid: []string{(min / 2).String(), (max * 2).String(), "soon", "10"},
		cel: func(x string) string { return goDuration(x, min, max) }}
}

// SecondsOrDuration is whole seconds ("5") or a duration of whole seconds
// ("5s") within [min, max] (ParseSecondsOrDuration). The policy lets a
// duration with a fraction of a second through: the Event refuses it.
func SecondsOrDuration(min, max time.Duration) Check {
	lo, hi := int64(min/time.Second), int64(max/time.Second)
	return Check{Accepted: fmt.Sprintf("whole seconds from %d to %d such as \"5\", or durations of whole seconds from %s to %s such as \"5s\"", lo, hi, min, max),
		Valid: []string{fmt.Sprint(lo), max.String()}, Invalid: []string{fmt.Sprint(hi + 1), (max * 2).String(), "soon"},
		cel: func(x string) string { return "(" + wholeNumber(x, lo, hi) + " || " + goDuration(x, min, max) + ")" }}
}

// IP is one IPv4 or IPv6 address (ParseIP).
func IP() Check {
	return Check{Accepted: "one IPv4 or IPv6 address such as 192.0.2.10", Valid: []string{"192.0.2.10", "2001:db8::1"},
		Invalid: []string{"192.0.2.300", "192.0.2.0/24", "fe80::1%eth0", "lb.example.com"},
		cel:     func(x string) string { return "isIP(" + trimmed(x) + ")" }}
}

// IPv4 is one IPv4 address (ParseIPv4).
func IPv4() Check {
	return Check{Accepted: "one IPv4 address such as 192.0.2.10", Valid: []string{"192.0.2.10", " 10.0.10.200 "},
		Invalid: []string{"192.0.2.300", "2001:db8::1", "::ffff:192.0.2.10", "192.0.2.0/24", "lb.example.com", ""},
		cel:     func(x string) string { return "(isIP(" + trimmed(x) + ") && ip(" + trimmed(x) + ").family() == 4)" }}
}

// IPv6 is one IPv6 address (ParseIPv6).
func IPv6() Check {
	return Check{Accepted: "one IPv6 address such as 2001:db8::10", Valid: []string{"2001:db8::10", " 2001:DB8:0:20::5 "},
		Invalid: []string{"192.0.2.10", "::ffff:192.0.2.10", "2001:db8::/64", "fe80::1%eth0", "2001:db8::g", ""},
		cel:     func(x string) string { return "(isIP(" + trimmed(x) + ") && ip(" + trimmed(x) + ").family() == 6)" }}
}

// CIDRs is a comma-separated list of CIDRs, blanks ignored (Name.CIDRs).
func CIDRs() Check {
	return Check{Accepted: "comma-separated CIDRs such as 203.0.113.0/24,198.51.100.7/32",
		Valid:   []string{"203.0.113.0/24, 198.51.100.7/32", "2001:db8::/32", ""},
		Invalid: []string{"203.0.113.0/33", "203.0.113.7", "any"},
		cel:     func(x string) string { return x + ".split(',').all(c, c.trim() == '' || isCIDR(c.trim()))" }}
}

// Ports is a comma-separated list of port numbers (Name.Ports).
func Ports() Check {
	return Check{Accepted: "comma-separated port numbers from 1 to 65535", Valid: []string{"443", "80, 443"},
		Invalid: []string{"0", "65536", "https"},
		cel: func(x string) string {
			return x + ".split(',').all(p, p.trim() == '' || (p.trim().matches('^[+]?[0-9]{1,5}$') && int(p.trim()) >= 1 && int(p.trim()) <= 65535))"
		}}
}

// NonEmpty is any value but an empty or blank one (Name.NonEmptyString).
func NonEmpty() Check {
	return Check{Accepted: "a non-empty string", Valid: []string{"a"}, Invalid: []string{"", "  "},
		cel: func(x string) string { return trimmed(x) + " != ''" }}
}

// SecretRef is "<name>" or "<namespace>/<name>" (Name.SecretRef).
func SecretRef() Check {
	return Check{Accepted: `"<name>" or "<namespace>/<name>" of a Secret`, Valid: []string{"tls", "certs/tls"},
		Invalid: []string{"", "/tls", "certs/", "a/b/c"},
		cel:     func(x string) string { return trimmed(x) + ".matches('^[^/]+(/[^/]+)?$')" }}
}

// Hostname is a DNS name that is not an IP address (ParseHostnameOf).
func Hostname() Check {
	return Check{Accepted: `DNS names of lower-case letters, digits, "-" and "." such as lb.example.com`,
		Valid: []string{"lb.example.com"}, Invalid: []string{"LB.example.com", "192.0.2.10", "-lb.example.com"},
		cel: func(x string) string {
			t := trimmed(x)
			return fmt.Sprintf(`(size(%s) <= 253 && %s.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') && !isIP(%s))`, t, t, t)
		}}
}

// ServiceAccountName is a ServiceAccount's name: a DNS-1123 subdomain
// (Name.ServiceAccountName).
func ServiceAccountName() Check {
	return Check{Accepted: serviceAccountAccepted,
		Valid: []string{"lb-maker", " team-a.lb ", "a"}, Invalid: []string{"", "LB-Maker", "-lb", "lb-", "kube-system/lb", "lb_maker", strings.Repeat("a", 254)},
		cel: func(x string) string {
			t := trimmed(x)
			return fmt.Sprintf(`(size(%s) <= 253 && %s.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))`, t, t)
		}}
}

// UUID is an OpenStack ID, a UUID in its 8-4-4-4-12 form, any case
// (ParseUUID).
func UUID() Check {
	return Check{Accepted: "OpenStack IDs (UUIDs) such as 6f1a2b3c-4d5e-4f60-8a9b-0c1d2e3f4a5b",
		Valid:   []string{"6f1a2b3c-4d5e-4f60-8a9b-0c1d2e3f4a5b", " 6F1A2B3C-4D5E-4F60-8A9B-0C1D2E3F4A5B "},
		Invalid: []string{"6f1a2b3c", "my-network", "6f1a2b3c-4d5e-4f60-8a9b-0c1d2e3f4a5"},
		cel: func(x string) string {
			return trimmed(x) + ".lowerAscii().matches('^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')"
		}}
}

// ByTheCCM is an annotation whose value only the CCM checks (the Service
// then gets a Warning Event): what CEL cannot say, why.
func ByTheCCM(why string) Check { return Check{Where: "the Warning Event: " + why} }

// Written is an annotation the CCM writes for its records; nobody checks a
// value a user sets.
func Written() Check { return Check{Where: "written by the CCM"} }

// Free is an annotation that takes any value.
func Free() Check { return Check{Where: "any value is accepted"} }

// Saying is the check with what is accepted said as the parser says it.
func (c Check) Saying(accepted string) Check { c.Accepted = accepted; return c }

// CheckedClouds are the clouds with checks, sorted.
func CheckedClouds() []string {
	return slices.Sorted(maps.Keys(checks))
}
