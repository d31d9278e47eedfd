package oci

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// lostAttempt is the client's attempt timeout in these tests, and lostLate
// how late a Late write is carried out: after the client gave up.
const (
	lostAttempt = 250 * time.Millisecond
	lostLate    = 700 * time.Millisecond
)

// lostScenario is a Service built in two steps: made as annotations say,
// then changed by change (which makes the load balancer's children one by
// one: backend sets, listeners, certificates, rule sets).
type lostScenario struct {
	name        string
	annotations map[string]string
	change      func(svc *v1.Service)
	// backendNSG: the Service names a backend NSG (NSG mode).
	backendNSG bool
}

func lostScenarios() []lostScenario {
	secondPort := func(svc *v1.Service) {
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "tls", Protocol: v1.ProtocolTCP, Port: 443, NodePort: svc.Spec.Ports[0].NodePort + 1000})
		svc.Spec.Ports[0].Name = "web"
	}
	return []lostScenario{
		{name: "load balancer", change: func(svc *v1.Service) {
			secondPort(svc)
			svc.Annotations["service.beta.kubernetes.io/oci-load-balancer-ssl-ports"] = "443"
			svc.Annotations["service.beta.kubernetes.io/oci-load-balancer-tls-secret"] = "lost-tls"
			svc.Annotations["service.beta.kubernetes.io/oci-load-balancer-backend-protocol"] = "HTTP"
			svc.Annotations["oci.oraclecloud.com/oci-load-balancer-rule-sets"] = `{"hdr": {"items": [{"action": "ADD_HTTP_REQUEST_HEADER", "header": "X-A", "value": "1"}]}}`
		}},
		{name: "network load balancer", annotations: map[string]string{
			"oci.oraclecloud.com/load-balancer-type":                                  "nlb",
			"oci-network-load-balancer.oraclecloud.com/security-list-management-mode": "All",
		}, change: secondPort},
		{name: "NSG mode", annotations: map[string]string{"oci.oraclecloud.com/security-rule-management-mode": "NSG"},
			change: secondPort, backendNSG: true},
	}
}

// Every write the CCM makes to build a Service's load balancer and change
// it (a port added, with its certificate and a rule set), its answer lost
// (carried out, the connection then cut) or late (carried out only after
// the CCM gave up waiting, so that its next pass does not see it yet), ends
// as the same run without the fault ends: one load balancer with the same
// children, the same security rules with the Service's marks, one frontend
// NSG, the address served; deleting the Service then leaves nothing. The
// writes are those the run without faults makes (the emulator's count of
// them), of each kind of load balancer and of NSG mode.
func TestEveryWriteSurvivesALostAnswer(t *testing.T) {
	for _, sc := range lostScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel() // each on an emulator of its own
			r := newLostRun(t, sc)
			clean, routes := r.build(t, nil)
			require.NotEmpty(t, routes)
			t.Logf("%d writes: %s", len(routes), strings.Join(routes, "; "))
			for _, route := range routes {
				for _, w := range []struct {
					how   string
					fault core.Fault
				}{
					{"lost", core.Fault{Lost: true}},
					{"late", core.Fault{Late: lostLate}},
				} {
					t.Run(w.how+" "+route, func(t *testing.T) {
						f := w.fault
						f.Route, f.Count = route, 1
						got, _ := r.build(t, &f)
						assert.Equal(t, clean, got, "what the Service has in the cloud")
					})
				}
			}
		})
	}
}

// lostRun is a cloud on an emulator of its own, building Services of a
// scenario one after the other.
type lostRun struct {
	sc    lostScenario
	e     *emulator.Emulator
	c     *Cloud
	kube  *fake.Clientset
	nodes []*v1.Node
	back  string // the backend NSG
	n     int
}

func newLostRun(t *testing.T, sc lostScenario) *lostRun {
	e := startEmulator(t)
	r := &lostRun{sc: sc, e: e, c: clusterCloud(t, e, "lost-cluster")}
	r.c.api.(*ociapi.Client).SetAttemptTimeout(lostAttempt)
	crt, key := selfSigned(t)
	r.kube = fake.NewClientset(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lost-tls"},
		Type: v1.SecretTypeTLS, Data: map[string][]byte{v1.TLSCertKey: crt, v1.TLSPrivateKeyKey: key}})
	r.c.SetKube(r.kube)
	r.nodes = []*v1.Node{machineNode(e, "lost-a"), machineNode(e, "lost-b")}
	if sc.backendNSG {
		f := e.Fixture()
		g, err := r.c.api.CreateNSG(t.Context(), f.CompartmentID, f.VCNID, "nodes", nil, "")
		require.NoError(t, err)
		r.back = g.ID
	}
	return r
}

// build makes a new Service with fault injected (nil: none), and says what
// of it is in the cloud once it converged, and the routes it wrote.
func (r *lostRun) build(t *testing.T, fault *core.Fault) (map[string]string, []string) {
	r.n++
	svc := lbSvc(fmt.Sprintf("lost-%d", r.n), fmt.Sprintf("uid-lost-%d", r.n), int32(30100+r.n))
	svc.Annotations = maps.Clone(r.sc.annotations)
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	if r.back != "" {
		svc.Annotations["oci.oraclecloud.com/oci-backend-network-security-group"] = r.back
	}
	_, err := r.kube.CoreV1().Services(svc.Namespace).Create(t.Context(), svc, metav1.CreateOptions{})
	require.NoError(t, err)
	before := r.e.Objects()
	r.e.ResetCalls()
	if fault != nil {
		r.e.InjectFault(*fault)
		t.Cleanup(r.e.ClearFaults)
	}
	addr := r.converge(t, svc)
	fresh := providertest.Reread(t, r.kube, svc)
	r.sc.change(fresh)
	_, err = r.kube.CoreV1().Services(svc.Namespace).Update(t.Context(), fresh, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, addr, r.converge(t, svc), "the address stays")
	routes := writeRoutes(r.e)
	time.Sleep(lostLate + 300*time.Millisecond) // a late write lands
	held := r.settled(t, svc, addr)
	r.remove(t, svc)
	assert.Equal(t, before, r.e.Objects(), "deleting the Service leaves nothing")
	return held, routes
}

// writeRoutes are the routes of the writes the emulator answered.
func writeRoutes(e *emulator.Emulator) []string {
	var routes []string
	for _, call := range e.Calls() {
		if call.Method != http.MethodGet && call.Code < 300 && !slices.Contains(routes, call.Route) {
			routes = append(routes, call.Route)
		}
	}
	return routes
}

// converge runs the Service's passes until one ends without an error, and
// says the address it is served at.
func (r *lostRun) converge(t *testing.T, svc *v1.Service) string {
	t.Helper()
	var last error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		fresh := providertest.Reread(t, r.kube, svc)
		st, err := r.c.EnsureLoadBalancer(t.Context(), "kubernetes", fresh, r.nodes)
		if last = err; err == nil {
			require.NotEmpty(t, st.Ingress)
			fresh.Status.LoadBalancer = *st
			_, err := r.kube.CoreV1().Services(svc.Namespace).UpdateStatus(t.Context(), fresh, metav1.UpdateOptions{})
			require.NoError(t, err)
			return st.Ingress[0].IP
		}
	}
	require.NoError(t, last, "the Service is served")
	return ""
}

// settled is what the Service has in the cloud once its passes after a
// late write resolved what it left, its address kept.
func (r *lostRun) settled(t *testing.T, svc *v1.Service, addr string) map[string]string {
	var held map[string]string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		require.Equal(t, addr, r.converge(t, svc), "the address stays")
		r.c.lb.Relist()
		held = r.held(t, svc)
		if held["load balancers"] == "1" && held["frontend NSGs"] != "2" || time.Now().After(deadline) {
			return held
		}
	}
}

// held is what the Service has in the cloud: its load balancers, their
// children by name, its marked security rules and NSG rules, its NSGs.
func (r *lostRun) held(t *testing.T, svc *v1.Service) map[string]string {
	ctx := t.Context()
	out := map[string]string{}
	var lbs []ociapi.LB
	for _, kind := range []string{ociapi.KindLB, ociapi.KindNLB} {
		list, err := r.c.api.LoadBalancers(ctx, kind, ociapi.With(ociapi.InCompartment(r.e.Fixture().CompartmentID), "displayName", nameOf(svc, kind)))
		require.NoError(t, err)
		lbs = append(lbs, slices.DeleteFunc(list, func(lb ociapi.LB) bool { return lb.LifecycleState == "DELETED" })...)
	}
	out["load balancers"] = fmt.Sprint(len(lbs))
	for _, lb := range lbs {
		out["backend sets"] += strings.Join(slices.Sorted(maps.Keys(lb.BackendSets)), ",") + ";"
		out["listeners"] += strings.Join(slices.Sorted(maps.Keys(lb.Listeners)), ",") + ";"
		out["certificates"] += fmt.Sprint(len(lb.Certificates)) + ";"
		out["rule sets"] += strings.Join(slices.Sorted(maps.Keys(lb.RuleSets)), ",") + ";"
		for _, bs := range lb.BackendSets {
			out["backends"] += fmt.Sprint(len(bs.Backends)) + ";"
		}
	}
	in, eg := r.e.SecurityListRules(r.e.Fixture().SecurityListID)
	out["security-list rules"] = fmt.Sprint(countMarked(append(in, eg...), `"description":"`+r.c.lb.mark(svc)))
	groups, err := r.c.api.NSGs(ctx, ociapi.InCompartment(r.e.Fixture().CompartmentID))
	require.NoError(t, err)
	fronts, rules := 0, 0
	for _, g := range groups {
		if g.FreeformTags["ServiceUid"] == string(svc.UID) {
			fronts++
		}
		have, err := r.c.api.NSGRules(ctx, g.ID)
		require.NoError(t, err)
		for _, rule := range have {
			if r.c.lb.isOurs(rule, svc) {
				rules++
			}
		}
	}
	out["frontend NSGs"], out["NSG rules"] = fmt.Sprint(fronts), fmt.Sprint(rules)
	return out
}

func countMarked(rules []string, mark string) (n int) {
	for _, r := range rules {
		if strings.Contains(r, mark) {
			n++
		}
	}
	return n
}

// remove deletes the Service's load balancer until the CCM says it is gone.
func (r *lostRun) remove(t *testing.T, svc *v1.Service) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		fresh := providertest.Reread(t, r.kube, svc)
		if err = r.c.EnsureLoadBalancerDeleted(t.Context(), "kubernetes", fresh); err == nil {
			break
		}
	}
	require.NoError(t, err)
	require.NoError(t, r.kube.CoreV1().Services(svc.Namespace).Delete(t.Context(), svc.Name, metav1.DeleteOptions{}))
}

// selfSigned is a self-signed certificate and its key, PEM.
func selfSigned(t *testing.T) (crt, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lost.example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), DNSNames: []string{"lost.example"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})
}

// newToken is a retry token of its own, for a create a test makes by hand.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
