package cloudstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// jobs are the asynchronous jobs each Service's steps started and whose end
// was not seen yet. A step never waits for one: the Service is looked at
// again when its jobs should be done (RetryAfter), and that look asks how
// they went; a failed job's error is that look's error (its work is then done
// again by the step that needs it).
//
// How they went is read from one listing of the account's recent jobs
// (listAsyncJobs), shared by every Service for a moment: 100 Services being
// built at once cost a few calls a pass, not one per job. A job the listing
// does not show (the server's clock far from ours) is asked about alone.
//
// How long jobs take is learnt from the listing (completed − created, both the
// server's clock): a Service is looked at again once its jobs should be done;
// a look before then makes no call, and a listing taken before then is not
// trusted to say they are not. The listing reaches back only a little before
// the oldest job under way (within listingWindow), on the server's clock (its
// offset from ours is learnt from the same dates).
type jobs struct {
	mu sync.Mutex
	m  map[types.UID][]job
	// took is how long a job takes on the server, a moving average of the
	// jobs seen done (initialTook until one is).
	took time.Duration
	// margin is added to when a job should be done (jobMargin).
	margin time.Duration

	// skew is the server's clock less ours, learnt from when it says it took
	// the jobs we started (skewKnown once one was seen).
	skew      time.Duration
	skewKnown bool

	fetch  cloudapi.Turn // one listing at a time
	listed map[string]csapi.JobState
	// fetched is when the listing was asked for (it shows every job done
	// before), listedAt when it was answered.
	fetched, listedAt time.Time
	since             time.Time // its startdate (the server's clock)
	// unlisted: the account may not list its jobs (a role without
	// listAsyncJobs): each job is asked about alone.
	unlisted bool
}

type job struct {
	id, what string
	started  time.Time
	// trailing: the next step needs nothing of it (an address's tags): a
	// look goes on while it is under way, and asks how it went once it is due.
	trailing bool
}

const (
	// jobTimeout is how long a job is waited for before it is forgotten (the
	// work it did is then found, or not, by reading the objects).
	jobTimeout = 30 * time.Minute
	// jobListingFresh: a listing answered this recently serves every
	// Service, which bounds the listings to one per jobListingFresh however
	// many Services wait. jobListingMaxAge: a listing asked for after a
	// Service's jobs were due serves it this long (a job it shows under way,
	// later than expected, is asked about anew).
	jobListingFresh  = 100 * time.Millisecond
	jobListingMaxAge = 500 * time.Millisecond
	// listingWindow is how far back the listing reaches: jobs started before
	// are asked about alone (a job that old is rare: they take seconds).
	listingWindow = 2 * time.Minute
	// clockSlack reaches back further, for a server whose clock is behind
	// ours, until how far is learnt; then skewSlack does (the server's dates
	// have whole seconds).
	clockSlack = 5 * time.Minute
	skewSlack  = 3 * time.Second
	// initialTook is how long a job is expected to take before one was seen.
	initialTook = pendingRetry
	// jobMargin is added to when a job should be done, for the listing to
	// show it: none, as a job is stamped when its call was answered, after
	// the server took it, and the listing reaches the server a transit
	// later still; so a look at the due time finds a job that took its
	// expected time done by a round trip (50 ms a round were 0.1 s of a
	// load balancer's 4.5).
	jobMargin = 0
	// Bounds of how soon a Service whose jobs are under way is looked at again.
	minJobRetry = 250 * time.Millisecond
	maxJobRetry = 5 * time.Second
)

func newJobs() *jobs {
	return &jobs{m: map[types.UID][]job{}, took: initialTook, margin: jobMargin, fetch: cloudapi.NewTurn()}
}

// add records a job the Service's step started ("" is none).
func (j *jobs) add(uid types.UID, id, what string) {
	if id == "" {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.m[uid] = append(j.m[uid], job{id: id, what: what, started: time.Now()})
}

// addTrailing records a job the Service's next step does not wait for (""
// is none): its failure is seen by a later look.
func (j *jobs) addTrailing(uid types.UID, id, what string) {
	if id == "" {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.m[uid] = append(j.m[uid], job{id: id, what: what, started: time.Now(), trailing: true})
}

// holding are the jobs the Service's next look waits for: all but the
// trailing ones, or these when they are all that is left.
func holding(list []job) []job {
	var held []job
	for _, jb := range list {
		if !jb.trailing {
			held = append(held, jb)
		}
	}
	if len(held) == 0 {
		return list
	}
	return held
}

// due is when the job should be done.
func (j *jobs) due(jb job) time.Time { return jb.started.Add(j.took + j.margin) }

// retryAfter is how soon the Service should be looked at again: when the
// last of its jobs should be done; for jobs already overdue, a quarter of
// their age (a slow server is not asked ever more often). 0: no jobs.
func (j *jobs) retryAfter(uid types.UID) time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	list := j.m[uid]
	if len(list) == 0 {
		return 0
	}
	now := time.Now()
	var d time.Duration
	for _, jb := range holding(list) {
		left := j.due(jb).Sub(now)
		if left <= 0 {
			left = now.Sub(jb.started) / 4
		}
		d = max(d, left)
	}
	return min(max(d, minJobRetry), maxJobRetry)
}

// check asks how the Service's jobs went: the first still under way (as
// progress), else the first failure; done and failed jobs are forgotten.
// results are the results of the jobs seen done now, by job id.
func (j *jobs) check(ctx context.Context, gw csapi.API, uid types.UID) (progress string, results map[string]json.RawMessage, err error) {
	j.mu.Lock()
	list := j.m[uid]
	// The jobs due: a listing asked for after they were due says how they
	// went. None due: under way, as far as anyone can tell without a call.
	now := time.Now()
	var need, newest time.Time
	waiting := ""
	for _, jb := range list {
		if d := j.due(jb); !now.Before(d) {
			need = later(need, d)
		} else if waiting == "" && !jb.trailing {
			waiting = jb.what
		}
		newest = later(newest, jb.started)
	}
	j.mu.Unlock()
	if len(list) == 0 {
		return "", nil, nil
	}
	if need.IsZero() {
		return waiting, nil, nil // a trailing job not due holds nothing
	}
	states, err := j.states(ctx, gw, need, newest)
	if err != nil {
		return "", nil, fmt.Errorf("asking how the load balancer's changes went: %w", err)
	}
	var keep []job
	var first error
	for _, jb := range list {
		st, listed, gone, serr := j.stateOf(ctx, gw, states, jb, now)
		switch {
		case gone:
			continue // the server no longer knows it (purged): forgotten
		case serr != nil:
			keep = append(keep, jb)
			if first == nil {
				first = fmt.Errorf("asking how %s went: %w", jb.what, serr)
			}
			continue
		}
		if !st.Pending {
			j.learn(st.Took)
		}
		if listed && !st.Created.IsZero() {
			j.learnSkew(st.Created.Sub(jb.started))
		}
		switch {
		case st.Pending && time.Since(jb.started) < jobTimeout:
			keep = append(keep, jb)
			if progress == "" && !jb.trailing {
				progress = jb.what
			}
		case st.Failure != nil:
			if first == nil {
				first = fmt.Errorf("%s failed: %w", jb.what, st.Failure)
			}
		case !st.Pending:
			if results == nil {
				results = map[string]json.RawMessage{}
			}
			results[jb.id] = st.Result
		}
	}
	j.mu.Lock()
	if len(keep) == 0 {
		delete(j.m, uid)
	} else {
		j.m[uid] = keep
	}
	j.mu.Unlock()
	if progress != "" {
		return progress, nil, nil
	}
	return "", results, first
}

// stateOf is how the job went: as the listing says; under way when it is
// not due yet and not listed (without a call); else asked alone. gone: the
// server no longer knows it (purged).
func (j *jobs) stateOf(ctx context.Context, gw csapi.API, states map[string]csapi.JobState, jb job, now time.Time) (st csapi.JobState, listed, gone bool, err error) {
	if st, ok := states[jb.id]; ok {
		return st, true, false, nil
	}
	if now.Before(j.due(jb)) {
		return csapi.JobState{Pending: true}, false, false, nil
	}
	st, err = gw.JobStatus(ctx, jb.id)
	if isNotFound(err) {
		return st, false, true, nil
	}
	return st, false, false, err
}

// learn takes a job's time on the server into the average (0: not known).
func (j *jobs) learn(took time.Duration) {
	if took < 0 || took > jobTimeout {
		return
	}
	j.mu.Lock()
	j.took = (4*j.took + took) / 5
	j.mu.Unlock()
}

// learnSkew takes one job's server date less when we started it. The date
// has whole seconds and the job was taken before our call returned, so the
// largest recent value is nearest: it is kept, and let down slowly.
func (j *jobs) learnSkew(d time.Duration) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case !j.skewKnown:
		j.skew, j.skewKnown = d, true
	case d > j.skew:
		j.skew = d
	default:
		j.skew -= (j.skew - d) / 16
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// states is the shared listing of jobs, taken anew unless it was asked for
// after need and answered less than jobListingMaxAge ago, or asked for after
// newest (it shows the jobs) and answered less than jobListingFresh ago. It
// reaches back to the oldest job under way of any Service, within
// listingWindow, on the server's clock.
func (j *jobs) states(ctx context.Context, gw csapi.API, need, newest time.Time) (map[string]csapi.JobState, error) {
	done, err := j.fetch.Take(ctx, "another listing of jobs")
	if err != nil {
		return nil, err
	}
	defer done()
	if j.unlisted {
		return nil, nil
	}
	age := time.Since(j.listedAt)
	if j.listed != nil && ((!j.fetched.Before(need) && age < jobListingMaxAge) || (j.fetched.After(newest) && age < jobListingFresh)) {
		return j.listed, nil
	}
	at := time.Now()
	j.mu.Lock()
	oldest := at
	for _, all := range j.m {
		for _, jb := range all {
			if jb.started.Before(oldest) {
				oldest = jb.started
			}
		}
	}
	oldest = later(oldest, at.Add(-listingWindow))
	since := oldest.Add(-clockSlack)
	if j.skewKnown {
		since = oldest.Add(j.skew - skewSlack)
	}
	j.mu.Unlock()
	listed, err := gw.JobsSince(ctx, since)
	if errors.Is(err, outcome.ErrRefused) {
		klog.Background().Info("The account may not list its jobs; asking about each job alone", "cloud", ProviderName, "err", err.Error())
		j.unlisted = true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	j.listed, j.fetched, j.listedAt, j.since = listed, at, time.Now(), since
	return listed, nil
}
