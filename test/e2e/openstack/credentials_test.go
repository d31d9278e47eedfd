package openstack

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/test/framework"
)

// TestRotatedCredentialsTakeEffectWithoutARestart: the password lives in a
// credentials-file (as a mounted Secret would hold it). The CCM starts with a
// wrong one and cannot initialise the Node; the file is fixed, and the same
// process initialises it.
func TestRotatedCredentialsTakeEffectWithoutARestart(t *testing.T) {
	conf := cloudConf(t, "OVERCAST_OS_CLOUD_PASSWORD_CONF")
	pw := regexp.MustCompile(`(?m)^password\s*=\s*(.*)$`)
	m := pw.FindStringSubmatch(conf)
	require.NotNil(t, m, "the harness's password cloud.conf has a password line")
	creds := filepath.Join(t.TempDir(), "credentials.conf")
	write := func(password string) {
		require.NoError(t, os.WriteFile(creds+".new", []byte("[Global]\npassword="+password+"\n"), 0o600))
		require.NoError(t, os.Rename(creds+".new", creds))
	}
	write("not-the-password")
	conf = pw.ReplaceAllString(conf, "credentials-file="+creds)

	name := "os-rotate-" + suffix()
	s := createServer(t, name)
	env.StartCCM(t, ccmOptions(conf))
	env.NewKubelet(t, name, s.fixedIP())
	time.Sleep(5 * time.Second)
	n, err := env.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, n.Spec.ProviderID, "with a wrong password the Node cannot be initialised")

	write(m[1])
	start := time.Now()
	require.NoError(t, framework.Poll(3*time.Minute, time.Second, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Spec.ProviderID != "openstack:///"+s.ID {
			return fmt.Errorf("node %s has providerID %q", name, n.Spec.ProviderID)
		}
		return nil
	}))
	t.Logf("initialised %.1fs after the credentials file was fixed", time.Since(start).Seconds())
}
