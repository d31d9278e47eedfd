package oci

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/doctor"
)

func byCheck(results []doctor.Result) map[string]doctor.Result {
	out := map[string]doctor.Result{}
	for _, r := range results {
		out[r.Check] = r
	}
	return out
}

func TestDoctorPassesOnAGoodConfig(t *testing.T) {
	e := startEmulator(t)
	got := byCheck(cloudOn(t, e.CloudConfig()).Diagnose(t.Context()))
	for _, check := range []string{"oci: API key", "oci: instances", "oci: VCN", "oci: load balancer subnet", "oci: security list", "oci: load balancers"} {
		require.Contains(t, got, check)
		assert.Equal(t, doctor.OK, got[check].Status, "%s: %s", check, got[check].Detail)
	}
}

func TestDoctorExplainsAKeyOCIDoesNotKnow(t *testing.T) {
	e := startEmulator(t)
	// A key that is valid and matches its fingerprint, but was never uploaded.
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)}))
	conf := strings.Replace(e.CloudConfig(), e.Fixture().Fingerprint, Fingerprint(&other.PublicKey), 1)
	conf = strings.Replace(conf, strings.ReplaceAll(strings.TrimSpace(e.Fixture().PrivateKeyPEM), "\n", "\n    "),
		strings.ReplaceAll(strings.TrimSpace(keyPEM), "\n", "\n    "), 1)
	results := cloudOn(t, conf).Diagnose(t.Context())
	require.Len(t, results, 1, "nothing else can be checked")
	assert.Equal(t, doctor.Fail, results[0].Status)
	assert.Contains(t, results[0].Detail, "401 NotAuthenticated")
	assert.Contains(t, results[0].Fix, "must be one API key of the user")
}

func TestDoctorNamesThePolicyAUserLacks(t *testing.T) {
	e := startEmulator(t)
	got := byCheck(cloudOn(t, configOfUser(t, e, "identity", "network")).Diagnose(t.Context()))
	assert.Equal(t, doctor.OK, got["oci: API key"].Status)
	for check, policy := range map[string]string{"oci: instances": "read instance-family", "oci: load balancers": "manage load-balancers"} {
		assert.Equal(t, doctor.Fail, got[check].Status, check)
		assert.Contains(t, got[check].Detail, "404 NotAuthorizedOrNotFound", check)
		assert.Contains(t, got[check].Fix, `"Allow group <group> to `+policy, check)
	}
	assert.Equal(t, doctor.OK, got["oci: security list"].Status)
}

func TestDoctorFindsASubnetOfAnotherVCN(t *testing.T) {
	e := startEmulator(t)
	conf := strings.Replace(e.CloudConfig(), "vcn: "+e.Fixture().VCNID, "vcn: ocid1.vcn.oc1.iad.aaaaanother", 1)
	got := byCheck(cloudOn(t, conf).Diagnose(t.Context()))
	assert.Equal(t, doctor.Fail, got["oci: VCN"].Status)
	r := got["oci: load balancer subnet"]
	assert.Equal(t, doctor.Fail, r.Status)
	assert.Contains(t, r.Detail, "is in VCN "+e.Fixture().VCNID+", not in vcn ocid1.vcn.oc1.iad.aaaaanother")
}
