package cloudstack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// A Service is looked at again when its jobs should be done: from when they
// started and how long jobs take; overdue ones at a quarter of their age,
// within bounds.
func TestServicesAreLookedAtWhenTheirJobsShouldBeDone(t *testing.T) {
	j := newJobs()
	now := time.Now()
	j.m["fresh"] = []job{{id: "a", started: now}}
	j.m["half"] = []job{{id: "b", started: now.Add(-time.Second)}, {id: "c", started: now.Add(-1500 * time.Millisecond)}}
	j.m["overdue"] = []job{{id: "d", started: now.Add(-8 * time.Second)}}
	j.m["old"] = []job{{id: "e", started: now.Add(-time.Minute)}}
	j.m["just"] = []job{{id: "f", started: now.Add(-initialTook - jobMargin - 10*time.Millisecond)}}

	within := func(uid types.UID, want time.Duration) {
		t.Helper()
		assert.InDelta(t, want.Seconds(), j.retryAfter(uid).Seconds(), 0.05, uid)
	}
	within("fresh", initialTook+jobMargin)
	within("half", initialTook+jobMargin-time.Second) // the later of its jobs
	within("overdue", 2*time.Second)
	within("old", maxJobRetry)
	within("just", initialTook/4)
	assert.Zero(t, j.retryAfter("none"), "no jobs: no opinion")

	// How long jobs take is learnt, a little at a time.
	j.learn(0)
	assert.Less(t, j.took, initialTook)
	assert.Greater(t, j.took, initialTook/2)
	for range 30 {
		j.learn(500 * time.Millisecond)
	}
	assert.InDelta(t, 0.5, j.took.Seconds(), 0.01)
	j.learn(-time.Second)
	j.learn(2 * jobTimeout)
	assert.InDelta(t, 0.5, j.took.Seconds(), 0.01, "impossible durations are ignored")
}

// A listing taken before a Service's jobs were due does not say they are
// still under way: it is taken anew (once for every Service then due).
func TestAListingOlderThanTheJobsDueIsNotTrusted(t *testing.T) {
	f := newFixture(t, emulator.Options{JobDelay: 50 * time.Millisecond})
	nodes := f.nodes("worker-1")
	a := service("a", httpPort)
	b := service("bb", v1.ServicePort{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30081})
	f.c.lb.jobs.took, f.c.lb.jobs.margin = initialTook, jobMargin // as a new process expects
	for _, svc := range []*v1.Service{a, b} {
		_, err := f.c.EnsureLoadBalancer(context.Background(), "kubernetes", svc, nodes)
		var retry *api.RetryError
		require.ErrorAs(t, err, &retry)
		// When the association should be done (its tags do not hold the
		// look): initialTook after it was answered, a call ago at most.
		assert.InDelta(t, initialTook.Seconds(), retry.RetryAfter().Seconds(), 0.2, "looked at again when its jobs should be done")
	}
	time.Sleep(200 * time.Millisecond) // the jobs are done

	// A listing taken 300 ms ago, after the jobs started but before they were
	// due, which they are now (100 ms ago).
	jb := f.c.lb.jobs
	jb.mu.Lock()
	stale := map[string]csapi.JobState{}
	for uid, list := range jb.m {
		for i := range list {
			list[i].started = time.Now().Add(-initialTook - jobMargin - 100*time.Millisecond)
			stale[list[i].id] = csapi.JobState{Pending: true}
		}
		jb.m[uid] = list
	}
	jb.mu.Unlock()
	jb.listed, jb.fetched = stale, time.Now().Add(-300*time.Millisecond)
	jb.listedAt = jb.fetched

	f.emu.ResetCalls()
	for _, svc := range []*v1.Service{a, b} {
		progress, results, err := jb.check(t.Context(), f.c.api, svc.UID)
		require.NoError(t, err)
		assert.Empty(t, progress, "the jobs are done: the stale listing is not believed")
		assert.Len(t, results, 2, "the address's association and its tags")
	}
	assert.Equal(t, 1, calls(f.emu, "listAsyncJobs"), "one listing for both Services")
}

// A new load balancer takes five writes (the address, its tags, the rule, its
// machines, the opening) and four reads: what exists (rules and a tagged
// address, at once), how the jobs went after each round. The rules once
// built are what their jobs answered: not read again.
func TestANewLoadBalancerTakesFiveWritesAndFourReads(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1", "worker-2")
	svc := service("web", httpPort)
	// The machines and their guest network are known from the Nodes already.
	spec, _, err := f.c.lb.Spec(context.Background(), "kubernetes", svc, nodes)
	require.NoError(t, err)
	_, err = f.c.lb.network(t.Context(), spec.network)
	require.NoError(t, err)
	f.emu.ResetCalls()
	f.ensured(svc, nodes)
	assert.Equal(t, 5, writes(f.emu))
	assert.Equal(t, map[string]int{
		"associateIpAddress": 1, "createTags": 1, "createLoadBalancerRule": 1, "assignToLoadBalancerRule": 1, "createFirewallRule": 1,
	}, posted(f.emu), "the writes, by command")
	total := 0
	for _, c := range f.emu.Calls() {
		total += c.Count
	}
	assert.Equal(t, 9, total, "%v", f.emu.Calls())
	assert.Equal(t, 2, calls(f.emu, "listAsyncJobs"))
	assert.Equal(t, 1, calls(f.emu, "listLoadBalancerRules"), "the rules built are their jobs' results")
}

// convergedWithRecord converges svc on nodes and gives it the record the
// cycle writes (the fixture has no apiserver); its one rule.
func (f *fixture) convergedWithRecord(svc *v1.Service, nodes []*v1.Node) *cs.LoadBalancerRule {
	f.t.Helper()
	st := f.ensured(svc, nodes)
	_, fp, err := f.c.lb.Spec(context.Background(), "kubernetes", svc, nodes)
	require.NoError(f.t, err)
	rules := f.rules()
	require.Len(f.t, rules, 1)
	svc.Annotations = map[string]string{"overcast.io/cloudstack-converged": rules[0].Publicipid + "/" + fp.String() + "/" + st.Ingress[0].IP}
	return rules[0]
}

// updated calls UpdateLoadBalancer until it stops asking to be called again.
func (f *fixture) updated(svc *v1.Service, nodes []*v1.Node) error {
	var err error
	for range 10 {
		err = f.c.UpdateLoadBalancer(context.Background(), "kubernetes", svc, nodes)
		if !errors.As(err, new(*api.RetryError)) {
			return err
		}
	}
	return err
}

// A Node added to a converged Service costs each rule one write and no read:
// the machines it was converged to are the set this process saw wanted.
func TestANodeAddedIsOneWriteARuleAndNoRead(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1", "worker-2", "worker-3")
	svc := service("web", httpPort)
	rule := f.convergedWithRecord(svc, nodes[:2])

	f.emu.ResetCalls()
	require.NoError(t, f.updated(svc, nodes))
	assert.Zero(t, calls(f.emu, "listLoadBalancerRuleInstances"), "%v", f.emu.Calls())
	assert.Equal(t, map[string]int{"assignToLoadBalancerRule": 1}, posted(f.emu), "the one write: %v", f.emu.Calls())
	assert.Len(t, f.members(rule.Id), 3)
}

// A process that did not see the set the rules were converged to (a new
// leader) reads each rule's machines once, and writes as little.
func TestANodeAddedAfterARestartIsOneReadAndOneWriteARule(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1", "worker-2", "worker-3")
	svc := service("web", httpPort)
	rule := f.convergedWithRecord(svc, nodes[:2])
	f.c.lb.memberSets = provider.MemberSets{} // what a new process knows

	f.emu.ResetCalls()
	require.NoError(t, f.updated(svc, nodes))
	assert.Equal(t, 1, calls(f.emu, "listLoadBalancerRuleInstances"), "%v", f.emu.Calls())
	assert.Equal(t, map[string]int{"assignToLoadBalancerRule": 1}, posted(f.emu), "the one write: %v", f.emu.Calls())
	assert.Len(t, f.members(rule.Id), 3)
}

// A rule given the new machine behind our back refuses it again (the real
// CloudStack's "already mapped"): the pass after reads the rule and finds it
// as wanted, with no other write and no error left.
func TestAMachineAssignedBehindOurBackIsReadAfterTheRefusal(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1", "worker-2", "worker-3")
	svc := service("web", httpPort)
	rule := f.convergedWithRecord(svc, nodes[:2])
	third := strings.TrimPrefix(nodes[2].Spec.ProviderID, "external-cloudstack://")
	p := f.admin.LoadBalancer.NewAssignToLoadBalancerRuleParams(rule.Id)
	p.SetVirtualmachineids([]string{third})
	_, err := f.admin.LoadBalancer.AssignToLoadBalancerRule(p)
	require.NoError(t, err)

	f.emu.ResetCalls()
	require.NoError(t, f.updated(svc, nodes))
	assert.Equal(t, 1, calls(f.emu, "listLoadBalancerRuleInstances"), "read once, after the refusal: %v", f.emu.Calls())
	assert.Equal(t, map[string]int{"assignToLoadBalancerRule": 1}, posted(f.emu), "the refused write alone: %v", f.emu.Calls())
	assert.Len(t, f.members(rule.Id), 3)
}

// The listing of jobs reaches back only a little before the jobs asked
// about, on the server's clock (learnt), not a fixed five minutes: a burst of
// a thousand Services does not list every job of the burst each time.
func TestTheJobListingReachesBackOnlyAsFarAsNeeded(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	behind := 2 * time.Minute
	f.emu.SetClock(func() time.Time { return time.Now().Add(-behind) })
	nodes := f.nodes("worker-1")
	f.ensured(service("a", httpPort), nodes)
	jb := f.c.lb.jobs
	require.True(t, jb.skewKnown)
	assert.InDelta(t, -behind.Seconds(), jb.skew.Seconds(), 1.5, "the server's clock is two minutes behind")

	f.emu.ResetCalls()
	start := time.Now()
	f.ensured(service("bb", v1.ServicePort{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30081}), nodes)
	assert.Zero(t, calls(f.emu, "queryAsyncJobResult"), "every job was in the listing")
	assert.Positive(t, calls(f.emu, "listAsyncJobs"))
	assert.True(t, jb.since.After(start.Add(-behind-skewSlack-2*time.Second)), "reached back to %v", start.Sub(jb.since))
}

// A Service looked at before any of its jobs should be done costs no call:
// 1,000 Services requeued by other events do not list the jobs each time.
func TestALookBeforeTheJobsAreDueMakesNoCall(t *testing.T) {
	f := newFixture(t, emulator.Options{JobDelay: time.Hour})
	f.c.lb.jobs.took, f.c.lb.jobs.margin = initialTook, jobMargin
	nodes := f.nodes("worker-1")
	svc := service("web", httpPort)
	_, err := f.c.EnsureLoadBalancer(context.Background(), "kubernetes", svc, nodes)
	require.ErrorAs(t, err, new(*api.RetryError))
	f.emu.ResetCalls()
	for range 5 {
		_, err = f.c.EnsureLoadBalancer(context.Background(), "kubernetes", svc, nodes)
		require.ErrorAs(t, err, new(*api.RetryError))
	}
	assert.Empty(t, f.emu.Calls())
}

// Passes paced as the service controller paces them (each after its
// RetryAfter) finish when jobs take longer than expected: a listing that
// showed a job under way is not believed for ever. Built, deleted, built and
// deleted again, nothing is left.
func TestPacedPassesFinishWhenJobsTakeLongerThanExpected(t *testing.T) {
	f := newFixture(t, emulator.Options{JobDelay: 300 * time.Millisecond})
	f.c.lb.jobs.took, f.c.lb.jobs.margin = 100*time.Millisecond, jobMargin // expected sooner than they end
	nodes := f.nodes("worker-1")
	svc := service("web", httpPort)
	paced := func(step func() error) {
		t.Helper()
		for range 20 {
			err := step()
			var re *api.RetryError
			if !errors.As(err, &re) {
				require.NoError(t, err)
				return
			}
			time.Sleep(re.RetryAfter())
		}
		t.Fatal("not done after 20 passes")
	}
	for range 2 {
		paced(func() error {
			_, err := f.c.EnsureLoadBalancer(context.Background(), "kubernetes", svc, nodes)
			return err
		})
		require.Len(t, f.rules(), 1)
		paced(func() error { return f.c.EnsureLoadBalancerDeleted(context.Background(), "kubernetes", svc) })
		assert.Empty(t, f.rules())
		assert.Empty(t, f.addresses())
		assert.Empty(t, f.firewall())
	}
}

// A caller waiting for another's listing of jobs, which the server never
// answers, gives up at its own deadline: it is not held for as long as the
// other's calls last.
func TestAWaitForAnothersListingEndsAtTheCallersDeadline(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	f.emu.InjectFault(core.Fault{Hang: true})
	now := time.Now()
	holder, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	held := make(chan error, 1)
	go func() {
		_, err := f.c.lb.jobs.states(holder, f.c.api, now, now)
		held <- err
	}()
	require.Eventually(t, func() bool { return len(f.c.lb.jobs.fetch) == 1 }, 5*time.Second, 5*time.Millisecond, "the first listing holds the turn")

	ctx, cancel2 := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel2()
	began := time.Now()
	_, err := f.c.lb.jobs.states(ctx, f.c.api, now, now)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(began), 5*time.Second, "the waiter gave up at its deadline")

	cancel() // and the holder's call ends with its own
	select {
	case err := <-held:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the listing the server never answers did not end with its caller's context")
	}
}

// An address's tags do not hold the look that builds its rules: the look
// comes when the association should be done, and goes on while the tags'
// job is under way, without a call; once only trailing jobs are left, they
// set when it comes.
func TestATrailingJobHoldsNoLook(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	j := f.c.lb.jobs
	j.took, j.margin = initialTook, jobMargin
	now := time.Now()
	j.m["svc"] = []job{{id: "assoc", started: now.Add(-time.Second)}, {id: "tags", started: now, trailing: true}}
	assert.InDelta(t, 1, j.retryAfter("svc").Seconds(), 0.05, "when the association is due, not the tags")
	j.m["tags-only"] = []job{{id: "tags", started: now.Add(-500 * time.Millisecond), trailing: true}}
	assert.InDelta(t, 1.5, j.retryAfter("tags-only").Seconds(), 0.05, "the trailing job, when it is all that is left")

	f.emu.ResetCalls()
	progress, results, err := j.check(t.Context(), f.c.api, "tags-only")
	require.NoError(t, err)
	assert.Empty(t, progress, "a trailing job not due holds nothing")
	assert.Empty(t, results)
	assert.Empty(t, f.emu.Calls(), "and costs no call")
	assert.Len(t, j.m["tags-only"], 1, "it is kept, to be asked about once due")
}

// A job of a creation that failed means the rules may be short of what was
// asked: the created memo goes, and the pass after the failure walks them
// rather than publishing at once.
func TestAFailedJobOfACreationMakesTheNextPassWalk(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	svc := service("web", httpPort)
	s := f.c.lb
	s.created.set(svc.UID, "key job-1")
	j := f.c.lb.jobs
	j.took, j.margin = initialTook, jobMargin
	now := time.Now()
	j.m[svc.UID] = []job{{id: "job-1", what: "assigning machines", started: now.Add(-3 * time.Second)}}
	j.listed = map[string]csapi.JobState{"job-1": {Failure: errors.New("the router refused")}}
	j.fetched, j.listedAt = now, now

	_, _, err := s.Find(t.Context(), svc)
	require.ErrorContains(t, err, "the router refused")
	key, jobs := s.createdBy(svc)
	assert.Empty(t, key, "the next pass walks")
	assert.Empty(t, jobs)
}

// A rule's machines to add and remove keep their lists' order; 5,000
// machines a rule are compared by set.
func TestMemberChangesAreWhatEachSideLacks(t *testing.T) {
	add, remove := memberChanges([]string{"m1", "m2", "m3"}, []string{"m4", "m2", "m5"})
	assert.Equal(t, []string{"m4", "m5"}, add)
	assert.Equal(t, []string{"m1", "m3"}, remove)
	add, remove = memberChanges(nil, nil)
	assert.Empty(t, add)
	assert.Empty(t, remove)

	var current, want []string
	for i := range 5000 {
		current = append(current, fmt.Sprintf("vm-%05d", i))
		want = append(want, fmt.Sprintf("vm-%05d", i+1))
	}
	add, remove = memberChanges(current, want)
	assert.Equal(t, []string{"vm-05000"}, add)
	assert.Equal(t, []string{"vm-00000"}, remove)
}
