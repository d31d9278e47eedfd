package openstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/overcast-ccm/overcast/internal/doctor"
)

var _ doctor.Diagnoser = (*Cloud)(nil)

// Diagnose authenticates and makes one harmless read (a list of at most one
// item) of each API the CCM uses: Nova servers, Neutron ports and floating IPs,
// Octavia load balancers. Each failure says what to change.
func (c *Cloud) Diagnose(ctx context.Context) []doctor.Result {
	g := c.clients.global()
	auth := doctor.Result{Check: "openstack: credentials"}
	_, err := c.clients.providerClient(ctx)
	if err != nil {
		auth.Status, auth.Detail = doctor.Fail, redact(err).Error()
		switch {
		case gophercloud.ResponseCodeIs(err, http.StatusUnauthorized):
			auth.Fix = "Keystone rejected the credentials: check application-credential-id/-secret (or username, password, user-domain-name and the project) in [Global] of the cloud.conf"
		case gophercloud.ResponseCodeIs(err, http.StatusForbidden):
			auth.Fix = "the user may not have a token for this project: give it a role there (member)"
		default:
			auth.Fix = "check auth-url (and ca-file / tls-insecure) in [Global], and that this network reaches Keystone"
		}
		return []doctor.Result{auth}
	}
	auth.Detail = fmt.Sprintf("Keystone %s accepted them (region %s)", redactURL(g.AuthURL), g.Region)
	out := []doctor.Result{auth}

	compute, cerr := c.clients.computeClient(ctx)
	network, nerr := c.clients.networkClient(ctx)
	out = append(out,
		probe(ctx, "openstack: compute (servers)", "compute", compute, cerr, "member", func(sc *gophercloud.ServiceClient) pagination.Pager {
			return servers.List(sc, servers.ListOpts{Limit: 1})
		}),
		probe(ctx, "openstack: network (ports)", "network", network, nerr, "member", func(sc *gophercloud.ServiceClient) pagination.Pager {
			return ports.List(sc, ports.ListOpts{Limit: 1})
		}),
		probe(ctx, "openstack: network (floating IPs)", "network", network, nerr, "member", func(sc *gophercloud.ServiceClient) pagination.Pager {
			return floatingips.List(sc, floatingips.ListOpts{Limit: 1})
		}),
	)
	octavia, oerr := c.clients.octaviaClient(ctx)
	out = append(out, probe(ctx, "openstack: load-balancer (Octavia)", "load-balancer", octavia, oerr, "load-balancer_member", func(sc *gophercloud.ServiceClient) pagination.Pager {
		return loadbalancers.List(sc, loadbalancers.ListOpts{Limit: 1})
	}))
	return out
}

// probe reads the first page of a listing.
func probe(ctx context.Context, check, service string, sc *gophercloud.ServiceClient, clientErr error, role string,
	list func(*gophercloud.ServiceClient) pagination.Pager,
) doctor.Result {
	r := doctor.Result{Check: check}
	if clientErr != nil {
		r.Status, r.Detail = doctor.Fail, redact(clientErr).Error()
		r.Fix = fmt.Sprintf("the catalog has no %s endpoint for this region and interface: check [Global] region and os-endpoint-type", service)
		return r
	}
	err := list(sc).EachPage(ctx, func(context.Context, pagination.Page) (bool, error) { return false, nil })
	switch {
	case err == nil:
		r.Detail = fmt.Sprintf("%s answers and the credentials may read it", sc.Endpoint)
		return r
	case gophercloud.ResponseCodeIs(err, http.StatusForbidden):
		r.Status = doctor.Fail
		r.Detail = fmt.Sprintf("%s: 403 Forbidden", redactURL(sc.Endpoint))
		r.Fix = fmt.Sprintf("the user lacks the %s role in the project: openstack role add --user <user> --project <project> %s", role, role)
	default:
		r.Status = doctor.Fail
		r.Detail = redact(err).Error()
		r.Fix = fmt.Sprintf("check that the %s service is up and reachable from the CCM", service)
	}
	return r
}
