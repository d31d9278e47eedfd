package cloudstack

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/cloudapi"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// user is cloudstack-go with the CCM's keys, waiting for jobs.
func (f *fixture) user() *cs.CloudStackClient {
	fx := f.emu.Fixture()
	return cs.NewAsyncClient(f.emu.URL()+"/client/api", fx.UserKey, fx.UserSecret, false)
}

// associateUntagged associates an address as the CCM's keys, and tags
// nothing: what a CCM stopped between associateIpAddress and createTags
// leaves.
// ip, when set, is the address asked for.
func (f *fixture) associateUntagged(ip ...string) *cs.AssociateIpAddressResponse {
	f.t.Helper()
	p := f.user().Address.NewAssociateIpAddressParams()
	p.SetNetworkid(f.emu.Fixture().NetworkID)
	if len(ip) > 0 {
		p.SetIpaddress(ip[0])
	}
	a, err := f.user().Address.AssociateIpAddress(p)
	require.NoError(f.t, err)
	return a
}

// csTags is tags, as cloudstack-go answers them, by key.
func csTags(tags []cs.Tags) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		out[t.Key] = t.Value
	}
	return out
}

func associatingAt(svc *v1.Service, t time.Time) {
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[string(annotation.CloudStackAssociating)] = t.UTC().Format(time.RFC3339Nano)
}

func (f *fixture) addressOf(ip string) *cs.PublicIpAddress {
	f.t.Helper()
	for _, a := range f.addresses() {
		if a.Ipaddress == ip {
			return a
		}
	}
	f.t.Fatalf("no address %s", ip)
	return nil
}

// The crash case's finding: a CCM killed between associating an address and
// tagging it left the address behind, untagged, and the next leader
// associated another. Now the time written before associating lets the next
// pass take it up; a Service without that time, an address with a rule on
// it, and an address allocated long after are never taken.
func TestAnAddressAnInterruptedAssociationLeftIsTakenUp(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1")
	port := httpPort

	// Someone's address with a rule on it, untagged: never taken.
	fx := f.emu.Fixture()
	user := f.user()
	someones := f.associateUntagged()
	rp := user.LoadBalancer.NewCreateLoadBalancerRuleParams("roundrobin", "someones-tcp-22", 22, 2222)
	rp.SetPublicipid(someones.Id)
	rp.SetNetworkid(fx.NetworkID)
	_, err := user.LoadBalancer.CreateLoadBalancerRule(rp)
	require.NoError(t, err)

	svc := service("web", port)
	associatingAt(svc, time.Now())
	left := f.associateUntagged()

	// A Service that wrote no such time associates its own.
	other := service("other-service", port)
	st := f.ensured(other, nodes)
	assert.NotEqual(t, left.Ipaddress, st.Ingress[0].IP)
	assert.Empty(t, f.addressOf(left.Ipaddress).Tags, "not taken by a Service that did not leave it")

	// One whose association began an hour before it was allocated: not its.
	late := service("late", port)
	associatingAt(late, time.Now().Add(-time.Hour))
	st = f.ensured(late, nodes)
	assert.NotEqual(t, left.Ipaddress, st.Ingress[0].IP)

	st = f.ensured(svc, nodes)
	assert.Equal(t, left.Ipaddress, st.Ingress[0].IP, "the address left untagged is the Service's")
	got := f.addressOf(left.Ipaddress)
	assert.Equal(t, string(svc.UID), csTags(got.Tags)[tagService])
	assert.Len(t, f.addresses(), 4, "someone's, other's, late's, and the one taken up: no other associated")
	assert.Empty(t, f.addressOf(someones.Ipaddress).Tags, "someone's untouched")

	for _, s := range []*v1.Service{svc, other, late} {
		f.remove(s)
	}
	addrs := f.addresses()
	require.Len(t, addrs, 1)
	assert.Equal(t, someones.Ipaddress, addrs[0].Ipaddress)
}

// A Service deleted while the CCM was down, after an interrupted
// association: the address is released with it.
func TestAnAddressAnInterruptedAssociationLeftGoesWithItsDeletedService(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	svc := service("web", httpPort)
	associatingAt(svc, time.Now())
	f.associateUntagged()
	f.remove(svc)
	assert.Empty(t, f.addresses())
}

// A Service's loadBalancerIP associated, and the CCM stopped before tagging
// it: taken up by its IP, and released with the Service as one it
// associated.
func TestARequestedAddressAnInterruptedAssociationLeftIsReleasedWithTheService(t *testing.T) {
	f, nodes, svc := webOnOneNode(t)
	svc.Spec.LoadBalancerIP = "203.0.113.77"
	associatingAt(svc, time.Now())
	f.associateUntagged(svc.Spec.LoadBalancerIP)
	f.associatedAndReleased(svc, nodes)
}

// The race the crash case found: an address another Service's association
// made is untagged until its createTags job has run (here, it was killed
// before the job ran and the other replica sees it): a Service whose own
// association was interrupted waits for the tags before taking it, and
// then associates its own.
func TestAnAddressWhoseTagsAreOnTheirWayIsNotTakenUp(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	f.c.lb.tagSettle = time.Hour // the other's tags come before
	nodes := f.nodes("worker-1")
	svc := service("web", httpPort)
	associatingAt(svc, time.Now())
	others := f.associateUntagged()

	_, err := f.c.EnsureLoadBalancer(context.Background(), "kubernetes", svc, nodes)
	var retry *api.RetryError
	require.ErrorAs(t, err, &retry, "waits for the tags")
	assert.Contains(t, retry.Error(), others.Ipaddress)
	assert.Len(t, f.addresses(), 1, "and associates nothing meanwhile")
	err = f.c.EnsureLoadBalancerDeleted(context.Background(), "kubernetes", svc)
	require.ErrorAs(t, err, &retry, "a deletion waits too")

	// The other's tags come.
	user := f.user()
	_, err = user.Resourcetags.CreateTags(user.Resourcetags.NewCreateTagsParams([]string{others.Id}, "PublicIpAddress",
		map[string]string{tagCluster: clusterUID, tagService: "another-service"}))
	require.NoError(t, err)

	st := f.ensured(svc, nodes)
	assert.NotEqual(t, others.Ipaddress, st.Ingress[0].IP, "its own address")
	assert.Equal(t, "another-service", csTags(f.addressOf(others.Ipaddress).Tags)[tagService], "the other's untouched")
}

// Two Services whose associations one crash interrupted, and one address
// left: the first takes it up; the second, while the first's createTags job
// has not run yet (the address still untagged), does not take it too, and
// associates its own (the crash case's third run found both taking one).
func TestAnAddressTakenUpIsNotTakenUpTwice(t *testing.T) {
	f := newFixture(t, emulator.Options{JobDelay: 300 * time.Millisecond})
	nodes := f.nodes("worker-1")
	port := httpPort
	a, b := service("first", port), service("second-one", port)
	associatingAt(a, time.Now())
	associatingAt(b, time.Now())
	left := f.associateUntagged()
	require.Eventually(t, func() bool { return f.addressOf(left.Ipaddress).State == "Allocated" }, 5*time.Second, 50*time.Millisecond)

	// Two workers, one after the other, before the first's rules are made.
	got, _, found, err := f.c.lb.takeUpLeftover(context.Background(), a, "")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, left.Id, got.ID)
	_, _, found, err = f.c.lb.takeUpLeftover(context.Background(), b, "")
	require.NoError(t, err)
	assert.False(t, found, "its tags are being put on for the first")
	ready := func(svc *v1.Service) *v1.LoadBalancerStatus {
		var st *v1.LoadBalancerStatus
		require.Eventually(t, func() bool {
			var err error
			st, err = f.c.EnsureLoadBalancer(context.Background(), "kubernetes", svc, nodes)
			require.True(t, err == nil || errors.As(err, new(*api.RetryError)), "%v", err)
			return err == nil
		}, 20*time.Second, 100*time.Millisecond)
		return st
	}
	stA, stB := ready(a), ready(b)
	assert.Equal(t, left.Ipaddress, stA.Ingress[0].IP)
	assert.NotEqual(t, left.Ipaddress, stB.Ingress[0].IP)
	assert.Len(t, f.addresses(), 2)
}

// CI's throttling case found it: the Service's former address, free again,
// answered 429 when asked for, and another was asked for 2 ms later. A
// throttled (or unauthorised, or busy) association is the pass's failure,
// retried as the cloud asks; only the server's refusal of that address
// makes the CCM ask for another at once.
func TestAThrottledAssociationIsNotMadeAgainAtOnce(t *testing.T) {
	f, nodes, svc := webOnOneNode(t)
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "203.0.113.50"}} // its former address, free again
	// The pass's first write is the association (its commands are POSTed):
	// 429 to it and to each of the client's retries.
	attempts := 1 + cloudapi.DefaultMaxRetries
	f.emu.InjectFault(core.Fault{Method: http.MethodPost, Status: 429, Count: attempts})

	_, err := f.c.EnsureLoadBalancer(context.Background(), "kubernetes", svc, nodes)
	require.ErrorIs(t, err, outcome.ErrThrottled)
	assert.Equal(t, map[string]int{"associateIpAddress": attempts}, posted(f.emu), "no other address asked for within the pass")

	st := f.ensured(svc, nodes)
	assert.Equal(t, "203.0.113.50", st.Ingress[0].IP, "the next pass has its former address")
}
