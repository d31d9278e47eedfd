package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// OCI lists a load balancer whole, each backend set with its backends: 2,000
// load balancers on 5,000 Nodes are 10 million backends in every listing.
// A backend set of more than lbcycle.MembersKept backends is kept as their
// digest instead (ManyBackends), decoded one page at a time, so the
// listing's memory does not grow with M × N. What needs them one by one
// (explain) reads the backend set's backends (ListBackends).

// ManyBackends stands for a backend set's backends when there are more than
// lbcycle.MembersKept: their count, the digest of their identities (address,
// port, instance), that of their keys (identity and every field compared:
// a weight or a drain changed out of band changes it), and their ports.
type ManyBackends struct {
	Count int
	IDs   string
	Keys  string
	Ports []int
}

// UnmarshalJSON decodes a backend set, its backends kept as ManyBackends
// beyond lbcycle.MembersKept.
func (bs *BackendSet) UnmarshalJSON(data []byte) error {
	type plain BackendSet
	if err := json.Unmarshal(data, (*plain)(bs)); err != nil {
		return err
	}
	if len(bs.Backends) > lbcycle.MembersKept {
		m := digestBackends(bs.Backends)
		bs.Many, bs.Backends = &m, nil
	}
	return nil
}

// MarshalJSON encodes a backend set; one listed as ManyBackends is refused:
// its backends are not there to send.
func (bs BackendSet) MarshalJSON() ([]byte, error) {
	if bs.Many != nil {
		return nil, errors.New("a backend set listed by its digest cannot be sent")
	}
	type plain BackendSet
	return json.Marshal(plain(bs))
}

// digestBackends is backends as ManyBackends.
func digestBackends(backends []Backend) ManyBackends {
	ids := make([]string, len(backends))
	var ports []int
	for i, b := range backends {
		ids[i] = backendID(b)
		if !slices.Contains(ports, b.Port) {
			ports = append(ports, b.Port)
		}
	}
	slices.Sort(ids)
	slices.Sort(ports)
	keys := backendKeys(BackendSet{Backends: backends})
	return ManyBackends{Count: len(backends), IDs: lbcycle.Digest(ids), Keys: lbcycle.Digest(keys), Ports: ports}
}

// backendsOfSet is bs's backends as ManyBackends, digested when listed one
// by one.
func backendsOfSet(bs BackendSet) ManyBackends {
	if bs.Many != nil {
		return *bs.Many
	}
	return digestBackends(bs.Backends)
}

// sameBackends says whether got's backends are want's, each with the same
// fields: one by one, or by digest when either is many.
func sameBackends(got, want BackendSet) bool {
	if got.Many == nil && len(want.Backends) <= lbcycle.MembersKept {
		return slices.Equal(backendKeys(got), backendKeys(want))
	}
	g, w := backendsOfSet(got), backendsOfSet(want)
	return g.Count == w.Count && g.Keys == w.Keys
}

// backendPorts are bs's backends' ports.
func backendPorts(bs BackendSet) []int {
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
func (c *Cloud) unfold(ctx context.Context, lb LB) (LB, error) {
	if !hasMany(lb) {
		return lb, nil
	}
	sets := maps.Clone(lb.BackendSets)
	for name, bs := range sets {
		if bs.Many == nil {
			continue
		}
		backends, err := c.gw.backends(ctx, lb.Kind, lb.ID, name)
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
func hasMany(lb LB) bool {
	for _, bs := range lb.BackendSets {
		if bs.Many != nil {
			return true
		}
	}
	return false
}
