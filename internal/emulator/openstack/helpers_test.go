package openstack

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

// env is a started emulator with authenticated gophercloud clients.
type env struct {
	e       *Emulator
	clock   *clocktesting.FakeClock // tokens, provisioning and fault windows
	fx      Fixture
	pc      *gophercloud.ProviderClient
	compute *gophercloud.ServiceClient
	network *gophercloud.ServiceClient
	lb      *gophercloud.ServiceClient
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	e := New(opts)
	clock := clocktesting.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	e.mu.Lock()
	e.clock = clock.Now
	e.mu.Unlock()
	require.NoError(t, e.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = e.Close() })
	fx := e.Fixture()
	pc, err := openstack.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{
		IdentityEndpoint:            e.URL() + "/identity/v3",
		ApplicationCredentialID:     fx.AppCredentialID,
		ApplicationCredentialSecret: fx.AppCredentialSecret,
		AllowReauth:                 true,
	})
	require.NoError(t, err)
	region := opts.Region
	if region == "" {
		region = "RegionOne"
	}
	eo := gophercloud.EndpointOpts{Region: region}
	compute, err := openstack.NewComputeV2(pc, eo)
	require.NoError(t, err)
	compute.Microversion = "2.47"
	network, err := openstack.NewNetworkV2(pc, eo)
	require.NoError(t, err)
	lb, err := openstack.NewLoadBalancerV2(pc, eo)
	require.NoError(t, err)
	return &env{e: e, clock: clock, fx: fx, pc: pc, compute: compute, network: network, lb: lb}
}

// callCount returns the count of one (route, code) pair.
func callCount(e *Emulator, route string, code int) int {
	n := 0
	for _, c := range e.Calls() {
		if c.Route == route && c.Code == code {
			n += c.Count
		}
	}
	return n
}

func codeOf(err error) int {
	var ue gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &ue) {
		return ue.Actual
	}
	return 0
}

var _ http.Handler = (*Emulator)(nil)

// listAll reads every page of a gophercloud list and extracts its items.
func listAll[T any](t *testing.T, pager pagination.Pager, extract func(pagination.Page) ([]T, error)) []T {
	t.Helper()
	pages, err := pager.AllPages(t.Context())
	require.NoError(t, err)
	items, err := extract(pages)
	require.NoError(t, err)
	return items
}
