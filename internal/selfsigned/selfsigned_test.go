package selfsigned

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPairIsACertificateAndItsKey(t *testing.T) {
	cert, key, err := Pair("web.example")
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(cert, key)
	require.NoError(t, err, "the key is the certificate's")
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, []string{"web.example"}, leaf.DNSNames)
	cert2, _, err := Pair("web.example")
	require.NoError(t, err)
	assert.NotEqual(t, cert, cert2, "a new certificate each time")
}
