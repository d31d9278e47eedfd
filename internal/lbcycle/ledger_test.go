package lbcycle

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// ledgerBed is a cluster (a fake clientset: what is tested is what the
// records write, not a controller) with a Service converged as recorded.
type ledgerBed struct {
	kube *fake.Clientset
	svc  *v1.Service
	rec  Record
}

const convergedName = "example.org/converged"

func newLedgerBed(t *testing.T) *ledgerBed {
	t.Helper()
	rec := Record{ID: "lb-1", Fingerprint: Fingerprint{Config: "0123456789abcdef", Members: "01234567"}, Address: "203.0.113.7"}
	svc := serviceWith(map[string]string{convergedName: "lb-1/0123456789abcdef.01234567/203.0.113.7"})
	svc.UID = "uid-1"
	return &ledgerBed{kube: fake.NewClientset(svc.DeepCopy()), svc: svc, rec: rec}
}

// records are the Service's records with a ledger of their own (a process).
func (b *ledgerBed) records(max int) *AnnotationRecords {
	kube := func() kubernetes.Interface { return b.kube }
	return &AnnotationRecords{Converged: convergedName, Kube: kube, Ledger: &MembersLedger{Kube: kube, MaxEntries: max,
		Where: func() (string, string) { return "kube-system", "members" }}}
}

// writes are the writes of kind ("services", "configmaps") made so far.
func (b *ledgerBed) writes(resource string) int {
	n := 0
	for _, a := range b.kube.Actions() {
		if a.GetResource().Resource == resource && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			n++
		}
	}
	return n
}

// stored is the Service as the cluster has it.
func (b *ledgerBed) stored(t *testing.T) *v1.Service {
	t.Helper()
	svc, err := b.kube.CoreV1().Services("ns").Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	return svc
}

// moved puts, with r, the Service's record with its members alone changed,
// and returns it.
func (b *ledgerBed) moved(t *testing.T, r *AnnotationRecords) Record {
	t.Helper()
	now := b.rec
	now.Members = "89abcdef"
	r.Put(t.Context(), b.svc, now)
	return now
}

func TestMembersAloneChangedAreKeptInTheLedgerAndReadAfterARestart(t *testing.T) {
	b := newLedgerBed(t)
	r := b.records(0)
	now := b.moved(t, r)

	assert.Zero(t, b.writes("services"), "the Service is not written")
	assert.Equal(t, 1, b.writes("configmaps"), "the ledger is")
	got, ok := r.Get(b.stored(t))
	require.True(t, ok)
	assert.Equal(t, now, got)

	restarted := b.records(0)
	got, ok = restarted.Get(b.stored(t))
	require.True(t, ok)
	assert.Equal(t, now, got, "another process reads the ledger")
}

func TestARecordWrittenAnewEndsTheLedgersEntry(t *testing.T) {
	for _, tt := range []struct {
		name string
		now  func(Record) Record
	}{
		{"members back to the annotation's", func(r Record) Record { return r }},
		{"a new configuration", func(r Record) Record { r.Config = "fedcba9876543210"; return r }},
		{"another load balancer", func(r Record) Record { r.ID = "lb-2"; return r }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newLedgerBed(t)
			r := b.records(0)
			b.moved(t, r)
			now := tt.now(b.rec)
			r.Put(t.Context(), b.stored(t), now)

			got, ok := b.records(0).Get(b.stored(t))
			require.True(t, ok)
			assert.Equal(t, now, got, "read by another process")
			cm, err := b.kube.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "members", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Empty(t, cm.Data[ledgerKey], "no entry is left")
		})
	}
}

func TestAnEntryHoldsOnlyForTheAnnotationItWasMadeFor(t *testing.T) {
	b := newLedgerBed(t)
	r := b.records(0)
	b.moved(t, r)
	// Another writes the annotation (a user, an older overcast-ccm).
	other := b.stored(t)
	other.Annotations[convergedName] = "lb-1/0123456789abcdef.76543210/203.0.113.7"
	got, ok := b.records(0).Get(other)
	require.True(t, ok)
	assert.Equal(t, "76543210", got.Members, "the annotation's, not the ledger's")
}

func TestChangesMadeTogetherAreFewWrites(t *testing.T) {
	var svcs []*v1.Service
	var objs []runtime.Object
	for i := range 50 {
		svc := serviceWith(map[string]string{convergedName: "lb-1/0123456789abcdef.01234567/203.0.113.7"})
		svc.Name, svc.UID = fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		svcs, objs = append(svcs, svc), append(objs, svc.DeepCopy())
	}
	b := &ledgerBed{kube: fake.NewClientset(objs...)}
	r := b.records(0)
	var wg sync.WaitGroup
	for _, svc := range svcs {
		wg.Go(func() {
			r.Put(t.Context(), svc, Record{ID: "lb-1", Fingerprint: Fingerprint{Config: "0123456789abcdef", Members: "89abcdef"}, Address: "203.0.113.7"})
		})
	}
	wg.Wait()
	assert.Zero(t, b.writes("services"))
	assert.LessOrEqual(t, b.writes("configmaps"), 3, "50 changes at once")
	for _, svc := range svcs {
		got, _ := b.records(0).Get(svc)
		assert.Equal(t, "89abcdef", got.Members, svc.Name)
	}
}

func TestAFullLedgerLeavesTheRecordToTheAnnotation(t *testing.T) {
	b := newLedgerBed(t)
	r := b.records(0)
	r.Ledger.MaxEntries = 1
	require.True(t, r.Ledger.Set(t.Context(), "uid-other", "x", "00000000"))
	b.moved(t, r)
	assert.Equal(t, "lb-1/0123456789abcdef.89abcdef/203.0.113.7", b.stored(t).Annotations[convergedName])
}

func TestALedgerThatCannotBeWrittenNeverContradictsTheAnnotation(t *testing.T) {
	b := newLedgerBed(t)
	r := b.records(0)
	b.moved(t, r)
	b.kube.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is away")
	})
	// The members go back to the annotation's: the entry cannot be removed,
	// so the annotation is (the next pass walks).
	r.Put(t.Context(), b.stored(t), b.rec)
	_, ok := b.records(0).Get(b.stored(t))
	assert.False(t, ok, "no record: the next pass walks")
	_, has := b.stored(t).Annotations[convergedName]
	assert.False(t, has)
}

func TestALedgerThatCannotBeReadLeavesTheAnnotationsAsBefore(t *testing.T) {
	b := newLedgerBed(t)
	b.kube.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "members", errors.New("no RBAC"))
	})
	r := b.records(0)
	b.moved(t, r)
	assert.Equal(t, "lb-1/0123456789abcdef.89abcdef/203.0.113.7", b.stored(t).Annotations[convergedName])
	assert.Zero(t, b.writes("configmaps"))
}

func TestALedgerWrittenByAnotherMeanwhileKeepsBothChanges(t *testing.T) {
	b := newLedgerBed(t)
	r := b.records(0)
	b.moved(t, r)
	// Another process (a leader before this one) adds its entry.
	other := b.records(0)
	require.True(t, other.Ledger.Set(t.Context(), "uid-2", "lb-9/x", "76543210"))
	conflicted := false
	b.kube.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !conflicted {
			conflicted = true
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "members", errors.New("changed"))
		}
		return false, nil, nil
	})
	require.True(t, r.Ledger.Set(t.Context(), "uid-3", "lb-8/y", "01010101"))
	fresh := b.records(0).Ledger
	fresh.mu.Lock()
	defer fresh.mu.Unlock()
	require.True(t, fresh.load(t.Context()))
	for uid, want := range map[types.UID]string{"uid-1": "89abcdef", "uid-2": "76543210", "uid-3": "01010101"} {
		assert.Equal(t, want, fresh.entries[uid].members, string(uid))
	}
	assert.True(t, conflicted)
}
