package oci

import (
	"context"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// asLB is the load balancer as the cycle sees it: busy while OCI creates or
// deletes it, or runs a work request this process started (but a change of
// members alone: it serves meanwhile, and UpdateMembers looks at its work).
func (st *steps) asLB(svc *v1.Service, lb ociapi.LB) ociLB {
	out := ociLB{ID: lb.ID, Status: lb.LifecycleState, State: lbcycle.Ready, Obj: lb}
	switch lb.LifecycleState {
	case "ACTIVE":
		if p, ok := st.wrs.get(svc); ok && !p.members {
			out.State, out.Status = lbcycle.Busy, p.what
		}
	case "FAILED":
		out.State = lbcycle.Failed
	default:
		out.State = lbcycle.Busy
	}
	return out
}

// find is Find of the Service's load balancer of a kind.
func (st *steps) find(ctx context.Context, svc *v1.Service, kind string) (ociLB, bool, error) {
	p, waited := st.wrs.get(svc)
	if waited && p.kind == kind {
		switch {
		case p.id == "" && p.err != nil:
			st.wrs.done(svc, 0)
			return ociLB{}, false, p.err
		case p.id == "":
			return ociLB{ID: nameOf(svc, kind), Status: "being asked for (the client-side write limit)", State: lbcycle.Busy}, true, nil
		}
		if p.what == whatCreate {
			lb, found, err := st.listedFresh(ctx, svc, kind)
			switch {
			case err != nil:
				return ociLB{}, false, err
			case found && lb.LifecycleState == "CREATING":
				return ociLB{ID: lb.ID, Status: whatCreate, State: lbcycle.Busy}, true, nil
			case found:
				st.wrs.done(svc, time.Since(p.started))
				return st.asLB(svc, lb), true, nil
			}
			// Not listed: the work request says whether it is still to come.
		}
		busy, wr, err := st.settle(ctx, svc, kind, p)
		switch {
		case err != nil:
			return ociLB{}, false, err
		case busy:
			return ociLB{ID: wr.LoadBalancerID, Status: p.what, State: lbcycle.Busy}, true, nil
		}
	}
	key := "name/" + nameOf(svc, kind)
	if _, ok := ociapi.WorkloadOf(ctx); !waited && !ok {
		// Nothing this process started for the Service is in between: a
		// listing of at most createPoll ago, shared by every Service
		// looked at meanwhile (a burst of new Services costs one call, not
		// one each), knows its load balancer as well as a read by name.
		lb, found, err := st.listings[kind].GetFresh(ctx, key, st.freshWithin(kind))
		switch {
		case err != nil:
			return ociLB{}, false, err
		case found:
			return st.asLB(svc, lb), true, nil
		case !st.listings[kind].Shared(key):
			if _, waiting := st.awaitingLB(svc, kind); waiting {
				break // read by name below
			}
			return ociLB{}, false, nil
		}
		// Two of that name: the read by name below says so.
	}
	lb, dups, found, err := st.byNameAll(ctx, svc, kind)
	if err != nil {
		return ociLB{}, false, err
	}
	if !found {
		lb, waiting := st.awaitingLB(svc, kind)
		return lb, waiting, nil
	}
	st.unanswered.Found(lostKey(svc, kind))
	if err := st.deleteDuplicates(ctx, svc, lb, dups); err != nil {
		return ociLB{}, false, err
	}
	return st.asLB(svc, lb), true, nil
}

// byName reads the Service's load balancer of a kind by its name, and puts
// it in the shared listing unless it was read as the Service's workload
// (whose view is its own).
func (st *steps) byName(ctx context.Context, svc *v1.Service, kind string) (ociapi.LB, bool, error) {
	lb, _, found, err := st.byNameAll(ctx, svc, kind)
	return lb, found, err
}

// byNameAll is byName, and the Service's other load balancers of its name
// (duplicates: keptOf).
func (st *steps) byNameAll(ctx context.Context, svc *v1.Service, kind string) (ociapi.LB, []ociapi.LB, bool, error) {
	list, err := st.api.LoadBalancers(ctx, kind, ociapi.With(ociapi.InCompartment(st.cfg.CompartmentID), "displayName", nameOf(svc, kind)))
	if err != nil {
		return ociapi.LB{}, nil, false, err
	}
	list = slices.DeleteFunc(list, func(lb ociapi.LB) bool { return lb.LifecycleState == "DELETED" })
	if len(list) == 0 {
		return ociapi.LB{}, nil, false, nil
	}
	keep, dups, err := st.keptOf(svc, list)
	if err != nil {
		return ociapi.LB{}, nil, false, err
	}
	if _, ok := ociapi.WorkloadOf(ctx); !ok && len(list) == 1 {
		st.listings[kind].Put(keep)
	}
	return keep, dups, true, nil
}
