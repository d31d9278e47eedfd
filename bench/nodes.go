package main

import (
	"fmt"
	"time"
)

// nodeFigures are the figures of the Node scenarios at one N: 1 (init time,
// the requests a Node, the status pass), 2 (steady calls/hour), 3 (NotReady
// extra), 7 (RSS).
type nodeFigures struct {
	n                               int
	init, requests, status          *figure
	steadyR, steadyW, notReady, rss *figure
}

func newNodeFigures(n int) *nodeFigures {
	return &nodeFigures{
		n:        n,
		init:     &figure{scenario: "1", name: fmt.Sprintf("%d Nodes registered at once → all initialised", n), unit: "s", target: "5,000 in ≤ 60 s"},
		requests: &figure{scenario: "1", name: fmt.Sprintf("%d Nodes: the CCM's apiserver requests a Node until all are initialised", n), unit: "requests"},
		status:   &figure{scenario: "1", name: fmt.Sprintf("the node controller's status pass over %d Nodes", n), unit: "s", target: "≤ 30 s at 5,000"},
		steadyR:  &figure{scenario: "2", name: fmt.Sprintf("steady state, N = %d: reads/hour", n), unit: "calls/h", target: "≤ 120, same at every N", nodes: n},
		steadyW:  &figure{scenario: "2", name: fmt.Sprintf("steady state, N = %d: writes/hour", n), unit: "calls/h", target: "0"},
		notReady: &figure{scenario: "3", name: fmt.Sprintf("100 of %d Nodes NotReady: reads/hour above steady state", n), unit: "%", target: "≤ 10 %"},
		rss:      &figure{scenario: "7", name: fmt.Sprintf("overcast-ccm peak RSS, N = %d", n), unit: "MiB", target: "≤ 150 MiB at N = 2,000, M = 1,000"},
	}
}

func nodeScenarios(o options, n int, want map[string]bool) ([]*figure, error) {
	f := newNodeFigures(n)
	for r := range o.runs {
		fmt.Printf("== N=%d run %d/%d\n", n, r+1, o.runs)
		b, err := newBed(o, n)
		if err != nil {
			return nil, err
		}
		err = f.run(b, want)
		b.close()
		if err != nil {
			return nil, err
		}
	}
	return f.wanted(o, want), nil
}

// run measures one run on bed b, which the caller closes.
func (f *nodeFigures) run(b *bed, want map[string]bool) error {
	start := time.Now()
	var extra []string
	if want["status"] {
		extra = statusArgs
	}
	if err := b.startCCM(extra...); err != nil {
		return err
	}
	if err := b.waitInitialised(30 * time.Minute); err != nil {
		return err
	}
	initialised := time.Now()
	f.init.values = append(f.init.values, initialised.Sub(start).Seconds())
	fmt.Printf("   init %.1fs\n", initialised.Sub(start).Seconds())
	if b.audit != "" {
		counts, err := requestCounts(b.audit, start, initialised)
		if err != nil {
			return err
		}
		per, detail := perNode(counts, f.n)
		f.requests.values = append(f.requests.values, per)
		fmt.Print(detail)
	}
	if want["status"] {
		d, err := b.statusPass(f.n, initialised, 3*time.Minute)
		if err != nil {
			return err
		}
		f.status.values = append(f.status.values, d.Seconds())
		fmt.Printf("   status pass %v\n", d)
	}
	if want["steady"] {
		if err := f.steady(b, want["notready"]); err != nil {
			return err
		}
	}
	if v, err := b.peakRSS(); err == nil {
		f.rss.values = append(f.rss.values, v)
	}
	return nil
}

// steady measures the steady state's calls, then those with 100 Nodes
// NotReady when notReady.
func (f *nodeFigures) steady(b *bed, notReady bool) error {
	o := b.o
	if o.steadySvcs > 0 {
		if _, err := b.createServices("steady", o.steadySvcs, 20*time.Minute); err != nil {
			return err
		}
		f.steadyR.name = fmt.Sprintf("steady state, N = %d, M = %d: reads/hour", f.n, o.steadySvcs)
		f.steadyW.name = fmt.Sprintf("steady state, N = %d, M = %d: writes/hour", f.n, o.steadySvcs)
		time.Sleep(o.steadySettle)
	}
	b.emu.ResetCalls()
	timeline(b.emu, o.steady)
	reads, writes, byOp := calls(b.emu)
	scale := float64(time.Hour) / float64(o.steady)
	f.steadyR.values = append(f.steadyR.values, float64(reads)*scale)
	f.steadyW.values = append(f.steadyW.values, float64(writes)*scale)
	f.steadyR.detail = topOps(byOp, scale)
	fmt.Printf("   steady %.0f reads/h %.0f writes/h\n", float64(reads)*scale, float64(writes)*scale)
	if !notReady {
		return nil
	}
	for _, k := range b.kubelets[:min(100, len(b.kubelets))] {
		k.StopHeartbeats(true)
	}
	b.emu.ResetCalls()
	timeline(b.emu, o.notReady)
	nr, _, byOp := calls(b.emu)
	nrScale := float64(time.Hour) / float64(o.notReady)
	base := float64(reads) * scale
	extra := 100 * (float64(nr)*nrScale - base) / max(base, 1)
	f.notReady.values = append(f.notReady.values, extra)
	f.notReady.detail = topOps(byOp, nrScale)
	fmt.Printf("   notready %.0f reads/h (%+.0f%%)\n", float64(nr)*nrScale, extra)
	return nil
}

// wanted are the figures the options and scenarios ask for.
func (f *nodeFigures) wanted(o options, want map[string]bool) []*figure {
	out := []*figure{f.init}
	if o.requests {
		out = append(out, f.requests)
	}
	if want["status"] {
		out = append(out, f.status)
	}
	if want["steady"] {
		out = append(out, f.steadyR, f.steadyW)
		if want["notready"] {
			out = append(out, f.notReady)
		}
	}
	if want["rss"] {
		out = append(out, f.rss)
	}
	return out
}
