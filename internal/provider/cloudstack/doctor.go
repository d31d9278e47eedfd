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
func (c *Cloud) Diagnose(context.Context) []doctor.Result {
	g := c.gw.cs()
	keys := doctor.Result{Check: "cloudstack: keys"}
	if _, err := c.gw.projectID(); err != nil {
		return []doctor.Result{failed(keys, err)}
	}
	vm, err := c.gw.vmParams()
	if err == nil {
		vm.SetPage(1)
		vm.SetPagesize(1)
		resp, lerr := g.VirtualMachine.ListVirtualMachines(vm)
		err = translate("listVirtualMachines", lerr)
		if err == nil {
			keys.Detail = fmt.Sprintf("%s accepted them; %d virtual machine(s) visible", redactURL(c.cfg.Global.APIURL), resp.Count)
		}
	}
	if err != nil {
		return []doctor.Result{failed(keys, err)}
	}
	out := []doctor.Result{keys}

	addrs := doctor.Result{Check: "cloudstack: public addresses"}
	if ap, err := c.gw.addressParams(); err != nil {
		out = append(out, failed(addrs, err))
	} else {
		ap.SetPage(1)
		ap.SetPagesize(1)
		r, err := g.Address.ListPublicIpAddresses(ap)
		if err = translate("listPublicIpAddresses", err); err != nil {
			out = append(out, failed(addrs, err))
		} else {
			addrs.Detail = fmt.Sprintf("%d allocated address(es) visible", r.Count)
			out = append(out, addrs)
		}
	}

	rules := doctor.Result{Check: "cloudstack: load balancer rules"}
	if rp, err := c.gw.ruleParams(); err != nil {
		out = append(out, failed(rules, err))
	} else {
		rp.SetPage(1)
		rp.SetPagesize(1)
		r, err := g.LoadBalancer.ListLoadBalancerRules(rp)
		if err = translate("listLoadBalancerRules", err); err != nil {
			out = append(out, failed(rules, err))
		} else {
			rules.Detail = fmt.Sprintf("%d rule(s) visible", r.Count)
			out = append(out, rules)
		}
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
