package lbcycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// MembersLedger keeps the members part of Services' Records in one
// ConfigMap. A change of Nodes changes the members of every load balancer and
// nothing else: with the ledger it is a few writes of one object nobody
// watches, not a write of every Service (each sent to every Service watcher,
// kube-proxy on every Node among them). The peers write nothing then.
//
// An entry holds for the Record its Service's annotation held when the entry
// was made, named by its digest: once the annotation is written anew the
// entry says nothing. An annotation is written only when the ledger holds no
// entry of its Service (AnnotationRecords.Put).
//
// Changes are written in groups: a change waits for the write that holds it,
// so that it is kept when it returns, as the annotation's patch was. A ledger
// that cannot be read, written, or is full declines, and the Record goes to
// the annotation as before.
type MembersLedger struct {
	// Kube is the client (nil, or one that is: no ledger).
	Kube func() kubernetes.Interface
	// Where are the ConfigMap's namespace and name ("": no ledger).
	Where func() (namespace, name string)
	// Gather is how long a write waits for more changes (100 ms when 0).
	Gather time.Duration
	// MaxEntries bounds the ledger (a ConfigMap holds 1 MiB; an entry is
	// about 60 bytes): beyond, Set declines (DefaultLedgerEntries when 0).
	MaxEntries int

	mu      sync.Mutex
	loaded  bool
	triedAt time.Time // the last failed read
	stored  *string   // the ConfigMap's resourceVersion as last read or written; nil: none
	entries map[types.UID]ledgerEntry
	next    map[types.UID]*ledgerEntry // the changes gathered (nil: removed)
	batch   *ledgerBatch               // the write they go out in
	writing bool
}

// LedgerName is the name of overcast-ccm's members ledger, a ConfigMap in
// the namespace of its leader election's Lease (the chart's RBAC names it).
const LedgerName = "overcast-ccm-members"

// DefaultLedgerEntries bounds a ledger of no MaxEntries: 10,000 entries, about
// 600 KB.
const DefaultLedgerEntries = 10000

// ledgerKey is the ConfigMap's key of the entries, one a line: "<uid>
// <digest of the annotation> <members>". A new format takes a new key.
const ledgerKey = "members.v1"

// ledgerRetry is how soon a ledger that could not be read is read again.
const ledgerRetry = 30 * time.Second

type ledgerEntry struct{ base, members string }

type ledgerBatch struct {
	done chan struct{}
	err  error
}

// LedgerDigest names an annotation's value in the ledger.
func LedgerDigest(annotation string) string {
	sum := sha256.Sum256([]byte(annotation))
	return hex.EncodeToString(sum[:6])
}

// Members is the members part the ledger holds for the Service uid whose
// annotation has the value annotation; false when it holds none that applies
// (or cannot be read).
func (l *MembersLedger) Members(ctx context.Context, uid types.UID, annotation string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.load(ctx) {
		return "", false
	}
	e, ok := l.entries[uid]
	if !ok || e.base != LedgerDigest(annotation) {
		return "", false
	}
	return e.members, true
}

// Set records that the Service uid, whose annotation has the value
// annotation, has the members members, and returns once that is kept; false
// when it is not (the annotation must say it).
func (l *MembersLedger) Set(ctx context.Context, uid types.UID, annotation, members string) bool {
	return l.change(ctx, uid, &ledgerEntry{base: LedgerDigest(annotation), members: members}) == nil
}

// Remove removes the Service's entry, and returns once that is kept; false
// when it could not be (the entry may still hold). A ledger that cannot be
// read holds nothing this process knows of: true.
func (l *MembersLedger) Remove(ctx context.Context, uid types.UID) bool {
	l.mu.Lock()
	held := l.load(ctx) && l.has(uid)
	l.mu.Unlock()
	return !held || l.change(ctx, uid, nil) == nil
}

// has says whether uid has an entry, kept or on its way. l.mu is held.
func (l *MembersLedger) has(uid types.UID) bool {
	if e, ok := l.next[uid]; ok {
		return e != nil
	}
	_, ok := l.entries[uid]
	return ok
}

// change adds a change to the write being gathered (starting one) and waits
// for that write.
func (l *MembersLedger) change(ctx context.Context, uid types.UID, e *ledgerEntry) error {
	l.mu.Lock()
	if !l.load(ctx) {
		l.mu.Unlock()
		return errors.New("the ledger cannot be read")
	}
	if e != nil && !l.has(uid) && len(l.entries)+len(l.next) >= l.maxEntries() {
		l.mu.Unlock()
		return errors.New("the ledger is full")
	}
	if l.batch == nil {
		l.next, l.batch = map[types.UID]*ledgerEntry{}, &ledgerBatch{done: make(chan struct{})}
	}
	l.next[uid] = e
	b := l.batch
	if !l.writing {
		l.writing = true
		go l.writeLoop(context.WithoutCancel(ctx))
	}
	l.mu.Unlock()
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeLoop writes the changes gathered, one write at a time, until none are
// left.
func (l *MembersLedger) writeLoop(ctx context.Context) {
	for {
		time.Sleep(l.gather())
		l.mu.Lock()
		next, b := l.next, l.batch
		l.next, l.batch = nil, nil
		if b == nil {
			l.writing = false
			l.mu.Unlock()
			return
		}
		entries := applied(l.entries, next)
		stored := l.stored
		l.mu.Unlock()
		entries, stored, err := l.write(ctx, stored, entries, next)
		l.mu.Lock()
		if err == nil {
			l.entries, l.stored = entries, stored
		} else {
			klog.FromContext(ctx).Error(err, "Cannot write the members ledger; the Services' annotations say their members", "configmap", l.ref())
		}
		l.mu.Unlock()
		b.err = err
		close(b.done)
	}
}

// applied is entries with the changes next made, a new map.
func applied(entries map[types.UID]ledgerEntry, next map[types.UID]*ledgerEntry) map[types.UID]ledgerEntry {
	out := make(map[types.UID]ledgerEntry, len(entries)+len(next))
	for uid, e := range entries {
		out[uid] = e
	}
	for uid, e := range next {
		if e == nil {
			delete(out, uid)
		} else {
			out[uid] = *e
		}
	}
	return out
}

// write writes entries, the ledger after changes, over the ConfigMap of
// version stored (nil: none), and returns what it wrote and its version.
// Written by another meanwhile (a leader before this one), it is read again
// and the changes made over what it holds (three tries).
func (l *MembersLedger) write(ctx context.Context, stored *string, entries map[types.UID]ledgerEntry, changes map[types.UID]*ledgerEntry) (map[types.UID]ledgerEntry, *string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ns, name := l.Where()
	cms := l.Kube().CoreV1().ConfigMaps(ns)
	var err error
	for range 3 {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "overcast-ccm"}}, Data: map[string]string{ledgerKey: encodeLedger(entries)}}
		var out *v1.ConfigMap
		if stored == nil {
			out, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: "overcast-ccm"})
		} else {
			cm.ResourceVersion = *stored
			out, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "overcast-ccm"})
		}
		if err == nil {
			return entries, &out.ResourceVersion, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) && !apierrors.IsNotFound(err) {
			return nil, nil, err
		}
		theirs, again, rerr := l.read(ctx)
		if rerr != nil {
			return nil, nil, rerr
		}
		entries, stored = applied(theirs, changes), again
	}
	return nil, nil, err
}

// load reads the ledger once (again after ledgerRetry when it could not be
// read), and says whether it is known. l.mu is held.
func (l *MembersLedger) load(ctx context.Context) bool {
	if l.loaded || !l.configured() {
		return l.loaded
	}
	if !l.triedAt.IsZero() && time.Since(l.triedAt) < ledgerRetry {
		return false
	}
	entries, stored, err := l.read(ctx)
	if err != nil {
		l.triedAt = time.Now()
		klog.FromContext(ctx).Error(err, "Cannot read the members ledger; the Services' annotations alone say their members", "configmap", l.ref())
		return false
	}
	l.entries, l.stored, l.loaded = entries, stored, true
	return true
}

// read is the ledger's entries and version as stored (nil when there is none).
func (l *MembersLedger) read(ctx context.Context) (map[types.UID]ledgerEntry, *string, error) {
	ns, name := l.Where()
	cm, err := l.Kube().CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[types.UID]ledgerEntry{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return decodeLedger(cm.Data[ledgerKey]), &cm.ResourceVersion, nil
}

func encodeLedger(entries map[types.UID]ledgerEntry) string {
	lines := make([]string, 0, len(entries))
	for uid, e := range entries {
		lines = append(lines, fmt.Sprintf("%s %s %s\n", uid, e.base, e.members))
	}
	slices.Sort(lines)
	return strings.Join(lines, "")
}

// decodeLedger reads encodeLedger's lines; a line not of three fields is
// left out (it says nothing).
func decodeLedger(s string) map[types.UID]ledgerEntry {
	out := map[types.UID]ledgerEntry{}
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) == 3 {
			out[types.UID(f[0])] = ledgerEntry{base: f[1], members: f[2]}
		}
	}
	return out
}

func (l *MembersLedger) ref() klog.ObjectRef {
	ns, name := l.Where()
	return klog.KRef(ns, name)
}

// configured says whether the ledger has a client and a place.
func (l *MembersLedger) configured() bool {
	if l.Kube == nil || l.Kube() == nil || l.Where == nil {
		return false
	}
	ns, name := l.Where()
	return ns != "" && name != ""
}

func (l *MembersLedger) gather() time.Duration {
	if l.Gather > 0 {
		return l.Gather
	}
	return 100 * time.Millisecond
}

func (l *MembersLedger) maxEntries() int {
	if l.MaxEntries > 0 {
		return l.MaxEntries
	}
	return DefaultLedgerEntries
}
