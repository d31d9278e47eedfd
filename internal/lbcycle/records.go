package lbcycle

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
)

// AnnotationRecords keeps each Service's Record on the Service, where it
// survives restarts and leader changes: Converged holds
// "<id>/<config>.<members>/<address>", or "<id>/<config>.<members>" when the
// address has an annotation of its own (Address: a peer's, which users read).
// Both annotations must be in annotation.Recorded. Writing them is a
// Kubernetes write, never a cloud one.
type AnnotationRecords struct {
	Converged annotation.Name
	// Address is the annotation of the published address; "" to keep it in
	// Converged.
	Address annotation.Name
	// Kube is the client the records are written with (nil: not written).
	Kube func() kubernetes.Interface
	// None says that a Service has no record: it is always walked (a
	// Service on a load balancer it shares). nil: every Service may have one.
	None func(*v1.Service) bool
	// Clear are annotations of the CCM's that a converged load balancer no
	// longer needs: removed by the Put that records it.
	Clear []annotation.Name
	// Ledger keeps the members part of a Record whose members alone
	// changed, in place of a write of the Service (nil: the annotation
	// says it all).
	Ledger *MembersLedger
}

var _ Records = (*AnnotationRecords)(nil)

// Get is the Service's Record: its annotation's, with the members the
// Ledger holds for it.
func (r *AnnotationRecords) Get(svc *v1.Service) (Record, bool) {
	if r.None != nil && r.None(svc) {
		return Record{}, false
	}
	rec, ok := r.annotated(svc)
	if ok && r.Ledger != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if m, held := r.Ledger.Members(ctx, svc.UID, svc.Annotations[string(r.Converged)]); held {
			rec.Members = m
		}
		cancel()
	}
	return rec, ok
}

// annotated is the Record the Service's annotations say.
func (r *AnnotationRecords) annotated(svc *v1.Service) (Record, bool) {
	parts := strings.SplitN(svc.Annotations[string(r.Converged)], "/", 3)
	if len(parts) < 2 || parts[0] == "" {
		return Record{}, false
	}
	config, members, ok := strings.Cut(parts[1], ".")
	if !ok {
		return Record{}, false
	}
	rec := Record{ID: parts[0], Fingerprint: Fingerprint{Config: config, Members: members}}
	switch {
	case r.Address != "":
		rec.Address = svc.Annotations[string(r.Address)]
	case len(parts) == 3:
		rec.Address = parts[2]
	default:
		return Record{}, false
	}
	return rec, true
}

// Put writes what changed of rec, in one patch. A Record with no ID writes
// the address alone (where it has an annotation of its own). A Record whose
// members alone changed goes to the Ledger where there is one; an annotation
// is written only when the Ledger holds nothing of its Service (and removed
// when that cannot be made so: the next pass walks). A failure is logged: the
// record is an optimisation, and without it the next pass walks.
func (r *AnnotationRecords) Put(ctx context.Context, svc *v1.Service, rec Record) {
	patch := map[string]any{}
	set := func(name annotation.Name, v string) {
		if svc.Annotations[string(name)] != v {
			patch[string(name)] = v
		}
	}
	if r.Address != "" && rec.Address != "" {
		set(r.Address, rec.Address)
	}
	if rec.ID != "" {
		r.putConverged(ctx, svc, rec, patch)
	}
	PatchAnnotations(ctx, r.kube(), svc, patch)
}

// putConverged adds to patch what records rec in the converged annotation,
// or keeps it in the Ledger.
func (r *AnnotationRecords) putConverged(ctx context.Context, svc *v1.Service, rec Record, patch map[string]any) {
	v := rec.ID + "/" + rec.String()
	if r.Address == "" {
		v += "/" + rec.Address
	}
	cur, has := svc.Annotations[string(r.Converged)]
	if r.Ledger != nil && r.membersAlone(svc, rec) && r.Ledger.Set(ctx, svc.UID, cur, rec.Members) {
		return
	}
	if r.Ledger != nil && !r.Ledger.Remove(ctx, svc.UID) {
		if has {
			patch[string(r.Converged)] = nil
		}
		return
	}
	if cur != v {
		patch[string(r.Converged)] = v
	}
	for _, name := range r.Clear {
		if _, ok := svc.Annotations[string(name)]; ok {
			patch[string(name)] = nil
		}
	}
}

// membersAlone says whether the Service's annotation records rec but for its
// members.
func (r *AnnotationRecords) membersAlone(svc *v1.Service, rec Record) bool {
	was, ok := r.annotated(svc)
	return ok && was.ID == rec.ID && was.Config == rec.Config && was.Address == rec.Address && was.Members != rec.Members
}

// Forget removes the Service's Record (its load balancer is gone: a Service
// made a LoadBalancer again starts afresh).
func (r *AnnotationRecords) Forget(ctx context.Context, svc *v1.Service) {
	r.Gone(ctx, svc)
	if _, ok := svc.Annotations[string(r.Converged)]; ok {
		PatchAnnotations(ctx, r.kube(), svc, map[string]any{string(r.Converged): nil})
	}
}

// Gone drops what the Ledger holds of the Service, whose load balancer is
// deleted (the Service may be going too: its annotation is left).
func (r *AnnotationRecords) Gone(ctx context.Context, svc *v1.Service) {
	if r.Ledger != nil {
		r.Ledger.Remove(ctx, svc.UID)
	}
}

func (r *AnnotationRecords) kube() kubernetes.Interface {
	if r.Kube == nil {
		return nil
	}
	return r.Kube()
}

// PatchAnnotations merges patch into the Service's annotations (a nil value
// removes one), as field manager overcast-ccm. Nothing is written for an
// empty patch or a nil client; a failure is logged, not returned: what a
// cloud records on a Service is never needed for correctness.
func PatchAnnotations(ctx context.Context, kube kubernetes.Interface, svc *v1.Service, patch map[string]any) {
	if len(patch) == 0 || kube == nil {
		return
	}
	if err := patchAnnotations(ctx, kube, svc, map[string]any{"annotations": patch}); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot write the load balancer's annotations on the Service", "service", klog.KObj(svc))
	}
}

// WriteAnnotations is PatchAnnotations for what must be written before the
// cloud is changed: only on the Service of svc's UID (not another of its
// name), and its error returned. A nil client writes nothing.
func WriteAnnotations(ctx context.Context, kube kubernetes.Interface, svc *v1.Service, patch map[string]any) error {
	if len(patch) == 0 || kube == nil {
		return nil
	}
	return patchAnnotations(ctx, kube, svc, map[string]any{"annotations": patch, "uid": svc.UID})
}

func patchAnnotations(ctx context.Context, kube kubernetes.Interface, svc *v1.Service, metadata map[string]any) error {
	data, _ := json.Marshal(map[string]any{"metadata": metadata})
	_, err := kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: "overcast-ccm"})
	return err
}
