package provider

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	fakecloud "k8s.io/cloud-provider/fake"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
)

type initTestConfig struct{}

// A cloud config that cannot be opened is an error naming it, not the end of
// the process (the framework's InitCloudProvider exits with a stack trace);
// a name no cloud has is one naming the clouds served.
func TestInitSaysWhatItCannotReadAndWhichCloudsThereAre(t *testing.T) {
	Register("init-test", func(io.Reader) (initTestConfig, error) { return initTestConfig{}, nil },
		func(initTestConfig) (*fakecloud.Cloud, error) { return &fakecloud.Cloud{}, nil })
	missing := filepath.Join(t.TempDir(), "cloud.conf")
	_, err := Init("init-test", missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot read the cloud config: open "+missing)

	_, err = Init("no-such-cloud", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no cloud "no-such-cloud": this binary serves `)
	assert.Contains(t, err.Error(), "init-test")
}

// A config that could not be parsed is that error alone: nothing was read,
// so the cloud's validation (which would say every key is missing) is not run.
func TestAConfigThatCannotBeParsedIsThatErrorAlone(t *testing.T) {
	built := false
	Register("syntax-test", func(r io.Reader) (initTestConfig, error) {
		var out struct{ Region string }
		return initTestConfig{}, cfgutil.DecodeYAML([]byte("region: 'a'x'\n"), &out)
	}, func(initTestConfig) (*fakecloud.Cloud, error) {
		built = true
		return nil, errors.New("region: required")
	})
	file := filepath.Join(t.TempDir(), "cloud.yaml")
	require.NoError(t, os.WriteFile(file, []byte("region: 'a'x'\n"), 0o600))
	_, err := Init("syntax-test", file)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not valid YAML")
	assert.NotContains(t, err.Error(), "required")
	assert.False(t, built, "nothing was read: not validated")
}
