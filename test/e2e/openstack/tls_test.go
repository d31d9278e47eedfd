package openstack

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/selfsigned"
)

func keyManagerClient(t *testing.T) *gophercloud.ServiceClient {
	t.Helper()
	c, err := gopenstack.NewKeyManagerV1(compute.ProviderClient, gophercloud.EndpointOpts{Region: osEnv["OS_REGION_NAME"]})
	require.NoError(t, err)
	return c
}

// certificate is a self-signed PEM certificate for name and its PEM key.
func certificate(t *testing.T, name string) (cert, key []byte) {
	t.Helper()
	cert, key, err := selfsigned.Pair(name)
	require.NoError(t, err)
	return cert, key
}

// barbicanNames is the name of every container and secret of the project.
func barbicanNames(t *testing.T, km *gophercloud.ServiceClient) []string {
	t.Helper()
	var out []string
	cp, err := containers.List(km, containers.ListOpts{Limit: 100}).AllPages(context.Background())
	require.NoError(t, err)
	cs, err := containers.ExtractContainers(cp)
	require.NoError(t, err)
	for _, c := range cs {
		out = append(out, "container "+c.Name)
	}
	sp, err := secrets.List(km, secrets.ListOpts{Limit: 100}).AllPages(context.Background())
	require.NoError(t, err)
	ss, err := secrets.ExtractSecrets(sp)
	require.NoError(t, err)
	for _, s := range ss {
		out = append(out, "secret "+s.Name)
	}
	return out
}

// tlsListener is the certificate and pool protocol of the load balancer's
// TERMINATED_HTTPS listener on port.
func tlsListener(t *testing.T, octavia *gophercloud.ServiceClient, lbID string, port int) (ref, poolProtocol string, err error) {
	t.Helper()
	pages, err := listeners.List(octavia, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(context.Background())
	require.NoError(t, err)
	ls, err := listeners.ExtractListeners(pages)
	require.NoError(t, err)
	for _, l := range ls {
		if l.ProtocolPort != port {
			continue
		}
		if l.Protocol != "TERMINATED_HTTPS" || l.DefaultPoolID == "" {
			return "", "", fmt.Errorf("listener %d is %s, pool %q", port, l.Protocol, l.DefaultPoolID)
		}
		p, err := pools.Get(context.Background(), octavia, l.DefaultPoolID).Extract()
		require.NoError(t, err)
		return l.DefaultTlsContainerRef, p.Protocol, nil
	}
	return "", "", fmt.Errorf("no listener on %d yet", port)
}

// storeByHand stores a self-signed certificate and its key in Barbican as a
// person does before naming the container in default-tls-container-ref: the
// container's reference (left for reset.sh).
func storeByHand(t *testing.T, km *gophercloud.ServiceClient, name string) string {
	t.Helper()
	cert, key := certificate(t, name+".example")
	var refs []containers.SecretRef
	for _, p := range []struct {
		name    string
		kind    secrets.SecretType
		payload []byte
	}{{"certificate", secrets.CertificateSecret, cert}, {"private_key", secrets.PrivateSecret, key}} {
		sec, err := secrets.Create(t.Context(), km, secrets.CreateOpts{Name: name + "-" + p.name, SecretType: p.kind,
			Payload: base64.StdEncoding.EncodeToString(p.payload), PayloadContentType: "application/octet-stream", PayloadContentEncoding: "base64"}).Extract()
		require.NoError(t, err)
		refs = append(refs, containers.SecretRef{Name: p.name, SecretRef: sec.SecretRef})
	}
	c, err := containers.Create(t.Context(), km, containers.CreateOpts{Type: containers.CertificateContainer, Name: name, SecretRefs: refs}).Extract()
	require.NoError(t, err)
	return c.ContainerRef
}

// TestTLSTerminationWithBarbican: on the real Octavia, validating
// certificates through the real Barbican, a Service naming a container gets
// a TERMINATED_HTTPS listener with it (and an HTTP pool); a Service naming a
// kubernetes.io/tls Secret gets it stored in Barbican, moved to a new
// container when the Secret is rotated (the old one deleted), and nothing of
// it left in Barbican once the Service is deleted. The CCM authenticates
// with a password: with an application credential this Octavia cannot read
// any certificate (see docs/openstack.md).
func TestTLSTerminationWithBarbican(t *testing.T) {
	octavia, km := octaviaClient(t), keyManagerClient(t)
	name := "os-tls-" + suffix()
	s := createServer(t, name)
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_PASSWORD_CONF"))
	opts.Controllers = []string{"cloud-node", "service"}
	opts.ExtraArgs = append(opts.ExtraArgs, "--load-balancer-drift-period=10s")
	env.StartCCM(t, opts)
	env.NewKubelet(t, name, s.fixedIP())
	waitInitialised(t, name)
	ns := lbNamespace(t)

	// A container a person stored.
	aContainerAPersonStored(t, octavia, km, ns, name)

	// A kubernetes.io/tls Secret.
	cert, key := certificate(t, "one.example")
	sec, err := env.Client.CoreV1().Secrets(ns).Create(t.Context(), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-tls", Namespace: ns},
		Type: v1.SecretTypeTLS, Data: map[string][]byte{v1.TLSCertKey: cert, v1.TLSPrivateKeyKey: key}}, metav1.CreateOptions{})
	require.NoError(t, err)
	svc, err := env.Client.CoreV1().Services(ns).Create(t.Context(), &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: ns, Annotations: map[string]string{
			"overcast.io/tls-secret": "web-tls", "overcast.io/tls-ports": "443"}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{
			{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}, {Name: "https", Protocol: v1.ProtocolTCP, Port: 443}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitIngress(t, ns, "own")
	prefix := "overcast-tls_" + string(svc.UID) + "_"
	ours := func() []string {
		var out []string
		for _, n := range barbicanNames(t, km) {
			if strings.Contains(n, prefix) {
				out = append(out, n)
			}
		}
		return out
	}
	var first string
	until(t, "the Secret's certificate stored and on the 443 listener", func() error {
		lbs := lbOf(t, octavia, svc)
		if len(lbs) != 1 {
			return fmt.Errorf("%d load balancers", len(lbs))
		}
		ref, proto, err := tlsListener(t, octavia, lbs[0].ID, 443)
		if err != nil {
			return err
		}
		if proto != "HTTP" || len(ours()) != 3 {
			return fmt.Errorf("pool %s, in Barbican %v", proto, ours())
		}
		first = ref
		return nil
	})

	cert2, key2 := certificate(t, "two.example")
	sec.Data = map[string][]byte{v1.TLSCertKey: cert2, v1.TLSPrivateKeyKey: key2}
	_, err = env.Client.CoreV1().Secrets(ns).Update(t.Context(), sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	until(t, "the rotated certificate on the listener, the old one gone", func() error {
		ref, _, err := tlsListener(t, octavia, lbOf(t, octavia, svc)[0].ID, 443)
		if err != nil {
			return err
		}
		if ref == first {
			return fmt.Errorf("still the first certificate")
		}
		if got := ours(); len(got) != 3 {
			return fmt.Errorf("in Barbican: %v", got)
		}
		return nil
	})

	deleteSvcAndWait(t, ns, "own")
	require.Empty(t, ours(), "nothing of the Service left in Barbican")
}

// aContainerAPersonStored: a Service naming a container a person stored in
// Barbican gets a TERMINATED_HTTPS listener with it (and an HTTP pool), and
// the container is left as it was once the Service is deleted.
func aContainerAPersonStored(t *testing.T, octavia, km *gophercloud.ServiceClient, ns, name string) {
	byHand := storeByHand(t, km, name)
	svc, err := env.Client.CoreV1().Services(ns).Create(t.Context(), &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "named", Namespace: ns, Annotations: map[string]string{
			"loadbalancer.openstack.org/default-tls-container-ref": byHand}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "https", Protocol: v1.ProtocolTCP, Port: 443}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitIngress(t, ns, "named")
	until(t, "a TERMINATED_HTTPS listener with the container", func() error {
		lbs := lbOf(t, octavia, svc)
		if len(lbs) != 1 {
			return fmt.Errorf("%d load balancers", len(lbs))
		}
		ref, proto, err := tlsListener(t, octavia, lbs[0].ID, 443)
		if err == nil && (ref != byHand || proto != "HTTP") {
			err = fmt.Errorf("certificate %s, pool %s", ref, proto)
		}
		return err
	})
	deleteSvcAndWait(t, ns, "named")
	require.Contains(t, barbicanNames(t, km), "container "+name, "a container the Service named is left as it was")
}
