package clouds

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/overcast-ccm/overcast/internal/kit"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// A cloud is its provider (linked here) and its kit (what the tools know of
// it): the two registries name the same clouds, the providers' aliases aside.
func TestEveryCloudHasAProviderAndAKit(t *testing.T) {
	providers := provider.Names()
	for _, name := range kit.Names() {
		assert.Contains(t, providers, name, "the kit of %s has no provider: add its import to clouds.go", name)
	}
	for _, name := range []string{"local", "openstack", "cloudstack"} {
		assert.Contains(t, kit.Names(), name)
	}
}
