package oci

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

const (
	tenancy     = "ocid1.tenancy.oc1..aaaatenancy"
	user        = "ocid1.user.oc1..aaaauser"
	compartment = "ocid1.compartment.oc1..aaaacompartment"
	subnet1     = "ocid1.subnet.oc1.iad.aaaasubnet1"
	passphrase  = "correct horse battery staple"
)

var testKey = func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}()

func pemOf(k *rsa.PrivateKey, pass string) string {
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}
	if pass != "" {
		var err error
		//nolint:staticcheck // OCI's own tools encrypt API keys this way
		block, err = x509.EncryptPEMBlock(rand.Reader, block.Type, block.Bytes, []byte(pass), x509.PEMCipherAES128)
		if err != nil {
			panic(err)
		}
	}
	return string(pem.EncodeToMemory(block))
}

// indent makes a PEM a YAML block scalar's lines.
func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ")
}

// peerConfig is a cloud-provider.yaml as oci-cloud-controller-manager's
// install documents it.
func peerConfig(key, extra string) string {
	return fmt.Sprintf(`auth:
  region: us-ashburn-1
  tenancy: %s
  user: %s
  key: |
%s
  fingerprint: %s
compartment: %s
vcn: ocid1.vcn.oc1.iad.aaaavcn
loadBalancer:
  subnet1: %s
  securityListManagementMode: Frontend
  securityLists:
    %s: ocid1.securitylist.oc1.iad.aaaalist
rateLimiter:
  rateLimitQPSRead: 20.0
  rateLimitBucketRead: 5
  rateLimitQPSWrite: 20.0
  rateLimitBucketWrite: 5
%s`, tenancy, user, indent(key), Fingerprint(&testKey.PublicKey), compartment, subnet1, subnet1, extra)
}

func TestThePeersConfigIsReadAsItIs(t *testing.T) {
	c, err := Read(strings.NewReader(peerConfig(pemOf(testKey, ""), `tags:
  loadBalancer:
    freeform: {team: web}
    defined: {Operations: {CostCenter: "42"}}
  blockVolume:
    freeform: {team: storage}
`)))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	assert.Equal(t, "us-ashburn-1", c.Auth.Region)
	assert.Equal(t, compartment, c.CompartmentID)
	require.NotNil(t, c.LoadBalancer)
	assert.Equal(t, ModeFrontend, c.LoadBalancer.SecurityListManagementMode)
	assert.Equal(t, "ocid1.securitylist.oc1.iad.aaaalist", c.LoadBalancer.SecurityLists[subnet1])
	assert.InDelta(t, 20.0, c.RateLimiter.RateLimitQPSRead, 0.001)
	assert.Equal(t, map[string]string{"team": "web"}, c.Tags.LoadBalancer.FreeformTags)
	assert.Equal(t, "42", c.Tags.LoadBalancer.DefinedTags["Operations"]["CostCenter"])
	assert.Empty(t, c.Warnings())
	signsWithTestKey(t, c.Auth)
}

func TestDeprecatedKeysWorkWithOneWarningEach(t *testing.T) {
	doc := fmt.Sprintf(`auth:
  region: us-ashburn-1
  tenancy: %s
  user: %s
  key: |
%s
  fingerprint: %s
  key_passphrase: %s
  compartment: %s
  regionKey: IAD
loadBalancer:
  subnet1: %s
  disableSecurityListManagement: true
`, tenancy, user, indent(pemOf(testKey, passphrase)), Fingerprint(&testKey.PublicKey), passphrase, compartment, subnet1)
	c, err := Read(strings.NewReader(doc))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	assert.Equal(t, compartment, c.CompartmentID)
	assert.Equal(t, passphrase, c.Auth.Passphrase)
	assert.Equal(t, "IAD", c.RegionKey)
	assert.Equal(t, ModeNone, c.LoadBalancer.SecurityListManagementMode)
	assert.ElementsMatch(t, []string{
		"auth.key_passphrase is deprecated; use auth.passphrase",
		"auth.compartment is deprecated; use compartment",
		"auth.regionKey is deprecated; use regionKey",
		"loadBalancer.disableSecurityListManagement is deprecated; use loadBalancer.securityListManagementMode: None",
	}, c.Warnings())
	for _, w := range c.Warnings() {
		assert.NotContains(t, w, passphrase)
	}
}

func TestThePassphraseReallyDecryptsTheKey(t *testing.T) {
	encrypted := pemOf(testKey, passphrase)
	c, err := Read(strings.NewReader(peerConfig(encrypted, "")))
	require.NoError(t, err)
	err = c.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "auth.key: the key is encrypted: set auth.passphrase")

	c.Auth.Passphrase = "wrong"
	err = c.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "auth.passphrase: does not decrypt auth.key")
	assert.NotContains(t, err.Error(), "wrong")

	c.Auth.Passphrase = passphrase
	require.NoError(t, c.Validate())
	signsWithTestKey(t, c.Auth)
}

func TestValidateListsEveryProblemAndNeverTheSecrets(t *testing.T) {
	t.Setenv("OCI_RESOURCE_PRINCIPAL_REGION", "")
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	doc := fmt.Sprintf(`useWorkloadIdentity: true
auth:
  tenancy: ocid1.user.oc1..wrongkind
  key: |
%s
  fingerprint: %s
  passphrase: %s
vcn: not-an-ocid
loadBalancer:
  securityListManagementMode: Some
rateLimiter:
  rateLimitQPSRead: -1
`, indent(pemOf(testKey, "")), Fingerprint(&other.PublicKey), passphrase)
	c, err := Read(strings.NewReader(doc))
	require.NoError(t, err)
	err = c.Validate()
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"auth.region: required with useWorkloadIdentity", "compartment: required with useWorkloadIdentity",
		`auth.tenancy: "ocid1.user.oc1..wrongkind" is not the OCID of a tenancy`,
		`vcn: "not-an-ocid" is not the OCID of a vcn`,
		`loadBalancer.securityListManagementMode: "Some" is not All, Frontend or None`,
		"rateLimiter: the rates and buckets cannot be negative",
	} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, passphrase)
	assert.NotContains(t, msg, "PRIVATE KEY")

	c.UseWorkloadIdentity = false
	err = c.Validate()
	require.Error(t, err)
	msg = err.Error()
	for _, want := range []string{
		"auth.region: required", "auth.user: required", "compartment: required",
		"auth.fingerprint: \"" + Fingerprint(&other.PublicKey) + "\" is not the key's (" + Fingerprint(&testKey.PublicKey) + ")",
	} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, passphrase)
}

func TestUnknownKeysAndWrongTypesAreAllReported(t *testing.T) {
	_, err := Read(strings.NewReader(`auth:
  regoin: us-ashburn-1
useInstancePrincipals: yes please
loadBalancer:
  subnet3: x
`))
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "auth.regoin")
	assert.Contains(t, msg, "loadBalancer.subnet3")
	assert.Contains(t, msg, "useInstancePrincipals")
}

func TestInstancePrincipalsNeedNoKey(t *testing.T) {
	c, err := Read(strings.NewReader("useInstancePrincipals: true\nloadBalancer:\n  subnet1: " + subnet1 + "\n"))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	assert.Equal(t, ModeAll, c.LoadBalancer.SecurityListManagementMode, "the peer's default")
}

func TestNoConfigSaysWhatIsNeeded(t *testing.T) {
	_, err := Read(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cloud-provider.yaml")
}

func FuzzRead(f *testing.F) {
	f.Add(peerConfig(pemOf(testKey, ""), ""))
	f.Add("useInstancePrincipals: true\n")
	f.Add("auth: [1, 2]\n")
	f.Fuzz(func(t *testing.T, doc string) {
		c, _ := Read(strings.NewReader(doc))
		_ = c.Validate()
		_ = c.Warnings()
	})
}

func TestEndpointsFollowTheRegionOrTheOverrides(t *testing.T) {
	c, err := Read(strings.NewReader(peerConfig(pemOf(testKey, ""), "")))
	require.NoError(t, err)
	c.Auth.Region = "PHX" // a short code, as the peer accepts it
	require.NoError(t, c.Validate())
	ep := c.endpoints()
	assert.Equal(t, "https://iaas.us-phoenix-1.oraclecloud.com", ep.Core)
	assert.Equal(t, "https://network-load-balancer-api.us-phoenix-1.oci.oraclecloud.com", ep.NetworkLoadBalancer)

	c, err = Read(strings.NewReader(peerConfig(pemOf(testKey, ""), `endpoints:
  api: http://127.0.0.1:8443/
  identity: https://identity.example.com
`)))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	ep = c.endpoints()
	assert.Equal(t, ociapi.Endpoints{Core: "http://127.0.0.1:8443", Identity: "https://identity.example.com",
		LoadBalancer: "http://127.0.0.1:8443", NetworkLoadBalancer: "http://127.0.0.1:8443"}, ep)

	c, err = Read(strings.NewReader(peerConfig(pemOf(testKey, ""), `endpoints:
  api: http://10.0.0.1:8443
  core: https://iaas.example.com/20160918
  loadBalancer: ftp://x
`)))
	require.NoError(t, err)
	c.Auth.Region = "Ashburn"
	err = c.Validate()
	require.Error(t, err)
	for _, want := range []string{
		`endpoints.api: "http://10.0.0.1:8443": plain http is allowed to a loopback address only`,
		`endpoints.core: "https://iaas.example.com/20160918": a base URL has no path`,
		`endpoints.loadBalancer: "ftp://x" is not an http(s) URL`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	c.Endpoints = nil
	assert.ErrorContains(t, c.Validate(), `auth.region: "Ashburn" is not a region's name`)
}

// signsWithTestKey says that auth signs with testKey.
func signsWithTestKey(t *testing.T, auth Auth) {
	t.Helper()
	key, err := auth.signingKey()
	require.NoError(t, err)
	assert.True(t, key.Equal(testKey))
}
