package clouds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
	"github.com/overcast-ccm/overcast/internal/cfgutil/cfgtest"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// A key that looks like a secret's (password, token, a key) says whether it
// is one, so that the secrets test below covers the next such key of any
// cloud without anyone adding it there.
func TestEveryFieldNamedLikeASecretSaysWhetherItIsOne(t *testing.T) {
	for _, name := range provider.Names() {
		typ := provider.ConfigType(name)
		require.NotNil(t, typ, name)
		assert.Empty(t, cfgutil.LooksSecret(typ), "%s: tag each secret:\"true\" (never shown) or secret:\"false\"", name)
	}
}

// Every key that holds a secret, on every cloud, written wrongly in every
// shape of cfgtest.Shapes: the error overcast-ccm (and overcast doctor and
// sweep, which start the cloud the same way) prints never shows it.
func TestNoCloudShowsASecretOfAMalformedConfig(t *testing.T) {
	const secret = "Hq4-S3cretValue_x7"
	dir := t.TempDir()
	clouds := 0
	for _, name := range provider.Names() {
		keys := cfgutil.SecretKeys(provider.ConfigType(name))
		if len(keys) > 0 {
			clouds++
		}
		for _, key := range keys {
			for i, shape := range cfgtest.Shapes(key, secret, "") {
				t.Run(name+"/"+strings.Join(key.Path, ".")+"/"+shape.Name, func(t *testing.T) {
					path := filepath.Join(dir, name+strings.Join(key.Path, "-")+string(rune('a'+i)))
					require.NoError(t, os.WriteFile(path, []byte(shape.File), 0o600))
					_, err := cloudprovider.InitCloudProvider(name, path)
					if shape.Name != "well formed" {
						require.Error(t, err, "the file is wrong:\n%s", shape.File)
					}
					if err != nil {
						assert.NotContains(t, err.Error(), secret[:7])
					}
				})
			}
		}
	}
	assert.GreaterOrEqual(t, clouds, 3, "the clouds with credentials have secret keys")
}

func TestAnEmptyConfigSaysItIsEmpty(t *testing.T) {
	for _, name := range provider.Names() {
		path := filepath.Join(t.TempDir(), "cloud.conf")
		require.NoError(t, os.WriteFile(path, []byte(" \n\n"), 0o600))
		_, err := cloudprovider.InitCloudProvider(name, path)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "--cloud-config "+path+" is empty: the ", name)
		_, err = cloudprovider.InitCloudProvider(name, "")
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "no --cloud-config given", name)
	}
}
