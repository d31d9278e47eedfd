package ccm

import (
	"context"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// started says whether a cloud's controllers ran in this process: the
// framework initialises the cloud only once it leads (provider.Base).
type started interface{ Started() bool }

// releaseLease gives the leader Lease up once the manager has stopped (a
// SIGTERM, or the end of an in-process run), as client-go's ReleaseOnCancel
// would: the holder emptied and a lease of one second, so that another
// replica leads at its next retry instead of after the whole lease duration.
// The framework names its identity "<hostname>_<uuid>" and does not say the
// uuid; the Lease is released only when this process led (its cloud was
// initialised) and a holder of this host holds it. Best effort: a failure
// only means the other replica waits out the lease.
func releaseLease(ctx context.Context, client kubernetes.Interface, namespace, name string, cloud any) {
	if s, ok := cloud.(started); !ok || !s.Started() || client == nil {
		return
	}
	host, err := os.Hostname()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	leases := client.CoordinationV1().Leases(namespace)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		klog.V(2).InfoS("Cannot read the leader Lease to release it", "lease", klog.KRef(namespace, name), "err", err)
		return
	}
	if l.Spec.HolderIdentity == nil || !strings.HasPrefix(*l.Spec.HolderIdentity, host+"_") {
		return
	}
	was := *l.Spec.HolderIdentity
	now := metav1.NewMicroTime(time.Now())
	empty, one := "", int32(1)
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &empty, LeaseDurationSeconds: &one, AcquireTime: &now, RenewTime: &now,
		LeaseTransitions: l.Spec.LeaseTransitions}
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		klog.V(2).InfoS("Cannot release the leader Lease", "lease", klog.KRef(namespace, name), "err", err)
		return
	}
	klog.InfoS("Released the leader Lease", "lease", klog.KRef(namespace, name), "holder", was)
}
