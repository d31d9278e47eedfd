package openstack

import (
	"context"
	"errors"
	"fmt"

	"github.com/overcast-ccm/overcast/internal/doctor"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

var _ doctor.Diagnoser = (*Cloud)(nil)

// Diagnose authenticates and makes one harmless read (a list of at most one
// item) of each API the CCM uses: Nova servers, Neutron ports and floating IPs,
// Octavia load balancers. Each failure says what to change.
func (c *Cloud) Diagnose(ctx context.Context) []doctor.Result {
	g := c.globals()
	auth := doctor.Result{Check: "openstack: credentials"}
	err := c.api.Authenticate(ctx)
	if err != nil {
		auth.Status, auth.Detail = doctor.Fail, err.Error()
		switch {
		case errors.Is(err, outcome.ErrAuth):
			auth.Fix = "Keystone rejected the credentials: check application-credential-id/-secret (or username, password, user-domain-name and the project) in [Global] of the cloud.conf"
		case osapi.Forbidden(err):
			auth.Fix = "the user may not have a token for this project: give it a role there (member)"
		default:
			auth.Fix = "check auth-url (and ca-file / tls-insecure) in [Global], and that this network reaches Keystone"
		}
		return []doctor.Result{auth}
	}
	auth.Detail = fmt.Sprintf("Keystone %s accepted them (region %s)", osapi.RedactURL(g.AuthURL), g.Region)
	out := []doctor.Result{auth}
	return append(out,
		c.probe(ctx, "openstack: compute (servers)", "compute", osapi.ProbeServers, "member"),
		c.probe(ctx, "openstack: network (ports)", "network", osapi.ProbePorts, "member"),
		c.probe(ctx, "openstack: network (floating IPs)", "network", osapi.ProbeFloatingIPs, "member"),
		c.probe(ctx, "openstack: load-balancer (Octavia)", "load-balancer", osapi.ProbeLoadBalancers, "load-balancer_member"),
	)
}

// probe reads the first page of a listing.
func (c *Cloud) probe(ctx context.Context, check, service string, l osapi.Probe, role string) doctor.Result {
	r := doctor.Result{Check: check}
	endpoint, reachErr, err := c.api.Probe(ctx, l)
	if reachErr != nil {
		r.Status, r.Detail = doctor.Fail, reachErr.Error()
		r.Fix = fmt.Sprintf("the catalog has no %s endpoint for this region and interface: check [Global] region and os-endpoint-type", service)
		return r
	}
	switch {
	case err == nil:
		r.Detail = fmt.Sprintf("%s answers and the credentials may read it", endpoint)
		return r
	case osapi.Forbidden(err):
		r.Status = doctor.Fail
		r.Detail = fmt.Sprintf("%s: 403 Forbidden", osapi.RedactURL(endpoint))
		r.Fix = fmt.Sprintf("the user lacks the %s role in the project: openstack role add --user <user> --project <project> %s", role, role)
	default:
		r.Status = doctor.Fail
		r.Detail = err.Error()
		r.Fix = fmt.Sprintf("check that the %s service is up and reachable from the CCM", service)
	}
	return r
}
