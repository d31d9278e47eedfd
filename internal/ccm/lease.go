package ccm

import (
	"context"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	// The leader elector's gauge, which says whether this process leads.
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
)

// leaderGauge is client-go's leader_election_master_status: the elector sets
// it to 1 for its lease name as it acquires the Lease, and to 0 only when it
// fails to renew (a stop by cancellation leaves it at 1: the Lease is still
// this process's to give up).
const leaderGauge = "leader_election_master_status"

// leads says whether this process's elector holds the Lease name: from the
// moment it acquired it, before the framework initialises the cloud (a
// SIGTERM in between must release it too: the other replica would otherwise
// wait out the whole lease duration).
func leads(name string) bool {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return false
	}
	for _, f := range families {
		if f.GetName() != leaderGauge {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == name {
					return m.GetGauge().GetValue() == 1
				}
			}
		}
	}
	return false
}

// releaseLease gives the leader Lease up once the manager has stopped (a
// SIGTERM, or the end of an in-process run), as client-go's ReleaseOnCancel
// would: the holder emptied and a lease of one second, so that another
// replica leads at its next retry instead of after the whole lease duration.
// The framework names its identity "<hostname>_<uuid>" and does not say the
// uuid; the Lease is released only when this process's elector holds it and
// a holder of this host holds it. A write that lost to the elector's last
// renewal (409) is tried again on the Lease as it is. Best effort: a failure
// only means the other replica waits out the lease.
func releaseLease(ctx context.Context, client kubernetes.Interface, namespace, name string) {
	if client == nil || !leads(name) {
		return
	}
	host, err := os.Hostname()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	leases := client.CoordinationV1().Leases(namespace)
	for range 3 {
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
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			klog.InfoS("Released the leader Lease", "lease", klog.KRef(namespace, name), "holder", was)
			return
		}
		if !apierrors.IsConflict(err) {
			klog.V(2).InfoS("Cannot release the leader Lease", "lease", klog.KRef(namespace, name), "err", err)
			return
		}
	}
}
