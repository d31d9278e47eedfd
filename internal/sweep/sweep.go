// Package sweep finds, and on request removes, the cloud objects a cluster's
// overcast-ccm made for Services that no longer exist: what a force-removed
// finalizer, a bug or a crash window can leave. It reads every Service of the
// cluster from the apiserver (no cache: an object is removed on this answer),
// asks the cloud (provider.Sweeper) for what is left over, and removes the
// removable ones through each gone Service's own delete path, the one the
// service controller runs, so that a sweep removes exactly what a deletion
// would have. Nothing of another cluster, nor anything not made by an
// overcast-ccm, is ever removed.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/provider"
)

// Options of a sweep.
type Options struct {
	Cloud       cloudprovider.Interface
	Kube        kubernetes.Interface
	ClusterName string // --cluster-name of the CCM ("kubernetes" by default)
	// Delete removes the removable leftovers; else nothing is changed.
	Delete bool
	// Poll is the pause between delete steps while the cloud works (2 s).
	Poll time.Duration
	// Progress, when set, is told of each removal as it goes.
	Progress io.Writer
}

// Result of a sweep.
type Result struct {
	// Found is every leftover, removable or not.
	Found []provider.Leftover
	// Failed are the removals that failed, by Service.
	Failed map[string]error
	// Left is what a listing after the removals still finds (Delete only).
	Left []provider.Leftover
}

// Removable are the removable ones of ls.
func Removable(ls []provider.Leftover) []provider.Leftover {
	var out []provider.Leftover
	for _, l := range ls {
		if l.Removable {
			out = append(out, l)
		}
	}
	return out
}

// maxSteps bounds one Service's delete path (each step is a call or two, and
// a wait while the cloud works).
const maxSteps = 400

// Run sweeps once.
func Run(ctx context.Context, o Options) (Result, error) {
	var res Result
	sw, ok := o.Cloud.(provider.Sweeper)
	if !ok {
		return res, fmt.Errorf("cloud %s has nothing to sweep", o.Cloud.ProviderName())
	}
	if o.Kube == nil {
		return res, errors.New("a cluster is needed: its Services say what is still in use")
	}
	if o.ClusterName == "" {
		o.ClusterName = "kubernetes"
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if err := provider.Attach(ctx, o.Cloud, o.Kube, ""); err != nil {
		return res, err
	}
	live, err := services(ctx, o.Kube)
	if err != nil {
		return res, err
	}
	if res.Found, err = sw.Leftovers(ctx, o.ClusterName, live); err != nil {
		return res, fmt.Errorf("listing the cloud's objects: %w", err)
	}
	provider.SortLeftovers(res.Found)
	if !o.Delete || len(Removable(res.Found)) == 0 {
		return res, nil
	}
	lb, ok := o.Cloud.LoadBalancer()
	if !ok {
		return res, fmt.Errorf("cloud %s has no load balancers to delete with", o.Cloud.ProviderName())
	}
	// The Services again, just before removing: one created meanwhile under
	// the name of a gone one keeps what its name tags.
	if live, err = services(ctx, o.Kube); err != nil {
		return res, err
	}
	res.Failed = map[string]error{}
	for _, owner := range owners(res.Found) {
		l := provider.Leftover{Owner: owner}
		if (owner.UID != "" && live.HasUID(owner.UID)) || (owner.UID == "" && live.Has(owner.Namespace+"/"+owner.Name)) {
			res.Failed[l.Service()] = errors.New("a Service of this name or UID exists now: left for the service controller")
			continue
		}
		if err := remove(ctx, lb, o, owner); err != nil {
			res.Failed[l.Service()] = err
		}
	}
	if res.Left, err = sw.Leftovers(ctx, o.ClusterName, live); err != nil {
		return res, fmt.Errorf("listing the cloud's objects after removing: %w", err)
	}
	provider.SortLeftovers(res.Left)
	return res, nil
}

// services lists every Service of the cluster, page by page.
func services(ctx context.Context, kube kubernetes.Interface) (provider.Live, error) {
	var all []v1.Service
	opts := metav1.ListOptions{Limit: 500}
	for range 10000 {
		list, err := kube.CoreV1().Services("").List(ctx, opts)
		if err != nil {
			return provider.Live{}, fmt.Errorf("cannot list the cluster's Services (what is in use is not known, so nothing is a leftover): %w", err)
		}
		all = append(all, list.Items...)
		if opts.Continue = list.Continue; opts.Continue == "" {
			return provider.NewLive(all), nil
		}
	}
	return provider.Live{}, errors.New("listing the cluster's Services did not end")
}

// owners are the gone Services of the removable leftovers, once each, in
// order.
func owners(ls []provider.Leftover) []*v1.Service {
	var out []*v1.Service
	seen := map[*v1.Service]bool{}
	for _, l := range ls {
		if l.Removable && l.Owner != nil && !seen[l.Owner] {
			seen[l.Owner] = true
			out = append(out, l.Owner)
		}
	}
	return out
}

// remove runs a gone Service's delete path to its end.
func remove(ctx context.Context, lb cloudprovider.LoadBalancer, o Options, svc *v1.Service) error {
	who := provider.Leftover{Owner: svc}.Service()
	for range maxSteps {
		err := lb.EnsureLoadBalancerDeleted(ctx, o.ClusterName, svc)
		if err == nil {
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "removed what was left of %s\n", who)
			}
			return nil
		}
		var retry *api.RetryError
		if !errors.As(err, &retry) {
			return err
		}
		wait := min(max(retry.RetryAfter(), 250*time.Millisecond), o.Poll)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", err.Error(), ctx.Err())
		case <-time.After(wait):
		}
	}
	return fmt.Errorf("not removed after %d steps", maxSteps)
}

// Print writes the leftovers as a table and what the sweep did.
func Print(w io.Writer, res Result, deleted bool) error {
	if len(res.Found) == 0 {
		_, err := fmt.Fprintln(w, "No leftovers: every object this cluster made belongs to a Service that exists.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tID\tSERVICE\tREMOVABLE\tNOTE")
	for _, l := range res.Found {
		r := "yes"
		if !l.Removable {
			r = "no"
		}
		name := l.Name
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Kind, name, l.ID, l.Service(), r, l.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	removable := Removable(res.Found)
	fmt.Fprintf(w, "\n%d leftover(s): %s; %d removable.\n", len(res.Found), provider.CountByKind(res.Found), len(removable))
	if !deleted {
		if len(removable) > 0 {
			fmt.Fprintln(w, "Dry run: nothing was changed. --delete removes the removable ones.")
		}
		return nil
	}
	for who, err := range res.Failed {
		fmt.Fprintf(w, "not removed: %s: %v\n", who, err)
	}
	left := Removable(res.Left)
	if len(left) == 0 {
		fmt.Fprintf(w, "Removed %d; none is left.\n", len(removable))
		return nil
	}
	names := make([]string, len(left))
	for i, l := range left {
		names[i] = l.Kind + " " + l.ID
	}
	_, err := fmt.Fprintf(w, "%d are still there: %s\n", len(left), strings.Join(names, ", "))
	return err
}
