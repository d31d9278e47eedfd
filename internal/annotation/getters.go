package annotation

// The typed getters and parsers every cloud's table uses: a getter reads one
// annotation of a Service (ErrNotSet when it is absent), a parser checks a
// value (an *InvalidError naming the annotation and what is accepted).

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// get parses n's value on svc with parse; ErrNotSet when it is absent.
func get[T any](n Name, svc *v1.Service, parse func(Name, string) (T, error)) (T, error) {
	v, ok := n.lookup(svc)
	if !ok {
		var zero T
		return zero, ErrNotSet
	}
	return parse(n, v)
}

// String returns the raw value. An empty value counts as set.
func (n Name) String(svc *v1.Service) (string, error) {
	return get(n, svc, func(_ Name, v string) (string, error) { return v, nil })
}

// NonEmptyString returns the value, which must not be empty or only blanks.
func (n Name) NonEmptyString(svc *v1.Service) (string, error) {
	return get(n, svc, func(n Name, v string) (string, error) {
		if strings.TrimSpace(v) == "" {
			return "", &InvalidError{Name: n, Value: v, Accepted: "a non-empty string"}
		}
		return strings.TrimSpace(v), nil
	})
}

// Bool parses "true" or "false" (case-insensitive).
func (n Name) Bool(svc *v1.Service) (bool, error) {
	return get(n, svc, ParseBool)
}

// ParseBool parses a boolean annotation value.
func ParseBool(n Name, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, &InvalidError{Name: n, Value: v, Accepted: `"true" or "false"`}
}

// Duration parses a positive Go duration such as "30s" or "2m".
func (n Name) Duration(svc *v1.Service, min, max time.Duration) (time.Duration, error) {
	return get(n, svc, func(n Name, v string) (time.Duration, error) { return ParseDuration(n, v, min, max) })
}

// ParseDuration parses a duration within [min, max].
func ParseDuration(n Name, v string, min, max time.Duration) (time.Duration, error) {
	accepted := fmt.Sprintf("durations from %s to %s such as \"30s\" or \"2m\"", min, max)
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return 0, &InvalidError{Name: n, Value: v, Accepted: accepted}
	}
	if d < min || d > max {
		return 0, &InvalidError{Name: n, Value: v, Accepted: accepted}
	}
	return d, nil
}

// Int parses a decimal integer within [min, max].
func (n Name) Int(svc *v1.Service, min, max int) (int, error) {
	return get(n, svc, func(n Name, v string) (int, error) { return ParseInt(n, v, min, max) })
}

// ParseInt parses an integer within [min, max].
func ParseInt(n Name, v string, min, max int) (int, error) {
	i, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || i < min || i > max {
		return 0, &InvalidError{Name: n, Value: v, Accepted: fmt.Sprintf("whole numbers from %d to %d", min, max)}
	}
	return i, nil
}

// IP parses a single IPv4 or IPv6 address.
func (n Name) IP(svc *v1.Service) (netip.Addr, error) {
	return get(n, svc, ParseIP)
}

// ParseIP parses an IP address annotation value.
func ParseIP(n Name, v string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(v))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, &InvalidError{Name: n, Value: v, Accepted: "one IPv4 or IPv6 address such as 192.0.2.10"}
	}
	return a.Unmap(), nil
}

// IPv4 parses a single IPv4 address (an IPv4-mapped IPv6 one is not).
func (n Name) IPv4(svc *v1.Service) (netip.Addr, error) {
	return get(n, svc, ParseIPv4)
}

// ParseIPv4 parses an IPv4 address annotation value.
func ParseIPv4(n Name, v string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(v))
	if err != nil || !a.Is4() {
		return netip.Addr{}, &InvalidError{Name: n, Value: v, Accepted: "one IPv4 address such as 192.0.2.10"}
	}
	return a, nil
}

// IPv6 parses a single IPv6 address: not an IPv4-mapped one, no zone.
func (n Name) IPv6(svc *v1.Service) (netip.Addr, error) {
	return get(n, svc, ParseIPv6)
}

// ParseIPv6 parses an IPv6 address annotation value.
func ParseIPv6(n Name, v string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(v))
	if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
		return netip.Addr{}, &InvalidError{Name: n, Value: v, Accepted: "one IPv6 address such as 2001:db8::10"}
	}
	return a, nil
}

// CIDRs parses a comma-separated list of CIDRs (blanks ignored; "" is an
// empty list).
func (n Name) CIDRs(svc *v1.Service) ([]string, error) {
	return parseList(n, svc, "comma-separated CIDRs such as 203.0.113.0/24,198.51.100.7/32", func(c string) (string, error) {
		p, err := netip.ParsePrefix(c)
		return p.Masked().String(), err
	})
}

// OneOf returns the value, which must be one of values (without case).
func (n Name) OneOf(svc *v1.Service, values []string) (string, error) {
	return get(n, svc, func(n Name, v string) (string, error) {
		i := slices.IndexFunc(values, func(x string) bool { return strings.EqualFold(x, strings.TrimSpace(v)) })
		if i < 0 {
			return "", &InvalidError{Name: n, Value: v, Accepted: strings.Join(values, ", ")}
		}
		return values[i], nil
	})
}

// Ports parses a comma-separated list of port numbers, repeats dropped.
func (n Name) Ports(svc *v1.Service) ([]int32, error) {
	ports, err := parseList(n, svc, "comma-separated port numbers from 1 to 65535", func(item string) (int32, error) {
		p, err := strconv.Atoi(item)
		if err == nil && (p < 1 || p > 65535) {
			err = fmt.Errorf("%d is out of range", p)
		}
		return int32(p), err
	})
	return unique(ports), err
}

// parseList parses a comma-separated list of what parse accepts, blanks
// skipped.
func parseList[T any](n Name, svc *v1.Service, accepted string, parse func(string) (T, error)) ([]T, error) {
	v, ok := n.lookup(svc)
	if !ok {
		return nil, ErrNotSet
	}
	var out []T
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		x, err := parse(item)
		if err != nil {
			return nil, &InvalidError{Name: n, Value: v, Accepted: accepted, Err: err}
		}
		out = append(out, x)
	}
	return out, nil
}

// unique is xs without repeats, in order.
func unique[T comparable](xs []T) []T {
	var out []T
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// SecretRef parses a Secret's reference: "<name>" in the Service's namespace,
// or "<namespace>/<name>".
func (n Name) SecretRef(svc *v1.Service) (namespace, name string, err error) {
	v, ok := n.lookup(svc)
	if !ok {
		return "", "", ErrNotSet
	}
	namespace, name, found := strings.Cut(strings.TrimSpace(v), "/")
	if !found {
		namespace, name = svc.Namespace, namespace
	}
	if namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", &InvalidError{Name: n, Value: v, Accepted: `"<name>" or "<namespace>/<name>" of a Secret`}
	}
	return namespace, name, nil
}

// JSON parses a JSON object into out (a pointer), unknown fields refused;
// accepted says what is accepted.
func (n Name) JSON(svc *v1.Service, out any, accepted string) error {
	v, ok := n.lookup(svc)
	if !ok {
		return ErrNotSet
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return &InvalidError{Name: n, Value: v, Accepted: accepted, Err: err}
	}
	if dec.More() {
		return &InvalidError{Name: n, Value: v, Accepted: accepted}
	}
	return nil
}

// ParseMilliseconds parses a whole number of milliseconds within [min, max], as in
// the timeout-* annotations.
func ParseMilliseconds(n Name, v string, min, max int) (time.Duration, error) {
	i, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || i < int64(min) || i > int64(max) {
		return 0, &InvalidError{Name: n, Value: v, Accepted: fmt.Sprintf("whole numbers of milliseconds from %d to %d", min, max)}
	}
	return time.Duration(i) * time.Millisecond, nil
}

// ParseSecondsOrDuration parses a whole number of seconds ("5") or a Go duration
// that is a whole number of seconds ("5s", "1m30s") within [min, max], as in the
// health-monitor-delay and health-monitor-timeout annotations.
func ParseSecondsOrDuration(n Name, v string, min, max time.Duration) (time.Duration, error) {
	s := strings.TrimSpace(v)
	var d time.Duration
	var ok bool
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		ok = i >= int64(min/time.Second) && i <= int64(max/time.Second)
		if ok {
			d = time.Duration(i) * time.Second
		}
	} else if pd, err := time.ParseDuration(s); err == nil {
		d, ok = pd, pd%time.Second == 0
	}
	if !ok || d < min || d > max {
		return 0, &InvalidError{Name: n, Value: v,
			Accepted: fmt.Sprintf("whole seconds from %d to %d such as \"5\", or durations of whole seconds from %s to %s such as \"5s\"",
				int64(min/time.Second), int64(max/time.Second), min, max)}
	}
	return d, nil
}

// ParseLabelSelector parses a node selector: a comma-separated list of
// "key=value" (the node's label must have that value) and "key" or "key=" (the node
// must carry the label). In the result an empty value stands for "any value". Keys
// and values must be valid label keys and values; empty items are skipped, so an
// empty annotation yields an empty, non-nil map (every node).
func ParseLabelSelector(n Name, v string) (map[string]string, error) {
	const accepted = `comma-separated label keys or key=value pairs such as "node-role.kubernetes.io/lb,zone=a"`
	sel := map[string]string{}
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, value, _ := strings.Cut(item, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, &InvalidError{Name: n, Value: v, Accepted: accepted,
				Err: fmt.Errorf("label key %q: %s", key, strings.Join(errs, "; "))}
		}
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return nil, &InvalidError{Name: n, Value: v, Accepted: accepted,
				Err: fmt.Errorf("label value %q of %s: %s", value, key, strings.Join(errs, "; "))}
		}
		if old, dup := sel[key]; dup && old != value {
			return nil, &InvalidError{Name: n, Value: v, Accepted: accepted,
				Err: fmt.Errorf("label key %s is given twice, with %q and %q", key, old, value)}
		}
		sel[key] = value
	}
	return sel, nil
}

// ParseHostnameOf parses a DNS name (RFC 1123 subdomain) that is not an IP
// address, as the Service status requires of a hostname.
func ParseHostnameOf(n Name, v string) (string, error) {
	s := strings.TrimSpace(v)
	errs := validation.IsDNS1123Subdomain(s)
	if len(errs) == 0 {
		if _, err := ParseIP(n, s); err == nil {
			errs = []string{"it is an IP address"}
		}
	}
	if len(errs) > 0 {
		return "", &InvalidError{Name: n, Value: v,
			Accepted: `DNS names of lower-case letters, digits, "-" and "." such as lb.example.com`,
			Err:      fmt.Errorf("%s", strings.Join(errs, "; "))}
	}
	return s, nil
}

// serviceAccountAccepted says what ServiceAccountName accepts.
const serviceAccountAccepted = `the name of a ServiceAccount in the Service's namespace (a DNS-1123 subdomain of lower-case letters, digits, "-" and ".", such as lb-maker)`

// ServiceAccountName parses the name of a ServiceAccount of the Service's
// namespace: a DNS-1123 subdomain, blanks around it ignored.
func (n Name) ServiceAccountName(svc *v1.Service) (string, error) {
	return get(n, svc, func(n Name, v string) (string, error) {
		name := strings.TrimSpace(v)
		if len(validation.IsDNS1123Subdomain(name)) > 0 {
			return "", &InvalidError{Name: n, Value: v, Accepted: serviceAccountAccepted}
		}
		return name, nil
	})
}
