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
	return do(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) error {
		_, err := containers.Get(ctx, sc, id).Extract()
		return err
	})
}

func (gw *gateway) getSecret(ctx context.Context, id string) error {
	return do(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) error {
		_, err := secrets.Get(ctx, sc, id).Extract()
		return err
	})
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

// createSecret stores a secret and answers its reference.
func (gw *gateway) createSecret(ctx context.Context, opts secrets.CreateOpts) (string, error) {
	return call(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) (string, error) {
		created, err := secrets.Create(ctx, sc, opts).Extract()
		if err != nil {
			return "", err
		}
		return created.SecretRef, nil
	})
}

// createContainer stores a container and answers its reference.
func (gw *gateway) createContainer(ctx context.Context, opts containers.CreateOpts) (string, error) {
	return call(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) (string, error) {
		created, err := containers.Create(ctx, sc, opts).Extract()
		if err != nil {
			return "", err
		}
		return created.ContainerRef, nil
	})
}

func (gw *gateway) deleteContainer(ctx context.Context, id string) error {
	return do(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) error {
		return alreadyGone(containers.Delete(ctx, sc, id).ExtractErr())
	})
}

func (gw *gateway) deleteSecret(ctx context.Context, id string) error {
	return do(ctx, gw, svcKeyManager, func(sc *gophercloud.ServiceClient) error {
		return alreadyGone(secrets.Delete(ctx, sc, id).ExtractErr())
	})
}
