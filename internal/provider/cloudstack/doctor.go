package cloudstack

import (
	"context"
	"errors"
	"fmt"

	"github.com/overcast-ccm/overcast/internal/doctor"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

var _ doctor.Diagnoser = (*Cloud)(nil)

// Diagnose makes one harmless read of each kind of object the CCM uses (a
// page of one): machines (which checks the keys and the signature), the
// project, public addresses and load balancer rules. Each failure says what
// to change.
func (c *Cloud) Diagnose(ctx context.Context) []doctor.Result {
	keys := doctor.Result{Check: "cloudstack: keys"}
	if _, err := c.api.ProjectID(ctx); err != nil {
		return []doctor.Result{failed(keys, err)}
	}
	n, err := c.api.MachinesVisible(ctx)
	if err != nil {
		return []doctor.Result{failed(keys, err)}
	}
	keys.Detail = fmt.Sprintf("%s accepted them; %d virtual machine(s) visible", redactURL(c.cfg.Global.APIURL), n)
	out := []doctor.Result{keys}
	for _, k := range []struct {
		check, what string
		count       func(context.Context) (int, error)
	}{
		{"public addresses", "allocated address(es)", c.api.AddressesVisible},
		{"load balancer rules", "rule(s)", c.api.RulesVisible},
	} {
		r := doctor.Result{Check: "cloudstack: " + k.check}
		if n, err := k.count(ctx); err != nil {
			r = failed(r, err)
		} else {
			r.Detail = fmt.Sprintf("%d %s visible", n, k.what)
		}
		out = append(out, r)
	}
	return out
}

func failed(r doctor.Result, err error) doctor.Result {
	r.Status, r.Detail = doctor.Fail, err.Error()
	switch {
	case errors.Is(err, outcome.ErrAuth):
		r.Fix = "the server refused the keys or the signature: check api-key and secret-key in [Global] of the cloud-config (and that the clocks agree: requests expire)"
	case errors.Is(err, outcome.ErrRefused), errors.Is(err, outcome.ErrNotFound):
		r.Fix = "the account may not do this: check project-id in [Global] and the account's role"
	default:
		r.Fix = "check api-url (and ssl-no-verify) in [Global], and that this network reaches the management server"
	}
	return r
}
