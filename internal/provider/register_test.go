package provider

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	fakecloud "k8s.io/cloud-provider/fake"
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
