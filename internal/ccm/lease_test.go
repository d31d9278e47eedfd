package ccm

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// memLock is a leader election record held in memory: client-go's elector
// runs on it as on a Lease, without an apiserver.
type memLock struct {
	mu     sync.Mutex
	id     string
	record *resourcelock.LeaderElectionRecord
	fail   bool // every write fails: the holder cannot renew
}

func (l *memLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.record == nil {
		return nil, nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, l.id)
	}
	r := *l.record
	raw, err := json.Marshal(r)
	return &r, raw, err
}

func (l *memLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.Update(context.Background(), r)
}

func (l *memLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail {
		return errors.New("the apiserver is gone")
	}
	l.record = &r
	return nil
}

func (l *memLock) RecordEvent(string) {}
func (l *memLock) Identity() string   { return l.id }
func (l *memLock) Describe() string   { return "test/" + l.id }
func (l *memLock) setFail(fail bool)  { l.mu.Lock(); l.fail = fail; l.mu.Unlock() }
func (l *memLock) holder() string     { l.mu.Lock(); defer l.mu.Unlock(); return l.record.HolderIdentity }

func elect(t *testing.T, name string, lock *memLock) (*leaderelection.LeaderElector, chan struct{}) {
	t.Helper()
	started := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: name, LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(started) },
			OnStoppedLeading: func() {},
		},
	})
	require.NoError(t, err)
	return le, started
}

// releaseLease decides by client-go's own gauge whether this process leads:
// set as the elector acquires the Lease (before the framework initialises the
// cloud), kept when the elector is stopped by cancellation (the Lease is
// still this process's to give up), cleared when it fails to renew (another
// replica may lead: its Lease is not ours to release).
func TestLeadsFollowsTheElectorsGauge(t *testing.T) {
	const name = "overcast-test-lease"
	assert.False(t, leads(name), "no elector yet")

	lock := &memLock{id: "host_a"}
	le, started := elect(t, name, lock)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { le.Run(ctx); close(done) }()
	wait(t, started, "the elector did not acquire the Lease")
	assert.True(t, leads(name), "it leads from the moment it acquired the Lease")
	assert.False(t, leads("another-lease"), "another lease's gauge is another's")
	cancel()
	wait(t, done, "the elector did not stop with its context")
	assert.True(t, leads(name), "stopped by its context, it still holds the Lease")
	assert.Equal(t, "host_a", lock.holder())

	lock = &memLock{id: "host_b"}
	le, started = elect(t, name, lock)
	done = make(chan struct{})
	go func() { le.Run(t.Context()); close(done) }()
	wait(t, started, "the elector did not acquire the Lease")
	lock.setFail(true)
	wait(t, done, "the elector did not stop after failing to renew")
	assert.False(t, leads(name), "an elector that could not renew does not hold the Lease")
}

func wait(t *testing.T, ch <-chan struct{}, failure string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal(failure)
	}
}
