package explain

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/overcast-ccm/overcast/internal/provider"
)

// JSON writes v (an explanation) indented, for scripts.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printer writes sections of aligned rows; the first error sticks.
type printer struct {
	w   io.Writer
	now time.Time
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// section writes a blank line and a heading.
func (p *printer) section(title string) { p.printf("\n%s\n", title) }

// table writes rows (their cells tab-separated) aligned, indented by two.
func (p *printer) table(rows [][]string) {
	if p.err != nil || len(rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = oneLine(c)
		}
		if _, err := fmt.Fprintf(tw, "  %s\n", strings.TrimRight(strings.Join(cells, "\t"), "\t")); err != nil {
			p.err = err
			return
		}
	}
	p.err = tw.Flush()
}

// withHeader is rows under header, the columns empty in every row left
// out.
func withHeader(header []string, rows [][]string) [][]string {
	keep := make([]bool, len(header))
	for _, r := range rows {
		for i, c := range r {
			if i < len(keep) && strings.TrimSpace(c) != "" {
				keep[i] = true
			}
		}
	}
	out := make([][]string, 0, len(rows)+1)
	for _, r := range append([][]string{header}, rows...) {
		var cells []string
		for i, c := range r {
			if i < len(keep) && keep[i] {
				cells = append(cells, c)
			}
		}
		out = append(out, cells)
	}
	return out
}

// details are d's keys and values as rows, sorted, the empty ones left out.
func details(d provider.Details) [][]string {
	var rows [][]string
	for _, k := range slices.Sorted(maps.Keys(d)) {
		if d[k] != "" && strings.TrimSpace(d[k]) != "" {
			rows = append(rows, []string{k, d[k]})
		}
	}
	return rows
}

// inline is d as "k=v" pairs, sorted.
func inline(d provider.Details) string {
	var out []string
	for _, r := range details(d) {
		out = append(out, r[0]+"="+r[1])
	}
	return strings.Join(out, " ")
}

// oneLine is s on one line, its indent kept.
func oneLine(s string) string {
	indent := s[:len(s)-len(strings.TrimLeft(s, " "))]
	return indent + strings.Join(strings.Fields(s), " ")
}

// ago says how long ago an RFC 3339 time was, for a person.
func (p *printer) ago(at string) string {
	t, err := time.Parse(time.RFC3339, at)
	if err != nil || t.IsZero() || t.Year() < 2000 {
		return "-"
	}
	d := p.now.Sub(t)
	switch {
	case d < time.Minute:
		return strconv.Itoa(max(int(d.Seconds()), 0)) + "s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h ago"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d ago"
}

// PrintService writes e for a person: a section per part, aligned rows,
// the empty parts left out. now dates the conditions and Events.
func PrintService(w io.Writer, e provider.ServiceExplanation, now time.Time) error {
	p := &printer{w: w, now: now}
	p.printf("Service %s on %s (uid %s)\n", e.Service, e.Cloud, e.UID)
	if !e.Found {
		p.printf("\nThe cloud holds nothing for it.\n")
	} else {
		p.serviceObjects(e)
	}
	p.drift(e)
	p.outcome(e)
	p.events(e.Events)
	p.notes(e.Notes)
	return p.err
}

// serviceObjects writes the load balancer, its addresses, listeners, pools
// and security rules.
func (p *printer) serviceObjects(e provider.ServiceExplanation) {
	if lb := e.LoadBalancer; lb != nil {
		p.section("Load balancer")
		p.table(append([][]string{{"id", lb.ID}, {"name", lb.Name}, {"state", lb.State}}, details(lb.Details)...))
	}
	if len(e.Addresses) > 0 {
		p.section("Addresses")
		var rows [][]string
		for _, a := range e.Addresses {
			rows = append(rows, []string{a.IP, a.Kind, a.ID})
		}
		p.table(rows)
	}
	if len(e.Listeners) > 0 {
		p.section("Listeners")
		var rows [][]string
		for _, l := range e.Listeners {
			rows = append(rows, []string{l.Name, l.Protocol, strconv.Itoa(l.Port), l.Pool, inline(l.Details)})
		}
		p.table(withHeader([]string{"NAME", "PROTOCOL", "PORT", "TO", "DETAILS"}, rows))
	}
	if len(e.Pools) > 0 {
		p.section("Pools and members")
		var rows [][]string
		for _, pl := range e.Pools {
			rows = append(rows, []string{pl.Name, strings.TrimSpace(pl.Protocol + " " + pl.Policy), pl.Health})
			for _, m := range pl.Members {
				addr := m.Address
				if m.Port != 0 {
					addr += ":" + strconv.Itoa(m.Port)
				}
				rows = append(rows, []string{"  " + addr, m.Node, m.ID})
			}
			if len(pl.Members) == 0 {
				rows = append(rows, []string{"  (no members)"})
			}
		}
		p.table(rows)
	}
	if len(e.SecurityRules) > 0 {
		p.section("Security rules")
		var rows [][]string
		for _, r := range e.SecurityRules {
			rows = append(rows, []string{r.Kind, r.In, r.Direction, r.Protocol, r.Ports, r.Peer, r.Mark})
		}
		p.table(withHeader([]string{"KIND", "IN", "DIRECTION", "PROTOCOL", "PORTS", "PEER", "MARK"}, rows))
	}
}

// drift writes what the next pass changes, or why it was not compared.
func (p *printer) drift(e provider.ServiceExplanation) {
	switch {
	case e.SpecProblem != "":
		p.section("Drift: not compared, the Service is refused as it asks now")
		p.table([][]string{{e.SpecProblem}})
	case !e.DriftChecked && e.Found:
		p.section("Drift: not compared (see the notes)")
	case !e.DriftChecked:
	case len(e.Drift) == 0:
		p.section("Drift: none, the cloud holds what the Service asks")
	default:
		p.section("Drift: what the next walk of the load balancer changes")
		var rows [][]string
		for _, d := range e.Drift {
			rows = append(rows, []string{d.Action, d.Object, d.Detail})
		}
		p.table(rows)
	}
}

// outcome writes the Service's conditions and the cycle's record.
func (p *printer) outcome(e provider.ServiceExplanation) {
	if len(e.Conditions) == 0 && e.Record == nil {
		return
	}
	p.section("Last outcome")
	var rows [][]string
	for _, c := range e.Conditions {
		rows = append(rows, []string{c.Type, c.Status, c.Reason, p.ago(c.Since), c.Message})
	}
	p.table(rows)
	if r := e.Record; r != nil {
		where := "record (in memory)"
		if r.Annotation != "" {
			where = "record " + r.Annotation
		}
		says := "converged for what the Service asked before: the next pass walks the load balancer"
		if r.AsAsked {
			says = "converged for what the Service asks now: a pass reads the shared listings, and the drift check walks it when it drifted"
		}
		p.table([][]string{{where, cmp.Or(r.Value, strings.TrimSpace(r.LoadBalancer+" "+r.Address))}, {"", says}})
	}
}

// events writes the latest Events.
func (p *printer) events(evs []provider.Event) {
	if len(evs) == 0 {
		return
	}
	p.section("Events")
	var rows [][]string
	for _, ev := range evs {
		count := ""
		if ev.Count > 1 {
			count = fmt.Sprintf("(x%d)", ev.Count)
		}
		rows = append(rows, []string{p.ago(ev.Last), ev.Type, ev.Reason, strings.TrimSpace(ev.Message + " " + count)})
	}
	p.table(rows)
}

func (p *printer) notes(notes []string) {
	if len(notes) == 0 {
		return
	}
	p.section("Notes")
	for _, n := range notes {
		p.printf("  - %s\n", n)
	}
}

// PrintNode writes e for a person.
func PrintNode(w io.Writer, e provider.NodeExplanation, now time.Time) error {
	p := &printer{w: w, now: now}
	p.printf("Node %s on %s (providerID %s)\n", e.Node, e.Cloud, cmp.Or(e.ProviderID, "none yet"))
	switch {
	case e.LookupError != "":
		p.printf("\nIts machine cannot be looked up: %s\n", e.LookupError)
	case e.Machine == nil:
		p.printf("\nThe cloud has no machine for it.\n")
	}
	if m := e.Machine; m != nil {
		p.section("Machine")
		var addrs []string
		for _, a := range m.Addresses {
			addrs = append(addrs, a.Type+" "+a.Address)
		}
		p.table(append([][]string{{"id", m.ID}, {"name", m.Name}, {"state", m.State}, {"type", m.Type}, {"zone", m.Zone},
			{"region", m.Region}, {"addresses", strings.Join(addrs, ", ")}}, details(m.Details)...))
	}
	if wants := e.Wants; wants != nil {
		p.section("What the node controller sets")
		var addrs []string
		for _, a := range wants.Addresses {
			addrs = append(addrs, a.Type+" "+a.Address)
		}
		rows := [][]string{{"providerID", wants.ProviderID}, {"addresses", strings.Join(addrs, ", ")}}
		for i, k := range slices.Sorted(maps.Keys(wants.Labels)) {
			rows = append(rows, []string{map[bool]string{true: "labels", false: ""}[i == 0], k + "=" + wants.Labels[k]})
		}
		p.table(rows)
		p.nodeDifferences(e.Differences)
	}
	if e.Guard.Says != "" {
		p.section("Deletion guard")
		p.table([][]string{{e.Guard.Says}})
	}
	if len(e.Conditions) > 0 {
		p.section("Conditions")
		var rows [][]string
		for _, c := range e.Conditions {
			rows = append(rows, []string{c.Type, c.Status, c.Reason, p.ago(c.Since), c.Message})
		}
		p.table(rows)
	}
	p.events(e.Events)
	p.notes(e.Notes)
	return p.err
}

func (p *printer) nodeDifferences(diffs []provider.Difference) {
	if len(diffs) == 0 {
		p.section("Differences: none, the Node is as its machine says")
		return
	}
	p.section("Differences")
	var rows [][]string
	for _, d := range diffs {
		rows = append(rows, []string{d.Action, d.Object, d.Detail})
	}
	p.table(rows)
}
