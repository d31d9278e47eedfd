package oci

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// The drift check's view of a Service's network security group rules (NSG
// mode): its rules in its frontend NSG (the one of its load balancer's NSGs
// it does not name by annotation) and in its backend NSGs. OCI lists an
// NSG's rules per NSG only, so the reads are budgeted: at most
// nsgReadsPerPass NSGs a drift pass, those read longest ago, so each is read
// again within ceil(NSGs / nsgReadsPerPass) passes (every pass up to that
// many); an NSG never read, or whose rules this CCM just wrote, at once
// (a walk's post-walk check then sees what it left). The cost stays flat in the number of Services; a
// rule removed behind our back is seen within that many drift periods (one
// up to nsgReadsPerPass NSGs) and put back by the walk it causes.

// nsgReadsPerPass bounds the NSGs whose rules one drift pass reads.
const nsgReadsPerPass = 20

// nsgPass keeps each NSG's rules as last read, and which are due this pass:
// the nsgReadsPerPass read longest ago.
type nsgPass struct {
	mu   sync.Mutex
	pass int // counts drift passes (forget)
	seen map[string]nsgSeen
	due  map[string]bool
}

type nsgSeen struct {
	rules []NSGRule
	read  int // the pass that read it
	asked int // the last pass that asked for it
}

// forget starts a new pass: the NSGs read longest ago are due (an NSG no
// Service asked for in the last pass is forgotten).
func (p *nsgPass) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pass++
	type aged struct {
		id   string
		read int
	}
	var all []aged
	for id, s := range p.seen {
		if s.asked < p.pass-2 {
			delete(p.seen, id)
			continue
		}
		all = append(all, aged{id, s.read})
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Or(cmp.Compare(a.read, b.read), strings.Compare(a.id, b.id)) })
	p.due = map[string]bool{}
	for _, a := range all[:min(len(all), nsgReadsPerPass)] {
		p.due[a.id] = true
	}
}

// stale makes the next pass read NSG id whatever its turn (this CCM changed
// its rules).
func (p *nsgPass) stale(ids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		delete(p.seen, id)
	}
}

// rules are NSG id's rules: read now when never read (or stale) or due this
// pass; else as last read.
func (p *nsgPass) rules(ctx context.Context, gw *gateway, id string) ([]NSGRule, error) {
	p.mu.Lock()
	if p.seen == nil {
		p.seen = map[string]nsgSeen{}
	}
	last, known := p.seen[id]
	due := !known || (p.due[id] && last.read < p.pass)
	if known {
		last.asked = p.pass
		p.seen[id] = last
	}
	p.mu.Unlock()
	if !due {
		return last.rules, nil
	}
	rules, err := gw.nsgRules(ctx, id)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.seen[id] = nsgSeen{rules: rules, read: p.pass, asked: p.pass}
	p.mu.Unlock()
	return rules, nil
}

// nsgObjects are the keys of the Service's rules in its frontend and backend
// NSGs, as nsgPass last read them.
func (s steps) nsgObjects(ctx context.Context, svc *v1.Service, spec lbSpec, lb LB) ([]string, error) {
	var ids []string
	for _, id := range lb.NetworkSecurityGroupIDs {
		if !slices.Contains(spec.nsgs, id) {
			ids = append(ids, id) // its frontend NSG
		}
	}
	ids = append(ids, spec.backendNSGs...)
	var out []string
	for _, id := range ids {
		rules, err := s.nsgPass.rules(ctx, s.gw, id)
		if err != nil {
			return nil, fmt.Errorf("reading the rules of network security group %s: %w", id, err)
		}
		for _, r := range rules {
			if s.isOurs(r, svc) {
				out = append(out, "nsg-rule/"+r.ID+" "+id+" "+r.key())
			}
		}
	}
	return out, nil
}
