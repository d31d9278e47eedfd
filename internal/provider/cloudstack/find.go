package cloudstack

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

var busyStates = []string{"Allocating", "Releasing", "Add", "Revoke", "Deleting", "Staged"}

// asLB is the state as the cycle sees it: busy while the address or a rule is
// being changed by the server.
func asLB(st lbState) csLB {
	lb := csLB{ID: st.addr.ID, Status: "ready", State: lbcycle.Ready, Obj: st}
	if oneOf(st.addr.State, busyStates) {
		lb.State, lb.Status = lbcycle.Busy, "being "+strings.ToLower(strings.TrimSuffix(st.addr.State, "ing"))+"ed"
	}
	if st.settling != "" {
		lb.State, lb.Status = lbcycle.Busy, st.settling
	}
	for _, r := range st.rules {
		if oneOf(r.State, busyStates) {
			lb.State, lb.Status = lbcycle.Busy, fmt.Sprintf("changing (rule %s is %s)", r.Name, r.State)
		}
	}
	return lb
}

// read is the Service's load balancer now: its rules (listed by the name's
// keyword, kept by exact name, never by the keyword alone), and its address:
// the rules', else the one associated for it (by its tags), else the
// address an interrupted association left (associating.go), else the
// allocated address its loadBalancerIP names. takeUp: an address an
// interrupted association left is taken up (tagged); explain, which never
// writes, reads with false, and so sees the load balancer as the steps do.
func (s *steps) read(ctx context.Context, svc *v1.Service, takeUp bool) (lbState, bool, error) {
	name := lbName(svc)
	listed, own, ownRead, err := s.firstReads(ctx, svc, name)
	if err != nil {
		return lbState{}, false, err
	}
	var st lbState
	for _, r := range listed {
		if lbNameOf(r.Name) == name {
			st.rules = append(st.rules, r)
		}
	}
	if len(st.rules) > 0 {
		r := st.rules[0]
		st.addr = csapi.Address{ID: r.AddressID, IP: r.IP, State: "Allocated"}
		return st, true, nil
	}
	if !ownRead {
		if own, err = s.api.AddressesTagged(ctx, s.ownTags(svc)); err != nil {
			return lbState{}, false, err
		}
	}
	if len(own) > 0 {
		st.addr, st.addrRead = own[0], true
		return st, true, nil
	}
	ip := strings.TrimSpace(svc.Spec.LoadBalancerIP)
	if takeUp {
		if a, settling, found, err := s.takeUpLeftover(ctx, svc, ip); err != nil || found {
			st.addr, st.addrRead, st.settling = a, found, settling
			return st, found, err
		}
	}
	if ip != "" {
		a, found, err := s.api.AddressOf(ctx, ip)
		if err != nil {
			return lbState{}, false, err
		}
		if found && !strings.EqualFold(a.State, "Free") {
			st.addr, st.addrRead = a, true
			return st, true, nil
		}
	}
	return st, false, nil
}

// firstReads are the Service's rules and, for a Service not published yet
// (most likely new, with no rules: its address is what is found), the
// addresses tagged as its own, read at once beside them: a new load
// balancer's first pass waits for one round trip, not two. A published
// Service's tagged addresses are read only if it has no rules (ownRead
// false): a call fewer on every full check.
func (s *steps) firstReads(ctx context.Context, svc *v1.Service, name string) (listed []csapi.Rule, own []csapi.Address, ownRead bool, err error) {
	if len(svc.Status.LoadBalancer.Ingress) > 0 {
		listed, err = s.api.Rules(ctx, name)
		return listed, nil, false, err
	}
	var wg sync.WaitGroup
	var ownErr error
	wg.Go(func() { own, ownErr = s.api.AddressesTagged(ctx, s.ownTags(svc)) })
	listed, err = s.api.Rules(ctx, name)
	wg.Wait()
	return listed, own, true, cmp.Or(err, ownErr)
}

func (s *steps) Listed(ctx context.Context, svc *v1.Service) (csLB, bool, error) {
	rules, err := s.listedRules(ctx, lbName(svc))
	if err != nil || len(rules) == 0 {
		return csLB{}, false, err
	}
	r := rules[0]
	return asLB(lbState{addr: csapi.Address{ID: r.AddressID, IP: r.IP, State: "Allocated"}, rules: rules}), true, nil
}

func (s *steps) Find(ctx context.Context, svc *v1.Service) (csLB, bool, error) {
	progress, results, err := s.jobs.check(ctx, s.api, svc.UID)
	if err != nil {
		// A job that failed (or could not be asked about) may have left the
		// rules short of what the creation asked: the next pass walks them.
		s.created.set(svc.UID, "")
		return csLB{}, false, err
	}
	if progress != "" {
		return csLB{ID: lbName(svc), State: lbcycle.Busy, Status: "waiting: " + progress}, true, nil
	}
	// An address this process has just associated and tagged, as its job's
	// result says: it has no rules yet (the Service had none when it was
	// associated), nothing to read.
	if id, job := s.freshAddress(svc); job != "" {
		if a, ok := csapi.Associated(results[job]); ok && a.ID == id && strings.EqualFold(a.State, "Allocated") {
			a.Tags = s.ownTags(svc)
			return asLB(lbState{addr: a, addrRead: true}), true, nil
		}
	}
	if st, ok := s.builtNow(svc, results); ok {
		return asLB(st), true, nil
	}
	st, found, err := s.read(ctx, svc, true)
	if err != nil || !found {
		return csLB{}, false, err
	}
	return asLB(st), true, nil
}

// builtNow is the load balancer this process built whole for the Service,
// as the results of the jobs that created its rules say, when this look
// saw them all done (and every job of the Service gone well): each rule was
// given its machines, which applies it (state Active). Nothing to read.
func (s *steps) builtNow(svc *v1.Service, results map[string]json.RawMessage) (lbState, bool) {
	_, jobs := s.createdBy(svc)
	if len(jobs) == 0 {
		return lbState{}, false
	}
	var st lbState
	for _, job := range jobs {
		r, ok := csapi.CreatedRule(results[job])
		if !ok || (len(st.rules) > 0 && r.AddressID != st.rules[0].AddressID) {
			return lbState{}, false
		}
		r.State = "Active"
		st.rules = append(st.rules, r)
	}
	st.addr = csapi.Address{ID: st.rules[0].AddressID, IP: st.rules[0].IP, State: "Allocated"}
	return st, true
}

// freshAddress is the address this process associated for the Service and
// the job that associated it, until the address's openings are made.
func (s *steps) freshAddress(svc *v1.Service) (id, job string) {
	id, job, _ = strings.Cut(s.fresh.get(svc.UID), " ")
	return id, job
}
