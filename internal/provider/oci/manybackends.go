package oci

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// backendsOfSet is bs's backends as ManyBackends, digested when listed one
// by one.
func backendsOfSet(bs ociapi.BackendSet) ociapi.ManyBackends {
	if bs.Many != nil {
		return *bs.Many
	}
	return ociapi.DigestBackends(bs.Backends)
}

// sameBackends says whether got's backends are want's, each with the same
// fields: one by one, or by digest when either is many.
func sameBackends(got, want ociapi.BackendSet) bool {
	if got.Many == nil && len(want.Backends) <= lbcycle.MembersKept {
		return slices.Equal(backendKeys(got), backendKeys(want))
	}
	g, w := backendsOfSet(got), backendsOfSet(want)
	return g.Count == w.Count && g.Keys == w.Keys
}

// backendPorts are bs's backends' ports.
func backendPorts(bs ociapi.BackendSet) []int {
	if bs.Many != nil {
		return bs.Many.Ports
	}
	out := make([]int, len(bs.Backends))
	for i, b := range bs.Backends {
		out[i] = b.Port
	}
	return out
}

// unfold is lb with the backends of each backend set kept as ManyBackends
// read one by one (explain names each).
func (st *steps) unfold(ctx context.Context, lb ociapi.LB) (ociapi.LB, error) {
	if !hasMany(lb) {
		return lb, nil
	}
	sets := maps.Clone(lb.BackendSets)
	for name, bs := range sets {
		if bs.Many == nil {
			continue
		}
		backends, err := st.api.Backends(ctx, lb.Kind, lb.ID, name)
		if err != nil {
			return lb, fmt.Errorf("reading the backends of backend set %s of %s: %w", name, lb.ID, err)
		}
		bs.Backends, bs.Many = backends, nil
		sets[name] = bs
	}
	lb.BackendSets = sets
	return lb, nil
}

// hasMany says whether a backend set of lb is kept as ManyBackends.
func hasMany(lb ociapi.LB) bool {
	for _, bs := range lb.BackendSets {
		if bs.Many != nil {
			return true
		}
	}
	return false
}
