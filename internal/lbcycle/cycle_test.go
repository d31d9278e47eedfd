package lbcycle

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/outcome"
)

// script is a cloud whose steps answer as a test says and which writes down
// which steps ran: the cycle's decisions are what is tested here, the clouds'
// steps in their own packages against emulators.
type script struct {
	spec     Fingerprint
	specErr  error
	listed   *LB[string]
	listErr  error
	found    *LB[string]
	findErr  error
	answer   map[string]string // step → progress
	errs     map[string]error  // step → error
	publish  bool              // Published answers true
	members  string            // UpdateMembers' progress
	memberOK bool
	drift    string
	built    *LB[string] // what Create builds at once (a cloud in the process)
	relisted bool
	ran      []string
}

func (s *script) do(step string) (string, error) {
	s.ran = append(s.ran, step)
	return s.answer[step], s.errs[step]
}

func (s *script) Spec(context.Context, string, *v1.Service, []*v1.Node) (string, Fingerprint, error) {
	return "spec", s.spec, s.specErr
}

func (s *script) Listed(context.Context, *v1.Service) (LB[string], bool, error) {
	s.ran = append(s.ran, "listed")
	if s.listed == nil {
		return LB[string]{}, false, s.listErr
	}
	return *s.listed, true, s.listErr
}

func (s *script) Find(context.Context, *v1.Service) (LB[string], bool, error) {
	s.ran = append(s.ran, "find")
	if s.found == nil {
		return LB[string]{}, false, s.findErr
	}
	return *s.found, true, s.findErr
}

func (s *script) Create(context.Context, *v1.Service, string) (string, error) {
	if s.built != nil {
		s.found = s.built
	}
	return s.do("create")
}

func (s *script) Replace(context.Context, *v1.Service, LB[string]) (string, error) {
	return s.do("replace")
}

func (s *script) Converge(context.Context, *v1.Service, string, LB[string]) (string, error) {
	return s.do("converge")
}

func (s *script) Publish(context.Context, *v1.Service, string, LB[string]) (*v1.LoadBalancerStatus, string, error) {
	_, err := s.do("publish")
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "203.0.113.7"}}}, "203.0.113.7", err
}

func (s *script) Published(context.Context, *v1.Service, string, Record, LB[string]) (*v1.LoadBalancerStatus, bool, error) {
	s.ran = append(s.ran, "published")
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "203.0.113.7"}}}, s.publish, nil
}

func (s *script) Delete(context.Context, string, *v1.Service) (string, error) { return s.do("delete") }

func (s *script) UpdateMembers(context.Context, *v1.Service, string, LB[string]) (string, bool, error) {
	s.ran = append(s.ran, "members")
	return s.members, s.memberOK, nil
}

func (s *script) Drift(context.Context, *v1.Service, Record, LB[string]) (string, error) {
	return s.drift, nil
}

func (s *script) Relist() { s.relisted = true }

type memRecords map[types.UID]Record

func (m memRecords) Get(svc *v1.Service) (Record, bool) { r, ok := m[svc.UID]; return r, ok }

func (m memRecords) Put(_ context.Context, svc *v1.Service, r Record) { m[svc.UID] = r }

var (
	fp      = Fingerprint{Config: "c1", Members: "m1"}
	ready   = &LB[string]{ID: "lb1", Status: "ACTIVE", State: Ready}
	service = &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
)

func converged(id string) memRecords {
	return memRecords{service.UID: {ID: id, Fingerprint: fp, Address: "203.0.113.7"}}
}

func retryMessage(t *testing.T, err error) string {
	t.Helper()
	var re *api.RetryError
	require.ErrorAs(t, err, &re, "a RetryError (progress), not %v", err)
	return re.Error()
}

// ensureSteps are TestEnsureTakesOneStepAndSaysWhatIsUnderWay's cases: the
// cloud's answers and the records, the steps that run, and the progress told
// or the record written. Each run takes its own copy of the records.
var ensureSteps = []struct {
	name     string
	cloud    script
	records  memRecords
	ran      []string
	progress string // "" → converged
	record   *Record
}{
	{
		name:     "a Service with no load balancer gets one created",
		cloud:    script{spec: fp, answer: map[string]string{"create": "load balancer lb1 is being created"}},
		records:  memRecords{},
		ran:      []string{"find", "create"},
		progress: "load balancer lb1 is being created",
	},
	{
		name:    "a load balancer built at once is published in the same pass",
		cloud:   script{spec: fp, built: ready},
		records: memRecords{},
		ran:     []string{"find", "create", "find", "publish"},
		record:  &Record{ID: "lb1", Fingerprint: fp, Address: "203.0.113.7"},
	},
	{
		name:     "a load balancer the cloud is working on is waited for, with no write",
		cloud:    script{spec: fp, found: &LB[string]{ID: "lb1", Status: "PENDING_CREATE", State: Busy}},
		records:  memRecords{},
		ran:      []string{"find"},
		progress: "load balancer lb1 is PENDING_CREATE",
	},
	{
		name:     "the Service's own load balancer in ERROR is replaced",
		cloud:    script{spec: fp, found: &LB[string]{ID: "lb1", Status: "ERROR", State: Failed}, answer: map[string]string{"replace": "replacing lb1"}},
		records:  converged("lb1"),
		ran:      []string{"listed", "find", "replace"},
		progress: "replacing lb1",
	},
	{
		name:    "a shared load balancer in ERROR is never replaced: it is walked",
		cloud:   script{spec: fp, found: &LB[string]{ID: "lb1", Status: "ERROR", State: Failed, Shared: true}},
		records: memRecords{},
		ran:     []string{"find", "converge", "publish"},
		record:  &Record{Fingerprint: fp, Address: "203.0.113.7"},
	},
	{
		name:     "a load balancer not as recorded is walked; a change made is progress",
		cloud:    script{spec: fp, found: ready, answer: map[string]string{"converge": "listener TCP/80 is being created"}},
		records:  memRecords{},
		ran:      []string{"find", "converge"},
		progress: "listener TCP/80 is being created",
	},
	{
		name:    "a walk that finds nothing to change publishes and records",
		cloud:   script{spec: fp, found: ready},
		records: memRecords{},
		ran:     []string{"find", "converge", "publish"},
		record:  &Record{ID: "lb1", Fingerprint: fp, Address: "203.0.113.7"},
	},
	{
		name:    "an unchanged Service is answered from the shared listing alone",
		cloud:   script{spec: fp, listed: ready, publish: true},
		records: converged("lb1"),
		ran:     []string{"listed", "published"},
		record:  &Record{ID: "lb1", Fingerprint: fp, Address: "203.0.113.7"},
	},
	{
		name:    "an unchanged Service whose address is not as recorded is published again, without a walk",
		cloud:   script{spec: fp, listed: ready, found: ready, publish: false},
		records: converged("lb1"),
		ran:     []string{"listed", "published", "find", "publish"},
		record:  &Record{ID: "lb1", Fingerprint: fp, Address: "203.0.113.7"},
	},
	{
		name:    "a Service whose load balancer is not the recorded one is walked",
		cloud:   script{spec: fp, listed: &LB[string]{ID: "lb2", State: Ready}, found: &LB[string]{ID: "lb2", State: Ready}},
		records: converged("lb1"),
		ran:     []string{"listed", "find", "converge", "publish"},
		record:  &Record{ID: "lb2", Fingerprint: fp, Address: "203.0.113.7"},
	},
	{
		name:    "a changed Service is walked, not answered from the listing",
		cloud:   script{spec: Fingerprint{Config: "c2", Members: "m1"}, listed: ready, found: ready, publish: true},
		records: converged("lb1"),
		ran:     []string{"find", "converge", "publish"},
		record:  &Record{ID: "lb1", Fingerprint: Fingerprint{Config: "c2", Members: "m1"}, Address: "203.0.113.7"},
	},
	{
		name:    "a shared load balancer is never recorded by ID",
		cloud:   script{spec: fp, found: &LB[string]{ID: "lb9", State: Ready, Shared: true}},
		records: memRecords{},
		ran:     []string{"find", "converge", "publish"},
		record:  &Record{Fingerprint: fp, Address: "203.0.113.7"},
	},
}

func TestEnsureTakesOneStepAndSaysWhatIsUnderWay(t *testing.T) {
	for _, tc := range ensureSteps {
		t.Run(tc.name, func(t *testing.T) {
			cloud, records := tc.cloud, maps.Clone(tc.records)
			c := New[string, string](&cloud, records, Options{})
			st, err := c.EnsureLoadBalancer(t.Context(), "kubernetes", service, nil)
			assert.Equal(t, tc.ran, cloud.ran)
			if tc.progress != "" {
				assert.Equal(t, tc.progress, retryMessage(t, err))
				assert.Nil(t, st)
			} else {
				require.NoError(t, err)
				assert.Equal(t, "203.0.113.7", st.Ingress[0].IP)
			}
			if tc.record != nil {
				assert.Equal(t, *tc.record, records[service.UID])
			}
		})
	}
}

func TestErrorsAreToldAsTheServiceControllerUnderstandsThem(t *testing.T) {
	refused := outcome.Classify(outcome.ErrRefused, errors.New("octavia refused load balancer x: quota met"))
	for _, tc := range []struct {
		name  string
		err   error
		check func(t *testing.T, err error)
	}{
		{"the cloud busy is progress", outcome.Classify(outcome.ErrBusy, errors.New("409 PENDING_UPDATE")), func(t *testing.T, err error) {
			assert.Contains(t, retryMessage(t, err), "409 PENDING_UPDATE")
		}},
		{"a refusal is a Problem naming what was refused", refused, func(t *testing.T, err error) {
			p, ok := outcome.AsProblem(err)
			require.True(t, ok)
			assert.Equal(t, outcome.ReasonCloudRefused, p.Reason)
			assert.Equal(t, "Octavia refused load balancer x: quota met", p.Message)
			assert.ErrorIs(t, err, outcome.ErrRefused)
		}},
		{"a Problem passes as it is", outcome.Refuse(outcome.ReasonAddressUnavailable, "taken"), func(t *testing.T, err error) {
			p, ok := outcome.AsProblem(err)
			require.True(t, ok)
			assert.Equal(t, outcome.ReasonAddressUnavailable, p.Reason)
		}},
		{"anything else stays an error", errors.New("connection reset"), func(t *testing.T, err error) {
			_, isProblem := outcome.AsProblem(err)
			assert.False(t, isProblem)
			assert.False(t, errors.As(err, new(*api.RetryError)))
		}},
		{"not found is not a refusal", outcome.Classify(outcome.ErrNotFound, errors.New("404")), func(t *testing.T, err error) {
			_, isProblem := outcome.AsProblem(err)
			assert.False(t, isProblem)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := script{spec: fp, errs: map[string]error{"create": tc.err}}
			_, err := New[string, string](&cloud, memRecords{}, Options{}).EnsureLoadBalancer(t.Context(), "kubernetes", service, nil)
			require.Error(t, err)
			tc.check(t, err)
		})
	}
}

func TestAnInvalidServiceMakesNoCall(t *testing.T) {
	invalid := outcome.Invalid(errors.New("annotation x: not a number"))
	cloud := script{specErr: invalid}
	c := New[string, string](&cloud, memRecords{}, Options{})
	_, err := c.EnsureLoadBalancer(t.Context(), "kubernetes", service, nil)
	assert.Same(t, invalid, err)
	assert.Empty(t, cloud.ran)
	assert.Same(t, invalid, c.UpdateLoadBalancer(t.Context(), "kubernetes", service, nil))
	assert.Empty(t, cloud.ran)
}

// The controller's confirmation runs before anything is built, and only then:
// when it says the Service is gone, nothing is created or replaced.
func TestNothingIsBuiltForAServiceTheControllerCannotConfirm(t *testing.T) {
	gone := api.NewRetryError("the Service is gone", time.Second)
	for _, tc := range []struct {
		name    string
		cloud   script
		records memRecords
		ran     []string
	}{
		{"no load balancer yet", script{spec: fp}, memRecords{}, []string{"find"}},
		{"its own in ERROR", script{spec: fp, found: &LB[string]{ID: "lb1", Status: "ERROR", State: Failed}}, memRecords{}, []string{"find"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			ctx := WithConfirm(t.Context(), func(context.Context) error { asked++; return gone })
			c := New[string, string](&tc.cloud, tc.records, Options{})
			_, err := c.EnsureLoadBalancer(ctx, "kubernetes", service, nil)
			assert.Same(t, gone, err)
			assert.Equal(t, 1, asked)
			assert.Equal(t, tc.ran, tc.cloud.ran, "no create, no replace")
		})
	}
	t.Run("a load balancer that exists is converged without asking", func(t *testing.T) {
		cloud := script{spec: fp, found: ready, publish: true}
		ctx := WithConfirm(t.Context(), func(context.Context) error { t.Error("confirmation asked"); return nil })
		_, err := New[string, string](&cloud, memRecords{}, Options{}).EnsureLoadBalancer(ctx, "kubernetes", service, nil)
		require.NoError(t, err)
	})
}

func TestUpdateChangesMembersAloneWhenOnlyNodesChanged(t *testing.T) {
	moved := Fingerprint{Config: "c1", Members: "m2"}
	for _, tc := range []struct {
		name    string
		cloud   script
		ran     []string
		members string // the recorded members after
		retry   bool
	}{
		{"members differ: updated alone and recorded", script{spec: moved, listed: ready, memberOK: true}, []string{"listed", "members"}, "m2", false},
		{"more pools to update: progress, not yet recorded", script{spec: moved, listed: ready, memberOK: true, members: "next pool"}, []string{"listed", "members"}, "m1", true},
		{"the path does not apply: the full cycle runs", script{spec: moved, listed: ready, found: ready}, []string{"listed", "members", "find", "converge", "publish"}, "m2", false},
		{"busy with the last change: progress in the background", script{spec: moved, listed: &LB[string]{ID: "lb1", State: Busy, Status: "PENDING_UPDATE"}, found: ready}, []string{"listed"}, "m1", true},
		{"the load balancer failed: the full cycle runs", script{spec: moved, listed: &LB[string]{ID: "lb1", State: Failed, Status: "ERROR"}, found: ready}, []string{"listed", "find", "converge", "publish"}, "m2", false},
		{"another load balancer: the full cycle runs", script{spec: moved, listed: &LB[string]{ID: "lb2", State: Ready}, found: ready}, []string{"listed", "find", "converge", "publish"}, "m2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := tc.cloud
			records := converged("lb1")
			err := New[string, string](&cloud, records, Options{}).UpdateLoadBalancer(t.Context(), "kubernetes", service, nil)
			if tc.retry {
				retryMessage(t, err)
				assert.True(t, outcome.IsBackground(err), "the load balancer serves meanwhile")
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.ran, cloud.ran)
			assert.Equal(t, tc.members, records[service.UID].Members)
			assert.Equal(t, "lb1", records[service.UID].ID)
		})
	}
}

// membersScript is a script whose members path reads its own listing
// (MembersLister).
type membersScript struct{ script }

func (s *membersScript) ListedForMembers(context.Context, *v1.Service) (LB[string], bool, error) {
	s.ran = append(s.ran, "listed for members")
	return *s.listed, true, nil
}

// A cloud that lists for its members path its own way (an older listing
// allowed) is read that way on a Node change, and Listed as before on any
// other pass.
func TestTheMembersPathReadsTheCloudsListingForMembers(t *testing.T) {
	cloud := membersScript{script{spec: Fingerprint{Config: "c1", Members: "m2"}, listed: ready, memberOK: true, publish: true}}
	records := converged("lb1")
	c := New[string, string](&cloud, records, Options{})
	require.NoError(t, c.UpdateLoadBalancer(t.Context(), "kubernetes", service, nil))
	assert.Equal(t, []string{"listed for members", "members"}, cloud.ran)
	assert.Equal(t, "m2", records[service.UID].Members)

	cloud.ran = nil
	_, err := c.EnsureLoadBalancer(t.Context(), "kubernetes", service, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"listed", "published"}, cloud.ran)
}

func TestAConvergedLoadBalancerIsWalkedOnceAFullCheckIsDue(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	cloud := script{spec: fp, listed: ready, found: ready, publish: true}
	c := New[string, string](&cloud, converged("lb1"), Options{FullCheck: time.Hour, Now: func() time.Time { return now }})
	_, err := c.EnsureLoadBalancer(t.Context(), "kubernetes", service, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"listed", "published"}, cloud.ran, "first seen: the interval starts")

	now = now.Add(61 * time.Minute)
	cloud.ran = nil
	_, err = c.EnsureLoadBalancer(t.Context(), "kubernetes", service, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"listed", "find", "converge", "publish"}, cloud.ran, "due: walked")

	cloud.ran = nil
	_, err = c.EnsureLoadBalancer(t.Context(), "kubernetes", service, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"listed", "published"}, cloud.ran, "walked: the next interval starts")
}

// A drift the cloud sees (a firewall rule gone) may leave the shared listing
// as it was converged: the next pass walks the load balancer anyway, once.
func TestADriftedServiceIsWalkedNotAnsweredFromTheListing(t *testing.T) {
	cloud := script{spec: fp, listed: ready, found: ready, publish: true, drift: "no firewall rule opens port 80/tcp"}
	c := New[string, string](&cloud, converged("lb1"), Options{})
	drifted, err := c.Drifted(t.Context(), []*v1.Service{service})
	require.NoError(t, err)
	assert.Equal(t, map[types.UID]string{service.UID: "no firewall rule opens port 80/tcp"}, drifted)

	cloud.ran = nil
	_, err = c.EnsureLoadBalancer(t.Context(), "kubernetes", service, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"find", "converge", "publish"}, cloud.ran, "drifted: walked")

	cloud.ran = nil
	_, err = c.EnsureLoadBalancer(t.Context(), "kubernetes", service, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"listed", "published"}, cloud.ran, "repaired: the fast path again")
}

func TestDeleteIsDoneWhenNothingIsLeft(t *testing.T) {
	cloud := script{answer: map[string]string{"delete": "load balancer lb1 is being deleted"}}
	c := New[string, string](&cloud, converged("lb1"), Options{})
	assert.Equal(t, "load balancer lb1 is being deleted", retryMessage(t, c.EnsureLoadBalancerDeleted(t.Context(), "kubernetes", service)))
	cloud.answer = nil
	require.NoError(t, c.EnsureLoadBalancerDeleted(t.Context(), "kubernetes", service))
	cloud.errs = map[string]error{"delete": outcome.Classify(outcome.ErrBusy, errors.New("409"))}
	retryMessage(t, c.EnsureLoadBalancerDeleted(t.Context(), "kubernetes", service))
}

func TestDriftIsFoundFromOneFreshListing(t *testing.T) {
	svc := func(uid string) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)}}
	}
	records := memRecords{}
	listing := map[types.UID]*LB[string]{}
	var svcs []*v1.Service
	add := func(uid string, recorded string, lb *LB[string]) {
		s := svc(uid)
		svcs = append(svcs, s)
		if recorded != "-" {
			records[s.UID] = Record{ID: recorded, Fingerprint: fp}
		}
		listing[s.UID] = lb
	}
	add("gone", "lb1", nil)
	add("error", "lb2", &LB[string]{ID: "lb2", State: Failed, Status: "ERROR"})
	add("busy", "lb3", &LB[string]{ID: "lb3", State: Busy, Status: "PENDING_UPDATE"})
	add("other", "lb4", &LB[string]{ID: "lb5", State: Ready})
	add("well", "lb6", &LB[string]{ID: "lb6", State: Ready})
	add("norecord", "-", nil)
	add("cloudsees", "lb7", &LB[string]{ID: "lb7", State: Ready, Obj: "short of a listener"})

	cloud := &listingCloud{listing: listing}
	drifted, err := New[string, string](cloud, records, Options{}).Drifted(t.Context(), svcs)
	require.NoError(t, err)
	assert.True(t, cloud.relisted)
	assert.Equal(t, map[types.UID]string{
		"gone":      "load balancer lb1 is gone",
		"error":     "load balancer lb2 is ERROR",
		"other":     "load balancer lb5 is not lb4, which it was converged to",
		"cloudsees": "short of a listener",
	}, drifted)

	cloud.err = errors.New("listing failed")
	_, err = New[string, string](cloud, records, Options{}).Drifted(t.Context(), svcs)
	assert.Error(t, err, "a failed listing is no answer, never \"all gone\"")
}

type listingCloud struct {
	script
	listing map[types.UID]*LB[string]
	err     error
}

func (l *listingCloud) Listed(_ context.Context, svc *v1.Service) (LB[string], bool, error) {
	if l.err != nil {
		return LB[string]{}, false, l.err
	}
	lb := l.listing[svc.UID]
	if lb == nil {
		return LB[string]{}, false, nil
	}
	return *lb, true, nil
}

func (l *listingCloud) Drift(_ context.Context, _ *v1.Service, _ Record, lb LB[string]) (string, error) {
	return lb.Obj, nil
}

func TestFingerprintReadsAsItIsRecorded(t *testing.T) {
	assert.Equal(t, "c1.m1", fp.String())
}

// pacedCloud knows when its work should be done.
type pacedCloud struct {
	script
	after time.Duration
}

func (p *pacedCloud) RetryAfter(*v1.Service) time.Duration { return p.after }

// Work under way is looked at again when a Pacer cloud says it should be
// done; without an opinion (0), after Options.Retry.
func TestAPacerCloudSaysWhenToLookAgain(t *testing.T) {
	for _, tc := range []struct {
		after, want time.Duration
	}{
		{after: 700 * time.Millisecond, want: 700 * time.Millisecond},
		{after: 0, want: 3 * time.Second},
	} {
		cloud := &pacedCloud{script: script{spec: fp, answer: map[string]string{"create": "being created"}}, after: tc.after}
		c := New[string, string](cloud, memRecords{}, Options{Retry: 3 * time.Second})
		_, err := c.EnsureLoadBalancer(context.Background(), "kubernetes", service, nil)
		var re *api.RetryError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, tc.want, re.RetryAfter())
	}
}
