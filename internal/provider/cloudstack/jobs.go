package cloudstack

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// jobs are the asynchronous jobs each Service's steps started and whose end
// was not seen yet. A step never waits for one: the next look at the Service
// asks how they went, and a failed job's error is that look's error (its
// work is then done again by the step that needs it).
type jobs struct {
	mu sync.Mutex
	m  map[types.UID][]job
}

type job struct {
	id, what string
	started  time.Time
}

// jobTimeout is how long a job is waited for before it is forgotten (the
// work it did is then found, or not, by reading the objects).
const jobTimeout = 30 * time.Minute

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
	j.mu.Unlock()
	if len(list) == 0 {
		return "", nil
	}
	var keep []job
	var first error
	for _, jb := range list {
		pending, failure, err := gw.jobStatus(jb.id)
		switch {
		case isNotFound(err):
			// The server no longer knows the job (purged): forgotten.
		case err != nil:
			keep = append(keep, jb)
			if first == nil {
				first = fmt.Errorf("asking how %s went: %w", jb.what, err)
			}
		case pending && time.Since(jb.started) < jobTimeout:
			keep = append(keep, jb)
			if progress == "" {
				progress = jb.what
			}
		case failure != nil && first == nil:
			first = fmt.Errorf("%s failed: %w", jb.what, failure)
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
