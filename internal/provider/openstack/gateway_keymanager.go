package openstack

import (
	"context"
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

func (gw *gateway) listContainers(ctx context.Context, opts containers.ListOpts) ([]containers.Container, error) {
	return call(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) ([]containers.Container, error) {
		return allPages(ctx, containers.List(sc, opts), containers.ExtractContainers)
	})
}

func (gw *gateway) listSecrets(ctx context.Context, opts secrets.ListOpts) ([]secrets.Secret, error) {
	return call(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) ([]secrets.Secret, error) {
		return allPages(ctx, secrets.List(sc, opts), secrets.ExtractSecrets)
	})
}

func (gw *gateway) createSecret(ctx context.Context, opts secrets.CreateOpts) (*secrets.Secret, error) {
	return call(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) (*secrets.Secret, error) {
		return secrets.Create(ctx, sc, opts).Extract()
	})
}

func (gw *gateway) createContainer(ctx context.Context, opts containers.CreateOpts) (*containers.Container, error) {
	return call(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) (*containers.Container, error) {
		return containers.Create(ctx, sc, opts).Extract()
	})
}

func (gw *gateway) deleteContainer(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, svcKeyManager, id, containers.Delete)
}

func (gw *gateway) deleteSecret(ctx context.Context, id string) error {
	return deleteBy(ctx, gw, svcKeyManager, id, secrets.Delete)
}
