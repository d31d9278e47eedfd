package oci

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// workloadCluster is a cluster on an emulator that is OKE's workload
// identity endpoint too: a cloud signing with an API key, its clientset,
// whose TokenRequests the emulator's cluster issues, and a Node.
type workloadCluster struct {
	e     *emulator.Emulator
	c     *Cloud
	kube  *fake.Clientset
	nodes []*v1.Node
	// forged are ServiceAccounts whose TokenRequests give a token the
	// cluster did not issue; tokens counts the TokenRequests.
	mu     sync.Mutex
	forged map[string]bool
	tokens int
}

// newWorkloadCluster starts it, the sessions lasting lifetime (0: 20 minutes).
func newWorkloadCluster(t *testing.T, lifetime time.Duration) *workloadCluster {
	t.Helper()
	e, err := emulator.New(emulator.Options{WorkloadIdentity: true, SessionLifetime: lifetime})
	e = coretest.Serve(t, e, err)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(ca, e.CA(), 0o600))
	t.Setenv(ociapi.EnvCAPath, ca)
	config := e.CloudConfig() + "  workloadIdentity: " + e.WorkloadIdentityURL() + "\n" + unlimited
	wc := &workloadCluster{e: e, c: cloudOn(t, config), kube: fake.NewClientset(), forged: map[string]bool{}}
	wc.c.SetClusterUID("workload-cluster")
	wc.c.SetKube(wc.kube)
	wc.kube.PrependReactor("create", "serviceaccounts", wc.tokenRequest)
	wc.nodes = []*v1.Node{machineNode(e, "node-a")}
	return wc
}

// tokenRequest answers a TokenRequest as the API server: 404 for a
// ServiceAccount that does not exist, else a token the emulator's cluster
// issued for it, lasting as long as asked.
func (wc *workloadCluster) tokenRequest(action k8stesting.Action) (bool, runtime.Object, error) {
	create, ok := action.(k8stesting.CreateActionImpl)
	if !ok || action.GetSubresource() != "token" {
		return false, nil, nil
	}
	ns, name := action.GetNamespace(), create.Name
	if _, err := wc.kube.Tracker().Get(v1.SchemeGroupVersion.WithResource("serviceaccounts"), ns, name); err != nil {
		return true, nil, apierrors.NewNotFound(v1.Resource("serviceaccounts"), name)
	}
	tr := create.GetObject().(*authv1.TokenRequest).DeepCopy()
	wc.mu.Lock()
	defer wc.mu.Unlock()
	wc.tokens++
	tr.Status.Token = wc.e.ServiceAccountToken(ns, name, time.Duration(*tr.Spec.ExpirationSeconds)*time.Second)
	if wc.forged[name] {
		tr.Status.Token = "forged." + tr.Status.Token
	}
	return true, tr, nil
}

func (wc *workloadCluster) serviceAccount(t *testing.T, name string) {
	t.Helper()
	_, err := wc.kube.CoreV1().ServiceAccounts("default").Create(t.Context(), &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// service adds a Service whose load balancer is made as ServiceAccount sa
// ("" for none).
func (wc *workloadCluster) service(t *testing.T, name, sa string, nodePort int32) *v1.Service {
	t.Helper()
	svc := lbSvc(name, "uid-"+name, nodePort)
	if sa != "" {
		svc.Annotations = map[string]string{string(annotation.OCIWorkloadServiceAccount): sa}
	}
	_, err := wc.kube.CoreV1().Services(svc.Namespace).Create(t.Context(), svc, metav1.CreateOptions{})
	require.NoError(t, err)
	return svc
}

func (wc *workloadCluster) ensure(t *testing.T, svc *v1.Service) {
	t.Helper()
	untilDone(t, func() error {
		_, err := wc.c.EnsureLoadBalancer(t.Context(), "kubernetes", providertest.Reread(t, wc.kube, svc), wc.nodes)
		return err
	})
}

// byPrincipal counts the requests of each service by each principal.
func byPrincipal(e *emulator.Emulator) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, r := range e.Requests() {
		if out[r.Service] == nil {
			out[r.Service] = map[string]int{}
		}
		out[r.Service][r.Principal]++
	}
	return out
}

// lbNamed is the id of the load balancer named name, as the CCM sees it.
func lbNamed(t *testing.T, e *emulator.Emulator, c *Cloud, name string) string {
	t.Helper()
	lbs, err := c.api.LoadBalancers(t.Context(), ociapi.KindLB, ociapi.InCompartment(e.Fixture().CompartmentID))
	require.NoError(t, err)
	for _, lb := range lbs {
		if lb.DisplayName == name {
			return lb.ID
		}
	}
	t.Fatalf("no load balancer %s", name)
	return ""
}

// A Service naming a ServiceAccount has its load balancer made, read and
// deleted as that ServiceAccount's workload, as the peer does; everything
// else (instances, subnets, security lists) is the CCM's own call.
func TestAServicesLoadBalancerIsMadeAsItsServiceAccount(t *testing.T) {
	wc := newWorkloadCluster(t, 0)
	wc.serviceAccount(t, "lb-maker")
	svc := wc.service(t, "web", "lb-maker", 30080)
	ccm, workload := "user:"+wc.e.Fixture().UserID, emulator.WorkloadPrincipal("default", "lb-maker")
	wc.e.ResetRequests()

	wc.ensure(t, svc)
	made := byPrincipal(wc.e)
	id := lbNamed(t, wc.e, wc.c, nameOf(svc, ociapi.KindLB))
	assert.Equal(t, workload, wc.e.CreatedBy(id))
	wc.e.ResetRequests()
	untilDone(t, func() error {
		return wc.c.EnsureLoadBalancerDeleted(t.Context(), "kubernetes", providertest.Reread(t, wc.kube, svc))
	})
	for what, calls := range map[string]map[string]map[string]int{"made": made, "deleted": byPrincipal(wc.e)} {
		assert.Equal(t, []string{workload}, keys(calls["loadbalancer"]), "%s: every Load Balancer API call as the workload", what)
		assert.Positive(t, calls["loadbalancer"][workload], what)
		assert.Equal(t, []string{ccm}, keys(calls["network"]), "%s: the network's calls as the CCM", what)
	}
	assert.Equal(t, []string{ccm}, keys(made["compute"]), "the instances read as the CCM")
	assert.Equal(t, 1, wc.tokens, "one TokenRequest, its session kept")
}

// Two Services, two ServiceAccounts: each load balancer is its own
// workload's, and a Service without the annotation stays the CCM's.
func TestTwoServicesTwoServiceAccounts(t *testing.T) {
	wc := newWorkloadCluster(t, 0)
	wc.serviceAccount(t, "team-a")
	wc.serviceAccount(t, "team-b")
	a, b, plain := wc.service(t, "a", "team-a", 30080), wc.service(t, "b", "team-b", 30081), wc.service(t, "plain", "", 30082)
	for _, svc := range []*v1.Service{a, b, plain} {
		wc.ensure(t, svc)
	}
	assert.Equal(t, emulator.WorkloadPrincipal("default", "team-a"), wc.e.CreatedBy(lbNamed(t, wc.e, wc.c, nameOf(a, ociapi.KindLB))))
	assert.Equal(t, emulator.WorkloadPrincipal("default", "team-b"), wc.e.CreatedBy(lbNamed(t, wc.e, wc.c, nameOf(b, ociapi.KindLB))))
	assert.Equal(t, "user:"+wc.e.Fixture().UserID, wc.e.CreatedBy(lbNamed(t, wc.e, wc.c, nameOf(plain, ociapi.KindLB))))
	for _, p := range []string{"team-a", "team-b"} {
		st, found, err := wc.c.GetLoadBalancer(t.Context(), "kubernetes", providertest.Reread(t, wc.kube, map[string]*v1.Service{"team-a": a, "team-b": b}[p]))
		require.NoError(t, err)
		assert.True(t, found)
		assert.NotEmpty(t, st.Ingress)
	}
}

// A ServiceAccount that does not exist, or whose exchange is refused, is
// the Service's Warning: nothing is written, and no token is in the message.
func TestAServiceAccountThatGivesNoSessionIsAWarning(t *testing.T) {
	wc := newWorkloadCluster(t, 0)
	wc.serviceAccount(t, "stranger")
	wc.forged["stranger"] = true
	for sa, says := range map[string]string{"missing": "ServiceAccount default/missing does not exist", "stranger": "401"} {
		svc := wc.service(t, "web-"+sa, sa, 30080)
		before := apiWrites(wc.e)
		_, err := wc.c.EnsureLoadBalancer(t.Context(), "kubernetes", providertest.Reread(t, wc.kube, svc), wc.nodes)
		require.Error(t, err)
		p, ok := outcome.AsProblem(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, reasonWorkloadIdentity, p.Reason)
		assert.Contains(t, err.Error(), says)
		assert.Contains(t, err.Error(), "nothing was built or changed")
		assert.NotContains(t, err.Error(), "eyJ", "no token (a JWT) in the message")
		assert.Equal(t, before, apiWrites(wc.e), "nothing written")
	}
}

// The workload's session is renewed before it expires, with a new
// TokenRequest.
func TestTheWorkloadsSessionIsRenewed(t *testing.T) {
	wc := newWorkloadCluster(t, 2*time.Second)
	wc.serviceAccount(t, "lb-maker")
	svc := wc.service(t, "web", "lb-maker", 30080)
	wc.ensure(t, svc)
	before := wc.tokens
	time.Sleep(1100 * time.Millisecond) // past the half of its life
	wc.e.ResetRequests()
	_, found, err := wc.c.GetLoadBalancer(t.Context(), "kubernetes", providertest.Reread(t, wc.kube, svc))
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, before+1, wc.tokens, "renewed once, with a new token")
	assert.Equal(t, []string{emulator.WorkloadPrincipal("default", "lb-maker")}, keys(byPrincipal(wc.e)["loadbalancer"]))
}

// A CCM whose policies cover no load balancer still serves a Service whose
// workload's do: its load balancer is read as the workload, not looked for
// in the CCM's shared listing, so it is found and not made twice.
func TestAWorkloadsLoadBalancerIsNotLookedForInTheSharedListing(t *testing.T) {
	wc := newWorkloadCluster(t, 0)
	e := wc.e
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	user, fp := e.AddUser(&key.PublicKey, "compute", "network", "identity")
	f := e.Fixture()
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	conf := e.CloudConfig() + "  workloadIdentity: " + e.WorkloadIdentityURL() + "\n" + unlimited
	conf = strings.NewReplacer(f.UserID, user, f.Fingerprint, fp,
		strings.ReplaceAll(strings.TrimSpace(f.PrivateKeyPEM), "\n", "\n    "), strings.ReplaceAll(strings.TrimSpace(pemKey), "\n", "\n    ")).Replace(conf)
	wc.c = cloudOn(t, conf)
	wc.c.SetClusterUID("workload-cluster")
	wc.c.SetKube(wc.kube)
	wc.serviceAccount(t, "lb-maker")
	svc := wc.service(t, "web", "lb-maker", 30080)

	wc.ensure(t, svc)
	wc.ensure(t, svc)
	creates := 0
	for _, r := range e.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/loadBalancers") {
			creates++
		}
	}
	assert.Equal(t, 1, creates, "made once")
}

// apiWrites counts the calls of OCI's APIs that change something (not the
// exchanges at the workload identity endpoint).
func apiWrites(e *emulator.Emulator) (n int) {
	for _, c := range e.Calls() {
		if c.Method != http.MethodGet && c.Service != "workloadidentity" {
			n += c.Count
		}
	}
	return n
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
