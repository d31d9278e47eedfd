package cloudstack

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// Ownership tags on the public addresses this CCM associates: the cluster's
// UID and the Service's. An address without them is never released.
const (
	tagCluster = "overcast-cluster"
	tagService = "overcast-service"
	// tagServiceName is the Service's namespace/name, for a person (and
	// `overcast sweep`) once the Service is gone; never used to find.
	tagServiceName = "overcast-service-name"
)

func (s *steps) ownTags(svc *v1.Service) map[string]string {
	return map[string]string{tagCluster: s.cluster.Get(), tagService: string(svc.UID)}
}

// newTags are what this CCM tags an object with: ownTags and the Service's
// name.
func (s *steps) newTags(svc *v1.Service) map[string]string {
	t := s.ownTags(svc)
	t[tagServiceName] = svc.Namespace + "/" + svc.Name
	return t
}

// itemReason is the reason of the ACL items this CCM makes for the Service:
// its mark from their creation, before their tags (a createTags whose
// answer was lost, or a createNetworkACL's, which names the item made).
func (s *steps) itemReason(svc *v1.Service) string {
	return tagService + "=" + string(svc.UID) + " " + tagCluster + "=" + s.cluster.Get()
}

// itemOurs says whether an ACL item is the Service's: tagged as its, or
// made with its reason (its tags not put yet, or their call's answer lost).
func (s *steps) itemOurs(it csapi.Opening, svc *v1.Service) bool {
	return it.Tags[tagService] == string(svc.UID) || it.Reason == s.itemReason(svc)
}

// owns says whether the address was associated by this CCM for the Service.
func (s *steps) owns(a csapi.Address, svc *v1.Service) bool {
	return a.Tags[tagCluster] == s.cluster.Get() && a.Tags[tagService] == string(svc.UID)
}

// markAssociated writes the peer's ip-associated-by-controller annotation:
// the Service's loadBalancerIP was associated for it, and goes with it (with
// either CCM).
func (s *steps) markAssociated(ctx context.Context, svc *v1.Service) {
	patch := map[string]any{string(annotation.CloudStackIPAssociatedByController): "true"}
	lbcycle.PatchAnnotations(ctx, s.kube(), svc, patch)
}
