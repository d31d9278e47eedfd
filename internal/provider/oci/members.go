package oci

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// UpdateMembers puts the backend sets' backends right when only the Nodes
// changed: one backend set a pass (OCI takes one change of a load balancer
// at a time), each sent whole (UpdateBackendSet) from the shared listing,
// without the read by name the whole cycle makes. Its work request is
// looked at when such work usually ends. A backend set sent stays sent for
// those members while the listing, up to a minute old, still shows the old
// ones; a work request that failed makes the whole cycle read and walk.
func (st *steps) UpdateMembers(ctx context.Context, svc *v1.Service, spec lbSpec, lb ociLB) (string, bool, error) {
	ctx, err := st.as(ctx, svc)
	if err != nil {
		return "", true, err
	}
	kind := lb.Obj.Kind
	if p, waited := st.wrs.get(svc); waited {
		if p.kind != kind || p.id == "" || p.what == whatCreate {
			return "", false, nil
		}
		busy, wr, err := st.settle(ctx, svc, kind, p)
		switch {
		case err != nil:
			return "", true, err
		case busy:
			return "waiting: " + p.what, true, nil
		case wr.LifecycleState == "FAILED":
			st.wrs.forgetSent(svc.UID)
			return "", false, nil
		}
	}
	want := spec.membersFingerprint()
	sent := st.wrs.sentOf(svc.UID)
	for _, name := range slices.Sorted(maps.Keys(spec.backendSets)) {
		w := spec.backendSets[name]
		got, ok := lb.Obj.BackendSets[name]
		if !ok || !sameFields(backendSetFields(got, w)) {
			return "", false, nil // more than the members differ: the walk's
		}
		if sent[name] == want || sameBackends(got, w) {
			continue
		}
		wr, err := st.api.UpdateChild(ctx, kind, lb.ID, "backendSets", name, unnamed(w))
		if err != nil {
			return "", true, err
		}
		what := "updating the backends of backend set " + name
		st.wrs.startMembers(svc, kind, wr, what, name, want)
		return fmt.Sprintf("%s %s: %s (work request %s)", noun(kind), lb.ID, what, wr), true, nil
	}
	st.wrs.forgetSent(svc.UID)
	return "", true, nil
}

// startMembers is start of a members update of backend set name to the
// members want.
func (w *workRequests) startMembers(svc *v1.Service, kind, id, what, name, want string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending[svc.UID] = pendingWR{kind: kind, id: id, what: what, members: true, started: time.Now()}
	if w.sent[svc.UID] == nil {
		w.sent[svc.UID] = map[string]string{}
	}
	w.sent[svc.UID][name] = want
}

// sentOf are the backend sets a members update of the Service sent, with
// the members' fingerprint.
func (w *workRequests) sentOf(uid types.UID) map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.sent[uid])
}

func (w *workRequests) forgetSent(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.sent, uid)
}
