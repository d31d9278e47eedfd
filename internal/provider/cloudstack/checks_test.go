package cloudstack

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// The spec reads every annotation as its check (internal/annotation,
// what the admission policy is made of) says.
func TestTheSpecAgreesWithTheAnnotationChecks(t *testing.T) {
	providertest.ChecksAgree(t, annotation.ChecksOf(ProviderName), func() *v1.Service { return service("web", httpPort) },
		func(svc *v1.Service) error {
			_, err := parseSpec(svc)
			return err
		})
}
