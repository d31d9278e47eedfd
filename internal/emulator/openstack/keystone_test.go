package openstack

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAuthentication(t *testing.T) {
	ev := newEnv(t, Options{})
	url := ev.e.URL() + "/identity/v3"
	fx := ev.fx
	tests := []struct {
		name string
		opts gophercloud.AuthOptions
		code int
	}{
		{"an application credential by id authenticates", gophercloud.AuthOptions{
			IdentityEndpoint: url, ApplicationCredentialID: fx.AppCredentialID, ApplicationCredentialSecret: fx.AppCredentialSecret}, 0},
		{"an application credential by name and user authenticates", gophercloud.AuthOptions{
			IdentityEndpoint: url, ApplicationCredentialName: "overcast", UserID: fx.UserID, ApplicationCredentialSecret: fx.AppCredentialSecret}, 0},
		{"a password with user and project names authenticates", gophercloud.AuthOptions{
			IdentityEndpoint: url, Username: fx.UserName, Password: fx.Password, DomainName: "Default",
			TenantName: "demo"}, 0},
		{"a password with ids authenticates", gophercloud.AuthOptions{
			IdentityEndpoint: url, UserID: fx.UserID, Password: fx.Password, TenantID: fx.ProjectID}, 0},
		{"a wrong password is refused", gophercloud.AuthOptions{
			IdentityEndpoint: url, UserID: fx.UserID, Password: "wrong", TenantID: fx.ProjectID}, 401},
		{"a wrong application credential secret is refused", gophercloud.AuthOptions{
			IdentityEndpoint: url, ApplicationCredentialID: fx.AppCredentialID, ApplicationCredentialSecret: "nope"}, 401},
		{"another project is refused", gophercloud.AuthOptions{
			IdentityEndpoint: url, UserID: fx.UserID, Password: fx.Password, TenantID: "other"}, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc, err := openstack.AuthenticatedClient(t.Context(), tt.opts)
			if tt.code != 0 {
				require.Error(t, err)
				assert.Equal(t, tt.code, codeOf(err))
				return
			}
			require.NoError(t, err)
			res, ok := pc.GetAuthResult().(tokens.CreateResult)
			require.True(t, ok)
			project, err := res.ExtractProject()
			require.NoError(t, err)
			assert.Equal(t, fx.ProjectID, project.ID)
			tok, err := res.ExtractToken()
			require.NoError(t, err)
			assert.True(t, ev.clock.Now().Add(time.Hour).Equal(tok.ExpiresAt), "expires at %s", tok.ExpiresAt)
			compute, err := openstack.NewComputeV2(pc, gophercloud.EndpointOpts{Region: "RegionOne"})
			require.NoError(t, err)
			assert.Equal(t, ev.e.URL()+"/compute/v2.1/", compute.Endpoint)
			_, err = flavors.Get(t.Context(), compute, fx.FlavorID).Extract()
			require.NoError(t, err)
		})
	}
}

func TestTokenExpiry(t *testing.T) {
	ev := newEnv(t, Options{TokenTTL: 10 * time.Minute})

	// A client that may not re-authenticate gets 401 once its token expired.
	noReauth, err := openstack.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{
		IdentityEndpoint: ev.e.URL() + "/identity/v3", ApplicationCredentialID: ev.fx.AppCredentialID,
		ApplicationCredentialSecret: ev.fx.AppCredentialSecret})
	require.NoError(t, err)
	compute, err := openstack.NewComputeV2(noReauth, gophercloud.EndpointOpts{})
	require.NoError(t, err)
	_, err = flavors.Get(t.Context(), compute, ev.fx.FlavorID).Extract()
	require.NoError(t, err)

	ev.clock.Step(11 * time.Minute)
	_, err = flavors.Get(t.Context(), compute, ev.fx.FlavorID).Extract()
	assert.Equal(t, http.StatusUnauthorized, codeOf(err))

	// With AllowReauth, gophercloud re-authenticates after the 401 and retries.
	before := callCount(ev.e, "POST /identity/v3/auth/tokens", 201)
	_, err = flavors.Get(t.Context(), ev.compute, ev.fx.FlavorID).Extract()
	require.NoError(t, err)
	assert.Equal(t, before+1, callCount(ev.e, "POST /identity/v3/auth/tokens", 201))
	assert.Equal(t, 2, callCount(ev.e, "GET /compute/v2.1/flavors/{id}", 401))
}

func TestRequestsWithoutTokenGet401(t *testing.T) {
	ev := newEnv(t, Options{})
	for _, path := range []string{"/compute/v2.1/servers/detail", "/network/v2.0/ports", "/load-balancer/v2/lbaas/loadbalancers"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ev.e.URL()+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-Auth-Token", "bogus")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
	}
	// Version discovery needs no token.
	resp, err := http.Get(ev.e.URL() + "/identity/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusMultipleChoices, resp.StatusCode)
}

func TestAuthenticationByDiscovery(t *testing.T) {
	ev := newEnv(t, Options{})
	// An auth URL without the version makes gophercloud read the version document.
	pc, err := openstack.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{
		IdentityEndpoint: ev.e.URL() + "/identity/", ApplicationCredentialID: ev.fx.AppCredentialID,
		ApplicationCredentialSecret: ev.fx.AppCredentialSecret})
	require.NoError(t, err)
	assert.NotEmpty(t, pc.Token())
}

func TestCloudConf(t *testing.T) {
	ev := newEnv(t, Options{Region: "Zone9"})
	conf := ev.e.CloudConf()
	for _, want := range []string{
		"auth-url=" + ev.e.URL() + "/identity/v3", "application-credential-id=" + ev.fx.AppCredentialID,
		"application-credential-secret=" + ev.fx.AppCredentialSecret, "region=Zone9",
		"subnet-id=" + ev.fx.SubnetID, "floating-network-id=" + ev.fx.PublicNetworkID, "router-id=" + ev.fx.RouterID,
	} {
		assert.True(t, strings.Contains(conf, want), "cloud.conf lacks %q:\n%s", want, conf)
	}
}
