package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// peerCallsPerNodeHour is what the peer CCMs cost in the steady state: 24 or more
// calls per Node per hour (../shared/facts/peer-features.md, complaint 4), drawn
// for scale.
const peerCallsPerNodeHour = 24

// chart draws the median steady-state reads per hour against N as an SVG, on a
// logarithmic axis, next to the peers' 24 calls per Node per hour.
func chart(figures []*figure) string {
	type point struct{ n, v float64 }
	var ours []point
	for _, f := range figures {
		if f.nodes > 0 && len(f.values) > 0 {
			med, _, _ := f.median()
			ours = append(ours, point{float64(f.nodes), med})
		}
	}
	sort.Slice(ours, func(i, j int) bool { return ours[i].n < ours[j].n })
	const w, h, left, right, top, bottom = 640.0, 400.0, 80.0, 30.0, 40.0, 60.0
	maxN := 100.0
	for _, p := range ours {
		maxN = max(maxN, p.n)
	}
	maxN *= 1.1
	yMin, yMax := 1.0, 6.0 // 10 .. 1,000,000 calls/hour
	x := func(n float64) float64 { return left + (w-left-right)*n/maxN }
	y := func(v float64) float64 {
		l := math.Log10(max(v, 10))
		return top + (h-top-bottom)*(1-(l-yMin)/(yMax-yMin))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="14">Steady-state cloud API calls per hour against the number of Nodes</text>`+"\n", left)
	for e := yMin; e <= yMax; e++ {
		yy := top + (h-top-bottom)*(1-(e-yMin)/(yMax-yMin))
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/>`+"\n", left, yy, w-right, yy)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, yy+4, thousands(math.Pow(10, e)))
	}
	step := niceStep(maxN)
	for n := 0.0; n <= maxN; n += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/>`+"\n", x(n), top, x(n), h-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x(n), h-bottom+16, thousands(n))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">Nodes (N)</text>`+"\n", (left+w-right)/2, h-16)
	fmt.Fprintf(&b, `<text x="18" y="%.0f" text-anchor="middle" transform="rotate(-90 18 %.0f)">calls per hour (log scale)</text>`+"\n", (top+h-bottom)/2, (top+h-bottom)/2)
	// The peers: a line through the origin.
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#c0392b" stroke-width="2" stroke-dasharray="6 4" points="`)
	for n := maxN / 40; n <= maxN; n += maxN / 40 {
		fmt.Fprintf(&b, "%.1f,%.1f ", x(n), y(n*peerCallsPerNodeHour))
	}
	fmt.Fprintf(&b, `"/>`+"\n")
	// Ours.
	if len(ours) > 0 {
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#2471a3" stroke-width="2" points="`)
		for _, p := range ours {
			fmt.Fprintf(&b, "%.1f,%.1f ", x(p.n), y(p.v))
		}
		fmt.Fprintf(&b, `"/>`+"\n")
		for _, p := range ours {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#2471a3"/>`+"\n", x(p.n), y(p.v))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s/h</text>`+"\n", x(p.n), y(p.v)-10, thousands(p.v))
		}
	}
	ly := top + 14
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#2471a3" stroke-width="2"/><text x="%.0f" y="%.0f">overcast-ccm (median reads/h; 0 writes)</text>`+"\n", left+10, ly, left+40, ly, left+46, ly+4)
	ly += 18
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#c0392b" stroke-width="2" stroke-dasharray="6 4"/><text x="%.0f" y="%.0f">peers: %d calls per Node per hour</text>`+"\n", left+10, ly, left+40, ly, left+46, ly+4, peerCallsPerNodeHour)
	b.WriteString("</svg>\n")
	return b.String()
}

func niceStep(maxN float64) float64 {
	for _, s := range []float64{100, 250, 500, 1000, 2500, 5000, 10000} {
		if maxN/s <= 8 {
			return s
		}
	}
	return 25000
}

func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []string
	for len(s) > 3 {
		out = append([]string{s[len(s)-3:]}, out...)
		s = s[:len(s)-3]
	}
	return strings.Join(append([]string{s}, out...), ",")
}

// chartFrom draws the chart from "N=reads/h" pairs measured by earlier runs.
func chartFrom(data, path string) error {
	if path == "" {
		return errors.New("-chart-data needs -chart")
	}
	var figs []*figure
	for _, pair := range strings.Split(data, ",") {
		n, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		nodes, err1 := strconv.Atoi(n)
		val, err2 := strconv.ParseFloat(v, 64)
		if !ok || err1 != nil || err2 != nil || nodes <= 0 || val < 0 {
			return fmt.Errorf("-chart-data: %q is not N=reads/h", pair)
		}
		figs = append(figs, &figure{nodes: nodes, values: []float64{val}})
	}
	return os.WriteFile(path, []byte(chart(figs)), 0o644)
}
