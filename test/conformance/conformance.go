// Package conformance is what every cloud's load balancers must do, whatever
// the cloud: the cloud-independent checks of the OpenStack contract suite, run
// against each cloud's provider through the cloudprovider.LoadBalancer
// contract, on a real kube-apiserver (where the records a cloud keeps on the
// Service are written) and the cloud's emulator.
//
//   - A call makes one step and returns: it never waits for the cloud.
//   - While the cloud works on the load balancer, a call answers a RetryError
//     and writes nothing.
//   - An unchanged Service, looked at again once converged, makes no write.
//   - A Service the cloud refuses gets a Problem and no call at all.
//   - Deleting leaves nothing of the Service in the cloud, and deleting again
//     is safe and writes nothing.
//   - Another cluster's load balancer for a Service of the same namespace and
//     name is never touched.
//
// test/e2e runs it for every cloud with an emulator (internal/kit) and for the
// local cloud: a new cloud is checked from its first commit.
package conformance

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// Target is a cloud under test.
type Target struct {
	// Name is its --cloud-provider name.
	Name string
	// New builds the provider, Initialize not called, as a cluster of the
	// given UID (the clusters of one test never share a UID).
	New func(t *testing.T, clusterUID string) cloudprovider.Interface
	// Nodes are Nodes whose machines exist in the cloud.
	Nodes []*v1.Node
	// Invalid is an annotation and a value the cloud refuses.
	Invalid [2]string
	// Calls are the cloud's API calls so far (nil: a cloud in the process,
	// which makes none).
	Calls func() []core.CallCount
	// Objects counts what the cloud holds, by kind (nil: not counted).
	Objects func() map[string]int
	// Busy says whether the cloud takes time to build a load balancer (an
	// emulator with a provisioning delay); false: it is built at once.
	Busy bool
	// Shared says that clusters share the cloud (an account, a project), so
	// that two of them must never touch each other's load balancers.
	Shared bool
}

// Kube is what the suite needs of the cluster.
type Kube struct {
	Client kubernetes.Interface
	// Namespace makes a namespace for a test.
	Namespace func(t *testing.T) string
}

// Run runs every check on target.
func Run(t *testing.T, kube Kube, target Target) {
	s := &suite{kube: kube, target: target}
	if _, ok := target.New(t, "probe").LoadBalancer(); !ok {
		t.Skipf("the %s cloud serves no load balancers yet", target.Name)
	}
	t.Run("a Service is built step by step and an unchanged one makes no write", s.build)
	t.Run("a Service the cloud refuses gets a Problem and no call", s.invalid)
	t.Run("deleting leaves nothing and deleting again is safe", s.delete)
	t.Run("another cluster's load balancer of the same Service is never touched", s.isolation)
}

type suite struct {
	kube   Kube
	target Target
}

// cloud is a fresh provider of a cluster with its own UID, writing its
// records through the admin client.
func (s *suite) cloud(t *testing.T, uid string) cloudprovider.LoadBalancer {
	t.Helper()
	return s.cloudOf(t, uid, s.kube.Client)
}

// cloudOf is a fresh provider that writes its records with kube (nil: none).
func (s *suite) cloudOf(t *testing.T, uid string, kube kubernetes.Interface) cloudprovider.LoadBalancer {
	t.Helper()
	c := s.target.New(t, uid)
	if k, ok := c.(interface{ SetKube(kubernetes.Interface) }); ok && kube != nil {
		k.SetKube(kube)
	}
	lb, ok := c.LoadBalancer()
	require.True(t, ok, "the %s cloud serves load balancers", s.target.Name)
	return lb
}

// lbClass keeps the suite's Services from every service controller (the
// in-process CCMs of other tests on the same apiserver): the suite alone
// calls the provider for them.
const lbClass = "conformance.overcast.io/suite"

// service creates a LoadBalancer Service with a TCP port in ns, deleted when
// the test ends.
func (s *suite) service(t *testing.T, ns, name string, annotations map[string]string) *v1.Service {
	t.Helper()
	class := lbClass
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, LoadBalancerClass: &class, Ports: []v1.ServicePort{
			{Name: "http", Protocol: v1.ProtocolTCP, Port: 80},
		}},
	}
	svc, err := s.kube.Client.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = s.kube.Client.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return svc
}

// fresh is the Service as it is now (with the records the cloud wrote).
func (s *suite) fresh(t *testing.T, svc *v1.Service) *v1.Service {
	t.Helper()
	got, err := s.kube.Client.CoreV1().Services(svc.Namespace).Get(t.Context(), svc.Name, metav1.GetOptions{})
	require.NoError(t, err)
	return got
}

// counts are the calls so far: reads, and writes (any other method).
// Authentication (the identity service) is neither.
func (s *suite) counts() (reads, writes int) {
	if s.target.Calls == nil {
		return 0, 0
	}
	for _, c := range s.target.Calls() {
		switch {
		case c.Service == "identity":
		case c.Method == http.MethodGet || c.Method == http.MethodHead:
			reads += c.Count
		default:
			writes += c.Count
		}
	}
	return reads, writes
}

// maxStep is the longest a call may take: far less than the cloud takes to
// build a load balancer, so that a call that waits for it fails.
const maxStep = 1500 * time.Millisecond

// ensure calls EnsureLoadBalancer as the service controller does until it
// answers, checking each call: a RetryError or the status, within maxStep,
// the Service read again before each call.
func (s *suite) ensure(t *testing.T, lb cloudprovider.LoadBalancer, svc *v1.Service) (*v1.LoadBalancerStatus, int) {
	t.Helper()
	st, steps, err := s.ensureAs(t, lb, func() *v1.Service { return s.fresh(t, svc) })
	require.NoError(t, err)
	return st, steps
}

// ensureAs is ensure of the Service get gives; a Problem ends it.
func (s *suite) ensureAs(t *testing.T, lb cloudprovider.LoadBalancer, get func() *v1.Service) (*v1.LoadBalancerStatus, int, error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for steps := 1; ; steps++ {
		start := time.Now()
		st, err := lb.EnsureLoadBalancer(t.Context(), "conformance", get(), s.target.Nodes)
		took := time.Since(start)
		assert.Less(t, took, maxStep, "step %d waited for the cloud", steps)
		var retry *api.RetryError
		switch {
		case err == nil:
			require.NotNil(t, st)
			require.NotEmpty(t, st.Ingress, "a converged load balancer has an address")
			return st, steps, nil
		case errors.As(err, &retry):
		default:
			_, problem := outcome.AsProblem(err)
			require.True(t, problem, "step %d: %v", steps, err)
			return nil, steps, err
		}
		require.True(t, time.Now().Before(deadline), "not converged after %d steps: %v", steps, err)
		time.Sleep(100 * time.Millisecond)
	}
}

// remove calls EnsureLoadBalancerDeleted until it answers nil.
func (s *suite) remove(t *testing.T, lb cloudprovider.LoadBalancer, svc *v1.Service) {
	t.Helper()
	s.removeAs(t, lb, func() *v1.Service { return s.fresh(t, svc) })
}

func (s *suite) removeAs(t *testing.T, lb cloudprovider.LoadBalancer, get func() *v1.Service) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		start := time.Now()
		err := lb.EnsureLoadBalancerDeleted(t.Context(), "conformance", get())
		assert.Less(t, time.Since(start), maxStep, "a deletion step waited for the cloud")
		if err == nil {
			return
		}
		var retry *api.RetryError
		require.ErrorAs(t, err, &retry)
		require.True(t, time.Now().Before(deadline), "not deleted: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *suite) build(t *testing.T) {
	ns := s.kube.Namespace(t)
	lb := s.cloud(t, "uid-"+ns)
	svc := s.service(t, ns, "web", nil)

	st, steps := s.ensure(t, lb, svc)
	if s.target.Busy {
		assert.Greater(t, steps, 1, "a load balancer that takes time is answered with a RetryError first")
	}

	// Busy → retry: a Service whose load balancer is being changed writes
	// nothing while the cloud works. (A fresh Service: its build is under
	// way after the first step.)
	if s.target.Busy {
		other := s.service(t, ns, "busy", nil)
		_, err := lb.EnsureLoadBalancer(t.Context(), "conformance", s.fresh(t, other), s.target.Nodes)
		var retry *api.RetryError
		require.ErrorAs(t, err, &retry, "the first step starts the build")
		_, before := s.counts()
		_, err = lb.EnsureLoadBalancer(t.Context(), "conformance", s.fresh(t, other), s.target.Nodes)
		require.ErrorAs(t, err, &retry, "the cloud is still at work")
		_, after := s.counts()
		assert.Equal(t, before, after, "a call while the cloud works writes nothing")
		s.ensure(t, lb, other)
		s.remove(t, lb, other)
	}

	// Unchanged: no write, and the same address.
	for range 2 {
		_, before := s.counts()
		again, err := lb.EnsureLoadBalancer(t.Context(), "conformance", s.fresh(t, svc), s.target.Nodes)
		require.NoError(t, err)
		_, after := s.counts()
		assert.Equal(t, before, after, "an unchanged Service makes no write")
		assert.Equal(t, st.Ingress, again.Ingress, "the address stays")
	}
	got, exists, err := lb.GetLoadBalancer(t.Context(), "conformance", s.fresh(t, svc))
	require.NoError(t, err)
	assert.True(t, exists)
	if exists {
		assert.Equal(t, st.Ingress, got.Ingress)
	}
	s.remove(t, lb, svc)
}

func (s *suite) invalid(t *testing.T) {
	ns := s.kube.Namespace(t)
	lb := s.cloud(t, "uid-"+ns)
	svc := s.service(t, ns, "refused", map[string]string{s.target.Invalid[0]: s.target.Invalid[1]})
	reads, writes := s.counts()
	_, err := lb.EnsureLoadBalancer(t.Context(), "conformance", s.fresh(t, svc), s.target.Nodes)
	p, ok := outcome.AsProblem(err)
	require.True(t, ok, "a Problem, not %v", err)
	assert.Equal(t, outcome.ReasonInvalidAnnotation, p.Reason)
	assert.Contains(t, p.Message, s.target.Invalid[0], "the message names the annotation")
	r2, w2 := s.counts()
	assert.Equal(t, writes, w2, "nothing is written for a refused Service")
	assert.Equal(t, reads, r2, "nothing is even read for a refused Service")
	require.NoError(t, lb.EnsureLoadBalancerDeleted(t.Context(), "conformance", s.fresh(t, svc)),
		"a Service that never had a load balancer is deleted at once")
}

func (s *suite) delete(t *testing.T) {
	ns := s.kube.Namespace(t)
	lb := s.cloud(t, "uid-"+ns)
	var before map[string]int
	if s.target.Objects != nil {
		before = s.target.Objects()
	}
	svc := s.service(t, ns, "gone", nil)
	s.ensure(t, lb, svc)
	if before != nil {
		assert.NotEqual(t, before, s.target.Objects(), "the load balancer is in the cloud")
	}
	s.remove(t, lb, svc)
	if before != nil {
		assert.Equal(t, before, s.target.Objects(), "nothing of the Service is left in the cloud")
	}
	_, exists, err := lb.GetLoadBalancer(t.Context(), "conformance", s.fresh(t, svc))
	require.NoError(t, err)
	assert.False(t, exists)

	_, writes := s.counts()
	require.NoError(t, lb.EnsureLoadBalancerDeleted(t.Context(), "conformance", s.fresh(t, svc)), "deleting again")
	_, after := s.counts()
	assert.Equal(t, writes, after, "deleting again writes nothing")
}

// isolation: two clusters of one account (two UIDs, the same --cluster-name)
// each with a Service of the same namespace and name. Ours builds its own load
// balancer or refuses with a Problem, never takes theirs; deleting ours leaves
// theirs as it was, at its address.
func (s *suite) isolation(t *testing.T) {
	if !s.target.Shared {
		t.Skip("the cloud is not shared by clusters")
	}
	ns := s.kube.Namespace(t)
	svc := s.service(t, ns, "twin", nil)
	// Theirs: the same Service in another cluster (another UID), whose
	// records live in that cluster (none here).
	twin := svc.DeepCopy()
	twin.UID = uuid.NewUUID()
	theirs := s.cloudOf(t, "uid-b-"+ns, nil)
	getTwin := func() *v1.Service { return twin.DeepCopy() }
	stTheirs, _, err := s.ensureAs(t, theirs, getTwin)
	require.NoError(t, err)
	var objects map[string]int
	if s.target.Objects != nil {
		objects = s.target.Objects()
	}

	ours := s.cloud(t, "uid-a-"+ns)
	stOurs, _, err := s.ensureAs(t, ours, func() *v1.Service { return s.fresh(t, svc) })
	if err == nil {
		assert.NotEqual(t, stTheirs.Ingress, stOurs.Ingress, "ours is a load balancer of its own")
	}
	s.remove(t, ours, svc)
	if objects != nil {
		assert.Equal(t, objects, s.target.Objects(), "deleting ours left theirs whole")
	}
	got, exists, err := theirs.GetLoadBalancer(t.Context(), "conformance", getTwin())
	require.NoError(t, err)
	require.True(t, exists, "theirs is still there")
	assert.Equal(t, stTheirs.Ingress, got.Ingress)
	s.removeAs(t, theirs, getTwin)
}
