package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// When the cloud cannot answer whether Nodes' machines exist (a removed
// policy, credentials of another compartment, a wrong URL, an outage), every
// NotReady Node's lookup fails alike, every 5 s. The node lifecycle
// controller would log each failure, for each Node, and act on none; what a
// person needs is one Warning naming the likely cause. So a failed lookup of
// the lifecycle controller is doubt, answered "exists, not shut down" (the
// controller then deletes and taints nothing, as on an error), and reported
// here: one log line a minute for each lookup and cause, and one Warning an
// hour per cause, whatever the number of Nodes; a line when the lookups
// answer again.

// ReasonLookupsFailing is the Warning of lookups that fail.
const ReasonLookupsFailing = "CloudLookupsFailing"

const (
	doubtLogEvery  = time.Minute
	doubtWarnEvery = time.Hour
)

// lookupDoubt is one cloud's record of failing lookups.
type lookupDoubt struct {
	now func() time.Time

	mu      sync.Mutex
	failing map[string]time.Time // the Nodes whose last lookup failed, and when
	logged  map[string]time.Time // by lookup and cause: the last log line
	warned  map[string]time.Time // by cause: the last Warning
}

func newLookupDoubt() *lookupDoubt {
	return &lookupDoubt{now: time.Now, failing: map[string]time.Time{}, logged: map[string]time.Time{}, warned: map[string]time.Time{}}
}

// failed reports the lookup of node's machine that failed with err: logged
// and warned of as the rate above allows.
func (d *lookupDoubt) failed(ctx context.Context, b *Base, node *v1.Node, what string, err error) {
	cause := likelyCause(err)
	d.mu.Lock()
	now := d.now()
	d.failing[node.Name] = now
	for name, at := range d.failing {
		if now.Sub(at) > doubtWarnEvery {
			delete(d.failing, name) // a Node gone, or asked no more
		}
	}
	n := len(d.failing)
	log := now.Sub(d.logged[what+"/"+cause]) >= doubtLogEvery
	if log {
		d.logged[what+"/"+cause] = now
	}
	warn := now.Sub(d.warned[cause]) >= doubtWarnEvery
	if warn {
		d.warned[cause] = now
	}
	d.mu.Unlock()
	if log {
		klog.FromContext(ctx).Info("Cannot tell whether Nodes' machines exist; no Node is deleted or tainted meanwhile",
			"what", what, "nodesFailing", n, "likelyCause", cause, "node", klog.KObj(node), "err", err.Error())
	}
	if warn {
		b.Events.Eventf(node, v1.EventTypeWarning, ReasonLookupsFailing,
			"The cloud does not answer whether Nodes' machines exist (%d Node(s) so far): %s. No Node is deleted or tainted until it does. (%v)", n, cause, err)
	}
}

// answered records that node's lookup answered; the last of the failing
// Nodes to answer ends the doubt with a log line.
func (d *lookupDoubt) answered(ctx context.Context, node *v1.Node) {
	d.mu.Lock()
	_, was := d.failing[node.Name]
	delete(d.failing, node.Name)
	ended := was && len(d.failing) == 0
	if ended {
		clear(d.warned)
		clear(d.logged)
	}
	d.mu.Unlock()
	if ended {
		klog.FromContext(ctx).Info("The cloud answers the Nodes' lookups again", "node", klog.KObj(node))
	}
}

// likelyCause names what most likely makes the cloud answer err, for a
// person to act on.
func likelyCause(err error) string {
	if e, ok := cloudapi.AsNotAPI(err); ok {
		return fmt.Sprintf("something that is not the %s API answers at its URL: check %s", e.Cloud, e.Endpoint)
	}
	switch {
	case errors.Is(err, outcome.ErrAuth):
		return "the cloud refuses the credentials (expired or revoked, or of another user?)"
	case errors.Is(err, outcome.ErrNotFound):
		return "the cloud says it has no such machines: a removed policy (OCI answers 404 without one), or credentials of another project or compartment?"
	case errors.Is(err, outcome.ErrRefused):
		return "the cloud refuses the lookups: a policy or role that does not allow reading the machines?"
	case errors.Is(err, outcome.ErrThrottled):
		return "the cloud throttles the CCM"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "the cloud's API does not answer in time"
	}
	return "the cloud's API fails or cannot be reached"
}
