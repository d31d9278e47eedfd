package openstack

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// The spec reads every annotation as its check (internal/annotation,
// what the admission policy is made of) says.
func TestTheSpecAgreesWithTheAnnotationChecks(t *testing.T) {
	c := specCloud(t, "")
	providertest.ChecksAgree(t, annotation.ChecksOf(ProviderName), func() *v1.Service { return specService(nil) },
		func(svc *v1.Service) error {
			_, err := c.lb.spec("k8s", svc, []*v1.Node{node("a", "10.0.0.1", nil)})
			return err
		})
}
