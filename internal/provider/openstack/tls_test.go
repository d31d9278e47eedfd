package openstack

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/annotation"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/selfsigned"
)

// selfSigned is a PEM certificate and its PEM key for name.
func selfSigned(t *testing.T, name string) (cert, key []byte) {
	t.Helper()
	cert, key, err := selfsigned.Pair(name)
	require.NoError(t, err)
	return cert, key
}

// storeContainer stores cert and key in Barbican as c's user, as a person
// would for default-tls-container-ref; deleted at the end of the test.
func storeContainer(t *testing.T, c *Cloud, name string, cert, key []byte) string {
	t.Helper()
	km, err := clientOf(c).KeyManagerClient(t.Context())
	require.NoError(t, err)
	ref, err := c.lb.putCertificate(t.Context(), name, cert, key, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		if ct, err := containers.Get(ctx, km, lastSegment(ref)).Extract(); err == nil {
			_ = containers.Delete(ctx, km, lastSegment(ref)).ExtractErr()
			for _, s := range ct.SecretRefs {
				_ = secrets.Delete(ctx, km, lastSegment(s.SecretRef)).ExtractErr()
			}
		}
	})
	return ref
}

// tlsListeners is each listener as "PROTO/port" with its certificate, and
// each pool's protocol by its listener's port.
func tlsListeners(t *testing.T, octavia *gophercloud.ServiceClient, lbID string) (map[string]string, map[int]string) {
	t.Helper()
	ls := sdkAll(t, listeners.List(octavia, listeners.ListOpts{LoadbalancerID: lbID}), listeners.ExtractListeners)
	out, poolProto := map[string]string{}, map[int]string{}
	for _, l := range ls {
		out[l.Protocol+"/"+strconv.Itoa(l.ProtocolPort)] = l.DefaultTlsContainerRef
		if l.DefaultPoolID != "" {
			p, err := pools.Get(t.Context(), octavia, l.DefaultPoolID).Extract()
			require.NoError(t, err)
			poolProto[l.ProtocolPort] = p.Protocol
		}
	}
	return out, poolProto
}

// storedNames are the names of the Barbican containers and secrets of the
// Service's certificates, without the prefix and the cluster's UID.
func storedNames(t *testing.T, c *Cloud, svc *v1.Service) []string {
	t.Helper()
	objs, err := c.lb.storedObjects(t.Context())
	require.NoError(t, err)
	var out []string
	for _, o := range objs {
		if !strings.HasPrefix(o.name, storedPrefix(svc.UID)) {
			continue
		}
		kind := "secret"
		if o.kind == kindContainer {
			kind = "container"
		}
		out = append(out, kind+" "+strings.Replace(strings.TrimPrefix(o.name, storedPrefix(svc.UID)), "_"+c.Cluster.Get(), "", 1))
	}
	return out
}

// cleanupLB deletes the Service's load balancer at the end of a test (whose
// context is over by then), within a bound.
func cleanupLB(c *Cloud, svc *v1.Service) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		if err := c.EnsureLoadBalancerDeleted(ctx, "contract", svc); err == nil {
			if _, exists, err := c.GetLoadBalancer(ctx, "contract", svc); err == nil && !exists {
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func tlsService(name string, annotations map[string]string) *v1.Service {
	svc := contractService(name, annotations)
	svc.Spec.Ports = []v1.ServicePort{
		{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080},
		{Name: "https", Protocol: v1.ProtocolTCP, Port: 443, NodePort: 30443},
		{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053},
	}
	return svc
}

// A named container: only the ports of tls-ports terminate TLS (its pool
// HTTP), the other TCP port stays TCP, UDP stays UDP; the container is left
// as it was when the Service goes.
func TestContractTLSContainerOnTheNamedPorts(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloudFrom(t, tg.passwordConf)
	node := tg.server(t, contractName("tls-node"))
	nodes := []*v1.Node{contractNode(node.name, "openstack:///"+node.id, node.fixedIP)}
	cert, key := selfSigned(t, "web.example")
	ref := storeContainer(t, c, contractName("by-hand"), cert, key)

	svc := tlsService(contractName("tls"), map[string]string{
		string(annotation.OpenStackDefaultTLSContainerRef): ref,
		string(annotation.OpenStackTLSPorts):               "443",
	})
	ensure(t, c, svc, nodes)
	t.Cleanup(func() { cleanupLB(c, svc) })
	lb, err := c.lb.findLB(t.Context(), svc)
	require.NoError(t, err)
	require.NotNil(t, lb)
	ls, poolProto := tlsListeners(t, tg.octavia(t, c), lb.ID)
	assert.Equal(t, map[string]string{"TCP/80": "", "TERMINATED_HTTPS/443": ref, "UDP/53": ""}, ls)
	assert.Equal(t, map[int]string{80: "TCP", 443: "HTTP", 53: "UDP"}, poolProto)

	// Every TCP port when tls-ports goes.
	delete(svc.Annotations, string(annotation.OpenStackTLSPorts))
	ensure(t, c, svc, nodes)
	ls, poolProto = tlsListeners(t, tg.octavia(t, c), lb.ID)
	assert.Equal(t, map[string]string{"TERMINATED_HTTPS/80": ref, "TERMINATED_HTTPS/443": ref, "UDP/53": ""}, ls)
	assert.Equal(t, map[int]string{80: "HTTP", 443: "HTTP", 53: "UDP"}, poolProto)

	deleteLB(t, c, svc)
	km, err := clientOf(c).KeyManagerClient(t.Context())
	require.NoError(t, err)
	_, err = containers.Get(t.Context(), km, lastSegment(ref)).Extract()
	assert.NoError(t, err, "a container the Service named is not ours to delete")
}

// A reference Barbican does not have is refused before anything is built.
func TestContractTLSMissingContainerBuildsNothing(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloudFrom(t, tg.passwordConf)
	km, err := clientOf(c).KeyManagerClient(t.Context())
	require.NoError(t, err)
	ref := strings.TrimSuffix(km.Endpoint, "/") + "/containers/0b5d8f3e-8a3c-4c1e-9f0e-2b7d6c5a4e31"
	svc := tlsService(contractName("tls-missing"), map[string]string{string(annotation.OpenStackDefaultTLSContainerRef): ref})
	refusedBuildingNothing(t, c, svc, outcome.ReasonInvalidAnnotation, "is not in Barbican")
}

// refusedBuildingNothing: ensuring svc is a problem of reason whose message
// says msg, and builds no load balancer.
func refusedBuildingNothing(t *testing.T, c *Cloud, svc *v1.Service, reason, msg string) {
	t.Helper()
	_, err := c.EnsureLoadBalancer(t.Context(), "contract", svc, nil)
	p, ok := outcome.AsProblem(err)
	require.True(t, ok, "a problem, not %v", err)
	assert.Equal(t, reason, p.Reason)
	assert.Contains(t, p.Message, msg)
	lb, err := c.lb.findLB(t.Context(), svc)
	require.NoError(t, err)
	assert.Nil(t, lb, "nothing was built")
}

// With an application credential Octavia cannot read any certificate (its
// ACL step re-scopes the caller's token, which Keystone refuses for such a
// token): the Service is told why and what to do.
func TestContractTLSWithAnApplicationCredentialIsExplained(t *testing.T) {
	tg := newContractTarget(t)
	byPassword := tg.cloudFrom(t, tg.passwordConf)
	cert, key := selfSigned(t, "app.example")
	ref := storeContainer(t, byPassword, contractName("app-cred"), cert, key)
	c := tg.cloud(t, "")
	svc := tlsService(contractName("tls-appcred"), map[string]string{string(annotation.OpenStackDefaultTLSContainerRef): ref})
	t.Cleanup(func() { cleanupLB(c, svc) })
	err := poll(2*time.Minute, func() error {
		_, err := c.EnsureLoadBalancer(t.Context(), "contract", svc, nil)
		if _, ok := outcome.AsProblem(err); ok {
			return backoffPermanent{err}
		}
		if err == nil {
			return backoffPermanent{err}
		}
		return err // still building (step by step): the listener comes
	})
	p, ok := outcome.AsProblem(err)
	require.True(t, ok, "a problem, not %v", err)
	assert.Equal(t, outcome.ReasonCloudRefused, p.Reason)
	assert.Contains(t, p.Message, "application credential")
}

// A kubernetes.io/tls Secret: stored in Barbican as the Service's own
// container, replaced when the Secret holds a new certificate (the old one
// deleted once no listener uses it), all of it deleted with the Service.
func TestContractTLSSecretIsStoredRotatedAndDeleted(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloudFrom(t, tg.passwordConf)
	node := tg.server(t, contractName("tls-node"))
	nodes := []*v1.Node{contractNode(node.name, "openstack:///"+node.id, node.fixedIP)}
	svc := tlsService(contractName("tls-secret"), map[string]string{
		string(annotation.OpenStackTLSSecret): "web-tls",
		string(annotation.OpenStackTLSPorts):  "443",
	})
	cert, key := selfSigned(t, "one.example")
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: "web-tls"}, Type: v1.SecretTypeTLS,
		Data: map[string][]byte{v1.TLSCertKey: cert, v1.TLSPrivateKeyKey: key}}
	kube := fake.NewClientset(sec, svc)
	c.SetKube(kube)

	ensure(t, c, svc, nodes)
	t.Cleanup(func() { cleanupLB(c, svc) })
	lb, err := c.lb.findLB(t.Context(), svc)
	require.NoError(t, err)
	require.NotNil(t, lb)
	first, _ := c.lb.tlsCerts.get(svc.UID)
	require.NotEmpty(t, first.ref)
	ls, _ := tlsListeners(t, tg.octavia(t, c), lb.ID)
	assert.Equal(t, first.ref, ls["TERMINATED_HTTPS/443"])
	assert.ElementsMatch(t, []string{"container " + first.hash, "secret " + first.hash + "_certificate", "secret " + first.hash + "_private_key"}, storedNames(t, c, svc))

	// Unchanged: no drift. A new certificate in the Secret: drift, a new
	// container on the listener, the old one gone.
	assert.Empty(t, c.lb.secretRotated(t.Context(), svc))
	cert2, key2 := selfSigned(t, "two.example")
	sec.Data = map[string][]byte{v1.TLSCertKey: cert2, v1.TLSPrivateKeyKey: key2}
	_, err = kube.CoreV1().Secrets(svc.Namespace).Update(t.Context(), sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Contains(t, c.lb.secretRotated(t.Context(), svc), "holds a new certificate")
	ensure(t, c, svc, nodes)
	second, _ := c.lb.tlsCerts.get(svc.UID)
	require.NotEqual(t, first.hash, second.hash)
	ls, _ = tlsListeners(t, tg.octavia(t, c), lb.ID)
	assert.Equal(t, second.ref, ls["TERMINATED_HTTPS/443"])
	assert.ElementsMatch(t, []string{"container " + second.hash, "secret " + second.hash + "_certificate", "secret " + second.hash + "_private_key"}, storedNames(t, c, svc))

	deleteLB(t, c, svc)
	assert.Empty(t, storedNames(t, c, svc), "nothing of the Service is left in Barbican")
}

// What a Secret cannot give is a Warning that never shows the key, and
// nothing is built.
func TestContractTLSSecretProblemsBuildNothing(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloudFrom(t, tg.passwordConf)
	cert, key := selfSigned(t, "one.example")
	_, otherKey := selfSigned(t, "other.example")
	for _, tc := range []struct {
		name string
		data map[string][]byte
		want string
	}{
		{"missing", nil, "does not exist"},
		{"no key", map[string][]byte{v1.TLSCertKey: cert}, "has no tls.crt or no tls.key"},
		{"wrong key", map[string][]byte{v1.TLSCertKey: cert, v1.TLSPrivateKeyKey: otherKey}, "does not hold a certificate and its key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := tlsService(contractName("tls-bad"), map[string]string{string(annotation.OpenStackTLSSecret): "web-tls"})
			kube := fake.NewClientset(svc)
			if tc.data != nil {
				_, err := kube.CoreV1().Secrets(svc.Namespace).Create(t.Context(), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: "web-tls"},
					Type: v1.SecretTypeTLS, Data: tc.data}, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			c.SetKube(kube)
			_, err := c.EnsureLoadBalancer(t.Context(), "contract", svc, nil)
			p, ok := outcome.AsProblem(err)
			require.True(t, ok, "a problem, not %v", err)
			assert.Equal(t, outcome.ReasonInvalidAnnotation, p.Reason)
			assert.Contains(t, p.Message, tc.want)
			assert.NotContains(t, p.Message, "PRIVATE KEY")
			assert.NotContains(t, p.Message, string(key[40:60]))
			lb, err := c.lb.findLB(t.Context(), svc)
			require.NoError(t, err)
			assert.Nil(t, lb)
		})
	}
}

// A cloud without Barbican: a Service asking for TLS is told so and nothing
// is built; deleting it is not held up by the missing Barbican.
func TestContractTLSWithoutBarbican(t *testing.T) {
	if os.Getenv("OVERCAST_CONTRACT_OPENSTACK_ENV") != "" {
		t.Skip("the real OpenStack has Barbican")
	}
	tg := newContractTargetWith(t, emulator.Options{NoKeyManager: true})
	c := tg.cloudFrom(t, tg.passwordConf)
	svc := tlsService(contractName("tls-none"), map[string]string{string(annotation.OpenStackTLSSecret): "web-tls"})
	cert, key := selfSigned(t, "one.example")
	c.SetKube(fake.NewClientset(svc, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: "web-tls"}, Type: v1.SecretTypeTLS,
		Data: map[string][]byte{v1.TLSCertKey: cert, v1.TLSPrivateKeyKey: key}}))
	refusedBuildingNothing(t, c, svc, outcome.ReasonUnsupportedService, "no key-manager")
	require.NoError(t, c.EnsureLoadBalancerDeleted(t.Context(), "contract", svc))
}
