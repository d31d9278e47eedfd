package oci

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// specCloud is a cloud whose config names a load balancer subnet, for
// parsing Services (no call is made).
func specCloud() *Cloud {
	cfg := Config{LoadBalancer: &LoadBalancer{Subnet1: "ocid1.subnet.oc1.iad.aaaa", SecurityListManagementMode: ModeAll}}
	return &Cloud{cfg: cfg, lb: &steps{cfg: cfg, cluster: &provider.ClusterUID{}}}
}

func TestSSLAnnotationsAreCheckedWhole(t *testing.T) {
	c := specCloud()
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		wantErr     []string
	}{
		{"ssl-ports without tls-secret", map[string]string{"service.beta.kubernetes.io/oci-load-balancer-ssl-ports": "80"},
			[]string{"SSL listeners need the certificate of service.beta.kubernetes.io/oci-load-balancer-tls-secret"}},
		{"a port the Service has not, and a secret without ports", map[string]string{
			"service.beta.kubernetes.io/oci-load-balancer-ssl-ports":             "8443",
			"service.beta.kubernetes.io/oci-load-balancer-tls-backendset-secret": "back",
			"service.beta.kubernetes.io/oci-load-balancer-tls-secret":            "front"},
			[]string{"port 8443 is not a port of the Service"}},
		{"a cipher config without its secret", map[string]string{
			"oci.oraclecloud.com/oci-load-balancer-backendset-ssl-config": `{"CipherSuiteName":"x"}`},
			[]string{"oci-load-balancer-backendset-ssl-config needs service.beta.kubernetes.io/oci-load-balancer-tls-backendset-secret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := lbSvc("web", "uid-1", 30080)
			svc.Annotations = tc.annotations
			_, err := c.lb.parseSpec(svc)
			require.Error(t, err)
			for _, want := range tc.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}

	svc := lbSvc("web", "uid-1", 30080)
	svc.Annotations = map[string]string{
		"service.beta.kubernetes.io/oci-load-balancer-ssl-ports":             "80",
		"service.beta.kubernetes.io/oci-load-balancer-tls-secret":            "certs/front",
		"service.beta.kubernetes.io/oci-load-balancer-tls-backendset-secret": "back",
		"oci.oraclecloud.com/oci-load-balancer-listener-ssl-config":          `{"CipherSuiteName":"oci-modern-ssl-cipher-suite-v1","Protocols":["TLSv1.2","TLSv1.3"]}`,
	}
	spec, err := c.lb.parseSpec(svc)
	require.NoError(t, err)
	l, bs := spec.listeners["TCP-80"], spec.backendSets["TCP-80"]
	require.NotNil(t, l.SSLConfiguration)
	assert.Equal(t, ociapi.SSLConfiguration{CertificateName: "front", CipherSuiteName: "oci-modern-ssl-cipher-suite-v1", Protocols: []string{"TLSv1.2", "TLSv1.3"}},
		*l.SSLConfiguration)
	require.NotNil(t, bs.SSLConfiguration)
	assert.Equal(t, "back", bs.SSLConfiguration.CertificateName)
	assert.True(t, bs.HealthChecker.IsForcePlainText, "plain HTTP checks of backends reached by SSL, as the peer's")
	assert.Equal(t, map[string]types.NamespacedName{"front": {Namespace: "certs", Name: "front"}, "back": {Namespace: "default", Name: "back"}}, spec.tls)
}

func TestARenewedSecretGetsANewCertificateAndTheOldOneGoes(t *testing.T) {
	spec := lbSpec{tls: map[string]types.NamespacedName{"web-tls": {Namespace: "default", Name: "web-tls"}},
		certs:     map[string]ociapi.Certificate{"web-tls": {CertificateName: "web-tls", PublicCertificate: "NEW\n"}},
		listeners: map[string]ociapi.Listener{"TCP-443": {SSLConfiguration: &ociapi.SSLConfiguration{CertificateName: "web-tls"}}}}
	// The peer's certificate of the same content: adopted under its name.
	same := ociapi.LB{Certificates: map[string]ociapi.Certificate{"web-tls": {CertificateName: "web-tls", PublicCertificate: "NEW"}}}
	assert.Equal(t, map[string]string{"web-tls": "web-tls"}, certNames(same, spec))

	// Renewed: another name, the listener moved to it, then the old one goes.
	old := ociapi.LB{Certificates: map[string]ociapi.Certificate{"web-tls": {CertificateName: "web-tls", PublicCertificate: "OLD"}},
		Listeners: map[string]ociapi.Listener{"TCP-443": {SSLConfiguration: &ociapi.SSLConfiguration{CertificateName: "web-tls"}}}}
	names := certNames(old, spec)
	require.Regexp(t, `^web-tls-[0-9a-f]{8}$`, names["web-tls"])
	assert.Equal(t, names["web-tls"], withCertNames(spec, names).listeners["TCP-443"].SSLConfiguration.CertificateName)
	assert.Empty(t, staleCertificate(old, spec, names), "still used by the listener")
	moved := old
	moved.Listeners = map[string]ociapi.Listener{"TCP-443": {SSLConfiguration: &ociapi.SSLConfiguration{CertificateName: names["web-tls"]}}}
	moved.Certificates = map[string]ociapi.Certificate{"web-tls": old.Certificates["web-tls"], names["web-tls"]: {PublicCertificate: "NEW"}}
	assert.Equal(t, "web-tls", staleCertificate(moved, spec, names))
	moved.Certificates["someone-else"] = ociapi.Certificate{PublicCertificate: "X"}
	delete(moved.Certificates, "web-tls")
	assert.Empty(t, staleCertificate(moved, spec, names), "a certificate of no Secret of the Service's is not its to remove")
}

func TestSSLIsComparedAsThePeerComparesIt(t *testing.T) {
	want := &ociapi.SSLConfiguration{CertificateName: "c"}
	got := &ociapi.SSLConfiguration{CertificateName: "c", CipherSuiteName: "oci-default-ssl-cipher-suite-v1", Protocols: []string{"TLSv1.2"}}
	assert.True(t, sameSSL(got, want), "OCI's defaults are not a change")
	assert.False(t, sameSSL(nil, want))
	assert.False(t, sameSSL(got, &ociapi.SSLConfiguration{CertificateName: "c", CipherSuiteName: "oci-modern-ssl-cipher-suite-v1"}))
	assert.False(t, sameSSL(got, &ociapi.SSLConfiguration{CertificateName: "c", Protocols: []string{"TLSv1.3"}}))
	assert.True(t, sameSSL(nil, nil))
}

func TestRuleSetsAreReadAsThePeerReadsThem(t *testing.T) {
	c := specCloud()
	svc := lbSvc("web", "uid-1", 30080)
	_, err := c.lb.parseSpec(svc)
	require.NoError(t, err)

	svc.Annotations = map[string]string{"oci.oraclecloud.com/oci-load-balancer-rule-sets": `{"b": {"items": [{"action": "ALLOW", "conditions": []}]}, "a": {"items": []}}`}
	spec, err := c.lb.parseSpec(svc)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, spec.listeners["TCP-80"].RuleSetNames, "every listener applies every rule set")

	svc.Annotations["oci.oraclecloud.com/oci-load-balancer-rule-sets"] = `{"a": {"items": [{"header": "X"}]}}`
	_, err = c.lb.parseSpec(svc)
	require.ErrorContains(t, err, `rule 0 of rule set "a" has no action of`)

	// OCI may fill in fields a rule did not give: not a change.
	assert.True(t, sameRuleSet(ociapi.RuleSet{Items: []json.RawMessage{[]byte(`{"action":"ALLOW","conditions":[],"description":null}`)}},
		ociapi.RuleSet{Items: []json.RawMessage{[]byte(`{"action":"ALLOW","conditions":[]}`)}}))
	assert.False(t, sameRuleSet(ociapi.RuleSet{Items: []json.RawMessage{[]byte(`{"action":"ALLOW"}`)}},
		ociapi.RuleSet{Items: []json.RawMessage{[]byte(`{"action":"REDIRECT"}`)}}))
}
