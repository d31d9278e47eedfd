package osapi

import (
	"context"
	"encoding/base64"
	"errors"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
)

// Barbican's calls: the certificates of TLS Secrets, as containers naming
// secrets.

// KeyManagerMissing says whether the catalog has no key-manager, the other
// errors finding it returned.
func (gw *Client) KeyManagerMissing(ctx context.Context) (bool, error) {
	_, err := gw.client(ctx, Barbican)
	var none *gophercloud.ErrEndpointNotFound
	if errors.As(err, &none) {
		return true, nil
	}
	return false, err
}

// GetContainer reads a Barbican container: outcome.ErrNotFound when it is gone.
func (gw *Client) GetContainer(ctx context.Context, id string) error {
	return do(ctx, gw, Barbican, func(sc *gophercloud.ServiceClient) error { return discard(containers.Get(ctx, sc, id).Extract()) })
}

// GetSecret reads a Barbican secret's metadata: outcome.ErrNotFound when it
// is gone.
func (gw *Client) GetSecret(ctx context.Context, id string) error {
	return do(ctx, gw, Barbican, func(sc *gophercloud.ServiceClient) error { return discard(secrets.Get(ctx, sc, id).Extract()) })
}

// BarbicanObject is a Barbican container or secret: its name and reference.
type BarbicanObject struct{ Name, Ref string }

// ListContainers lists the project's containers (named name; "": all), limit
// a page.
func (gw *Client) ListContainers(ctx context.Context, name string, limit int) ([]BarbicanObject, error) {
	return call(ctx, gw, Barbican, func(sc *gophercloud.ServiceClient) ([]BarbicanObject, error) {
		all, err := allPages(ctx, containers.List(sc, containers.ListOpts{Name: name, Limit: limit}), containers.ExtractContainers)
		out := make([]BarbicanObject, 0, len(all))
		for _, ct := range all {
			out = append(out, BarbicanObject{Name: ct.Name, Ref: ct.ContainerRef})
		}
		return out, err
	})
}

// ListSecrets lists the project's secrets, limit a page.
func (gw *Client) ListSecrets(ctx context.Context, limit int) ([]BarbicanObject, error) {
	return call(ctx, gw, Barbican, func(sc *gophercloud.ServiceClient) ([]BarbicanObject, error) {
		all, err := allPages(ctx, secrets.List(sc, secrets.ListOpts{Limit: limit}), secrets.ExtractSecrets)
		out := make([]BarbicanObject, 0, len(all))
		for _, s := range all {
			out = append(out, BarbicanObject{Name: s.Name, Ref: s.SecretRef})
		}
		return out, err
	})
}

// CreateSecret stores payload as a certificate's secret (private: its key)
// and answers its reference.
func (gw *Client) CreateSecret(ctx context.Context, name string, private bool, payload []byte) (string, error) {
	kind := secrets.CertificateSecret
	if private {
		kind = secrets.PrivateSecret
	}
	return call(ctx, gw, Barbican, func(sc *gophercloud.ServiceClient) (string, error) {
		created, err := secrets.Create(ctx, sc, secrets.CreateOpts{
			Name: name, SecretType: kind,
			Payload: base64.StdEncoding.EncodeToString(payload), PayloadContentType: "application/octet-stream", PayloadContentEncoding: "base64",
		}).Extract()
		if err != nil {
			return "", err
		}
		return created.SecretRef, nil
	})
}

// CreateCertificateContainer stores a certificate container naming the
// secrets (by their names in it) and answers its reference.
func (gw *Client) CreateCertificateContainer(ctx context.Context, name string, parts []BarbicanObject) (string, error) {
	refs := make([]containers.SecretRef, 0, len(parts))
	for _, p := range parts {
		refs = append(refs, containers.SecretRef{Name: p.Name, SecretRef: p.Ref})
	}
	return call(ctx, gw, Barbican, func(sc *gophercloud.ServiceClient) (string, error) {
		created, err := containers.Create(ctx, sc, containers.CreateOpts{Type: containers.CertificateContainer, Name: name, SecretRefs: refs}).Extract()
		if err != nil {
			return "", err
		}
		return created.ContainerRef, nil
	})
}

// DeleteContainer deletes a Barbican container (gone already: nil).
func (gw *Client) DeleteContainer(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, Barbican, id, containers.Delete)
}

// DeleteSecret deletes a Barbican secret (gone already: nil).
func (gw *Client) DeleteSecret(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, Barbican, id, secrets.Delete)
}
