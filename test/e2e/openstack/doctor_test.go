package openstack

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/test/framework"
)

// doctor runs bin/overcast doctor against the real OpenStack with the admin's
// kubeconfig, as an operator would from a workstation.
func doctor(t *testing.T, conf string) (string, int) {
	t.Helper()
	ccm, err := env.CCMBinary()
	require.NoError(t, err)
	bin := filepath.Join(filepath.Dir(ccm), "overcast")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s: run `make test-openstack`, which builds it", bin)
	}
	return framework.RunDoctor(t, bin, "openstack", conf, "--kubeconfig="+env.AdminKubeconfig, "--timeout=2m")
}

var doctorRow = framework.DoctorRow

var apiRows = []string{"openstack: credentials", "openstack: compute (servers)", "openstack: network (ports)",
	"openstack: network (floating IPs)", "openstack: load-balancer (Octavia)"}

// A good setup passes; a wrong password and a user without the load-balancer
// role each give their own failing row with the fix.
func TestDoctorAgainstTheRealOpenStack(t *testing.T) {
	name := "os-doctor-" + suffix()
	s := createServer(t, name)
	env.NewKubelet(t, name, s.fixedIP())

	out, code := doctor(t, cloudConf(t, "OVERCAST_OS_CLOUD_CONF"))
	assert.Equal(t, 0, code, "a good setup passes")
	for _, r := range apiRows {
		assert.Regexp(t, `^`+regexp.QuoteMeta(r)+` +ok `, doctorRow(out, r))
	}
	assert.Regexp(t, `^kubernetes: RBAC +ok `, doctorRow(out, "kubernetes: RBAC"))
	assert.Regexp(t, `^nodes ↔ instances +ok `, doctorRow(out, "nodes ↔ instances"))

	pw := regexp.MustCompile(`(?m)^password\s*=.*$`)
	out, code = doctor(t, pw.ReplaceAllString(cloudConf(t, "OVERCAST_OS_CLOUD_PASSWORD_CONF"), "password=not-the-password"))
	assert.Equal(t, 1, code)
	creds := doctorRow(out, "openstack: credentials")
	assert.Contains(t, creds, "FAIL")
	assert.Contains(t, creds, "401")
	assert.Contains(t, creds, "Keystone rejected the credentials")
	assert.NotContains(t, out, "not-the-password")

	out, code = doctor(t, cloudConf(t, "OVERCAST_OS_CLOUD_NO_LB_CONF"))
	assert.Equal(t, 1, code)
	for _, r := range apiRows[:4] {
		assert.Regexp(t, `^`+regexp.QuoteMeta(r)+` +ok `, doctorRow(out, r), "the member role reads %s", r)
	}
	lb := doctorRow(out, "openstack: load-balancer (Octavia)")
	assert.Contains(t, lb, "FAIL")
	assert.Contains(t, lb, "403 Forbidden")
	assert.Contains(t, lb, "load-balancer_member role")
}
