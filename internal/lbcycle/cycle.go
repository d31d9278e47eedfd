// Package lbcycle is the load-balancer cycle every Overcast cloud runs on, in
// one place:
//
//	spec → fingerprint → converged record → shared-listing fast path
//	     → one converge step → requeue while the cloud is busy
//
// A cloud supplies the steps (Cloud): what the Service asks and its
// fingerprint, its load balancer from a listing shared by all Services and from
// a direct read, create, replace, one converge step, publishing the address,
// and one delete step. The cycle decides which step runs, records what a load
// balancer was converged to (Records), answers an unchanged Service from the
// shared listing without a write, and turns the cloud's progress and errors into
// what the service controller understands: a RetryError while the cloud works
// (progress, not failure), a outcome.Problem for what the cloud refused.
package lbcycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/outcome"
)

type confirmKey struct{}

// WithConfirm returns ctx with confirm, which the cycle calls before it
// creates or replaces a Service's load balancer: the service controller
// confirms there, by a read of the apiserver rather than of its cache, that
// the Service still exists, is not being deleted and holds its finalizer.
// An error stops the creation and is returned as the pass's.
func WithConfirm(ctx context.Context, confirm func(context.Context) error) context.Context {
	return context.WithValue(ctx, confirmKey{}, confirm)
}

func confirm(ctx context.Context) error {
	if f, ok := ctx.Value(confirmKey{}).(func(context.Context) error); ok {
		return f(ctx)
	}
	return nil
}

// State is a load balancer's state as the cycle needs it.
type State int

const (
	// Ready is serving, and the cloud takes changes (Octavia's ACTIVE).
	Ready State = iota
	// Busy is being worked on by the cloud, which takes no change (PENDING_*).
	Busy
	// Failed is broken for good (ERROR); the Service's own is replaced.
	Failed
)

// LB is a load balancer as the cycle sees it; Obj is the cloud's own object.
type LB[L any] struct {
	ID string
	// Status is the cloud's word for its state ("PENDING_UPDATE"), for messages.
	Status string
	State  State
	// Shared: not the Service's own (it was named to share): never replaced,
	// deleted or recorded, and always converged by a walk.
	Shared bool
	Obj    L
}

// Fingerprint is a short hash of what a Service asks of its load balancer, in
// two parts: a change of Nodes alone changes only Members.
type Fingerprint struct {
	Config, Members string
}

func (f Fingerprint) String() string { return f.Config + "." + f.Members }

// Record is what is remembered of a Service's load balancer once converged:
// which one, to what, and the address published.
type Record struct {
	ID string
	Fingerprint
	Address string
}

// Records keeps each Service's Record where the cloud keeps it: on the Service
// (annotations, which survive restarts and leader changes) or in memory for a
// cloud that lives in the process.
type Records interface {
	// Get is the Service's Record; false when it has none.
	Get(svc *v1.Service) (Record, bool)
	// Put records r; a Record with no ID records the address alone.
	Put(ctx context.Context, svc *v1.Service, r Record)
}

// GoneRecords are Records that keep something apart from the Service, which
// they drop when its load balancer is deleted.
type GoneRecords interface {
	Gone(ctx context.Context, svc *v1.Service)
}

// Cloud is what a cloud supplies. Each step makes at most one change; a step
// that made one, or found the cloud at work, says what is under way in a
// sentence ("load balancer 1f2e is being created") and the Service is looked at
// again. Errors come translated by the cloud's gateway (outcome.ErrBusy,
// outcome.ErrRefused, …) or as a outcome.Problem.
type Cloud[S, L any] interface {
	// Spec is what the Service asks with the Nodes given, checked, and its
	// fingerprint. A Service the cloud cannot serve as it asks is a Problem.
	Spec(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (S, Fingerprint, error)
	// Listed is the Service's load balancer from the listing of the cluster's
	// load balancers shared by all Services (it may be a little old).
	Listed(ctx context.Context, svc *v1.Service) (LB[L], bool, error)
	// Find is the Service's load balancer, read now.
	Find(ctx context.Context, svc *v1.Service) (LB[L], bool, error)
	// Create checks everything that could refuse the Service, and only then
	// creates its load balancer.
	Create(ctx context.Context, svc *v1.Service, spec S) (string, error)
	// Replace deletes the Service's Failed load balancer to create it anew;
	// its public address is kept for the new one.
	Replace(ctx context.Context, svc *v1.Service, lb LB[L]) (string, error)
	// Converge makes at most one change of a Ready load balancer toward spec;
	// "" when it is as spec asks.
	Converge(ctx context.Context, svc *v1.Service, spec S, lb LB[L]) (string, error)
	// Publish makes a converged load balancer reachable at its public address
	// (and gives back what it no longer needs), and says the status and the
	// address.
	Publish(ctx context.Context, svc *v1.Service, spec S, lb LB[L]) (*v1.LoadBalancerStatus, string, error)
	// Published is the status of a load balancer converged to spec as rec
	// says, from shared listings only; false when anything is not as recorded.
	Published(ctx context.Context, svc *v1.Service, spec S, rec Record, lb LB[L]) (*v1.LoadBalancerStatus, bool, error)
	// Delete makes one step of deleting the Service's load balancer and what
	// was created for it; "" when nothing of it is left.
	Delete(ctx context.Context, clusterName string, svc *v1.Service) (string, error)
}

// MemberUpdater is a cloud that can change a converged load balancer's members
// alone, cheaper than a walk, when only the Nodes changed. ok false: the path
// does not apply (anything in doubt), and the full cycle runs.
type MemberUpdater[S, L any] interface {
	UpdateMembers(ctx context.Context, svc *v1.Service, spec S, lb LB[L]) (progress string, ok bool, err error)
}

// MembersLister is a MemberUpdater whose members path may take its load
// balancer from an older shared listing than Listed allows: where a listing
// is long (OCI lists every load balancer whole, every backend in it: tens
// of seconds at 2,000 × 5,000), waiting for a fresh one on each Node change
// holds every worker; the update sends the members whole, so an older
// listing costs at most a write.
type MembersLister[L any] interface {
	ListedForMembers(ctx context.Context, svc *v1.Service) (LB[L], bool, error)
}

// DriftChecker is a cloud that finds more drift in a Ready load balancer of the
// shared listing than the cycle does (which finds it gone, Failed or another):
// a missing listener, an address moved. It reads shared listings only.
type DriftChecker[L any] interface {
	Drift(ctx context.Context, svc *v1.Service, rec Record, lb LB[L]) (string, error)
}

// Relister is a cloud whose shared listing can be made fresh for the next
// Listed: the drift check wants it as it is now.
type Relister interface {
	Relist()
}

// Pacer is a cloud that knows when the work it started for a Service should be
// done (its asynchronous jobs, from how long such jobs take): the Service is
// looked at again then, not after the fixed Options.Retry. 0 is no opinion.
type Pacer interface {
	RetryAfter(svc *v1.Service) time.Duration
}

// Options of a Cycle.
type Options struct {
	// Retry is how soon a Service is looked at again while the cloud works.
	Retry time.Duration
	// FullCheck is how often a converged load balancer is walked anyway (0:
	// never), which repairs what drift detection cannot see.
	FullCheck time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Cycle runs a cloud's load balancers.
type Cycle[S, L any] struct {
	cloud   Cloud[S, L]
	records Records
	opts    Options

	mu      sync.Mutex
	checked map[string]time.Time // when each load balancer was last walked
	// drifted are the Services the drift check found drifted: their next
	// pass walks the load balancer, not the fast path, which only sees what
	// the shared listing shows.
	drifted map[types.UID]bool
	// inventory is, by load balancer, the objects an Inventory cloud's
	// listings showed of it after its last walk; verified, the load
	// balancers walked since the last drift pass (inventory.go).
	inventory map[string][]string
	verified  map[string]int
	// checking is, by load balancer, what a drift pass after its walk saw
	// while a quiet walk checks it (inventory.go).
	checking map[string]postWalk
}

// New returns the cycle of cloud.
func New[S, L any](cloud Cloud[S, L], records Records, opts Options) *Cycle[S, L] {
	if opts.Retry <= 0 {
		opts.Retry = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cycle[S, L]{cloud: cloud, records: records, opts: opts, checked: map[string]time.Time{}, drifted: map[types.UID]bool{},
		inventory: map[string][]string{}, verified: map[string]int{}, checking: map[string]postWalk{}}
}

// RecordOf is the Service's Record, as the cycle keeps it (`overcast
// explain` reads it; nothing is written).
func (c *Cycle[S, L]) RecordOf(svc *v1.Service) (Record, bool) { return c.records.Get(svc) }

// EnsureLoadBalancer converges the Service's load balancer by one step, or
// answers an unchanged Service from the shared listing with no call of its own.
// While the cloud works it returns a RetryError. A cloud embeds the Cycle, and
// this is its cloudprovider.LoadBalancer method.
func (c *Cycle[S, L]) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	spec, fp, err := c.cloud.Spec(ctx, clusterName, svc, nodes)
	if err != nil {
		return nil, err
	}
	return c.ensure(ctx, svc, spec, fp)
}

// UpdateLoadBalancer is EnsureLoadBalancer for a change of Nodes: when only the
// members can differ, a MemberUpdater cloud updates them alone.
func (c *Cycle[S, L]) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) error {
	spec, fp, err := c.cloud.Spec(ctx, clusterName, svc, nodes)
	if err != nil {
		return err
	}
	if mu, ok := c.cloud.(MemberUpdater[S, L]); ok {
		if done, err := c.updateMembers(ctx, mu, svc, spec, fp); done {
			return err
		}
	}
	_, err = c.ensure(ctx, svc, spec, fp)
	return err
}

// updateMembers updates the members alone when the record says only they
// differ; false when the whole cycle must run instead. Its progress is
// background work: the load balancer serves meanwhile.
func (c *Cycle[S, L]) updateMembers(ctx context.Context, mu MemberUpdater[S, L], svc *v1.Service, spec S, fp Fingerprint) (bool, error) {
	rec, has := c.records.Get(svc)
	if !has || rec.Config != fp.Config || rec.Members == fp.Members {
		return false, nil
	}
	listed := c.cloud.Listed
	if ml, ok := c.cloud.(MembersLister[L]); ok {
		listed = ml.ListedForMembers
	}
	lb, found, err := listed(ctx, svc)
	if err != nil {
		return false, nil //nolint:nilerr // the whole cycle reads again and reports it
	}
	if !found || lb.Shared || lb.ID != rec.ID || c.fullCheckDue(lb.ID) {
		return false, nil
	}
	switch lb.State {
	case Busy: // with the last members change: the cloud takes one at a time
		return true, outcome.Background(c.progress(svc, "the members of load balancer "+lb.ID+" are being updated"))
	case Failed:
		return false, nil
	}
	progress, ok, err := mu.UpdateMembers(ctx, svc, spec, lb)
	if ok {
		c.adopt(lb.ID, adoptMembers) // its new members are ours, not drift
	}
	switch {
	case err != nil:
		return true, c.outcome(err)
	case !ok:
		return false, nil
	case progress != "":
		return true, outcome.Background(c.progress(svc, progress))
	}
	rec.Fingerprint = fp
	c.records.Put(ctx, svc, rec)
	return true, nil
}

func (c *Cycle[S, L]) ensure(ctx context.Context, svc *v1.Service, spec S, fp Fingerprint) (*v1.LoadBalancerStatus, error) {
	rec, hasRec := c.records.Get(svc)
	c.mu.Lock()
	walk := c.drifted[svc.UID]
	c.mu.Unlock()
	if hasRec && rec.Fingerprint == fp && !walk {
		// The fast path: as converged, by the shared listings.
		if lb, ok := c.listedAsRecorded(ctx, svc, rec); ok {
			if st, ok, err := c.cloud.Published(ctx, svc, spec, rec, lb); err == nil && ok {
				return st, nil
			}
		}
	}
	lb, found, err := c.cloud.Find(ctx, svc)
	if err != nil {
		return nil, c.outcome(err)
	}
	built := false
	if !found || (lb.State == Failed && !lb.Shared) {
		// What the controller saw of the Service may be older than the
		// Service: never build for one that is gone or going.
		if err := confirm(ctx); err != nil {
			return nil, err
		}
		var progress string
		if found {
			progress, err = c.cloud.Replace(ctx, svc, lb)
		} else {
			progress, err = c.cloud.Create(ctx, svc, spec)
		}
		if err != nil || progress != "" {
			return nil, c.step(svc, progress, err)
		}
		// Built at once (a cloud in the process): on to publishing it.
		if lb, found, err = c.cloud.Find(ctx, svc); err != nil || !found {
			return nil, c.step(svc, "the load balancer is being created", err)
		}
		built = true // as spec asks: no walk
	}
	if lb.State == Busy {
		return nil, c.progress(svc, fmt.Sprintf("load balancer %s is %s", lb.ID, lb.Status))
	}
	if !built && (walk || lb.Shared || !hasRec || rec.ID != lb.ID || rec.Fingerprint != fp || c.fullCheckDue(lb.ID)) {
		progress, err := c.cloud.Converge(ctx, svc, spec, lb)
		if !lb.Shared {
			// Its changes, under way or done, are the cycle's: not drift.
			c.walkedInventory(lb.ID)
		}
		if err != nil || progress != "" {
			return nil, c.step(svc, progress, err)
		}
		c.walked(lb.ID)
	}
	if built {
		c.walkedInventory(lb.ID)
	}
	if walk {
		c.mu.Lock()
		delete(c.drifted, svc.UID)
		c.mu.Unlock()
	}
	st, addr, err := c.cloud.Publish(ctx, svc, spec, lb)
	if err != nil {
		return nil, c.outcome(err)
	}
	r := Record{Fingerprint: fp, Address: addr}
	if !lb.Shared {
		r.ID = lb.ID
	}
	c.records.Put(ctx, svc, r)
	return st, nil
}

// EnsureLoadBalancerDeleted makes one step of deleting the Service's load
// balancer: nil when nothing of it is left, a RetryError while there is.
func (c *Cycle[S, L]) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) error {
	progress, err := c.cloud.Delete(ctx, clusterName, svc)
	if err != nil || progress != "" {
		return c.step(svc, progress, err)
	}
	rec, ok := c.records.Get(svc)
	c.mu.Lock()
	delete(c.drifted, svc.UID)
	if ok {
		delete(c.checked, rec.ID)
		c.forgetInventory(rec.ID)
	}
	c.mu.Unlock()
	if g, ok := c.records.(GoneRecords); ok {
		g.Gone(ctx, svc)
	}
	return nil
}

// Drifted finds, from one fresh shared listing, the Services whose load
// balancer is no longer as it was converged: gone, Failed, another one, or
// (DriftChecker) drifted in a way the cloud sees. A load balancer the cloud is
// working on is not drift; Services with no record are not checked.
func (c *Cycle[S, L]) Drifted(ctx context.Context, svcs []*v1.Service) (map[types.UID]string, error) {
	if r, ok := c.cloud.(Relister); ok {
		r.Relist()
	}
	checker, _ := c.cloud.(DriftChecker[L])
	inv, _ := c.cloud.(Inventory[L])
	out := map[types.UID]string{}
	reverify := 0
	for _, svc := range svcs {
		rec, ok := c.records.Get(svc)
		if !ok || rec.ID == "" {
			continue
		}
		lb, found, err := c.cloud.Listed(ctx, svc)
		if err != nil {
			return nil, err
		}
		why := ""
		switch {
		case !found:
			why = fmt.Sprintf("load balancer %s is gone", rec.ID)
		case lb.Shared || lb.State == Busy:
		case lb.State == Failed:
			why = fmt.Sprintf("load balancer %s is %s", lb.ID, lb.Status)
		case lb.ID != rec.ID:
			why = fmt.Sprintf("load balancer %s is not %s, which it was converged to", lb.ID, rec.ID)
			c.mu.Lock()
			c.forgetInventory(rec.ID)
			c.mu.Unlock()
		case checker != nil:
			if why, err = checker.Drift(ctx, svc, rec, lb); err != nil {
				return nil, err
			}
			if why != "" && inv != nil && lb.State == Ready {
				if why, err = c.withChange(ctx, inv, svc, lb, why); err != nil {
					return nil, err
				}
			}
		}
		if why == "" && found && inv != nil && !lb.Shared && lb.State == Ready && lb.ID == rec.ID {
			objects, err := objectsOf(ctx, inv, svc, lb)
			if errors.Is(err, ErrLater) {
				continue // checked on a later pass
			}
			if err != nil {
				return nil, err
			}
			why = c.inventoryDrift(lb.ID, objects)
			if IsReverifying(why) {
				switch {
				case reverify >= ReverifyPerPass:
					why = "" // the next pass's
					c.postpone(lb.ID)
				case !IsPostWalkCheck(why):
					c.quietWalk(lb.ID, objects)
				}
				reverify++
			}
		}
		if why != "" {
			out[svc.UID] = why
		}
	}
	c.mu.Lock()
	for uid := range out {
		c.drifted[uid] = true
	}
	c.mu.Unlock()
	if l, ok := c.cloud.(DriftListener); ok {
		for _, svc := range svcs {
			if _, ok := out[svc.UID]; ok {
				l.Drifting(svc)
			}
		}
	}
	return out, nil
}

// listedAsRecorded is the Service's load balancer from the shared listing when
// it is the recorded one, its own, Ready, and not due for its full check.
func (c *Cycle[S, L]) listedAsRecorded(ctx context.Context, svc *v1.Service, rec Record) (LB[L], bool) {
	if rec.ID == "" {
		return LB[L]{}, false
	}
	lb, found, err := c.cloud.Listed(ctx, svc)
	if err != nil || !found || lb.Shared || lb.ID != rec.ID || lb.State != Ready || c.fullCheckDue(lb.ID) {
		return LB[L]{}, false
	}
	return lb, true
}

// fullCheckDue says whether a load balancer is due its walk. One not seen
// before starts its interval now.
func (c *Cycle[S, L]) fullCheckDue(id string) bool {
	if c.opts.FullCheck <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.checked[id]
	if !ok {
		c.checked[id] = c.opts.Now()
		return false
	}
	return c.opts.Now().Sub(last) > c.opts.FullCheck
}

func (c *Cycle[S, L]) walked(id string) {
	if c.opts.FullCheck <= 0 {
		return
	}
	c.mu.Lock()
	c.checked[id] = c.opts.Now()
	c.mu.Unlock()
}

// step is the outcome of a step: its error, else its progress, else nil.
func (c *Cycle[S, L]) step(svc *v1.Service, progress string, err error) error {
	if err != nil {
		return c.outcome(err)
	}
	if progress != "" {
		return c.progress(svc, progress)
	}
	return nil
}

// progress is the RetryError of work under way: the Service is looked at
// again when a Pacer cloud expects its work done, else after Options.Retry.
func (c *Cycle[S, L]) progress(svc *v1.Service, what string) error {
	after := c.opts.Retry
	if p, ok := c.cloud.(Pacer); ok {
		if d := p.RetryAfter(svc); d > 0 {
			after = d
		}
	}
	return api.NewRetryError(what, after)
}

// outcome is what the service controller is told of a step's error: the cloud
// busy is progress (a RetryError), a refusal a Problem; a Problem, a
// RetryError and any other error pass as they are.
func (c *Cycle[S, L]) outcome(err error) error {
	if _, ok := outcome.AsProblem(err); ok {
		return err
	}
	if errors.As(err, new(*api.RetryError)) {
		return err
	}
	if errors.Is(err, outcome.ErrBusy) {
		return api.NewRetryError("the cloud is busy: "+err.Error(), c.opts.Retry)
	}
	return outcome.RefusedProblem(outcome.ReasonCloudRefused, err)
}
