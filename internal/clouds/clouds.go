// Package clouds links every cloud's provider into a binary: importing it
// registers each with k8s.io/cloud-provider (and provider.Names). It is the
// one list of clouds outside the clouds' own folders; a new cloud adds its
// line here (docs/adding-a-cloud.md).
package clouds

import (
	_ "github.com/overcast-ccm/overcast/internal/provider/cloudstack" // cloudstack, external-cloudstack
	_ "github.com/overcast-ccm/overcast/internal/provider/local"      // local
	_ "github.com/overcast-ccm/overcast/internal/provider/oci"        // oci
	_ "github.com/overcast-ccm/overcast/internal/provider/openstack"  // openstack
)
