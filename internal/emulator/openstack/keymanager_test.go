package openstack

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/acls"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Barbican through gophercloud's keymanager client: secrets of each content
// type, a certificate container of them, its ACL, and the answers the Key
// Manager API reference gives to what it refuses.
func TestKeyManagerSecretsContainersAndACLs(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	km, err := openstack.NewKeyManagerV1(ev.pc, gophercloud.EndpointOpts{Region: "RegionOne"})
	require.NoError(t, err)
	idOf := func(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

	cert, err := secrets.Create(ctx, km, secrets.CreateOpts{Name: "web-cert", Payload: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		PayloadContentType: "text/plain", SecretType: secrets.CertificateSecret}).Extract()
	require.NoError(t, err)
	key, err := secrets.Create(ctx, km, secrets.CreateOpts{Name: "web-key", Payload: base64.StdEncoding.EncodeToString([]byte("key bytes")),
		PayloadContentType: "application/octet-stream", PayloadContentEncoding: "base64", SecretType: secrets.PrivateSecret}).Extract()
	require.NoError(t, err)
	got, err := secrets.Get(ctx, km, idOf(cert.SecretRef)).Extract()
	require.NoError(t, err)
	assert.Equal(t, "web-cert", got.Name)
	assert.Equal(t, "ACTIVE", got.Status)
	assert.Equal(t, "certificate", got.SecretType)
	assert.Equal(t, map[string]string{"default": "text/plain"}, got.ContentTypes)
	payload, err := secrets.GetPayload(ctx, km, idOf(key.SecretRef), secrets.GetPayloadOpts{PayloadContentType: "application/octet-stream"}).Extract()
	require.NoError(t, err)
	assert.Equal(t, "key bytes", string(payload), "stored decoded")
	listed := listAll(t, secrets.List(km, secrets.ListOpts{Name: "web-key"}), secrets.ExtractSecrets)
	require.Len(t, listed, 1)
	assert.Equal(t, key.SecretRef, listed[0].SecretRef)

	for name, bad := range map[string]secrets.CreateOpts{
		"a payload without its content type": {Payload: "x"},
		"octet-stream not in base64":         {Payload: "x", PayloadContentType: "application/octet-stream"},
	} {
		_, err := secrets.Create(ctx, km, bad).Extract()
		assert.True(t, gophercloud.ResponseCodeIs(err, http.StatusBadRequest), "%s: %v", name, err)
	}

	c, err := containers.Create(ctx, km, containers.CreateOpts{Type: containers.CertificateContainer, Name: "web",
		SecretRefs: []containers.SecretRef{{Name: "certificate", SecretRef: cert.SecretRef}, {Name: "private_key", SecretRef: key.SecretRef}}}).Extract()
	require.NoError(t, err)
	gc, err := containers.Get(ctx, km, idOf(c.ContainerRef)).Extract()
	require.NoError(t, err)
	assert.Equal(t, "certificate", gc.Type)
	assert.Len(t, gc.SecretRefs, 2)
	_, err = containers.Create(ctx, km, containers.CreateOpts{Type: containers.CertificateContainer,
		SecretRefs: []containers.SecretRef{{Name: "private_key", SecretRef: key.SecretRef}}}).Extract()
	assert.True(t, gophercloud.ResponseCodeIs(err, http.StatusBadRequest), "a certificate container needs its certificate: %v", err)

	users := []string{"octavia-user-id"}
	ref, err := acls.SetContainerACL(ctx, km, idOf(c.ContainerRef), acls.SetOpts{{Type: "read", Users: &users}}).Extract()
	require.NoError(t, err)
	assert.Equal(t, c.ContainerRef+"/acl", string(*ref))

	require.NoError(t, containers.Delete(ctx, km, idOf(c.ContainerRef)).ExtractErr())
	for _, s := range []string{cert.SecretRef, key.SecretRef} {
		require.NoError(t, secrets.Delete(ctx, km, idOf(s)).ExtractErr())
	}
	_, err = secrets.Get(ctx, km, idOf(cert.SecretRef)).Extract()
	require.True(t, gophercloud.ResponseCodeIs(err, http.StatusNotFound))
	var e gophercloud.ErrUnexpectedResponseCode
	require.ErrorAs(t, err, &e)
	assert.Contains(t, string(e.Body), "Sorry but your secret is in another castle.")
}

// A TERMINATED_HTTPS listener as Octavia's API takes it: its certificate
// read in Barbican as the caller, Octavia's user added to the read ACLs;
// a reference that is not there, none at all, one on a TCP listener, or any
// with an application credential's token (which Octavia cannot re-scope)
// refused with Octavia's answers.
func TestOctaviaTerminatedHTTPSListenersReadBarbican(t *testing.T) {
	ev := newEnv(t, Options{})
	ctx := t.Context()
	pw, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: ev.e.URL() + "/identity/v3",
		Username: ev.fx.UserName, Password: ev.fx.Password, TenantID: ev.fx.ProjectID, DomainID: "default"})
	require.NoError(t, err)
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	km, err := openstack.NewKeyManagerV1(pw, eo)
	require.NoError(t, err)
	octavia, err := openstack.NewLoadBalancerV2(pw, eo)
	require.NoError(t, err)
	idOf := func(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

	cert, err := secrets.Create(ctx, km, secrets.CreateOpts{Name: "c", Payload: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		PayloadContentType: "text/plain", SecretType: secrets.CertificateSecret}).Extract()
	require.NoError(t, err)
	c, err := containers.Create(ctx, km, containers.CreateOpts{Type: containers.CertificateContainer, Name: "web",
		SecretRefs: []containers.SecretRef{{Name: "certificate", SecretRef: cert.SecretRef}}}).Extract()
	require.NoError(t, err)
	lb, err := loadbalancers.Create(ctx, octavia, loadbalancers.CreateOpts{VipSubnetID: ev.fx.SubnetID}).Extract()
	require.NoError(t, err)
	active := func() {
		ev.clock.Step(time.Minute)
		_, _ = loadbalancers.Get(ctx, octavia, lb.ID).Extract()
	}
	active()

	l, err := listeners.Create(ctx, octavia, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTerminatedHTTPS,
		ProtocolPort: 443, DefaultTlsContainerRef: c.ContainerRef}).Extract()
	require.NoError(t, err)
	assert.Equal(t, c.ContainerRef, l.DefaultTlsContainerRef)
	ev.e.mu.Lock()
	assert.Contains(t, ev.e.kmContainers[idOf(c.ContainerRef)].ReadUsers, OctaviaUserID)
	assert.Contains(t, ev.e.kmSecrets[idOf(cert.SecretRef)].ReadUsers, OctaviaUserID)
	ev.e.mu.Unlock()
	active()

	missing := strings.Replace(c.ContainerRef, idOf(c.ContainerRef), "0b5d8f3e-8a3c-4c1e-9f0e-2b7d6c5a4e31", 1)
	for name, opts := range map[string]listeners.CreateOpts{
		"a reference Barbican lacks": {Protocol: listeners.ProtocolTerminatedHTTPS, ProtocolPort: 8443, DefaultTlsContainerRef: missing},
		"no reference":               {Protocol: listeners.ProtocolTerminatedHTTPS, ProtocolPort: 8443},
		"a reference on TCP":         {Protocol: listeners.ProtocolTCP, ProtocolPort: 8443, DefaultTlsContainerRef: c.ContainerRef},
	} {
		opts.LoadbalancerID = lb.ID
		_, err := listeners.Create(ctx, octavia, opts).Extract()
		assert.Equal(t, http.StatusBadRequest, codeOf(err), name)
	}
	// The same container, asked with an application credential's token.
	_, err = listeners.Create(ctx, ev.lb, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTerminatedHTTPS,
		ProtocolPort: 8443, DefaultTlsContainerRef: c.ContainerRef}).Extract()
	require.Equal(t, http.StatusBadRequest, codeOf(err))
	assert.Contains(t, err.Error(), "Could not retrieve certificate")

	// Containers listed by name.
	listed := listAll(t, containers.List(km, containers.ListOpts{Name: "web"}), containers.ExtractContainers)
	require.Len(t, listed, 1)
	assert.Equal(t, c.ContainerRef, listed[0].ContainerRef)
}
