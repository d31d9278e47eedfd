package oci

import (
	"context"
	"errors"
	"fmt"

	"github.com/overcast-ccm/overcast/internal/doctor"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
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
	ads, err := c.api.AvailabilityDomains(ctx, comp)
	if err != nil {
		return []doctor.Result{c.failed(key, err, "read availability domains in tenancy")}
	}
	key.Detail = fmt.Sprintf("%s accepted the signature of %s; %d availability domain(s)", c.api.Endpoints().Identity, c.principal(), len(ads))
	out := []doctor.Result{key}

	inst := doctor.Result{Check: "oci: instances"}
	if page, err := c.api.FirstInstance(ctx, comp); err != nil {
		out = append(out, c.failed(inst, err, "read instance-family in compartment <compartment of "+comp+">"))
	} else {
		inst.Detail = fmt.Sprintf("compartment %s answers (%d on the first page of one)", comp, len(page))
		out = append(out, inst)
	}

	out = append(out, c.diagnoseNetwork(ctx)...)
	if lb := c.cfg.LoadBalancer; lb != nil && lb.Disabled {
		return out
	}
	lbs := doctor.Result{Check: "oci: load balancers"}
	if err := c.api.FirstLoadBalancer(ctx, comp); err != nil {
		out = append(out, c.failed(lbs, err, "manage load-balancers in compartment <compartment of "+comp+">"))
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
		if err := c.api.Vcn(ctx, vcn); err != nil {
			out = append(out, c.failed(r, err, "use virtual-network-family in compartment <compartment of the VCN>"))
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
		sub, err := c.api.Subnet(ctx, id)
		switch {
		case err != nil:
			out = append(out, c.failed(r, err, "use virtual-network-family in compartment <compartment of the subnet>"))
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
		list, err := c.lb.securityListOf(ctx, sub)
		if err == nil {
			_, err = c.api.SecurityList(ctx, list)
		}
		if err != nil {
			out = append(out, c.failed(sl, err, "manage security-lists in compartment <compartment of the VCN>"))
			continue
		}
		sl.Detail = fmt.Sprintf("%s, for the rules of subnet %s (mode %s)", list, id, lb.SecurityListManagementMode)
		out = append(out, sl)
	}
	return out
}

// selfManaged says whether the CCM calls with the peer's self-managed
// workload identity (ociapi/tokenexchange.go).
func (c *Cloud) selfManaged() bool { return c.sessions != nil && c.sessions.SelfManaged() }

// principal names who the CCM calls as.
func (c *Cloud) principal() string {
	switch {
	case c.selfManaged():
		return "the self-managed workload identity (the pod's ServiceAccount, through the identity domain " + ociapi.Getenv(ociapi.EnvDomainURL) + ")"
	case c.cfg.UseWorkloadIdentity:
		return "the workload identity (the pod's ServiceAccount)"
	case c.cfg.UseInstancePrincipals:
		return "the instance principal"
	}
	return "user " + c.cfg.Auth.UserID
}

// allow is the policy statement that gives the CCM's principal right.
func (c *Cloud) allow(right string) string {
	switch {
	case c.selfManaged():
		return "Allow <the principal the identity domain's session tokens name: the group of the service user its identity propagation trust maps the ServiceAccount to, or the resources of " + ociapi.EnvDomainResourceType + "> to " + right
	case c.cfg.UseWorkloadIdentity:
		return "Allow any-user to " + right + " where all {request.principal.type = 'workload', request.principal.namespace = '<the CCM's namespace>', request.principal.service_account = '<its ServiceAccount>', request.principal.cluster_id = '<the cluster's OCID>'}"
	case c.cfg.UseInstancePrincipals:
		return "Allow dynamic-group <the group of the CCM's instances> to " + right
	}
	return "Allow group <group> to " + right
}

// failed is r failed with err; right is what a missing policy lacks
// ("Allow group <group> to <right>").
func (c *Cloud) failed(r doctor.Result, err error, right string) doctor.Result {
	r.Status, r.Detail = doctor.Fail, err.Error()
	var pe *ociapi.PrincipalError
	switch {
	case errors.As(err, &pe) && c.selfManaged():
		r.Fix = "no session token from the identity domain (the error says why): " + ociapi.EnvDomainURL + " must be the domain's URL, its OAuth application (" + ociapi.EnvDomainClientID + ", " + ociapi.EnvDomainClientSecret + ") allowed the token exchange grant, and the domain must trust the cluster's ServiceAccount issuer (an identity propagation trust) (docs/oci.md)"
	case errors.As(err, &pe) && c.cfg.UseWorkloadIdentity:
		r.Fix = "no session token for the pod's ServiceAccount (the error says why): workload identity needs an OKE enhanced cluster, the pod's ServiceAccount token and the cluster's CA (automountServiceAccountToken), and the endpoint on KUBERNETES_SERVICE_HOST, port 12250 (docs/oci.md)"
	case errors.As(err, &pe):
		r.Fix = "no session token for the instance (the error says why): the instance metadata service (endpoints.metadata) and the federation endpoint (endpoints.auth) must answer"
	case errors.Is(err, outcome.ErrAuth) && c.sessions != nil:
		r.Fix = "OCI refused the session token's signature: this machine's clock must be within 5 minutes of the real time"
	case errors.Is(err, outcome.ErrAuth):
		r.Fix = "OCI refused the signature: auth.tenancy, auth.user, auth.fingerprint and auth.key must be one API key of the user (Console → Identity → Users → API keys), and this machine's clock within 5 minutes of the real time"
	case errors.Is(err, outcome.ErrNotFound):
		r.Fix = "it does not exist, or " + c.principal() + " has no policy for it (OCI answers both alike): check the OCID, and that a policy says \"" + c.allow(right) + "\""
	default:
		r.Fix = "check auth.region (or endpoints), and that this network reaches OCI's endpoints"
	}
	return r
}
