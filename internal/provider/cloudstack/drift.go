package cloudstack

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// Drift sees, in the shared listings, a rule missing or moved, or a port of
// the rules no firewall rule opens any more (an isolated network).
func (s *steps) Drift(ctx context.Context, svc *v1.Service, rec lbcycle.Record, lb csLB) (string, error) {
	st := lb.Obj
	if rec.Address != "" && st.addr.IP != rec.Address {
		return fmt.Sprintf("the rules are on %s, not on %s", st.addr.IP, rec.Address), nil
	}
	if len(st.rules) < len(svc.Spec.Ports) {
		return fmt.Sprintf("%d rule(s) for %d port(s)", len(st.rules), len(svc.Spec.Ports)), nil
	}
	if len(st.rules) == 0 {
		return "", nil
	}
	open, what, err := s.openings(ctx, svc, st)
	if err != nil || what == "" {
		return "", err
	}
	for _, r := range st.rules {
		if !slices.ContainsFunc(open, func(o csapi.Opening) bool { return opens(o, r) }) {
			return fmt.Sprintf("no %s opens port %d/%s of %s", what, r.PublicPort, l4(r.Protocol), st.addr.IP), nil
		}
	}
	return "", nil
}

// aclPass is each ACL list's items as one drift pass read them: one listing
// of a list (and one read of its name) for every Service of its tier.
type aclPass struct {
	turn cloudapi.Turn // one read at a time, across its calls
	provider.PassMemo[aclRead]
}

type aclRead struct {
	items   []csapi.Opening
	managed bool // not the server's own default_allow or default_deny
}

// items are list id's items, read once a pass; managed is false for the
// server's own lists, which the CCM leaves alone (and so has no item in).
func (a *aclPass) items(ctx context.Context, gw csapi.API, id string) ([]csapi.Opening, bool, error) {
	if r, ok := a.Known(id); ok {
		return r.items, r.managed, nil
	}
	done, err := a.turn.Take(ctx, "another read of network ACL list "+id)
	if err != nil {
		return nil, false, err
	}
	defer done()
	r, err := a.Get(ctx, id, func(ctx context.Context) (aclRead, error) { return readACL(ctx, gw, id) })
	return r.items, r.managed, err
}

// readACL reads ACL list id's name, and its items unless it is the server's
// own.
func readACL(ctx context.Context, gw csapi.API, id string) (aclRead, error) {
	name, err := gw.ACLListName(ctx, id)
	if err != nil {
		return aclRead{}, err
	}
	r := aclRead{managed: name != "default_allow" && name != "default_deny"}
	if r.managed {
		if r.items, err = gw.ACLItems(ctx, id); err != nil {
			return aclRead{}, err
		}
	}
	return r, nil
}
