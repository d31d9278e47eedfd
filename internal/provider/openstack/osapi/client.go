// Package osapi is OpenStack's API as the CCM calls it: Nova, Neutron,
// Octavia and Barbican, through a Keystone session, on gophercloud.
package osapi

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

	"github.com/overcast-ccm/overcast/internal/cloudapi"
)

// Every call the CCM makes to OpenStack is a method of API, made with the
// service client of its service (session.go: authenticated once, rebuilt
// when the settings change), on types of this package (LoadBalancer,
// Listener, Pool, FloatingIP, …: the parts the provider uses, and the
// options it writes with, turned into gophercloud's here). The provider
// holds an API and imports neither gophercloud nor net/http
// (its gateway_only_test.go).
//
// Every error is translated here, once, by the service called (call, do;
// errors.go): redacted, told in the service's words ("Octavia answered
// 409: …") and classified into internal/outcome's kinds, so that the
// callers only add what they were doing and ask errors.Is; the few answers
// outcome has no kind for have a predicate there (Forbidden,
// StaleRevision, CertificateUnreadable, OverQuota). A delete answers nil
// when the object is already gone (404): every caller takes that as done.
//
// The methods are in one file per service: compute.go (Nova), network.go
// (Neutron), loadbalancer.go (Octavia), keymanager.go (Barbican); lists.go
// reads lists page by page without gophercloud's pagers.

// Service is one of the OpenStack services the CCM calls.
type Service int

// The services, by the catalog's type.
const (
	Nova     Service = iota // compute (Nova)
	Neutron                 // network (Neutron)
	Octavia                 // load-balancer (Octavia)
	Barbican                // key-manager (Barbican)
)

// API is every call the CCM makes to OpenStack.
type API interface {
	// authenticate gets a token from Keystone (doctor): outcome.ErrAuth
	// when the credentials are refused, forbidden when their user may have
	// no token for the project.
	Authenticate(ctx context.Context) error
	// session authenticates (once) and finds the endpoints of services in
	// the catalog: a step that calls several services finds them all before
	// its first call, so that a missing endpoint fails it before it writes.
	Session(ctx context.Context, services ...Service) error
	// probe reads the first page of a listing (doctor): the endpoint asked,
	// the error finding it (reach), and the listing's.
	Probe(ctx context.Context, l Probe) (endpoint string, reach, err error)

	// Region is the region of the endpoints: the configured one, else the
	// catalog's only one once authenticated.
	Region() string
	// SetSettings makes the next call authenticate with s (rotated
	// credentials); it says whether s differs from the settings in use.
	SetSettings(s Settings) bool

	ComputeAPI
	NetworkAPI
	LoadBalancerAPI
	KeyManagerAPI
}

// ComputeAPI is Nova's part of API (compute.go).
type ComputeAPI interface {
	GetServer(ctx context.Context, id string) (Server, error)
	ListServers(ctx context.Context, query url.Values) ([]Server, time.Time, error)
}

// NetworkAPI is Neutron's part of API (network.go).
type NetworkAPI interface {
	ListFloatingIPs(ctx context.Context, q FloatingIPQuery) ([]FloatingIP, error)
	CreateFloatingIP(ctx context.Context, opts FloatingIPCreate) (FloatingIP, error)
	SetFloatingIPPort(ctx context.Context, id string, portID *string) error
	DeleteFloatingIP(ctx context.Context, id string) error
	ExternalNetworkIDs(ctx context.Context) ([]string, error)
	GetSubnet(ctx context.Context, id string) (Subnet, error)
	ListSubnets(ctx context.Context, q SubnetQuery) ([]Subnet, error)
	SubnetCIDRs(ctx context.Context) ([]string, error)

	ListSecurityGroups(ctx context.Context, name, tags string) ([]SecurityGroup, error)
	CreateSecurityGroup(ctx context.Context, name, description string) (*SecurityGroup, error)
	TagSecurityGroup(ctx context.Context, id string, tags []string) error
	DeleteSecurityGroup(ctx context.Context, id string) error
	ListRules(ctx context.Context) ([]SecurityRule, error)
	CreateRules(ctx context.Context, groupID string, ingress []RuleKey) error
	DeleteRule(ctx context.Context, id string) error
	ListPortViews(ctx context.Context, query url.Values) ([]PortView, error)
	SetPortGroups(ctx context.Context, id string, groups []string, revision int) (PortGroups, error)

	ListLeanPorts(ctx context.Context) ([]Port, error)
	ListLeanNetworks(ctx context.Context) ([]Network, error)
	ListLeanTrunks(ctx context.Context) ([]Trunk, error)

	RouterRoutes(ctx context.Context, routerID string) ([]Route, error)
	AddRoutes(ctx context.Context, routerID string, routes []Route) error
	RemoveRoutes(ctx context.Context, routerID string, routes []Route) error
}

// LoadBalancerAPI is Octavia's part of API (loadbalancer.go).
type LoadBalancerAPI interface {
	OctaviaVersions(ctx context.Context, into any) error
	GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error)
	ListLoadBalancers(ctx context.Context, tag string) ([]LoadBalancer, error)
	CreateLoadBalancer(ctx context.Context, opts LoadBalancerCreate) (*LoadBalancer, error)
	SetLoadBalancerTags(ctx context.Context, id string, tags []string) error
	DeleteLoadBalancer(ctx context.Context, id string) error
	LoadBalancerStatuses(ctx context.Context, id string, into any) error

	ListListeners(ctx context.Context, lbID string) ([]Listener, error)
	ListAllListeners(ctx context.Context) ([]Listener, error)
	CreateListener(ctx context.Context, opts ListenerCreate) error
	UpdateListener(ctx context.Context, id string, opts ListenerUpdate) error
	DeleteListener(ctx context.Context, id string) error

	ListPools(ctx context.Context, lbID string) ([]Pool, error)
	ListAllPools(ctx context.Context) ([]Pool, error)
	CreatePool(ctx context.Context, opts PoolCreate) error
	UpdatePool(ctx context.Context, id string, u PoolUpdate) error
	DeletePool(ctx context.Context, id string) error
	ListMembers(ctx context.Context, poolID string) ([]Member, error)
	PutMembers(ctx context.Context, poolID string, members []PoolMember) error
	AddMember(ctx context.Context, poolID string, m PoolMember) error

	GetMonitor(ctx context.Context, id string) (Monitor, error)
	ListAllMonitors(ctx context.Context) ([]Monitor, error)
	CreateMonitor(ctx context.Context, opts MonitorCreate) error
	UpdateMonitor(ctx context.Context, id string, opts MonitorUpdate) error
	DeleteMonitor(ctx context.Context, id string) error
}

// KeyManagerAPI is Barbican's part of API (keymanager.go).
type KeyManagerAPI interface {
	// keyManagerMissing says whether the catalog has no key-manager, the
	// other errors finding it returned.
	KeyManagerMissing(ctx context.Context) (bool, error)
	GetContainer(ctx context.Context, id string) error
	GetSecret(ctx context.Context, id string) error
	ListContainers(ctx context.Context, name string, limit int) ([]BarbicanObject, error)
	ListSecrets(ctx context.Context, limit int) ([]BarbicanObject, error)
	CreateSecret(ctx context.Context, name string, private bool, payload []byte) (string, error)
	CreateCertificateContainer(ctx context.Context, name string, parts []BarbicanObject) (string, error)
	DeleteContainer(ctx context.Context, id string) error
	DeleteSecret(ctx context.Context, id string) error
}

// Client is API on gophercloud, with the session's service clients.
type Client struct{ *clients }

var _ API = (*Client)(nil)

// New is a client of OpenStack with settings s; it calls nothing until its
// first call (which authenticates, so that a Keystone outage at start is
// retried, not fatal).
func New(s Settings) *Client {
	return &Client{&clients{settings: s, authOnce: cloudapi.NewTurn()}}
}

// client is the service client of s, authenticating on first use.
func (gw *Client) client(ctx context.Context, s Service) (*gophercloud.ServiceClient, error) {
	switch s {
	case Nova:
		return gw.ComputeClient(ctx)
	case Neutron:
		return gw.NetworkClient(ctx)
	case Octavia:
		return gw.OctaviaClient(ctx)
	default:
		return gw.KeyManagerClient(ctx)
	}
}

// Authenticate gets a token from Keystone (doctor): outcome.ErrAuth when
// the credentials are refused, Forbidden when their user may have no token
// for the project.
func (gw *Client) Authenticate(ctx context.Context) error {
	_, err := gw.providerClient(ctx)
	return err
}

// Session authenticates (once) and finds the endpoints of services in the
// catalog: a step that calls several services finds them all before its
// first call, so that a missing endpoint fails it before it writes.
func (gw *Client) Session(ctx context.Context, services ...Service) error {
	for _, s := range services {
		if _, err := gw.client(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// call is f's answer, made with the client of s, its error translated (the
// session's are already, as Keystone's).
func call[T any](ctx context.Context, gw *Client, s Service, f func(*gophercloud.ServiceClient) (T, error)) (T, error) {
	sc, err := gw.client(ctx, s)
	if err != nil {
		var zero T
		return zero, err
	}
	out, err := f(sc)
	return out, s.translate(err)
}

// do is f's error, made with the client of s, translated.
func do(ctx context.Context, gw *Client, s Service, f func(*gophercloud.ServiceClient) error) error {
	sc, err := gw.client(ctx, s)
	if err != nil {
		return err
	}
	return s.translate(f(sc))
}

// deleteBy deletes id with del (a package's Delete); already gone is done.
func deleteBy[R interface{ ExtractErr() error }](ctx context.Context, gw *Client, s Service, id string,
	del func(context.Context, *gophercloud.ServiceClient, string) R,
) error {
	return do(ctx, gw, s, func(sc *gophercloud.ServiceClient) error { return alreadyGone(del(ctx, sc, id).ExtractErr()) })
}

// discard is the error of a call whose answer is not used.
func discard[T any](_ T, err error) error { return err }

// Probe is a listing doctor reads one item of.
type Probe int

// The listings doctor reads.
const (
	ProbeServers Probe = iota
	ProbePorts
	ProbeFloatingIPs
	ProbeLoadBalancers
)

// Probe reads the first page of a listing (doctor): the endpoint asked, the
// error finding it (reach), and the listing's.
func (gw *Client) Probe(ctx context.Context, l Probe) (string, error, error) {
	var s Service
	switch l {
	case ProbeServers:
		s = Nova
	case ProbePorts, ProbeFloatingIPs:
		s = Neutron
	default:
		s = Octavia
	}
	sc, reach := gw.client(ctx, s)
	if reach != nil {
		return "", reach, nil
	}
	var pager pagination.Pager
	switch l {
	case ProbeServers:
		pager = servers.List(sc, servers.ListOpts{Limit: 1})
	case ProbePorts:
		pager = ports.List(sc, ports.ListOpts{Limit: 1})
	case ProbeFloatingIPs:
		pager = floatingips.List(sc, floatingips.ListOpts{Limit: 1})
	default:
		pager = loadbalancers.List(sc, loadbalancers.ListOpts{Limit: 1})
	}
	err := pager.EachPage(ctx, func(context.Context, pagination.Page) (bool, error) { return false, nil })
	return sc.Endpoint, nil, s.translate(err)
}
