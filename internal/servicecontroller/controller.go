// Package servicecontroller is Overcast's service controller: it gives Services
// of type LoadBalancer a load balancer of the cloud, for every cloud. It keeps
// the contract of k8s.io/cloud-provider's service controller (the cleanup
// finalizer, spec.loadBalancerClass, which Nodes back load balancers, the
// status) and registers under its name, "service". Beyond it:
//
//   - Progress is not failure. While the cloud works (a provider returns an
//     api.RetryError) the Service gets Normal Events and the
//     LoadBalancerProgressing condition; a Warning is only for what a person must
//     act on (a outcome.Problem, or an error that persists).
//   - Conditions (LoadBalancerReady, LoadBalancerProgressing) on the Service's
//     status tell where its load balancer is at a glance.
//   - Drift is found from one shared listing per period (a cloud that implements
//     Drifter) and repaired without any change to the Service.
//   - Nodes are read from the shared cache when a Service syncs; what is kept
//     per Service is a few numbers, never a list of Nodes.
package servicecontroller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// Defaults.
const (
	// DefaultDriftPeriod is how often the cloud's load balancers are listed to
	// find those changed behind the controller's back: a drift is repaired
	// within this period and one sync.
	DefaultDriftPeriod = 3 * time.Minute
	// warnAfter is how many failed passes in a row an error not known to need a
	// person (a timeout, a 5xx) takes before it is a Warning Event, the only
	// one until a pass succeeds.
	warnAfter = 3
	// Failed passes are retried after 5 s, doubling up to 5 min, as the
	// framework's controller does.
	minRetryDelay = 5 * time.Second
	maxRetryDelay = 5 * time.Minute
	// probeInterval is how often one Service in backoff for an unreachable
	// cloud is tried anyway: its success ends every other one's backoff, so
	// that all converge within about this of the cloud's recovery, not after
	// up to maxRetryDelay, for two passes a minute whatever their number.
	probeInterval = 30 * time.Second
	// syncTimeout bounds one pass of a Service: far beyond what a pass
	// takes (one step, a few calls of at most 30 s each).
	syncTimeout = 5 * time.Minute
	// nodesKey is the one key of the Node queue: every Node event asks for one
	// look at the set of Nodes, however many came at once.
	nodesKey = "nodes"
)

// Event reasons of the controller. Clouds add reasons of their own to Problems.
const (
	ReasonEnsuring        = "EnsuringLoadBalancer"
	ReasonEnsured         = "EnsuredLoadBalancer"
	ReasonUpdatedNodes    = "UpdatedLoadBalancer"
	ReasonRepairing       = "RepairingLoadBalancer"
	ReasonDeleting        = "DeletingLoadBalancer"
	ReasonDeleted         = "DeletedLoadBalancer"
	ReasonSyncFailed      = "SyncLoadBalancerFailed"
	ReasonDeleteFailed    = "DeleteLoadBalancerFailed"
	ReasonNoNodes         = "UnAvailableLoadBalancer"
	ReasonImplementedElse = "ImplementedElsewhere"
)

// Drifter is a cloud that can tell, from one shared listing of the cluster's
// load balancers, which Services' load balancers are no longer as they were
// left: deleted behind the controller's back, in an error state, or not
// matching what the Service's converged record says. It is given the Services
// whose load balancers are converged and returns the UIDs of those that are
// not, each with a sentence saying why. Its cost must not grow with the
// number of Services: one listing (and its pages) per call.
type Drifter interface {
	Drifted(ctx context.Context, services []*v1.Service) (map[types.UID]string, error)
}

// Options of the controller.
type Options struct {
	ClusterName string
	// Workers is how many Services sync at once.
	Workers int
	// DriftPeriod is how often a Drifter cloud is asked for drift (default
	// DefaultDriftPeriod; negative: never).
	DriftPeriod time.Duration
	// IgnoredAnnotations are annotations the clouds write on Services for their
	// own records: a change of them is not a change of what the Service asks.
	IgnoredAnnotations []string
}

// Controller is Overcast's service controller.
type Controller struct {
	balancer cloudprovider.LoadBalancer
	// cloud is the cloud's name, a label of the metrics.
	cloud   string
	drifter Drifter
	kube    clientset.Interface
	opts    Options
	ignored map[string]bool

	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced

	queue     workqueue.TypedRateLimitingInterface[string]
	nodeQueue workqueue.TypedRateLimitingInterface[string]
	// nodeChanges counts the Node events that may change a load balancer's
	// members: a pass that saw it move while it worked looks again.
	nodeChanges atomic.Uint64
	nodeSet     nodeSet
	recorder    record.EventRecorder

	mu    sync.Mutex
	state map[string]*serviceState // by namespace/name
	// failing are the Services whose last pass failed with an error not
	// known to need a person (a timeout, a 5xx: the cloud unreachable), in
	// backoff; recovery requeues them at once (recovered), a probe tries one
	// of them every probeInterval (probe). Guarded by mu.
	failing map[string]bool
	probed  string // the key the last probe tried
}

// serviceState is what the controller remembers of a Service between passes:
// a few numbers and the last messages it published, never Nodes. uid, spec,
// nodes and phase are read by the Node and drift loops and guarded by the
// controller's lock; the rest only by the worker that holds the Service's key.
type serviceState struct {
	uid types.UID
	// spec and nodes identify what the load balancer was last converged to (0:
	// not converged, or drift found since).
	spec, nodes uint64
	phase       phase
	// ident is the Node set's nodeSetHash at the last convergence: another
	// one is other Nodes backing the load balancer (an Event says so).
	ident uint64

	progress string // the last progress message published
	problem  string // the last Problem published
	failures int    // failed passes in a row
	noNodes  bool   // the no-eligible-Node Warning was published
	deleting bool   // the DeletingLoadBalancer Event was published
	// background: the members are being updated, unseen on the Service
	// (outcome.Background), since it was last ready.
	background bool
}

// converged returns what the Service's load balancer was last converged to.
func (c *Controller) converged(st *serviceState) (spec, nodes uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return st.spec, st.nodes
}

// setConverged records what it was converged to (0, 0: to be looked at again)
// and the phase of the pass.
func (c *Controller) setConverged(st *serviceState, spec, nodes uint64, p phase) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.spec, st.nodes = spec, nodes
	st.setPhase(p)
}

func (c *Controller) phaseOf(st *serviceState) phase {
	c.mu.Lock()
	defer c.mu.Unlock()
	return st.phase
}

func (c *Controller) setPhase(st *serviceState, p phase) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.setPhase(p)
}

// New builds the controller. cloud must serve load balancers.
func New(cloud cloudprovider.Interface, kube clientset.Interface, services coreinformers.ServiceInformer, nodes coreinformers.NodeInformer, opts Options) (*Controller, error) {
	balancer, ok := cloud.LoadBalancer()
	if !ok {
		return nil, errors.New("the cloud provider does not serve load balancers")
	}
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.DriftPeriod == 0 {
		opts.DriftPeriod = DefaultDriftPeriod
	}
	registerMetrics()
	c := &Controller{
		balancer: balancer,
		cloud:    cloud.ProviderName(),
		kube:     kube,
		opts:     opts,
		ignored:  map[string]bool{},
		services: services.Lister(),
		nodes:    nodes.Lister(),
		synced:   []cache.InformerSynced{services.Informer().HasSynced, nodes.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](minRetryDelay, maxRetryDelay),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "service"}),
		nodeQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](minRetryDelay, maxRetryDelay),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "node"}),
		state:   map[string]*serviceState{},
		failing: map[string]bool{},
	}
	c.drifter, _ = cloud.(Drifter)
	if d, ok := balancer.(Drifter); ok {
		c.drifter = d
	}
	for _, a := range opts.IgnoredAnnotations {
		c.ignored[a] = true
	}
	// The cloud's repairs counted from 0, before the first: a query of
	// their rate has a series to read (a kind's own appears at its first).
	driftRepairs.WithLabelValues(c.cloud, "load-balancer")
	if _, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if svc, ok := obj.(*v1.Service); ok && (wantsLoadBalancer(svc) || needsCleanup(svc)) {
				c.enqueue(obj)
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1.Service)
			n, ok2 := cur.(*v1.Service)
			if ok1 && ok2 && (c.needsUpdate(o, n) || needsCleanup(n)) {
				c.enqueue(cur)
			}
		},
		// A deletion is seen first as the deletion timestamp (the finalizer holds
		// the Service); one deleted without it had no load balancer of ours.
		DeleteFunc: func(obj any) { c.forget(obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.nodesChanged() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1.Node)
			n, ok2 := cur.(*v1.Node)
			if !ok1 || !ok2 || !sameForLoadBalancers(o, n) {
				c.nodeSet.changed()
			}
			if ok1 && ok2 && (nodeChangeMatters(o, n) || membersMayMove(o, n)) {
				c.nodesChanged()
			}
		},
		DeleteFunc: func(any) { c.nodesChanged() },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

func (c *Controller) forget(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.state[key]; ok {
		st.setPhase(phaseNone)
		delete(c.state, key)
	}
}

// Run syncs Services until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	defer c.nodeQueue.ShutDown()
	logger := klog.FromContext(ctx)

	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartStructuredLogging(3)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kube.CoreV1().Events("")})
	defer b.Shutdown()
	c.recorder = b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "service-controller"})

	logger.Info("Starting service controller", "workers", c.opts.Workers, "driftPeriod", c.driftPeriod())
	defer logger.Info("Stopped service controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		return
	}
	for range c.opts.Workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.processNext(ctx) {
			}
		}, time.Second)
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for c.processNodes(ctx) {
		}
	}, time.Second)
	if c.drifter != nil && c.opts.DriftPeriod > 0 {
		go wait.JitterUntilWithContext(ctx, c.checkDrift, c.opts.DriftPeriod, 0.1, false)
	}
	go wait.UntilWithContext(ctx, func(context.Context) { c.probe() }, probeInterval)
	<-ctx.Done()
}

func (c *Controller) driftPeriod() string {
	if c.drifter == nil || c.opts.DriftPeriod < 0 {
		return "never"
	}
	return c.opts.DriftPeriod.String()
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	start := time.Now()
	// One pass is bounded: a cloud that pages without end or never answers
	// fails it (and it is retried with backoff), never holds a worker.
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	after, err := c.sync(sctx, key)
	cancel()
	klog.FromContext(ctx).V(4).Info("Finished syncing service", "service", key, "duration", time.Since(start))
	switch {
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Service sync failed; retrying with backoff", "service", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	case after > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, after)
	default:
		c.queue.Forget(key)
	}
	c.recovered(ctx, key)
	return true
}

// recovered is a pass of key that did not fail: when key was in backoff
// for an unreachable cloud, the others in backoff are looked at again now.
func (c *Controller) recovered(ctx context.Context, key string) {
	c.mu.Lock()
	if !c.failing[key] {
		// Only a pass that failed before and not now says the cloud answers
		// again: one that never needed it (answered from a shared listing)
		// says nothing.
		c.mu.Unlock()
		return
	}
	delete(c.failing, key)
	var again []string
	for k := range c.failing {
		again = append(again, k)
		delete(c.failing, k)
	}
	c.mu.Unlock()
	if len(again) == 0 {
		return
	}
	klog.FromContext(ctx).Info("The cloud answers again: Services in backoff are looked at now", "services", len(again))
	for _, k := range again {
		c.queue.Forget(k)
		c.queue.Add(k)
	}
}

// setFailing records whether key's last pass failed for a reason that may
// pass by itself (transient) or not.
func (c *Controller) setFailing(key string, transient bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if transient {
		c.failing[key] = true
	} else {
		delete(c.failing, key)
	}
}

// probe tries one Service in backoff for an unreachable cloud, the next
// after the one tried last, in key order.
func (c *Controller) probe() {
	c.mu.Lock()
	keys := make([]string, 0, len(c.failing))
	for k := range c.failing {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	next := ""
	for _, k := range keys {
		if k > c.probed {
			next = k
			break
		}
	}
	if next == "" && len(keys) > 0 {
		next = keys[0]
	}
	c.probed = next
	c.mu.Unlock()
	if next != "" {
		c.queue.Add(next)
	}
}

func (c *Controller) nodesChanged() {
	c.nodeSet.changed()
	c.nodeChanges.Add(1)
	c.nodeQueue.Add(nodesKey)
}

// processNodes looks at the set of eligible Nodes once and requeues every
// Service whose load balancer was converged with another set.
func (c *Controller) processNodes(ctx context.Context) bool {
	key, quit := c.nodeQueue.Get()
	if quit {
		return false
	}
	defer c.nodeQueue.Done(key)
	// With no load balancer converged there is nothing to compare: a
	// cluster's Nodes registering before its Services (every start) cost no
	// listing of them per Node event.
	c.mu.Lock()
	converged := false
	for _, st := range c.state {
		if st.spec != 0 {
			converged = true
			break
		}
	}
	c.mu.Unlock()
	if !converged {
		c.nodeQueue.Forget(key)
		return true
	}
	nodes, h, err := c.nodeSet.eligible(c.nodes)
	if err != nil {
		utilruntime.HandleError(err)
		c.nodeQueue.AddRateLimited(key)
		return true
	}
	c.nodeQueue.Forget(key)
	var stale []string
	c.mu.Lock()
	for k, st := range c.state {
		if st.spec != 0 && st.nodes != h.view {
			stale = append(stale, k)
		}
	}
	c.mu.Unlock()
	if len(stale) > 0 {
		klog.FromContext(ctx).V(2).Info("The set of Nodes changed; updating load balancers", "nodes", len(nodes), "services", len(stale))
	}
	for _, k := range stale {
		c.queue.Add(k)
	}
	return true
}

// checkDrift asks the cloud, once, which converged load balancers are no
// longer as they were left, and requeues their Services.
func (c *Controller) checkDrift(ctx context.Context) {
	logger := klog.FromContext(ctx)
	c.mu.Lock()
	var svcs []*v1.Service
	for k, st := range c.state {
		if st.spec == 0 {
			continue
		}
		ns, name, _ := cache.SplitMetaNamespaceKey(k)
		if svc, err := c.services.Services(ns).Get(name); err == nil && svc.UID == st.uid && svc.DeletionTimestamp == nil {
			svcs = append(svcs, svc)
		}
	}
	c.mu.Unlock()
	if len(svcs) == 0 {
		return
	}
	drifted, err := c.drifter.Drifted(ctx, svcs)
	if err != nil {
		logger.Error(err, "Cannot check the load balancers for drift; trying again next period")
		return
	}
	for _, svc := range svcs {
		why, ok := drifted[svc.UID]
		if !ok {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		c.mu.Lock()
		if st, ok := c.state[key]; ok && st.uid == svc.UID {
			st.spec, st.nodes = 0, 0
		}
		c.mu.Unlock()
		if what, repaired := lbcycle.QuietRepair(why); repaired {
			// A quiet walk (after the start, or checking what a walk
			// left) repaired what no drift pass had told of: told now.
			logger.Info("Load balancer repaired by a check", "service", klog.KObj(svc), "changed", what)
			c.recorder.Event(svc, v1.EventTypeNormal, ReasonRepairing, "Repaired load balancer: "+what)
			c.countRepair(what)
		}
		if lbcycle.IsReverifying(why) {
			// Not drift: walked once by this process, quietly.
			logger.V(2).Info("Verifying the load balancer once after the start", "service", klog.KObj(svc))
			c.queue.Add(key)
			continue
		}
		c.repairing(ctx, svc, why)
		c.queue.Add(key)
	}
}

// repairing tells that the Service's load balancer drifted and is being
// repaired: a Normal Event, its Progressing condition, the repair counted.
func (c *Controller) repairing(ctx context.Context, svc *v1.Service, why string) {
	logger := klog.FromContext(ctx)
	logger.Info("Load balancer drifted; repairing", "service", klog.KObj(svc), "why", why)
	msg := "Repairing load balancer: " + why
	c.recorder.Event(svc, v1.EventTypeNormal, ReasonRepairing, msg)
	copied := svc.DeepCopy()
	if err := c.patch(ctx, copied, func(s *v1.Service) { setConditions(s, progressingConditions(s, ReasonRepairing, msg, true)) }); err != nil {
		logger.V(2).Info("Cannot write the Service's conditions", "service", klog.KObj(svc), "err", err)
	}
	c.countRepair(why)
}

// countRepair counts a repair in the drift-repair metric, once for each kind
// of object its reason names.
func (c *Controller) countRepair(why string) {
	for _, kind := range lbcycle.DriftKinds(why) {
		driftRepairs.WithLabelValues(c.cloud, kind).Inc()
	}
}

// stateOf returns the Service's state, a new one when the Service is new or
// was recreated under the same name.
func (c *Controller) stateOf(key string, uid types.UID) *serviceState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.state[key]
	if !ok || st.uid != uid {
		if ok {
			st.setPhase(phaseNone)
		}
		st = &serviceState{uid: uid}
		c.state[key] = st
	}
	return st
}

func (c *Controller) dropState(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.state[key]; ok {
		st.setPhase(phaseNone)
		delete(c.state, key)
	}
}

// sync makes the Service's load balancer what it asks. It returns a delay when
// the cloud is still working (the Service is looked at again then), an error
// for a failed pass (retried with backoff).
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	start := time.Now()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		utilruntime.HandleError(err) // a key the handlers never make: not retried
		return 0, nil                //nolint:nilerr // retrying a malformed key cannot help
	}
	cached, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.dropState(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	// The cache's object is shared: every write goes to a copy.
	svc := cached.DeepCopy()
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("service", klog.KObj(svc)))
	st := c.stateOf(key, svc.UID)
	var after time.Duration
	var op string
	switch {
	case needsCleanup(svc):
		op = "delete"
		after, err = c.cleanup(ctx, key, svc, st)
	case wantsLoadBalancer(svc):
		op = "ensure"
		after, err = c.ensure(ctx, key, svc, st)
	default:
		// Not ours (another class, another type) and no finalizer of ours.
		c.dropState(key)
		return 0, nil
	}
	observeSync(op, after, err, time.Since(start))
	return after, err
}

// ensure creates or converges the load balancer.
func (c *Controller) ensure(ctx context.Context, key string, svc *v1.Service, st *serviceState) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	changes := c.nodeChanges.Load()
	nodes, nodeHash, err := c.nodeSet.eligible(c.nodes)
	if err != nil {
		return 0, err
	}
	specHash := c.specHash(svc)
	convergedSpec, convergedNodes := c.converged(st)
	if convergedSpec == specHash && convergedNodes == nodeHash.view {
		return 0, nil // converged, and nothing changed since
	}
	// The finalizer first: a Service must not go before what was built for it.
	if err := c.patch(ctx, svc, func(s *v1.Service) { addFinalizer(s) }); err != nil {
		return 0, fmt.Errorf("adding the load balancer cleanup finalizer: %w", err)
	}
	if len(nodes) == 0 && !st.noNodes {
		c.recorder.Event(svc, v1.EventTypeWarning, ReasonNoNodes,
			"No Node can back the load balancer: every Node is excluded (node.kubernetes.io/exclude-from-external-load-balancers), tainted "+ToBeDeletedTaint+", or being deleted")
	}
	st.noNodes = len(nodes) == 0

	membersOnly := convergedSpec == specHash // converged before, and only the Nodes changed
	var status *v1.LoadBalancerStatus
	if membersOnly {
		logger.V(2).Info("Updating load balancer members", "nodes", len(nodes))
		err = c.balancer.UpdateLoadBalancer(ctx, c.opts.ClusterName, svc, nodes)
		status = svc.Status.LoadBalancer.DeepCopy()
	} else {
		if st.progress == "" && !isReady(svc) {
			logger.V(2).Info("Ensuring load balancer", "nodes", len(nodes))
			c.recorder.Event(svc, v1.EventTypeNormal, ReasonEnsuring, "Ensuring load balancer")
		}
		confirmed := lbcycle.WithConfirm(ctx, func(ctx context.Context) error { return c.confirm(ctx, svc) })
		status, err = c.balancer.EnsureLoadBalancer(confirmed, c.opts.ClusterName, svc, nodes)
		if err == nil && status == nil {
			err = errors.New("the cloud provider returned no load balancer status")
		}
	}
	if errors.Is(err, cloudprovider.ImplementedElsewhere) {
		logger.V(4).Info("Load balancer implemented elsewhere")
		return 0, nil
	}
	if err != nil {
		return c.failed(ctx, svc, st, err, ReasonSyncFailed, "Error syncing load balancer")
	}
	st.progress, st.problem, st.failures, st.background = "", "", 0, false
	if sameStatus(&svc.Status.LoadBalancer, status) {
		status = svc.Status.LoadBalancer.DeepCopy() // as stored: nothing to write
	}
	wasReady := isReady(svc) && servicehelper.LoadBalancerStatusEqual(&svc.Status.LoadBalancer, status)
	msg := "Serving " + describe(status)
	if err := c.patch(ctx, svc, func(s *v1.Service) {
		s.Status.LoadBalancer = *status
		setConditions(s, readyConditions(s.Generation, msg))
	}); err != nil {
		// Not converged until the status is written: the next pass writes it.
		c.setConverged(st, 0, 0, phaseFailed)
		return 0, fmt.Errorf("writing the load balancer status: %w", err)
	}
	c.setConverged(st, specHash, nodeHash.view, phaseReady)
	c.mu.Lock()
	othersBack := st.ident != nodeHash.ident // not only their addresses or labels
	st.ident = nodeHash.ident
	c.mu.Unlock()
	if c.nodeChanges.Load() != changes {
		// The Node loop may have compared the Nodes with the record before
		// this pass wrote it: look again (a no-op when the set is the same).
		c.queue.Add(key)
	}
	switch {
	case !wasReady:
		logger.Info("Load balancer ready", "ingress", describe(status), "nodes", len(nodes))
		c.recorder.Event(svc, v1.EventTypeNormal, ReasonEnsured, "Ensured load balancer: "+msg)
	case membersOnly && othersBack:
		c.recorder.Eventf(svc, v1.EventTypeNormal, ReasonUpdatedNodes, "Updated load balancer: %d Node(s) back it", len(nodes))
	}
	return 0, nil
}

// confirm reads the Service from the apiserver, not from the cache, before
// a load balancer is built for it: the cache may be behind (a new leader's
// first pass, a Service deleted and made again under the same name), and
// what is built for a Service already gone is never deleted. It must exist
// with the same UID, not be being deleted, and hold the finalizer; else
// the pass stops and looks again (progress, not a failure), by which time
// the cache has caught up.
func (c *Controller) confirm(ctx context.Context, svc *v1.Service) error {
	live, err := c.kube.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && live.UID != svc.UID:
		return api.NewRetryError("the Service is gone: nothing is built for it", time.Second)
	case err != nil:
		return fmt.Errorf("reading the Service before building its load balancer: %w", err)
	case live.DeletionTimestamp != nil:
		return api.NewRetryError("the Service is being deleted: nothing is built for it", time.Second)
	case !servicehelper.HasLBFinalizer(live):
		return api.NewRetryError("the Service lost its load balancer finalizer: looking again", time.Second)
	}
	klog.FromContext(ctx).V(2).Info("Confirmed the Service before building its load balancer", "uid", live.UID, "resourceVersion", live.ResourceVersion)
	return nil
}

// failed publishes what err, which is not nil, says about a pass: progress
// (the cloud is working: look again after the delay returned), a Problem (a
// person must act) or a failure (both returned, to retry with backoff).
func (c *Controller) failed(ctx context.Context, svc *v1.Service, st *serviceState, err error, failReason, failPrefix string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	var conds []condition
	var after time.Duration
	var retry *api.RetryError
	switch {
	case errors.As(err, &retry) && outcome.IsBackground(err) && (st.background || c.phaseOf(st) == phaseReady):
		// Members following Nodes: the load balancer serves meanwhile, and
		// the Service shows nothing of it (its metrics do: progressing).
		logger.V(2).Info("Load balancer members being updated", "status", retry.Error())
		st.background = true
		c.setPhase(st, phaseProgressing)
		return jitter(retry.RetryAfter()), nil
	case errors.As(err, &retry):
		st.background = false
		msg := retry.Error()
		if msg != st.progress {
			logger.V(2).Info("Load balancer in progress", "status", msg)
			c.recorder.Event(svc, v1.EventTypeNormal, progressReason(svc), capitalise(msg))
			st.progress = msg
		}
		st.failures = 0
		c.setPhase(st, phaseProgressing)
		conds = progressingConditions(svc, progressReason(svc), capitalise(msg), false)
		after, err = jitter(retry.RetryAfter()), nil
	default:
		st.background = false
		st.failures++
		c.setPhase(st, phaseFailed)
		reason, msg := failReason, fmt.Sprintf("%s: %v", failPrefix, err)
		p, problem := outcome.AsProblem(err)
		c.setFailing(svc.Namespace+"/"+svc.Name, !problem)
		if problem {
			reason, msg = p.Reason, capitalise(p.Message)
			if msg != st.problem {
				c.recorder.Event(svc, v1.EventTypeWarning, reason, msg)
				st.problem = msg
			}
		} else if st.failures == warnAfter {
			// Once per run of failures, not per retry: an outage of the
			// cloud is one Warning per Service, however long it lasts.
			c.recorder.Eventf(svc, v1.EventTypeWarning, reason, "%s (%d attempts; retried with backoff, no further Warning until it succeeds)", msg, st.failures)
		}
		logger.Info("Load balancer sync failed", "reason", reason, "attempt", st.failures, "err", err)
		conds = failedConditions(svc, reason, msg)
	}
	if perr := c.patch(ctx, svc, func(s *v1.Service) { setConditions(s, conds) }); perr != nil {
		logger.V(2).Info("Cannot write the Service's conditions", "err", perr)
	}
	return after, err
}

func progressReason(svc *v1.Service) string {
	if needsCleanup(svc) {
		return ReasonDeleting
	}
	return ReasonEnsuring
}

// cleanup deletes the load balancer of a Service that is being deleted or no
// longer wants one, then lets the Service go (removes the finalizer and the
// load balancer status). The cloud is always asked, not only when it reports a
// load balancer: it also frees what a load balancer deleted behind our back
// left (an address).
func (c *Controller) cleanup(ctx context.Context, key string, svc *v1.Service, st *serviceState) (time.Duration, error) {
	if !st.deleting {
		klog.FromContext(ctx).V(2).Info("Deleting load balancer")
		c.recorder.Event(svc, v1.EventTypeNormal, ReasonDeleting, "Deleting load balancer")
		st.deleting = true
	}
	err := c.balancer.EnsureLoadBalancerDeleted(ctx, c.opts.ClusterName, svc)
	if errors.Is(err, cloudprovider.ImplementedElsewhere) {
		err = nil
	}
	if err != nil {
		return c.failed(ctx, svc, st, err, ReasonDeleteFailed, "Error deleting load balancer")
	}
	if err := c.patch(ctx, svc, func(s *v1.Service) {
		removeFinalizer(s)
		s.Status.LoadBalancer = v1.LoadBalancerStatus{}
		removeConditions(s)
	}); err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("removing the load balancer cleanup finalizer: %w", err)
	}
	klog.FromContext(ctx).Info("Deleted load balancer", "uid", svc.UID, "resourceVersion", svc.ResourceVersion)
	c.recorder.Event(svc, v1.EventTypeNormal, ReasonDeleted, "Deleted load balancer")
	c.dropState(key)
	return 0, nil
}

// specHash identifies what the Service asks of its load balancer: its UID,
// spec and annotations, less those the clouds write for their own records.
func (c *Controller) specHash(svc *v1.Service) uint64 {
	ann := make(map[string]string, len(svc.Annotations))
	for k, v := range svc.Annotations {
		if !c.ignored[k] {
			ann[k] = v
		}
	}
	data, _ := json.Marshal(struct {
		UID         types.UID
		Spec        v1.ServiceSpec
		Annotations map[string]string
	}{svc.UID, svc.Spec, ann})
	h := fnv.New64a()
	h.Write(data)
	if s := h.Sum64(); s != 0 {
		return s
	}
	return 1 // 0 means "not converged"
}

// wantsLoadBalancer: a Service of type LoadBalancer without a
// loadBalancerClass (a class names another implementation).
func wantsLoadBalancer(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil
}

// needsCleanup: the Service holds our finalizer and is being deleted or no
// longer wants a load balancer of ours.
func needsCleanup(svc *v1.Service) bool {
	return servicehelper.HasLBFinalizer(svc) && (svc.DeletionTimestamp != nil || !wantsLoadBalancer(svc))
}

// needsUpdate: a change that can change the load balancer. Status-only
// changes (ours included) are not, nor are the annotations clouds write for
// their own records.
func (c *Controller) needsUpdate(old, cur *v1.Service) bool {
	if !wantsLoadBalancer(old) && !wantsLoadBalancer(cur) {
		return false
	}
	return old.UID != cur.UID || c.specHash(old) != c.specHash(cur) ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil)
}

func describe(st *v1.LoadBalancerStatus) string {
	var out []string
	for _, in := range st.Ingress {
		switch {
		case in.Hostname != "":
			out = append(out, in.Hostname)
		case in.IP != "":
			out = append(out, in.IP)
		}
	}
	if len(out) == 0 {
		return "(no address)"
	}
	s := out[0]
	for _, o := range out[1:] {
		s += ", " + o
	}
	return s
}

func capitalise(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// jitter spreads the looks of many Services in progress at once, by at
// most maxJitter: the delay is when the cloud's work should be done, so a
// later look costs the user that time (5 % of a 2 s job was up to 100 ms a
// round, on CloudStack's two), and the shared listings make many looks at
// once cost one call anyway.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(min(d/20, maxJitter))+1))
}

const maxJitter = 10 * time.Millisecond
