package provider

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/deletionguard"
)

// The Node deletion guard: the node lifecycle controller deletes a NotReady
// Node as soon as the cloud says its machine is gone. When credentials point
// at another project, a policy is removed or an API answers 404 for what it
// still has, every machine is "gone" at once, and every peer CCM then deletes
// every NotReady Node (oci-cloud-controller-manager #57, Azure #2880). When
// the cloud says a machine is gone, the guard asks about the machines of all
// the cluster's Nodes (from the cloud's shared listing); while more than a
// share of them are gone, deletions are held (InstanceExists answers an
// error, which the controller retries and never acts on), with one Warning
// that says so. They go ahead when the vanishing has lasted the guard's
// window, or for each Node a person annotates.

var (
	guardMu      sync.Mutex
	guardOptions = deletionguard.Default
)

// SetDeletionGuard sets the options of the guards made from now on.
func SetDeletionGuard(o deletionguard.Options) {
	guardMu.Lock()
	defer guardMu.Unlock()
	guardOptions = o
}

func deletionGuardOptions() deletionguard.Options {
	guardMu.Lock()
	defer guardMu.Unlock()
	return guardOptions
}

var heldDeletions = metrics.NewGauge(&metrics.GaugeOpts{
	Namespace: "overcast", Name: "node_deletions_held",
	Help:           "Nodes whose deletion the Node deletion guard holds: their machines vanished with more of the cluster's at once than its share.",
	StabilityLevel: metrics.ALPHA,
})

func init() { legacyregistry.MustRegister(heldDeletions) }

// deletionGuard is one cloud's guard.
type deletionGuard struct {
	opts deletionguard.Options
	now  func() time.Time

	mu       sync.Mutex
	gone     int       // Nodes whose machines the last survey found gone
	total    int       // Nodes with a providerID at the last survey
	surveyed time.Time // when; zero: never
	since    time.Time // when the current hold began; zero: none
	warned   bool      // the hold's Warning is out
}

func newDeletionGuard(o deletionguard.Options) *deletionGuard {
	return &deletionGuard{opts: o, now: time.Now}
}

// surveyEvery is how long a survey of every Node's machine stands.
const surveyEvery = 30 * time.Second

// limit is how many vanished machines are never held among total Nodes.
func (g *deletionGuard) limit(total int) int { return g.opts.Limit(total) }

// schemeOf is a providerID's cloud ("openstack" of openstack:///…).
func schemeOf(providerID string) string {
	scheme, _, ok := strings.Cut(providerID, "://")
	if !ok {
		return ""
	}
	return scheme
}

// survey asks the cloud about the machine of every Node of its providerID
// scheme (the Nodes it serves),
// as the lifecycle controller would ask about each (the clouds answer from a
// shared listing: no call per Node), at most every surveyEvery, and stops
// counting once more than the limit are gone. Checking one Node at a time,
// as the controller does, would let the first ones of a mass disappearance
// be deleted before the guard saw the rest.
func (g *deletionGuard) survey(ctx context.Context, nodes corelisters.NodeLister, inner cloudprovider.InstancesV2, scheme string) (gone, total int, err error) {
	g.mu.Lock()
	if !g.surveyed.IsZero() && g.now().Sub(g.surveyed) < surveyEvery {
		defer g.mu.Unlock()
		return g.gone, g.total, nil
	}
	g.mu.Unlock()
	if nodes == nil {
		return 0, 0, fmt.Errorf("node deletion guard: the Nodes are not known yet")
	}
	all, err := nodes.List(labels.Everything())
	if err != nil {
		return 0, 0, fmt.Errorf("node deletion guard: listing the Nodes: %w", err)
	}
	var ours []*v1.Node
	for _, n := range all {
		if schemeOf(n.Spec.ProviderID) == scheme {
			ours = append(ours, n)
		}
	}
	total = len(ours)
	limit := g.limit(total)
	for _, n := range ours {
		if gone > limit {
			break
		}
		if exists, err := inner.InstanceExists(ctx, n); err == nil && !exists {
			gone++
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gone, g.total, g.surveyed = gone, total, g.now()
	return gone, total, nil
}

// decide says whether the deletion of node, whose machine is gone, is held
// while gone of total Nodes' machines are: held with the message, and
// whether it is the hold's first Warning.
func (g *deletionGuard) decide(node *v1.Node, gone, total int) (held bool, msg string, first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if g.opts.Share >= 1 || gone <= g.limit(total) {
		g.since, g.warned = time.Time{}, false // no hold, or one that ended
		heldDeletions.Set(0)
		return false, "", false
	}
	if g.since.IsZero() {
		g.since = now
	}
	heldDeletions.Set(float64(gone))
	if g.opts.Window > 0 && now.Sub(g.since) >= g.opts.Window {
		return false, "", false // vanished for the whole window: not a blip
	}
	if node.Annotations[deletionguard.AllowAnnotation] == "true" {
		return false, "", false
	}
	until := "a person allows each"
	if g.opts.Window > 0 {
		until = fmt.Sprintf("%s, or a person allows each", g.since.Add(g.opts.Window).UTC().Format("15:04 MST"))
	}
	more := ""
	if gone > g.limit(total)+1 {
		more = " at least"
	}
	msg = fmt.Sprintf("Node deletion guard: the cloud says the machines of%s %d of the cluster's %d Nodes are gone, more than %.0f%% at once (credentials of another project, a removed policy, an API fault?); no Node is deleted until %s (annotate the Node %s=true)",
		more, gone, total, g.opts.Share*100, until, deletionguard.AllowAnnotation)
	first = !g.warned
	g.warned = true
	return true, msg, first
}

// guardedInstances is a cloud's InstancesV2 with the deletion guard on
// InstanceExists.
type guardedInstances struct {
	cloudprovider.InstancesV2
	base  *Base
	guard *deletionGuard
	doubt *lookupDoubt
}

// InstanceExists answers as the cloud does, except that a machine gone while
// the guard holds is an error (the controller retries; it deletes nothing),
// and a lookup that fails is doubt: the machine exists (lookups.go).
func (g guardedInstances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	exists, err := g.InstancesV2.InstanceExists(ctx, node)
	if err != nil {
		g.doubt.failed(ctx, g.base, node, "InstanceExists", err)
		return true, nil
	}
	g.doubt.answered(ctx, node)
	if exists {
		return true, nil
	}
	gone, total, err := g.guard.survey(ctx, g.base.nodeLister(), g.InstancesV2, schemeOf(node.Spec.ProviderID))
	if err != nil {
		return false, err // doubt: nothing is deleted
	}
	held, msg, first := g.guard.decide(node, max(gone, 1), total)
	if !held {
		return false, nil
	}
	if first {
		klog.FromContext(ctx).Info("Holding Node deletions", "node", klog.KObj(node), "why", msg)
		g.base.Events.Eventf(node, v1.EventTypeWarning, deletionguard.ReasonHeld, "%s", msg)
	}
	return false, fmt.Errorf("%s", msg)
}

// InstanceShutdown answers as the cloud does; a lookup that fails is doubt:
// not shut down (lookups.go).
func (g guardedInstances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	down, err := g.InstancesV2.InstanceShutdown(ctx, node)
	if err != nil {
		g.doubt.failed(ctx, g.base, node, "InstanceShutdown", err)
		return false, nil
	}
	return down, nil
}

// Guarded says whether i is an InstancesV2 the deletion guard wraps.
func Guarded(i cloudprovider.InstancesV2) bool {
	_, ok := i.(guardedInstances)
	return ok
}

// GuardInstances is inner (the cloud's InstancesV2) with the Node deletion
// guard: every cloud answers InstancesV2 with it (held by a test of
// internal/clouds).
func (b *Base) GuardInstances(inner cloudprovider.InstancesV2) cloudprovider.InstancesV2 {
	b.guardOnce.Do(b.initGuard)
	return guardedInstances{InstancesV2: inner, base: b, guard: b.guard, doubt: b.doubt}
}

func (b *Base) initGuard() {
	b.guard, b.doubt = newDeletionGuard(deletionGuardOptions()), newLookupDoubt()
}

// lookupDoubt is the cloud's record of failing lookups.
func (b *Base) lookupDoubt() *lookupDoubt {
	b.guardOnce.Do(b.initGuard)
	return b.doubt
}

// SetInformers keeps the shared Node lister (the guard's survey). A cloud
// with informers of its own calls it from its SetInformers.
func (b *Base) SetInformers(f informers.SharedInformerFactory) {
	b.nodes.Store(f.Core().V1().Nodes().Lister())
}

func (b *Base) nodeLister() corelisters.NodeLister {
	l, _ := b.nodes.Load().(corelisters.NodeLister)
	return l
}
