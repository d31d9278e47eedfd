package openstack

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

func (gw *gateway) keyManagerMissing(ctx context.Context) (bool, error) {
	_, err := gw.client(ctx, svcKeyManager)
	var none *gophercloud.ErrEndpointNotFound
	if errors.As(err, &none) {
		return true, nil
	}
	return false, err
}

func (gw *gateway) getContainer(ctx context.Context, id string) error {
	return do(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) error { return discard(containers.Get(ctx, sc, id).Extract()) })
}

func (gw *gateway) getSecret(ctx context.Context, id string) error {
	return do(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) error { return discard(secrets.Get(ctx, sc, id).Extract()) })
}

// barbicanObject is a Barbican container or secret: its name and reference.
type barbicanObject struct{ Name, Ref string }

// listContainers lists the project's containers (named name; "": all), limit
// a page.
func (gw *gateway) listContainers(ctx context.Context, name string, limit int) ([]barbicanObject, error) {
	return call(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) ([]barbicanObject, error) {
		all, err := allPages(ctx, containers.List(sc, containers.ListOpts{Name: name, Limit: limit}), containers.ExtractContainers)
		out := make([]barbicanObject, 0, len(all))
		for _, ct := range all {
			out = append(out, barbicanObject{Name: ct.Name, Ref: ct.ContainerRef})
		}
		return out, err
	})
}

// listSecrets lists the project's secrets, limit a page.
func (gw *gateway) listSecrets(ctx context.Context, limit int) ([]barbicanObject, error) {
	return call(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) ([]barbicanObject, error) {
		all, err := allPages(ctx, secrets.List(sc, secrets.ListOpts{Limit: limit}), secrets.ExtractSecrets)
		out := make([]barbicanObject, 0, len(all))
		for _, s := range all {
			out = append(out, barbicanObject{Name: s.Name, Ref: s.SecretRef})
		}
		return out, err
	})
}

// createSecret stores payload as a certificate's secret (private: its key)
// and answers its reference.
func (gw *gateway) createSecret(ctx context.Context, name string, private bool, payload []byte) (string, error) {
	kind := secrets.CertificateSecret
	if private {
		kind = secrets.PrivateSecret
	}
	return call(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) (string, error) {
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

// createCertificateContainer stores a certificate container naming the
// secrets (by their names in it) and answers its reference.
func (gw *gateway) createCertificateContainer(ctx context.Context, name string, parts []barbicanObject) (string, error) {
	refs := make([]containers.SecretRef, 0, len(parts))
	for _, p := range parts {
		refs = append(refs, containers.SecretRef{Name: p.Name, SecretRef: p.Ref})
	}
	return call(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) (string, error) {
		created, err := containers.Create(ctx, sc, containers.CreateOpts{Type: containers.CertificateContainer, Name: name, SecretRefs: refs}).Extract()
		if err != nil {
			return "", err
		}
		return created.ContainerRef, nil
	})
}

func (gw *gateway) deleteContainer(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, svcKeyManager, id, containers.Delete)
}

func (gw *gateway) deleteSecret(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, svcKeyManager, id, secrets.Delete)
}
