// Package ocitest sets up, for tests, the pods the OCI emulator's workload
// identity answers: the files and the environment oci-go-sdk (and so the
// peer and Overcast) read, with the variables' names as the SDK documents
// them.
package ocitest

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
)

// The variables of the self-managed form (oci-go-sdk's common/auth
// token_exchange), every one cleared before a pod is set up.
var domainEnv = []string{"OCI_WORKLOAD_IDENTITY_DOMAIN_URL", "OCI_WORKLOAD_IDENTITY_CLIENT_ID",
	"OCI_WORKLOAD_IDENTITY_CLIENT_SECRET", "OCI_WORKLOAD_IDENTITY_RESOURCE_TYPE", "OCI_WORKLOAD_IDENTITY_SUBJECT_TOKEN_TYPE",
	"OCI_WORKLOAD_IDENTITY_REQUESTED_TOKEN_TYPE", "OCI_WORKLOAD_IDENTITY_TOKEN_PATH", "OCI_WORKLOAD_IDENTITY_RPST_EXP",
	"OCI_WORKLOAD_IDENTITY_PUBLIC_KEY", "OCI_WORKLOAD_IDENTITY_USE_INSTANCE_PRINCIPAL_FOR_TOKEN_EXCHANGE"}

// OKE's workload identity's files (the OCI CLI's and oci-go-sdk's names).
const (
	envTokenPath = "OCI_KUBERNETES_SERVICE_ACCOUNT_TOKEN_PATH"
	envCAPath    = "OCI_KUBERNETES_SERVICE_ACCOUNT_CERT_PATH"
)

// serve starts an emulator with opts on clock (nil: now).
func serve(t *testing.T, opts emulator.Options, clock func() time.Time) *emulator.Emulator {
	t.Helper()
	opts.Clock = clock
	e, err := emulator.New(opts)
	return coretest.Serve(t, e, err)
}

// DomainEmulator is an emulator that is an identity domain too (and, with
// instance, the CCM's host's metadata service and federation endpoint), its
// session tokens lasting lifetime (0: 20 minutes), on clock (nil: now).
func DomainEmulator(t *testing.T, clock func() time.Time, lifetime time.Duration, instance bool) *emulator.Emulator {
	t.Helper()
	return serve(t, emulator.Options{IdentityDomain: true, InstancePrincipals: instance, SessionLifetime: lifetime}, clock)
}

// WorkloadEmulator is an emulator that is OKE's workload identity endpoint
// too, its session tokens lasting lifetime (0: 20 minutes), on clock (nil:
// now).
func WorkloadEmulator(t *testing.T, clock func() time.Time, lifetime time.Duration) *emulator.Emulator {
	t.Helper()
	return serve(t, emulator.Options{WorkloadIdentity: true, SessionLifetime: lifetime}, clock)
}

// Pod is a pod's ServiceAccount token and CA in files. Token writes another
// token to the file, as the kubelet rotates it.
type Pod struct {
	t                 *testing.T
	TokenPath, CAPath string
	// Secret is the identity domain's application's secret (DomainPodOn).
	Secret string
}

// Token writes token to the pod's token file.
func (p *Pod) Token(token string) {
	require.NoError(p.t, os.WriteFile(p.TokenPath, []byte(token), 0o600))
}

// newPod writes e's CA (to ca) and a token of ServiceAccount kube-system/sa
// lasting ttl.
func newPod(t *testing.T, e *emulator.Emulator, ca, sa string, ttl time.Duration) *Pod {
	t.Helper()
	dir := t.TempDir()
	p := &Pod{t: t, TokenPath: filepath.Join(dir, "token"), CAPath: filepath.Join(dir, ca)}
	require.NoError(t, os.WriteFile(p.CAPath, e.CA(), 0o600))
	p.Token(e.ServiceAccountToken("kube-system", sa, ttl))
	for _, name := range domainEnv {
		t.Setenv(name, "")
	}
	return p
}

// PodOn is what the kubelet gives the CCM's pod on e's cluster: the
// ServiceAccount token and the cluster's CA in files, which the environment
// names.
func PodOn(t *testing.T, e *emulator.Emulator, ttl time.Duration) *Pod {
	t.Helper()
	p := newPod(t, e, "ca.crt", "overcast-ccm", ttl)
	t.Setenv(envTokenPath, p.TokenPath)
	t.Setenv(envCAPath, p.CAPath)
	t.Setenv("OCI_RESOURCE_PRINCIPAL_REGION", "")
	return p
}

// DomainPodOn is a pod set up as oci-cloud-controller-manager's self-managed
// workload identity wants it on e: the ServiceAccount token in a file, the
// OCI_WORKLOAD_IDENTITY_* environment naming e's identity domain and its
// application, e's CA trusted (OCI_DEFAULT_CERTS_PATH).
func DomainPodOn(t *testing.T, e *emulator.Emulator, ttl time.Duration) *Pod {
	t.Helper()
	p := newPod(t, e, "ca.pem", "oci-cloud-controller-manager", ttl)
	for _, name := range []string{envTokenPath, envCAPath, "OCI_RESOURCE_PRINCIPAL_REGION", "KUBERNETES_SERVICE_HOST"} {
		t.Setenv(name, "")
	}
	id, secret := e.IdentityDomainClient()
	p.Secret = secret
	for name, v := range map[string]string{"OCI_WORKLOAD_IDENTITY_DOMAIN_URL": e.IdentityDomainURL(), "OCI_WORKLOAD_IDENTITY_RESOURCE_TYPE": "k8sworkload",
		"OCI_WORKLOAD_IDENTITY_CLIENT_ID": id, "OCI_WORKLOAD_IDENTITY_CLIENT_SECRET": secret, "OCI_WORKLOAD_IDENTITY_TOKEN_PATH": p.TokenPath,
		"OCI_DEFAULT_CERTS_PATH": p.CAPath} {
		t.Setenv(name, v)
	}
	return p
}

// CallsOf counts the calls of service on e, by status.
func CallsOf(e *emulator.Emulator, service string) map[int]int {
	out := map[int]int{}
	for _, c := range e.Calls() {
		if c.Service == service {
			out[c.Code] += c.Count
		}
	}
	return out
}

// ReadsAndWrites are the calls e served: GETs, and the others.
func ReadsAndWrites(e *emulator.Emulator) (reads, writes int) {
	for _, c := range e.Calls() {
		if c.Method == http.MethodGet {
			reads += c.Count
		} else {
			writes += c.Count
		}
	}
	return reads, writes
}
