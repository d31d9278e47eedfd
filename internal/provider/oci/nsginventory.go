package oci

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// The drift check's view of a Service's network security group rules (NSG
// mode): its rules in its frontend NSG (the one of its load balancer's NSGs
// it does not name by annotation) and in its backend NSGs. OCI lists an
// NSG's rules per NSG only, so the reads are budgeted (a provider.Rotation):
// nsgReadsPerPass NSGs a drift pass, those read longest ago, and more when
// there are so many that one would wait longer than provider.WatchedWithin
// (an hour); an NSG never read, or whose rules this CCM just wrote, at once
// (a walk's post-walk check then sees what it left). A rule removed behind
// our back is seen within the drift period up to nsgReadsPerPass NSGs,
// within an hour whatever their number, and put back by the walk it causes;
// the cost is at most nsgReadsPerPass reads a pass or the NSGs' number an
// hour.

// nsgReadsPerPass is the NSGs whose rules one drift pass reads, below
// provider.WatchedWithin's need.
const nsgReadsPerPass = 20

// nsgObjects are the keys of the Service's rules in its frontend and backend
// NSGs, as nsgPass last read them.
func (st *steps) nsgObjects(ctx context.Context, svc *v1.Service, spec lbSpec, lb ociapi.LB) ([]string, error) {
	var ids []string
	for _, id := range lb.NetworkSecurityGroupIDs {
		if !slices.Contains(spec.nsgs, id) {
			ids = append(ids, id) // its frontend NSG
		}
	}
	ids = append(ids, spec.backendNSGs...)
	var out []string
	for _, id := range ids {
		rules, err := st.nsgPass.Get(ctx, id, st.api.NSGRules)
		if err != nil {
			return nil, fmt.Errorf("reading the rules of network security group %s: %w", id, err)
		}
		for _, r := range rules {
			if st.isOurs(r, svc) {
				out = append(out, "nsg-rule/"+r.ID+" "+id+" "+nsgRuleKey(r))
			}
		}
	}
	return out, nil
}
