package oci

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/loadbalancer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/selfsigned"
)

// selfSigned is a PEM certificate and key for name.
func selfSigned(t *testing.T, name string) (cert, key string) {
	t.Helper()
	c, k, err := selfsigned.Pair(name)
	require.NoError(t, err)
	return string(c), string(k)
}

func TestAnSSLListenerNeedsItsCertificateWhichNeverShowsItsKey(t *testing.T) {
	e := started(t, Options{})
	c := lbClient(t, e)
	ctx := t.Context()
	f := e.fx
	cert, key := selfSigned(t, "web.example")
	bs := tcpBackendSet("10.0.10.2")
	ssl := &loadbalancer.SslConfigurationDetails{CertificateName: common.String("web-tls"), VerifyDepth: common.Int(0), VerifyPeerCertificate: common.Bool(false)}
	details := loadbalancer.CreateLoadBalancerDetails{CompartmentId: common.String(f.CompartmentID), DisplayName: common.String("svc-ssl"),
		ShapeName: common.String("flexible"), SubnetIds: []string{f.SubnetID},
		ShapeDetails: &loadbalancer.ShapeDetails{MinimumBandwidthInMbps: common.Int(10), MaximumBandwidthInMbps: common.Int(100)},
		BackendSets:  map[string]loadbalancer.BackendSetDetails{"TCP-443": bs},
		Listeners: map[string]loadbalancer.ListenerDetails{"TCP-443": {DefaultBackendSetName: common.String("TCP-443"),
			Port: common.Int(443), Protocol: common.String("TCP"), SslConfiguration: ssl}}}
	// Without the certificate: refused.
	_, err := c.CreateLoadBalancer(ctx, loadbalancer.CreateLoadBalancerRequest{CreateLoadBalancerDetails: details})
	requireServiceError(t, err, 400, "InvalidParameter")
	details.Certificates = map[string]loadbalancer.CertificateDetails{"web-tls": {CertificateName: common.String("web-tls"),
		PublicCertificate: common.String(cert), PrivateKey: common.String(key)}}
	id, lb := createLB(t, c, details)
	got := lb.Listeners["TCP-443"].SslConfiguration
	require.NotNil(t, got)
	assert.Equal(t, "web-tls", *got.CertificateName)
	assert.Equal(t, "oci-default-ssl-cipher-suite-v1", *got.CipherSuiteName, "the documented defaults echoed")
	assert.Equal(t, []string{"TLSv1.2"}, got.Protocols)
	assert.Equal(t, cert, *lb.Certificates["web-tls"].PublicCertificate)

	list, err := c.ListCertificates(ctx, loadbalancer.ListCertificatesRequest{LoadBalancerId: id})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	raw := string(e.rawGet(t, lbPath+"/loadBalancers/"+*id+"/certificates"))
	assert.NotContains(t, raw, "PRIVATE KEY", "a certificate's key is never shown")

	// In use: cannot go. A second one: created by a work request.
	_, err = c.DeleteCertificate(ctx, loadbalancer.DeleteCertificateRequest{LoadBalancerId: id, CertificateName: common.String("web-tls")})
	requireServiceError(t, err, 400, "InvalidParameter")
	cert2, key2 := selfSigned(t, "web.example")
	_, err = c.CreateCertificate(ctx, loadbalancer.CreateCertificateRequest{LoadBalancerId: id, CreateCertificateDetails: loadbalancer.CreateCertificateDetails{
		CertificateName: common.String("web-tls-2"), PublicCertificate: common.String(cert2), PrivateKey: common.String(key2)}})
	require.NoError(t, err)
	_, err = c.CreateCertificate(ctx, loadbalancer.CreateCertificateRequest{LoadBalancerId: id, CreateCertificateDetails: loadbalancer.CreateCertificateDetails{
		CertificateName: common.String("bad"), PublicCertificate: common.String("not a certificate"), PrivateKey: common.String(key2)}})
	requireServiceError(t, err, 400, "InvalidParameter")
	list, err = c.ListCertificates(ctx, loadbalancer.ListCertificatesRequest{LoadBalancerId: id})
	require.NoError(t, err)
	assert.Len(t, list.Items, 2)
	_, err = c.DeleteCertificate(ctx, loadbalancer.DeleteCertificateRequest{LoadBalancerId: id, CertificateName: common.String("web-tls-2")})
	require.NoError(t, err)
}

// rawGet is the body of a GET of path, signed as the fixture's user.
func (e *Emulator) rawGet(t *testing.T, path string) []byte {
	t.Helper()
	signer := common.DefaultRequestSigner(fixtureUser(t, e))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.URL()+path, nil)
	require.NoError(t, err)
	req.Header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	require.NoError(t, signer.Sign(req))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	return body
}
