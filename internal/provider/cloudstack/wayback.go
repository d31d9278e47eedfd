package cloudstack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/doctor"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

var _ doctor.ServiceDiagnoser = (*Cloud)(nil)

// DiagnoseServices names the Services whose rules cloudstack-kubernetes-provider
// would rebuild if it took over again: those whose rules' cidrlist is not
// what the peer makes of the Service (its source-cidrs annotation, else
// 0.0.0.0/0). Overcast keeps the peer's shape wherever that enforces the
// same (docs/cloudstack.md, going back); in a VPC tier a Service's source
// ranges without the annotation are in its rules' cidrlist, which the peer,
// on CloudStack before 4.22, deletes and makes anew. One listing of the
// rules.
func (c *Cloud) DiagnoseServices(ctx context.Context, svcs []v1.Service) []doctor.Result {
	r := doctor.Result{Check: "cloudstack: way back to the peer"}
	rules, err := c.api.Rules(ctx, "")
	if err != nil {
		return []doctor.Result{failed(r, err)}
	}
	var touched []string
	for i := range svcs {
		if name, ok := rebuiltByPeer(&svcs[i], rules); ok {
			touched = append(touched, name)
		}
	}
	if len(touched) == 0 {
		r.Detail = fmt.Sprintf("the rules of the %d LoadBalancer Service(s) are as cloudstack-kubernetes-provider makes them: switching back rebuilds none", len(svcs))
		return []doctor.Result{r}
	}
	slices.Sort(touched)
	r.Status = doctor.Warn
	r.Detail = fmt.Sprintf("switching back to cloudstack-kubernetes-provider rebuilds the rules of %d Service(s), their ports down meanwhile (source ranges in the rules' cidrlist, which the peer sets from %s): %s",
		len(touched), annotation.CloudStackSourceCIDRs, strings.Join(touched, ", "))
	r.Fix = fmt.Sprintf("before switching back, set each one's %s to its source ranges (the peer then keeps its rules), or switch in a quiet hour (docs/cloudstack.md, going back)", annotation.CloudStackSourceCIDRs)
	return []doctor.Result{r}
}

// rebuiltByPeer says whether a rule of svc (named as the peer names them)
// has a cidrlist other than the peer's for it, and names the Service.
func rebuiltByPeer(svc *v1.Service, rules []csapi.Rule) (string, bool) {
	want := []string{"0.0.0.0/0"}
	if cidrs, err := annotation.CloudStackSourceCIDRs.CIDRs(svc); err == nil && len(cidrs) > 0 {
		want = slices.Sorted(slices.Values(cidrs))
	}
	prefix := lbName(svc) + "-"
	for _, rl := range rules {
		if !strings.HasPrefix(rl.Name, prefix) {
			continue
		}
		have := slices.Sorted(slices.Values(rl.CIDRs))
		if len(have) == 0 {
			have = []string{"0.0.0.0/0"} // no cidrlist: everyone, as the peer's default
		}
		if !slices.Equal(have, want) {
			return svc.Namespace + "/" + svc.Name, true
		}
	}
	return "", false
}
