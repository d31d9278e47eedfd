package cloudstack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// The drift check, the walk and explain compare the same fields of each
// object, named as the writes send them (docs/cloudstack.md, fields_test.go):
// a rule's protocol, ports, algorithm and cidrlist; its machines
// (virtualmachineids); a firewall rule's or an ACL item's protocol, ports,
// cidrlist, and an item's action and traffictype; a health-check policy's
// pingpath, intervaltime, responsetimeout and thresholds.

// fieldDiff is a field, by its wire name, as read and as the Service asks it.
type fieldDiff struct{ name, has, asks string }

// differing are the fields of ds whose value is not the one asked.
func differing(ds ...fieldDiff) []fieldDiff {
	var out []fieldDiff
	for _, d := range ds {
		if d.has != d.asks {
			out = append(out, d)
		}
	}
	return out
}

// describeDiffs says each field's value and the one the Service asks.
func describeDiffs(ds []fieldDiff) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s %s, the Service asks %s", d.name, d.has, d.asks)
	}
	return strings.Join(parts, "; ")
}

func num(n int) string { return strconv.Itoa(n) }

// checkDiffs are the fields of a health-check policy not as want asks.
func checkDiffs(h csapi.HealthCheck, want csapi.HealthCheck) []fieldDiff {
	return differing(
		fieldDiff{"pingpath", h.Path, want.Path},
		fieldDiff{"intervaltime", num(h.Interval), num(want.Interval)},
		fieldDiff{"responsetimeout", num(h.Timeout), num(want.Timeout)},
		fieldDiff{"healthythreshold", num(h.Healthy), num(want.Healthy)},
		fieldDiff{"unhealthythreshold", num(h.Unhealthy), num(want.Unhealthy)})
}

// openingDiffs are the fields of an opening not as want (what the walk
// makes in its place) asks; an ACL item's action and traffictype too.
func openingDiffs(o, want csapi.Opening) []fieldDiff {
	ds := []fieldDiff{
		{"protocol", o.Protocol, want.Protocol},
		{"startport", num(o.Start), num(want.Start)},
		{"endport", num(o.End), num(want.End)},
		{"cidrlist", cidrText(o.CIDRs), cidrText(want.CIDRs)},
	}
	if o.Action != "" || o.Traffic != "" {
		ds = append(ds, fieldDiff{"action", o.Action, csapi.ACLAction}, fieldDiff{"traffictype", o.Traffic, csapi.ACLTraffic})
	}
	return differing(ds...)
}

// cidrText is a cidrlist as a set (sorted), everyone for none.
func cidrText(cidrs []string) string {
	if len(cidrs) == 0 {
		cidrs = everyone
	}
	return strings.Join(sortedSet(cidrs), ",")
}

// asMade says whether an opening is what the CCM makes: a firewall rule, or
// an ACL item letting traffic in.
func asMade(o csapi.Opening) bool {
	return (o.Action == "" || strings.EqualFold(o.Action, csapi.ACLAction)) && (o.Traffic == "" || strings.EqualFold(o.Traffic, csapi.ACLTraffic))
}

// sortedSet is a list sorted, without repeats.
func sortedSet(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}
