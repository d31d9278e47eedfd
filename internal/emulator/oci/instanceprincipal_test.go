package oci

import (
	"net/http"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/common/auth"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oci-go-sdk's own instance principal provider, pointed at the emulator by
// the SDK's environment variables, gets a session token and calls with it.
func TestTheSDKCallsAsTheInstanceItRunsOn(t *testing.T) {
	e := started(t, Options{InstancePrincipals: true})
	t.Setenv("OCI_METADATA_BASE_URL", e.URL()+"/opc/v2")
	t.Setenv("OCI_SDK_AUTH_CLIENT_REGION_URL", e.URL())
	t.Setenv("OCI_SDK_AUTH_CLIENT_CIRCUIT_BREAKER_ENABLED", "false")
	t.Setenv("OCI_SDK_DEFAULT_CIRCUITBREAKER_ENABLED", "false")
	p, err := auth.InstancePrincipalConfigurationProvider()
	require.NoError(t, err)
	tenancy, err := p.TenancyOCID()
	require.NoError(t, err)
	assert.Equal(t, e.fx.TenancyID, tenancy, "the tenancy, from the leaf certificate")
	region, err := p.Region()
	require.NoError(t, err)
	assert.Equal(t, "us-ashburn-1", region)
	keyID, err := p.KeyID()
	require.NoError(t, err)
	assert.Contains(t, keyID, "ST$", "a session token")

	c, err := core.NewComputeClientWithConfigurationProvider(p)
	require.NoError(t, err)
	c.Host = e.URL()
	got, err := c.GetInstance(t.Context(), core.GetInstanceRequest{InstanceId: common.String(e.fx.HostInstanceID)})
	require.NoError(t, err)
	assert.Equal(t, "ccm-host", *got.DisplayName)

	// Without IMDSv2's header: 401.
	resp, err := http.Get(e.URL() + "/opc/v2/instance/region") //nolint:noctx // a test's one request
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, 401, resp.StatusCode)
}
