// Command gen-admission-policy writes each cloud's ValidatingAdmissionPolicy
// (internal/admission) into the chart, as <out>/<cloud>.yaml; the chart's
// templates/admissionpolicy.yaml serves the installed cloud's, and
// hack/gen-manifests.sh renders deploy/<cloud>/admission/policy.yaml from it.
//
//	go run ./hack/gen-admission-policy -out deploy/chart/overcast-ccm/admission
package main

import (
	"fmt"
	"path/filepath"

	"github.com/overcast-ccm/overcast/hack/internal/gendoc"
	"github.com/overcast-ccm/overcast/internal/admission"
	"github.com/overcast-ccm/overcast/internal/annotation"
)

func main() {
	gendoc.Main("gen-admission-policy", gendoc.Out("gen-admission-policy", "the directory of the chart's policies", func(out string) error {
		for _, cloud := range annotation.CheckedClouds() {
			page, err := admission.YAML(cloud, annotation.ChecksOf(cloud))
			if err != nil {
				return fmt.Errorf("%s: %w", cloud, err)
			}
			if err := gendoc.WriteFile(filepath.Join(out, cloud+".yaml"), page); err != nil {
				return err
			}
		}
		return nil
	}))
}
