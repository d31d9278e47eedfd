package openstack

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/acls"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
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
	pages, err := secrets.List(km, secrets.ListOpts{Name: "web-key"}).AllPages(ctx)
	require.NoError(t, err)
	listed, err := secrets.ExtractSecrets(pages)
	require.NoError(t, err)
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
