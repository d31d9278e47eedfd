package ccm

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// An invalid cloud config ends the command with an Exit of ExitCodeConfig,
// every problem written, and never ends the process itself: the e2e suites
// run the manager in-process.
func TestAnInvalidCloudConfigIsAnExitErrorListingEveryProblem(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "cloud.conf")
	require.NoError(t, os.WriteFile(conf, []byte("[Global]\nauth-url=ftp://x\n"), 0o600))
	var stderr bytes.Buffer
	stop := make(chan struct{})
	defer close(stop)
	cmd, err := NewCommand(stop, &stderr)
	require.NoError(t, err)
	cmd.SetArgs([]string{"--cloud-provider=openstack", "--cloud-config=" + conf})
	err = cmd.Execute()
	var exit *Exit
	require.True(t, errors.As(err, &exit), "an Exit: %v", err)
	assert.Equal(t, ExitCodeConfig, exit.Code)
	for _, want := range []string{"auth-url", "username", "password", "tenant-id"} {
		assert.Contains(t, stderr.String(), "[Global] "+want)
	}
}

func TestVersionIsAnExitOfZero(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	cmd, err := NewCommand(stop, &bytes.Buffer{})
	require.NoError(t, err)
	cmd.SetArgs([]string{"--version"})
	// The version flag's value is component-base's package state, shared by
	// every command of the process: leave it as found.
	t.Cleanup(func() { _ = cmd.Flags().Set("version", "false") })
	var exit *Exit
	require.True(t, errors.As(cmd.Execute(), &exit))
	assert.Equal(t, 0, exit.Code)
}

// The chart's kubeAPI values are the command's defaults: a limit raised above
// the framework's is said where an operator installs it, with its reason.
func TestTheChartSaysTheClientLimitsTheCommandHas(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "chart", "overcast-ccm", "values.yaml"))
	require.NoError(t, err)
	var values struct {
		KubeAPI struct {
			QPS   int `json:"qps"`
			Burst int `json:"burst"`
		} `json:"kubeAPI"`
	}
	require.NoError(t, yaml.Unmarshal(data, &values))
	assert.Equal(t, DefaultKubeAPIQPS, values.KubeAPI.QPS)
	assert.Equal(t, DefaultKubeAPIBurst, values.KubeAPI.Burst)

	stop := make(chan struct{})
	defer close(stop)
	cmd, err := NewCommand(stop, &bytes.Buffer{})
	require.NoError(t, err)
	for flag, want := range map[string]int{"kube-api-qps": DefaultKubeAPIQPS, "kube-api-burst": DefaultKubeAPIBurst} {
		f := cmd.Flags().Lookup(flag)
		require.NotNil(t, f, flag)
		assert.Equal(t, strconv.Itoa(want), f.DefValue, flag)
	}
}
