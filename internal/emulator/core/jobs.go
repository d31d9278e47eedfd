package core

import (
	"fmt"
	"sync"
	"time"
)

// JobStatus is an asynchronous job's state, numbered as CloudStack's
// queryAsyncJobResult numbers jobstatus (0 pending, 1 succeeded, 2 failed).
type JobStatus int

const (
	// JobPending is a job not done yet.
	JobPending JobStatus = iota
	// JobSucceeded is a job done with a result.
	JobSucceeded
	// JobFailed is a job done with an error.
	JobFailed
)

// Job is an asynchronous operation: it takes effect when it is due, and from
// then on its result (or its error) is what a poll sees.
type Job struct {
	ID     string
	Status JobStatus
	Result any
	Err    error
	Due    time.Time
	run    func() (any, error)
}

// Jobs runs asynchronous operations that finish after a delay. The emulator
// calls Settle with its state lock held at the start of every request, so a
// job's effect is seen by the first request after it is due, as a real
// cloud's would be by then.
type Jobs struct {
	mu   sync.Mutex
	seq  int
	jobs map[string]*Job
	fifo []*Job // pending, in order of Due
}

// NewJobs returns an empty set of jobs.
func NewJobs() *Jobs { return &Jobs{jobs: map[string]*Job{}} }

// Start records a job that runs run once it is due at now+delay, and returns
// its id (the prefix and a sequence number when id is "").
func (j *Jobs) Start(id string, now time.Time, delay time.Duration, run func() (any, error)) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	if id == "" {
		id = fmt.Sprintf("job-%d", j.seq)
	}
	job := &Job{ID: id, Status: JobPending, Due: now.Add(delay), run: run}
	j.jobs[id] = job
	// Keep fifo sorted by Due; delays are mostly equal, so this is an append.
	i := len(j.fifo)
	for i > 0 && j.fifo[i-1].Due.After(job.Due) {
		i--
	}
	j.fifo = append(j.fifo, nil)
	copy(j.fifo[i+1:], j.fifo[i:])
	j.fifo[i] = job
	return id
}

// Settle runs every job due by now, in order.
func (j *Jobs) Settle(now time.Time) {
	j.mu.Lock()
	var due []*Job
	for len(j.fifo) > 0 && !j.fifo[0].Due.After(now) {
		due = append(due, j.fifo[0])
		j.fifo = j.fifo[1:]
	}
	j.mu.Unlock()
	for _, job := range due {
		res, err := job.run()
		j.mu.Lock()
		job.Result, job.Err, job.run = res, err, nil
		job.Status = JobSucceeded
		if err != nil {
			job.Status = JobFailed
		}
		j.mu.Unlock()
	}
}

// Get is the job with id as it stands.
func (j *Jobs) Get(id string) (Job, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	job, ok := j.jobs[id]
	if !ok {
		return Job{}, false
	}
	return *job, true
}

// Pending is how many jobs are not done yet.
func (j *Jobs) Pending() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.fifo)
}
