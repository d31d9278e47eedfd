package openstack

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cloud.conf of the classic "OpenStack as a Kubernetes cloud provider" guide.
const classicConf = `[Global]
username=k8s-user
password=S3cr3t-Pa55
auth-url=https://keystone.example:5000/v3
tenant-id=0c3c8a1f3c8b4c4e9d5e6f7a8b9c0d1e
domain-id=default

[LoadBalancer]
subnet-id=6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c
floating-network-id=7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d

[BlockStorage]
bs-version=v2
`

func TestReadAcceptsTheClassicGuidesCloudConf(t *testing.T) {
	c, err := Read(strings.NewReader(classicConf))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	assert.Equal(t, "k8s-user", c.Global.Username)
	assert.Equal(t, "0c3c8a1f3c8b4c4e9d5e6f7a8b9c0d1e", c.Global.TenantID)
	assert.Equal(t, "default", c.Global.DomainID)
	assert.Equal(t, "6b1f4e0c-2d3e-4f5a-8b9c-0d1e2f3a4b5c", c.LoadBalancer.SubnetID)
	assert.Equal(t, "v2", c.BlockStorage.BSVersion)
	require.Len(t, c.Warnings(), 1)
	assert.Contains(t, c.Warnings()[0], "[BlockStorage] is ignored")
}

func TestReadAcceptsEverySectionAndClass(t *testing.T) {
	c, err := Read(strings.NewReader(`[Global]
auth-url=http://127.0.0.1:5000/v3
application-credential-id=abc
application-credential-secret=xyz
region=RegionOne
os-endpoint-type=internal
[LoadBalancer]
lb-method=SOURCE_IP_PORT
create-monitor=true
monitor-delay=5s
monitor-timeout=3s
monitor-max-retries=3
max-shared-lb=4
enabled=false
[LoadBalancerClass "internal"]
subnet-id=1
[LoadBalancerClass "public"]
floating-network-id=2
[Networking]
public-network-name=public
public-network-name=public2
internal-network-name=private
address-sort-order=10.0.0.0/8, 192.168.0.0/16
[Route]
router-id=8c4f5d2a-1b3c-4d5e-8f9a-0b1c2d3e4f5a
[Metadata]
search-order=configDrive,metadataService
`))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	assert.Equal(t, []string{"public", "public2"}, c.Networking.PublicNetworkName)
	require.NotNil(t, c.LoadBalancer.Enabled)
	assert.False(t, *c.LoadBalancer.Enabled)
	assert.Equal(t, 4, *c.LoadBalancer.MaxSharedLB)
	assert.Equal(t, "2", c.LoadBalancerClasses["public"].FloatingNetworkID)
}

func TestValidateListsEveryProblemWithoutSecrets(t *testing.T) {
	c, err := Read(strings.NewReader(`[Global]
auth-url=ftp://nowhere
password=TopSecretValue
cert-file=/nonexistent/cert.pem
os-endpoint-type=private
[LoadBalancer]
lb-method=RANDOM
max-shared-lb=0
monitor-delay=2s
monitor-timeout=5s
[Networking]
address-sort-order=10.0.0.0/8,not-a-cidr
[Route]
router-id=my-router
[Metadata]
search-order=configDrive,guess
`))
	require.NoError(t, err)
	err = c.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"[Global] auth-url",
		"[Global] username: required",
		"[Global] tenant-id: required",
		"[Global] cert-file",
		"cert-file and key-file: give both",
		"[Global] os-endpoint-type",
		"[LoadBalancer] lb-method",
		"[LoadBalancer] max-shared-lb",
		"[LoadBalancer] monitor-timeout",
		"[Networking] address-sort-order: \"not-a-cidr\"",
		"[Route] router-id",
		"[Metadata] search-order: \"guess\"",
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "TopSecretValue", "a secret never reaches an error")
}

func TestReadReportsUnknownKeysWithLines(t *testing.T) {
	_, err := Read(strings.NewReader("[Global]\nauth-url=http://x:5000/v3\npasswd=SecretValue1\n[LoadBalancer]\nfloating-network=abc\n[Volumes]\nx=1\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `line 3: [Global] unknown key (did you mean "password"?)`)
	assert.Contains(t, err.Error(), `line 5: [LoadBalancer] unknown key (did you mean "floating-network-id"?)`)
	assert.Contains(t, err.Error(), "line 6: unknown section")
	assert.NotContains(t, err.Error(), "SecretValue1")
}

func TestValidateAuthenticationChoices(t *testing.T) {
	tests := []struct {
		name    string
		global  string
		wantErr string
	}{
		{"username, password and tenant-name authenticate", "username=u\npassword=p\ntenant-name=t\nuser-domain-name=Default", ""},
		{"an application credential id and secret authenticate", "application-credential-id=i\napplication-credential-secret=s", ""},
		{"an application credential without a secret is refused", "application-credential-id=i", "application-credential-secret: required"},
		{"an application credential name needs the user", "application-credential-name=n\napplication-credential-secret=s", "needs username"},
		{"a trust needs its trustee", "trust-id=t", "needs trustee-id and trustee-password"},
		{"a token authenticates", "token=tok", ""},
		{"two methods at once are refused", "token=tok\napplication-credential-id=i\napplication-credential-secret=s", "give one way to authenticate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Read(strings.NewReader("[Global]\nauth-url=https://k:5000/v3\n" + tt.global + "\n"))
			require.NoError(t, err)
			err = c.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func FuzzRead(f *testing.F) {
	for _, s := range []string{classicConf, "", "[Global]\n", "[LoadBalancerClass \"x\"]\nsubnet-id=1", "[Networking]\naddress-sort-order=,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, _ := Read(strings.NewReader(s))
		_ = c.Validate()
		_ = c.Warnings()
	})
}

func TestAPIRateLimitsAreChecked(t *testing.T) {
	base := "[Global]\nauth-url=http://127.0.0.1:5000/v3\napplication-credential-id=a\napplication-credential-secret=s\n"
	c, err := Read(strings.NewReader(base + "api-read-qps=200\napi-write-qps=50\n"))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	s := c.Global.settings()
	assert.Equal(t, [2]int{200, 50}, [2]int{s.APIReadQPS, s.APIWriteQPS}, "the session's limits")

	c, err = Read(strings.NewReader(base + "api-write-qps=-1\n"))
	require.NoError(t, err)
	assert.ErrorContains(t, c.Validate(), "api-write-qps")
}

func TestLifecycleMaxAge(t *testing.T) {
	base := "[Global]\nauth-url=http://127.0.0.1:5000/v3\napplication-credential-id=a\napplication-credential-secret=s\n"
	for _, tc := range []struct {
		conf string
		want time.Duration
	}{
		{"", 5 * time.Minute},
		{"lifecycle-max-age=2m\n", 2 * time.Minute},
		{"lifecycle-max-age=10s\n", time.Minute}, // never below what other look-ups accept
	} {
		cfg, err := Read(strings.NewReader(base + tc.conf))
		require.NoError(t, err)
		require.NoError(t, cfg.Validate())
		c, err := New(cfg)
		require.NoError(t, err)
		assert.Equal(t, tc.want, c.lifecycleMaxAge(), tc.conf)
	}
	for _, bad := range []string{"lifecycle-max-age=-1s\n", "lifecycle-max-age=2h\n"} {
		cfg, err := Read(strings.NewReader(base + bad))
		require.NoError(t, err)
		assert.ErrorContains(t, cfg.Validate(), "lifecycle-max-age", bad)
	}
	_, err := Read(strings.NewReader(base + "lifecycle-max-age=soon\n"))
	assert.ErrorContains(t, err, "lifecycle-max-age")
}
