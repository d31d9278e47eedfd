package openstack

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
	"github.com/overcast-ccm/overcast/internal/cfgutil/cfgtest"
)

// The two files cloud.conf points at carry secrets too: its credentials-file
// (an INI [Global] of its own) and a clouds.yaml (use-clouds). Every secret
// key of each, written wrongly in every shape, is in no error of Read or
// Validate. (cloud.conf itself: internal/clouds' secrets test.)
func TestTheFilesCloudConfPointsAtNeverShowASecret(t *testing.T) {
	const secret = "Pw9-S3cretValue_q2"
	dir := t.TempDir()
	var cloudsYAML []cfgutil.SecretKey
	for _, k := range []string{"password", "token", "application_credential_secret"} {
		cloudsYAML = append(cloudsYAML, cfgutil.SecretKey{Path: []string{"clouds", "mine", "auth", k}})
	}
	files := map[string][]cfgutil.SecretKey{
		"credentials-file": cfgutil.SecretKeys(reflect.TypeFor[Config]()),
		"clouds-file":      cloudsYAML,
	}
	for which, keys := range files {
		for _, key := range keys {
			if key.INI && key.Path[0] != "Global" {
				continue // a credentials-file holds [Global] only
			}
			for _, shape := range cfgtest.Shapes(key, secret, "") {
				t.Run(which+"/"+strings.Join(key.Path, ".")+"/"+shape.Name, func(t *testing.T) {
					path := filepath.Join(dir, "f")
					writeFile(t, path, shape.File)
					conf := "[Global]\nauth-url=http://127.0.0.1:9/v3\nusername=u\ntenant-id=p\ncredentials-file=" + path + "\n"
					if which == "clouds-file" {
						conf = "[Global]\nuse-clouds=true\ncloud=mine\nclouds-file=" + path + "\n"
					}
					c, err := Read(strings.NewReader(conf))
					if err == nil {
						err = c.Validate()
					}
					if err != nil {
						assert.NotContains(t, err.Error(), secret[:7])
					}
				})
			}
		}
	}
}
