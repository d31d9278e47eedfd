package oci

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// UpdateBackend, of either API: one backend's weight and states changed in
// place, as the Console and the CLI change them (a backend set's update
// replaces them all). The Load Balancing API's body is
// loadbalancer.UpdateBackendDetails (weight, backup, drain and offline, all
// mandatory; oci-go-sdk loadbalancer/update_backend_details.go), the
// Network Load Balancer API's networkloadbalancer.UpdateBackendDetails
// (weight, isBackup, isDrain and isOffline, each optional: one not given is
// left as it is; networkloadbalancer/update_backend_details.go). The
// backend is named in the path as the API names it (backendNames: its
// address, or an NLB's target, and port).

type updateBackend struct {
	Weight  *int  `json:"weight"`
	Backup  *bool `json:"backup"`
	Drain   *bool `json:"drain"`
	Offline *bool `json:"offline"`
}

type updateNLBBackend struct {
	Weight    *int  `json:"weight"`
	IsBackup  *bool `json:"isBackup"`
	IsDrain   *bool `json:"isDrain"`
	IsOffline *bool `json:"isOffline"`
}

func (e *Emulator) routeBackendUpdates() {
	e.handle("PUT "+lbPath+"/loadBalancers/{id}/backendSets/{set}/backends/{backend}", func(w http.ResponseWriter, r *http.Request) {
		var d updateBackend
		if !decodeBody(w, r, &d) {
			return
		}
		e.change(w, r, "UpdateBackend", func(lb *loadBalancer) (func(), error) {
			if d.Weight == nil || d.Backup == nil || d.Drain == nil || d.Offline == nil {
				return nil, invalid("weight, backup, drain and offline are mandatory.")
			}
			return backendUpdate(lb.BackendSets, r, func(bs *backendSet) *[]backend { return &bs.Backends },
				func(b backend) string { return b.Name }, func(b *backend) {
					b.Weight, b.Backup, b.Drain, b.Offline = *d.Weight, *d.Backup, *d.Drain, *d.Offline
				})
		})
	})
	e.handle("PUT "+nlbPath+"/networkLoadBalancers/{id}/backendSets/{set}/backends/{backend}", func(w http.ResponseWriter, r *http.Request) {
		var d updateNLBBackend
		if !decodeBody(w, r, &d) {
			return
		}
		e.nlbChange(w, r, "UPDATE_BACKEND", func(n *networkLoadBalancer) (func(), error) {
			return backendUpdate(n.BackendSets, r, func(bs *nlbBackendSet) *[]nlbBackend { return &bs.Backends },
				func(b nlbBackend) string { return b.Name }, func(b *nlbBackend) {
					b.Weight = cmp.Or(deref(d.Weight), b.Weight)
					b.IsBackup, b.IsDrain, b.IsOffline = or(d.IsBackup, b.IsBackup), or(d.IsDrain, b.IsDrain), or(d.IsOffline, b.IsOffline)
				})
		})
	})
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// or is *v, or was when v is not given.
func or(v *bool, was bool) bool {
	if v == nil {
		return was
	}
	return *v
}

// backendUpdate checks that the backend set {set} of sets has the backend
// {backend} (else 404), and is the effect that changes it (in a copy of
// its set, the set replaced: views share the old one) as change says,
// when its work request succeeds (if both are still there).
func backendUpdate[S, B any](sets map[string]*S, r *http.Request, backends func(*S) *[]B, name func(B) string, change func(*B)) (func(), error) {
	setName, backend := r.PathValue("set"), r.PathValue("backend")
	find := func() (*S, int) {
		set := sets[setName]
		if set == nil {
			return nil, -1
		}
		return set, slices.IndexFunc(*backends(set), func(b B) bool { return name(b) == backend })
	}
	if set, i := find(); set == nil {
		return nil, notFound("Backend set %s not found.", setName)
	} else if i < 0 {
		return nil, notFound("Backend %s not found.", backend)
	}
	return func() {
		set, i := find()
		if set == nil || i < 0 {
			return
		}
		c := *set
		*backends(&c) = slices.Clone(*backends(set))
		change(&(*backends(&c))[i])
		sets[setName] = &c
	}, nil
}

// ListBackends, of either API: a backend set's backends. The Load
// Balancing API answers them all as a bare array and takes no page
// (oci-go-sdk loadbalancer/list_backends_request_response.go); the Network
// Load Balancer API's answer is a BackendCollection {"items": [...]}, paged
// by limit and page (networkloadbalancer/list_backends_request_response.go).
func (e *Emulator) routeBackendLists() {
	e.handle("GET "+lbPath+"/loadBalancers/{id}/backendSets/{set}/backends", func(w http.ResponseWriter, r *http.Request) {
		v, ok := core.View(&e.mu, e.lbs, r.PathValue("id"), func(lb *loadBalancer) any {
			if bs := lb.BackendSets[r.PathValue("set")]; bs != nil {
				return append([]backend{}, bs.Backends...)
			}
			return nil
		})
		writeBackends(w, v, ok, func(v any) any { return v })
	})
	e.handle("GET "+nlbPath+"/networkLoadBalancers/{id}/backendSets/{set}/backends", func(w http.ResponseWriter, r *http.Request) {
		v, ok := core.View(&e.mu, e.nlbs, r.PathValue("id"), func(n *networkLoadBalancer) any {
			if bs := n.BackendSets[r.PathValue("set")]; bs != nil {
				return append([]nlbBackend{}, bs.Backends...)
			}
			return nil
		})
		writeBackends(w, v, ok, func(v any) any { return nlbBackendPage(w, r, v.([]nlbBackend)) })
	})
}

// writeBackends answers a backend set's backends (v, nil when the set is
// not there), or 404 NotAuthorizedOrNotFound.
func writeBackends(w http.ResponseWriter, v any, ok bool, body func(any) any) {
	if !ok || v == nil {
		writeNotFound(w)
		return
	}
	if b := body(v); b != nil {
		core.WriteJSON(w, http.StatusOK, b)
	}
}

// nlbBackendPage is the page of backends the request asks (limit, and page:
// the index the previous page ended at), with opc-next-page when more
// follow; nil with 400 answered for a bad limit or page.
func nlbBackendPage(w http.ResponseWriter, r *http.Request, all []nlbBackend) any {
	limit, from := len(all), 0
	var err error
	if s := r.URL.Query().Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > maxLimit {
			writeError(w, http.StatusBadRequest, "InvalidParameter", fmt.Sprintf("limit must be between 1 and %d", maxLimit))
			return nil
		}
	}
	if s := r.URL.Query().Get("page"); s != "" {
		if from, err = strconv.Atoi(s); err != nil || from < 0 || from > len(all) {
			writeError(w, http.StatusBadRequest, "InvalidParameter", "Invalid page token.")
			return nil
		}
	}
	to := min(from+limit, len(all))
	if to < len(all) {
		w.Header().Set("opc-next-page", strconv.Itoa(to))
	}
	return map[string]any{"items": all[from:to]}
}
