package openstack

import (
	"context"
	"net/url"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// The gateway is the one place gophercloud is called (docs/adding-a-cloud.md):
// every call the CCM makes is a method of gatewayAPI, made with the service client
// of its service (gateway_session.go: authenticated once, rebuilt when the
// credentials change). The rest of the package sees gatewayAPI only, on
// types of its own (loadBalancer, lbListener, lbPool, floatingIP, …: the
// parts it uses, and the options it writes with, turned into gophercloud's
// here): gateway_only_test.go fails on a gophercloud or net/http import, or
// a gophercloud call, anywhere else.
//
// Every error is translated here, once, by the service called (call, do;
// gateway_errors.go): redacted, told in the service's words ("Octavia
// answered 409: …") and classified into internal/outcome's kinds, so that
// the callers only add what they were doing and ask errors.Is; the few
// answers outcome has no kind for have a predicate there (forbidden,
// staleRevision, certificateUnreadable, overQuota). A delete answers nil
// when the object is already gone (404): every caller takes that as done.
//
// The methods are in one file per service: gateway_compute.go (Nova),
// gateway_network.go (Neutron), gateway_loadbalancer.go (Octavia),
// gateway_keymanager.go (Barbican); gateway_lists.go reads lists page by
// page without gophercloud's pagers; gateway_session.go authenticates.

// service is one of the OpenStack services the CCM calls.
type service int

// The services, by the catalog's type.
const (
	svcCompute    service = iota // compute (Nova)
	svcNetwork                   // network (Neutron)
	svcOctavia                   // load-balancer (Octavia)
	svcKeyManager                // key-manager (Barbican)
)

// gatewayAPI is every call the CCM makes to OpenStack.
type gatewayAPI interface {
	// authenticate gets a token from Keystone (doctor): outcome.ErrAuth
	// when the credentials are refused, forbidden when their user may have
	// no token for the project.
	authenticate(ctx context.Context) error
	// session authenticates (once) and finds the endpoints of services in
	// the catalog: a step that calls several services finds them all before
	// its first call, so that a missing endpoint fails it before it writes.
	session(ctx context.Context, services ...service) error
	// probe reads the first page of a listing (doctor): the endpoint asked,
	// the error finding it (reach), and the listing's.
	probe(ctx context.Context, l probeListing) (endpoint string, reach, err error)

	computeAPI
	networkAPI
	loadBalancerAPI
	keyManagerAPI
}

// computeAPI is Nova's part of gatewayAPI (gateway_compute.go).
type computeAPI interface {
	getServer(ctx context.Context, id string) (server, error)
	listServers(ctx context.Context, query url.Values) ([]server, time.Time, error)
}

// networkAPI is Neutron's part of gatewayAPI (gateway_network.go).
type networkAPI interface {
	listFloatingIPs(ctx context.Context, q floatingIPQuery) ([]floatingIP, error)
	createFloatingIP(ctx context.Context, opts floatingIPCreate) (floatingIP, error)
	setFloatingIPPort(ctx context.Context, id string, portID *string) error
	deleteFloatingIP(ctx context.Context, id string) error
	externalNetworkIDs(ctx context.Context) ([]string, error)
	getSubnet(ctx context.Context, id string) (subnet, error)
	listSubnets(ctx context.Context, q subnetQuery) ([]subnet, error)
	subnetCIDRs(ctx context.Context) ([]string, error)

	listSecurityGroups(ctx context.Context, name, tags string) ([]securityGroup, error)
	createSecurityGroup(ctx context.Context, name, description string) (*securityGroup, error)
	tagSecurityGroup(ctx context.Context, id string, tags []string) error
	deleteSecurityGroup(ctx context.Context, id string) error
	listRules(ctx context.Context) ([]securityRule, error)
	createRules(ctx context.Context, groupID string, ingress []sgRuleKey) error
	deleteRule(ctx context.Context, id string) error
	listPortViews(ctx context.Context, query url.Values) ([]sgPortView, error)
	setPortGroups(ctx context.Context, id string, groups []string, revision int) (sgKnownPort, error)

	listLeanPorts(ctx context.Context) ([]leanPort, error)
	listLeanNetworks(ctx context.Context) ([]leanNetwork, error)
	listLeanTrunks(ctx context.Context) ([]leanTrunk, error)

	routerRoutes(ctx context.Context, routerID string) ([]extraRoute, error)
	addRoutes(ctx context.Context, routerID string, routes []extraRoute) error
	removeRoutes(ctx context.Context, routerID string, routes []extraRoute) error
}

// loadBalancerAPI is Octavia's part of gatewayAPI (gateway_loadbalancer.go).
type loadBalancerAPI interface {
	octaviaVersions(ctx context.Context, into any) error
	getLoadBalancer(ctx context.Context, id string) (*loadBalancer, error)
	listLoadBalancers(ctx context.Context, tag string) ([]loadBalancer, error)
	createLoadBalancer(ctx context.Context, opts lbCreate) (*loadBalancer, error)
	setLoadBalancerTags(ctx context.Context, id string, tags []string) error
	deleteLoadBalancer(ctx context.Context, id string) error
	loadBalancerStatuses(ctx context.Context, id string, into any) error

	listListeners(ctx context.Context, lbID string) ([]lbListener, error)
	listAllListeners(ctx context.Context) ([]lbListener, error)
	createListener(ctx context.Context, opts listenerCreate) error
	updateListener(ctx context.Context, id string, opts listenerUpdate) error
	deleteListener(ctx context.Context, id string) error

	listPools(ctx context.Context, lbID string) ([]lbPool, error)
	listAllPools(ctx context.Context) ([]lbPool, error)
	createPool(ctx context.Context, opts poolCreate) error
	updatePool(ctx context.Context, id string, u poolUpdate) error
	deletePool(ctx context.Context, id string) error
	listMembers(ctx context.Context, poolID string) ([]leanMember, error)
	putMembers(ctx context.Context, poolID string, members []poolMember) error
	addMember(ctx context.Context, poolID string, m poolMember) error

	getMonitor(ctx context.Context, id string) (lbMonitor, error)
	listAllMonitors(ctx context.Context) ([]lbMonitor, error)
	createMonitor(ctx context.Context, opts monitorCreate) error
	updateMonitor(ctx context.Context, id string, opts monitorUpdate) error
	deleteMonitor(ctx context.Context, id string) error
}

// keyManagerAPI is Barbican's part of gatewayAPI (gateway_keymanager.go).
type keyManagerAPI interface {
	// keyManagerMissing says whether the catalog has no key-manager, the
	// other errors finding it returned.
	keyManagerMissing(ctx context.Context) (bool, error)
	getContainer(ctx context.Context, id string) error
	getSecret(ctx context.Context, id string) error
	listContainers(ctx context.Context, name string, limit int) ([]barbicanObject, error)
	listSecrets(ctx context.Context, limit int) ([]barbicanObject, error)
	createSecret(ctx context.Context, name string, private bool, payload []byte) (string, error)
	createCertificateContainer(ctx context.Context, name string, parts []barbicanObject) (string, error)
	deleteContainer(ctx context.Context, id string) error
	deleteSecret(ctx context.Context, id string) error
}

// gateway is gatewayAPI on gophercloud, with the session's service clients.
type gateway struct{ *clients }

var _ gatewayAPI = (*gateway)(nil)

// client is the service client of s, authenticating on first use.
func (gw *gateway) client(ctx context.Context, s service) (*gophercloud.ServiceClient, error) {
	switch s {
	case svcCompute:
		return gw.computeClient(ctx)
	case svcNetwork:
		return gw.networkClient(ctx)
	case svcOctavia:
		return gw.octaviaClient(ctx)
	default:
		return gw.keyManagerClient(ctx)
	}
}

func (gw *gateway) authenticate(ctx context.Context) error {
	_, err := gw.providerClient(ctx)
	return err
}

func (gw *gateway) session(ctx context.Context, services ...service) error {
	for _, s := range services {
		if _, err := gw.client(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// call is f's answer, made with the client of s, its error translated (the
// session's are already, as Keystone's).
func call[T any](ctx context.Context, gw *gateway, s service, f func(*gophercloud.ServiceClient) (T, error)) (T, error) {
	sc, err := gw.client(ctx, s)
	if err != nil {
		var zero T
		return zero, err
	}
	out, err := f(sc)
	return out, s.translate(err)
}

// do is f's error, made with the client of s, translated.
func do(ctx context.Context, gw *gateway, s service, f func(*gophercloud.ServiceClient) error) error {
	sc, err := gw.client(ctx, s)
	if err != nil {
		return err
	}
	return s.translate(f(sc))
}

// deleteBy deletes id with del (a package's Delete); already gone is done.
func deleteBy[R interface{ ExtractErr() error }](ctx context.Context, gw *gateway, s service, id string,
	del func(context.Context, *gophercloud.ServiceClient, string) R,
) error {
	return do(ctx, gw, s, func(sc *gophercloud.ServiceClient) error { return alreadyGone(del(ctx, sc, id).ExtractErr()) })
}

// discard is the error of a call whose answer is not used.
func discard[T any](_ T, err error) error { return err }

// probeListing is a listing doctor reads one item of.
type probeListing int

// The listings doctor reads.
const (
	probeServers probeListing = iota
	probePorts
	probeFloatingIPs
	probeLoadBalancers
)

func (gw *gateway) probe(ctx context.Context, l probeListing) (string, error, error) {
	var s service
	switch l {
	case probeServers:
		s = svcCompute
	case probePorts, probeFloatingIPs:
		s = svcNetwork
	default:
		s = svcOctavia
	}
	sc, reach := gw.client(ctx, s)
	if reach != nil {
		return "", reach, nil
	}
	var pager pagination.Pager
	switch l {
	case probeServers:
		pager = servers.List(sc, servers.ListOpts{Limit: 1})
	case probePorts:
		pager = ports.List(sc, ports.ListOpts{Limit: 1})
	case probeFloatingIPs:
		pager = floatingips.List(sc, floatingips.ListOpts{Limit: 1})
	default:
		pager = loadbalancers.List(sc, loadbalancers.ListOpts{Limit: 1})
	}
	err := pager.EachPage(ctx, func(context.Context, pagination.Page) (bool, error) { return false, nil })
	return sc.Endpoint, nil, s.translate(err)
}
