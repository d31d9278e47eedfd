package oci

import (
	"context"
	"errors"
	"fmt"

	"github.com/overcast-ccm/overcast/internal/doctor"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

var _ doctor.Diagnoser = (*Cloud)(nil)

// Diagnose makes one harmless read of each kind of object the CCM uses: the
// availability domains (which checks the API key and the signature), a page
// of one instance, the VCN and the load balancers' subnets (and that they
// are the VCN's), a page of one load balancer, and the security list the
// rules go in. Each failure says what to change; OCI answers a missing
// policy as it answers a missing object (404 NotAuthorizedOrNotFound), so
// the fix names both, and the policy statement.
func (c *Cloud) Diagnose(ctx context.Context) []doctor.Result {
	comp := c.cfg.CompartmentID
	key := doctor.Result{Check: "oci: API key"}
	ads, err := c.gw.availabilityDomains(ctx, comp)
	if err != nil {
		return []doctor.Result{failed(key, err, "read availability domains in tenancy")}
	}
	key.Detail = fmt.Sprintf("%s accepted the signature of user %s; %d availability domain(s)", c.gw.endpoints().Identity, c.cfg.Auth.UserID, len(ads))
	out := []doctor.Result{key}

	inst := doctor.Result{Check: "oci: instances"}
	if page, err := c.gw.firstInstance(ctx, comp); err != nil {
		out = append(out, failed(inst, err, "read instance-family in compartment <compartment of "+comp+">"))
	} else {
		inst.Detail = fmt.Sprintf("compartment %s answers (%d on the first page of one)", comp, len(page))
		out = append(out, inst)
	}

	out = append(out, c.diagnoseNetwork(ctx)...)
	if lb := c.cfg.LoadBalancer; lb != nil && lb.Disabled {
		return out
	}
	lbs := doctor.Result{Check: "oci: load balancers"}
	if err := c.gw.firstLoadBalancer(ctx, comp); err != nil {
		out = append(out, failed(lbs, err, "manage load-balancers in compartment <compartment of "+comp+">"))
	} else {
		lbs.Detail = fmt.Sprintf("compartment %s answers", comp)
		out = append(out, lbs)
	}
	return out
}

// diagnoseNetwork checks the VCN, the load balancers' subnets (of that VCN)
// and the security list their rules go in.
func (c *Cloud) diagnoseNetwork(ctx context.Context) []doctor.Result {
	var out []doctor.Result
	vcn := c.cfg.VCNID
	if vcn != "" {
		r := doctor.Result{Check: "oci: VCN"}
		if err := c.gw.vcn(ctx, vcn); err != nil {
			out = append(out, failed(r, err, "use virtual-network-family in compartment <compartment of the VCN>"))
		} else {
			r.Detail = vcn
			out = append(out, r)
		}
	}
	lb := c.cfg.LoadBalancer
	if lb == nil || lb.Disabled {
		return out
	}
	for _, id := range []string{lb.Subnet1, lb.Subnet2} {
		if id == "" {
			continue
		}
		r := doctor.Result{Check: "oci: load balancer subnet"}
		sub, err := c.gw.subnet(ctx, id)
		switch {
		case err != nil:
			out = append(out, failed(r, err, "use virtual-network-family in compartment <compartment of the subnet>"))
			continue
		case vcn != "" && sub.VCNID != vcn:
			r.Status, r.Detail = doctor.Fail, fmt.Sprintf("subnet %s is in VCN %s, not in vcn %s", id, sub.VCNID, vcn)
			r.Fix = "set loadBalancer.subnet1/subnet2 to subnets of the cluster's VCN, or vcn to their VCN"
			out = append(out, r)
			continue
		}
		r.Detail = fmt.Sprintf("%s (%s)", id, sub.CIDRBlock)
		out = append(out, r)
		if lb.SecurityListManagementMode == ModeNone {
			continue
		}
		sl := doctor.Result{Check: "oci: security list"}
		list, err := c.securityListOf(ctx, sub)
		if err == nil {
			_, err = c.gw.securityList(ctx, list)
		}
		if err != nil {
			out = append(out, failed(sl, err, "manage security-lists in compartment <compartment of the VCN>"))
			continue
		}
		sl.Detail = fmt.Sprintf("%s, for the rules of subnet %s (mode %s)", list, id, lb.SecurityListManagementMode)
		out = append(out, sl)
	}
	return out
}

// failed is r failed with err; policy is the statement a missing policy
// lacks ("Allow group <group> to <policy>").
func failed(r doctor.Result, err error, policy string) doctor.Result {
	r.Status, r.Detail = doctor.Fail, err.Error()
	switch {
	case errors.Is(err, outcome.ErrAuth):
		r.Fix = "OCI refused the signature: auth.tenancy, auth.user, auth.fingerprint and auth.key must be one API key of the user (Console → Identity → Users → API keys), and this machine's clock within 5 minutes of the real time"
	case errors.Is(err, outcome.ErrNotFound):
		r.Fix = "it does not exist, or the user's group has no policy for it (OCI answers both alike): check the OCID, and that a policy says \"Allow group <group> to " + policy + "\""
	default:
		r.Fix = "check auth.region (or endpoints), and that this network reaches OCI's endpoints"
	}
	return r
}
