package oci

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// The reference (generated from the annotation table's doc comments) says
// "Not served" of exactly the annotations the spec refuses, and a Service of
// every kind that sets one is refused, naming it.
func TestTheReferenceSaysWhatIsNotServed(t *testing.T) {
	documented, err := providertest.NotServed("../../annotation/oci.go")
	require.NoError(t, err)
	var refused []string
	for kind, names := range unsupported {
		for _, n := range names {
			if !slices.Contains(refused, string(n)) {
				refused = append(refused, string(n))
			}
			svc := lbSvc("web", "uid-1", 30080)
			svc.Annotations = map[string]string{string(n): "x"}
			if kind == ociapi.KindNLB {
				svc.Annotations["oci.oraclecloud.com/load-balancer-type"] = ociapi.KindNLB
			}
			_, err := specCloud().lb.parseSpec(svc)
			require.Error(t, err, "%s on an %s", n, kind)
			assert.Contains(t, err.Error(), string(n)+": not served")
		}
	}
	slices.Sort(refused)
	assert.ElementsMatch(t, documented, refused, "the annotations whose doc says \"Not served:\" (internal/annotation/oci.go) and those the spec refuses (unsupported)")
}

// The spec reads every annotation as its check (internal/annotation,
// what the admission policy is made of) says.
func TestTheSpecAgreesWithTheAnnotationChecks(t *testing.T) {
	providertest.ChecksAgree(t, annotation.ChecksOf(ProviderName), func() *v1.Service { return lbSvc("web", "uid-1", 30080) },
		func(svc *v1.Service) error {
			_, err := specCloud().lb.parseSpec(svc)
			return err
		})
}
