package oci

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/doctor"
	emucore "github.com/overcast-ccm/overcast/internal/emulator/core"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/emulator/oci/ocitest"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// The CCM started on OCI's workload identity, OKE's and the self-managed
// form (ociapi's tests hold the exchanges themselves).

// peerWorkloadConfig is the peer's cloud-provider.yaml for its self-managed
// workload identity (its manifests/provider-config-workload-identity-example.yaml,
// with e's OCIDs), and Overcast's endpoints key for e's API.
func peerWorkloadConfig(e *emulator.Emulator) string {
	f := e.Fixture()
	return fmt.Sprintf("auth:\n  region: us-ashburn-1\nuseWorkloadIdentity: true\ncompartment: %s\nvcn: %s\nloadBalancer:\n  subnet1: %s\n  securityListManagementMode: All\nendpoints:\n  api: %s\n",
		f.CompartmentID, f.VCNID, f.SubnetID, e.URL())
}

// The peer's config and environment, unchanged: the CCM trades its
// ServiceAccount token at the identity domain once, then signs every request
// with the session token; OKE's endpoint is not asked.
func TestSelfManagedWorkloadIdentityCallsAsTheServiceAccount(t *testing.T) {
	e := ocitest.DomainEmulator(t, nil, 0, false)
	ocitest.DomainPodOn(t, e, time.Hour)
	c := cloudOn(t, peerWorkloadConfig(e))
	id, _ := e.AddMachine("node-a")
	for range 2 {
		md, err := c.InstanceMetadata(t.Context(), nodeNamed("node-a", ""))
		require.NoError(t, err)
		assert.Equal(t, ProviderIDPrefix+id, md.ProviderID)
	}
	keyID, _, err := c.sessions.SigningKey()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(keyID, "ST$ey"))
	assert.True(t, c.sessions.SelfManaged())
	assert.Equal(t, map[int]int{200: 1}, ocitest.CallsOf(e, "identitydomain"), "one exchange for every call")
	assert.Empty(t, ocitest.CallsOf(e, "workloadidentity"))
}

// The environment's problems are errors at start, all at once, each naming
// its variable, never a secret's value.
func TestSelfManagedWorkloadIdentityConfigErrorsNameTheVariable(t *testing.T) {
	e := ocitest.DomainEmulator(t, nil, 0, false)
	p := ocitest.DomainPodOn(t, e, time.Hour)
	cfg, err := Read(strings.NewReader(peerWorkloadConfig(e)))
	require.NoError(t, err)
	start := func() string {
		t.Helper()
		_, err := New(cfg)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), p.Secret)
		return err.Error()
	}
	t.Setenv(ociapi.EnvDomainResourceType, "")
	t.Setenv(ociapi.EnvDomainClientID, "")
	msg := start()
	for _, want := range []string{"useWorkloadIdentity: " + ociapi.EnvDomainResourceType + " is not set", "useWorkloadIdentity: " + ociapi.EnvDomainClientID + " is not set"} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, ociapi.EnvDomainClientSecret+" is not set")
	t.Setenv(ociapi.EnvDomainResourceType, "k8sworkload")
	t.Setenv(ociapi.EnvDomainClientSecret, "")
	t.Setenv(ociapi.EnvDomainClientID, "x")
	assert.Contains(t, start(), ociapi.EnvDomainClientSecret+" is not set")
	t.Setenv(ociapi.EnvDomainClientSecret, p.Secret)

	for raw, want := range map[string]string{
		"idcs-x.identity.oraclecloud.com":                 "not the identity domain's URL",
		"http://idcs-x.identity.oraclecloud.com":          "plain http is allowed to a loopback address only",
		"https://admin:" + p.Secret + "@idcs-x":           "holds a user or password",
		"https://idcs-x.identity.oraclecloud.com/ui/v1":   "has a path",
		"https://idcs-x.identity.oraclecloud.com/?tenant": "has a query",
	} {
		t.Setenv(ociapi.EnvDomainURL, raw)
		assert.Contains(t, start(), "useWorkloadIdentity: "+ociapi.EnvDomainURL+": "+want, raw)
	}
	t.Setenv(ociapi.EnvDomainURL, e.IdentityDomainURL())

	t.Setenv(ociapi.EnvDomainTokenPath, filepath.Join(t.TempDir(), "none"))
	assert.Contains(t, start(), "useWorkloadIdentity: the ServiceAccount token ("+filepath.Join(filepath.Dir(os.Getenv(ociapi.EnvDomainTokenPath)), "none")+", or "+ociapi.EnvDomainTokenPath+")")
	t.Setenv(ociapi.EnvDomainTokenPath, p.TokenPath)
	t.Setenv(ociapi.EnvCABundle, filepath.Join(t.TempDir(), "none"))
	assert.Contains(t, start(), "reading the CA bundle ("+ociapi.EnvCABundle+")")
	t.Setenv(ociapi.EnvCABundle, p.CAPath)

	// The peer's variables without the domain's URL: not OKE's form silently.
	for _, name := range ociapi.DomainEnv {
		t.Setenv(name, "")
	}
	t.Setenv(ociapi.EnvDomainTokenPath, p.TokenPath)
	assert.Contains(t, start(), "useWorkloadIdentity: "+ociapi.EnvDomainTokenPath+" is set but "+ociapi.EnvDomainURL+" is not")
	t.Setenv(ociapi.EnvDomainTokenPath, "")
	assert.Contains(t, start(), "KUBERNETES_SERVICE_HOST is not set", "OKE's form")
}

// With OCI_WORKLOAD_IDENTITY_USE_INSTANCE_PRINCIPAL_FOR_TOKEN_EXCHANGE=true
// the exchange is signed by the instance principal, no client credentials.
func TestSelfManagedWorkloadIdentityThroughTheInstancePrincipal(t *testing.T) {
	e := ocitest.DomainEmulator(t, nil, 0, true)
	ocitest.DomainPodOn(t, e, time.Hour)
	t.Setenv(ociapi.EnvDomainClientID, "")
	t.Setenv(ociapi.EnvDomainClientSecret, "")
	t.Setenv(ociapi.EnvDomainViaInstance, "True")
	c := cloudOn(t, peerWorkloadConfig(e)+fmt.Sprintf("  metadata: %s/opc/v2\n  auth: %s\n", e.URL(), e.URL()))
	id, _ := e.AddMachine("node-a")
	md, err := c.InstanceMetadata(t.Context(), nodeNamed("node-a", ""))
	require.NoError(t, err)
	assert.Equal(t, ProviderIDPrefix+id, md.ProviderID)
	assert.Equal(t, map[int]int{200: 1}, ocitest.CallsOf(e, "identitydomain"))
	keyID, _, err := c.sessions.SigningKey()
	require.NoError(t, err)
	assert.True(t, c.sessions.SelfManaged())
	assert.True(t, strings.HasPrefix(keyID, "ST$ey"))
}

// The doctor says who the CCM calls as, and what to check when the domain
// gives no session token.
func TestDoctorOnSelfManagedWorkloadIdentity(t *testing.T) {
	e := ocitest.DomainEmulator(t, nil, 0, false)
	p := ocitest.DomainPodOn(t, e, time.Hour)
	got := byCheck(cloudOn(t, peerWorkloadConfig(e)).Diagnose(t.Context()))
	assert.Equal(t, doctor.OK, got["oci: API key"].Status)
	assert.Contains(t, got["oci: API key"].Detail, "accepted the signature of the self-managed workload identity")

	t.Setenv(ociapi.EnvDomainClientSecret, base64.StdEncoding.EncodeToString([]byte(p.Secret)))
	results := cloudOn(t, peerWorkloadConfig(e)).Diagnose(t.Context())
	require.Len(t, results, 1)
	assert.Equal(t, doctor.Fail, results[0].Status)
	assert.Contains(t, results[0].Detail, "self-managed workload identity: the identity domain")
	assert.Contains(t, results[0].Detail, "answered 401 Unauthorized")
	assert.Contains(t, results[0].Fix, "no session token from the identity domain")
	assert.NotContains(t, results[0].Detail+results[0].Fix, p.Secret)
}

// With useWorkloadIdentity the CCM calls as its ServiceAccount: one
// exchange, then every request signed with the session token.
func TestWorkloadIdentityCallsAsTheServiceAccount(t *testing.T) {
	e := ocitest.WorkloadEmulator(t, nil, 0)
	ocitest.PodOn(t, e, time.Hour)
	c := cloudOn(t, workloadConfig(e))
	id, _ := e.AddMachine("node-a")
	md, err := c.InstanceMetadata(t.Context(), nodeNamed("node-a", ""))
	require.NoError(t, err)
	assert.Equal(t, ProviderIDPrefix+id, md.ProviderID)
	_, err = c.InstanceMetadata(t.Context(), nodeNamed("node-a", ""))
	require.NoError(t, err)
	keyID, _, err := c.sessions.SigningKey()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(keyID, "ST$ey"))
	assert.Equal(t, map[int]int{200: 1}, ocitest.CallsOf(e, "workloadidentity"), "one exchange for every call")
}

// Bad config, or a pod without what workload identity needs: an error at
// start naming the key or the variable.
func TestWorkloadIdentityConfigErrorsNameTheKey(t *testing.T) {
	e := ocitest.WorkloadEmulator(t, nil, 0)
	p := ocitest.PodOn(t, e, time.Hour)
	problems := func(doc string) string {
		t.Helper()
		c, err := Read(strings.NewReader(doc))
		require.NoError(t, err)
		err = c.Validate()
		require.Error(t, err)
		return err.Error()
	}
	msg := problems("useWorkloadIdentity: true\nloadBalancer:\n  subnet1: " + subnet1 + "\n")
	assert.Contains(t, msg, "auth.region: required with useWorkloadIdentity")
	assert.Contains(t, msg, "compartment: required with useWorkloadIdentity")
	assert.NotContains(t, msg, "auth.user", "no API key wanted")
	assert.Contains(t, problems("useWorkloadIdentity: true\nuseInstancePrincipals: true\n"), "useWorkloadIdentity: cannot be set with useInstancePrincipals")
	assert.Contains(t, problems(strings.Replace(workloadConfig(e), "workloadIdentity: https:", "workloadIdentity: http:", 1)), "endpoints.workloadIdentity")

	t.Setenv("OCI_RESOURCE_PRINCIPAL_REGION", "eu-frankfurt-1")
	c, err := Read(strings.NewReader("useWorkloadIdentity: true\ncompartment: " + compartment + "\nloadBalancer:\n  subnet1: " + subnet1 + "\n"))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	assert.Equal(t, "eu-frankfurt-1", c.Auth.Region, "oci-go-sdk's variable")

	start := func() error {
		t.Helper()
		_, err := New(c)
		return err
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	require.ErrorContains(t, start(), "useWorkloadIdentity: KUBERNETES_SERVICE_HOST is not set")
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1") // the endpoint it makes: ociapi's TestTheWorkloadIdentityEndpointIsTheSDKs
	t.Setenv(ociapi.EnvCAPath, filepath.Join(t.TempDir(), "none"))
	require.ErrorContains(t, start(), "reading the cluster's CA ("+ociapi.EnvCAPath+")")
	t.Setenv(ociapi.EnvCAPath, p.CAPath)
	t.Setenv(ociapi.EnvTokenPath, filepath.Join(t.TempDir(), "none"))
	require.ErrorContains(t, start(), "useWorkloadIdentity: the ServiceAccount token")
}

// The doctor says who the CCM calls as, and what to check when the pod gets
// no session token.
func TestDoctorOnWorkloadIdentity(t *testing.T) {
	e := ocitest.WorkloadEmulator(t, nil, 0)
	ocitest.PodOn(t, e, time.Hour)
	got := byCheck(cloudOn(t, workloadConfig(e)).Diagnose(t.Context()))
	assert.Equal(t, doctor.OK, got["oci: API key"].Status)
	assert.Contains(t, got["oci: API key"].Detail, "accepted the signature of the workload identity")

	e.InjectFault(emucore.Fault{Service: "workloadidentity", Status: http.StatusForbidden})
	results := cloudOn(t, workloadConfig(e)).Diagnose(t.Context())
	require.Len(t, results, 1)
	assert.Equal(t, doctor.Fail, results[0].Status)
	assert.Contains(t, results[0].Detail, "answered 403 Forbidden: workload identity needs an OKE enhanced cluster")
	assert.Contains(t, results[0].Fix, "no session token for the pod's ServiceAccount")
}

// workloadConfig is a cloud-provider.yaml with useWorkloadIdentity for e.
func workloadConfig(e *emulator.Emulator) string {
	f := e.Fixture()
	return fmt.Sprintf("useWorkloadIdentity: true\nauth:\n  region: us-ashburn-1\ncompartment: %s\nvcn: %s\nloadBalancer:\n  subnet1: %s\nendpoints:\n  api: %s\n  workloadIdentity: %s\n",
		f.CompartmentID, f.VCNID, f.SubnetID, e.URL(), e.WorkloadIdentityURL())
}
