package cloudstack

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/provider"
)

// jobs are the asynchronous jobs each Service's steps started and whose end
// was not seen yet. A step never waits for one: the next look at the Service
// asks how they went, and a failed job's error is that look's error (its
// work is then done again by the step that needs it).
//
// How they went is read from one listing of the account's recent jobs
// (listAsyncJobs), shared by every Service for a moment: 100 Services being
// built at once cost one call a pass, not one per job. A job the listing
// does not show (the server's clock far from ours) is asked about alone.
type jobs struct {
	mu sync.Mutex
	m  map[types.UID][]job

	fetch   sync.Mutex // one listing at a time
	listed  map[string]jobState
	fetched time.Time
	// unlisted: the account may not list its jobs (a role without
	// listAsyncJobs): each job is asked about alone.
	unlisted bool
}

type job struct {
	id, what string
	started  time.Time
}

const (
	// jobTimeout is how long a job is waited for before it is forgotten (the
	// work it did is then found, or not, by reading the objects).
	jobTimeout = 30 * time.Minute
	// jobListingMaxAge is how long one listing of jobs serves every Service.
	jobListingMaxAge = 500 * time.Millisecond
	// clockSlack reaches back before the oldest job under way, for a server
	// whose clock is behind ours.
	clockSlack = 5 * time.Minute
)

func newJobs() *jobs { return &jobs{m: map[types.UID][]job{}} }

// add records a job the Service's step started ("" is none).
func (j *jobs) add(uid types.UID, id, what string) {
	if id == "" {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.m[uid] = append(j.m[uid], job{id: id, what: what, started: time.Now()})
}

// check asks how the Service's jobs went: the first still under way (as
// progress), else the first failure; done and failed jobs are forgotten.
func (j *jobs) check(gw *gateway, uid types.UID) (progress string, err error) {
	j.mu.Lock()
	list := j.m[uid]
	// The listing reaches back to the oldest job of any Service, so that one
	// serves them all; it must be newer than this Service's own jobs.
	var oldest, newest time.Time
	for _, all := range j.m {
		for _, jb := range all {
			if oldest.IsZero() || jb.started.Before(oldest) {
				oldest = jb.started
			}
		}
	}
	for _, jb := range list {
		if jb.started.After(newest) {
			newest = jb.started
		}
	}
	j.mu.Unlock()
	if len(list) == 0 {
		return "", nil
	}
	states, err := j.states(gw, oldest, newest)
	if err != nil {
		return "", fmt.Errorf("asking how the load balancer's changes went: %w", err)
	}
	var keep []job
	var first error
	for _, jb := range list {
		st, listed := states[jb.id]
		if !listed {
			pending, failure, err := gw.jobStatus(jb.id)
			switch {
			case isNotFound(err):
				continue // the server no longer knows it (purged): forgotten
			case err != nil:
				keep = append(keep, jb)
				if first == nil {
					first = fmt.Errorf("asking how %s went: %w", jb.what, err)
				}
				continue
			}
			st = jobState{pending: pending, failure: failure}
		}
		switch {
		case st.pending && time.Since(jb.started) < jobTimeout:
			keep = append(keep, jb)
			if progress == "" {
				progress = jb.what
			}
		case st.failure != nil && first == nil:
			first = fmt.Errorf("%s failed: %w", jb.what, st.failure)
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
		return progress, nil
	}
	return "", first
}

// states is the shared listing of jobs, taken anew when it is older than
// jobListingMaxAge or than the newest job under way.
func (j *jobs) states(gw *gateway, oldest, newest time.Time) (map[string]jobState, error) {
	j.fetch.Lock()
	defer j.fetch.Unlock()
	if j.unlisted {
		return nil, nil
	}
	if j.listed != nil && j.fetched.After(newest) && time.Since(j.fetched) < jobListingMaxAge {
		return j.listed, nil
	}
	at := time.Now()
	listed, err := gw.jobsSince(oldest.Add(-clockSlack))
	if errors.Is(err, provider.ErrRefused) {
		klog.Background().Info("The account may not list its jobs; asking about each job alone", "cloud", ProviderName, "err", err.Error())
		j.unlisted = true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	j.listed, j.fetched = listed, at
	return listed, nil
}
