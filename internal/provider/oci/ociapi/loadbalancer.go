package ociapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The Load Balancing API (/20170115) and the Network Load Balancer API
// (/20200501): load balancers of both kinds, their children, certificates,
// network security groups and work requests.

// The kinds of load balancer (oci.oraclecloud.com/load-balancer-type).
const (
	KindLB  = "lb"
	KindNLB = "nlb"
)

// LB is a load balancer as the CCM uses it, of either kind: a
// loadbalancer.LoadBalancer or a networkloadbalancer.NetworkLoadBalancer
// (whose one subnetId is read into SubnetIDs).
type LB struct {
	// Kind is lb or nlb: which API the load balancer is of.
	Kind           string        `json:"-"`
	ID             string        `json:"id"`
	CompartmentID  string        `json:"compartmentId"`
	DisplayName    string        `json:"displayName"`
	LifecycleState string        `json:"lifecycleState"`
	ShapeName      string        `json:"shapeName"`
	ShapeDetails   *ShapeDetails `json:"shapeDetails,omitempty"`
	TimeCreated    time.Time     `json:"timeCreated"`
	IPAddresses    []LBAddress   `json:"ipAddresses"`
	IsPrivate      bool          `json:"isPrivate"`
	SubnetIDs      []string      `json:"subnetIds"`
	SubnetID       string        `json:"subnetId"` // NLB
	// IPMode is an LB's (IPV4, IPV6: dual-stack), NLBIPVersion an NLB's
	// (IPV4, IPV6, IPV4_AND_IPV6); "" is IPV4.
	IPMode                      string                `json:"ipMode"`
	NLBIPVersion                string                `json:"nlbIpVersion"`
	NetworkSecurityGroupIDs     []string              `json:"networkSecurityGroupIds"`
	IsPreserveSourceDestination bool                  `json:"isPreserveSourceDestination"`
	Listeners                   map[string]Listener   `json:"listeners"`
	BackendSets                 map[string]BackendSet `json:"backendSets"`
	FreeformTags                map[string]string     `json:"freeformTags"`
	// Certificates and RuleSets are an LB's, by name.
	Certificates map[string]Certificate `json:"certificates"`
	RuleSets     map[string]RuleSet     `json:"ruleSets"`
}

// LBAddress is an address of a load balancer.
type LBAddress struct {
	IPAddress string `json:"ipAddress"`
	IsPublic  bool   `json:"isPublic"`
}

// RuleSet is a rule set of a load balancer: its rules as OCI's JSON has
// them (each an object with an "action").
type RuleSet struct {
	Name  string            `json:"name,omitempty"`
	Items []json.RawMessage `json:"items"`
}

// Certificate is a certificate of a load balancer: created whole with its
// private key (which OCI never shows again), by name.
type Certificate struct {
	CertificateName   string `json:"certificateName"`
	PublicCertificate string `json:"publicCertificate,omitempty"`
	PrivateKey        string `json:"privateKey,omitempty"`
	Passphrase        string `json:"passphrase,omitempty"`
	CaCertificate     string `json:"caCertificate,omitempty"`
}

// SSLConfiguration is a listener's or a backend set's SSL: the certificate
// it presents (or checks the backends with).
type SSLConfiguration struct {
	CertificateName       string   `json:"certificateName"`
	VerifyDepth           int      `json:"verifyDepth"`
	VerifyPeerCertificate bool     `json:"verifyPeerCertificate"`
	CipherSuiteName       string   `json:"cipherSuiteName,omitempty"`
	Protocols             []string `json:"protocols,omitempty"`
}

// ShapeDetails are a flexible shape's bandwidths.
type ShapeDetails struct {
	MinimumBandwidthInMbps int `json:"minimumBandwidthInMbps"`
	MaximumBandwidthInMbps int `json:"maximumBandwidthInMbps"`
}

// Listener is a listener (its name is its key in the load balancer, and
// the path of its updates). ConnectionConfiguration is an LB's;
// IsPPv2Enabled an NLB's.
type Listener struct {
	Name                    string                   `json:"name,omitempty"`
	DefaultBackendSetName   string                   `json:"defaultBackendSetName"`
	Port                    int                      `json:"port"`
	Protocol                string                   `json:"protocol"`
	ConnectionConfiguration *ConnectionConfiguration `json:"connectionConfiguration,omitempty"`
	SSLConfiguration        *SSLConfiguration        `json:"sslConfiguration,omitempty"`
	RuleSetNames            []string                 `json:"ruleSetNames,omitempty"`
	IsPPv2Enabled           *bool                    `json:"isPpv2Enabled,omitempty"`
	// IPVersion is an NLB's listener's (IPV4, IPV6; "" is IPV4).
	IPVersion string `json:"ipVersion,omitempty"`
}

// ConnectionConfiguration is a listener's idle timeout and PROXY protocol.
type ConnectionConfiguration struct {
	IdleTimeout                    int64 `json:"idleTimeout"`
	BackendTCPProxyProtocolVersion int   `json:"backendTcpProxyProtocolVersion,omitempty"`
}

// BackendSet is a backend set; IsPreserveSource is an NLB's.
type BackendSet struct {
	Name             string            `json:"name,omitempty"`
	Policy           string            `json:"policy"`
	Backends         []Backend         `json:"backends"`
	HealthChecker    HealthChecker     `json:"healthChecker"`
	SSLConfiguration *SSLConfiguration `json:"sslConfiguration,omitempty"`
	IsPreserveSource *bool             `json:"isPreserveSource,omitempty"`
	// IPVersion is an NLB's backend set's (IPV4, IPV6; "" is IPV4).
	IPVersion string `json:"ipVersion,omitempty"`
	// Many stands for Backends when a listing has more than
	// lbcycle.MembersKept of them (then nil); never sent.
	Many *ManyBackends `json:"-"`
}

// Backend is a node's address and port in a backend set; an NLB's backend
// names its instance too (TargetID), as the peer's do. Its weight and its
// states are sent whole (the CCM asks weight 1, none of the states), each
// state under its kind's name: an LB's drain, backup and offline
// (oci-go-sdk loadbalancer.BackendDetails, UpdateBackendDetails), an NLB's
// isDrain, isBackup and isOffline (networkloadbalancer.BackendDetails,
// UpdateBackendDetails); the other kind's are nil, and not sent.
type Backend struct {
	IPAddress string `json:"ipAddress"`
	TargetID  string `json:"targetId,omitempty"`
	Port      int    `json:"port"`
	Weight    int    `json:"weight,omitempty"`
	Drain     *bool  `json:"drain,omitempty"`
	Backup    *bool  `json:"backup,omitempty"`
	Offline   *bool  `json:"offline,omitempty"`
	IsDrain   *bool  `json:"isDrain,omitempty"`
	IsBackup  *bool  `json:"isBackup,omitempty"`
	IsOffline *bool  `json:"isOffline,omitempty"`
}

// HealthChecker is how a backend set checks its backends.
type HealthChecker struct {
	Protocol         string `json:"protocol"`
	Port             int    `json:"port"`
	URLPath          string `json:"urlPath,omitempty"`
	ReturnCode       int    `json:"returnCode,omitempty"`
	Retries          int    `json:"retries"`
	TimeoutInMillis  int    `json:"timeoutInMillis"`
	IntervalInMillis int    `json:"intervalInMillis"`
	// IsForcePlainText: the check is plain HTTP to backends reached by SSL.
	IsForcePlainText bool `json:"isForcePlainText,omitempty"`
}

// CreateLoadBalancer is CreateLoadBalancerDetails: the whole load balancer in one call.
type CreateLoadBalancer struct {
	CompartmentID string                    `json:"compartmentId"`
	DisplayName   string                    `json:"displayName"`
	ShapeName     string                    `json:"shapeName"`
	ShapeDetails  *ShapeDetails             `json:"shapeDetails,omitempty"`
	SubnetIDs     []string                  `json:"subnetIds"`
	IsPrivate     bool                      `json:"isPrivate"`
	Listeners     map[string]Listener       `json:"listeners"`
	BackendSets   map[string]BackendSet     `json:"backendSets"`
	FreeformTags  map[string]string         `json:"freeformTags,omitempty"`
	DefinedTags   map[string]map[string]any `json:"definedTags,omitempty"`
	ReservedIPs   []ReservedIP              `json:"reservedIps,omitempty"`
	Certificates  map[string]Certificate    `json:"certificates,omitempty"`
	RuleSets      map[string]RuleSet        `json:"ruleSets,omitempty"`
	NSGs          []string                  `json:"networkSecurityGroupIds,omitempty"`
	// IPMode IPV6 makes it dual-stack ("": IPV4, the API's default).
	IPMode string `json:"ipMode,omitempty"`
}

// CreateNetworkLoadBalancer is CreateNetworkLoadBalancerDetails: the whole
// network load balancer in one call.
type CreateNetworkLoadBalancer struct {
	CompartmentID               string                    `json:"compartmentId"`
	DisplayName                 string                    `json:"displayName"`
	SubnetID                    string                    `json:"subnetId"`
	IsPrivate                   bool                      `json:"isPrivate"`
	IsPreserveSourceDestination bool                      `json:"isPreserveSourceDestination"`
	Listeners                   map[string]Listener       `json:"listeners"`
	BackendSets                 map[string]BackendSet     `json:"backendSets"`
	FreeformTags                map[string]string         `json:"freeformTags,omitempty"`
	DefinedTags                 map[string]map[string]any `json:"definedTags,omitempty"`
	ReservedIPs                 []ReservedIP              `json:"reservedIps,omitempty"`
	NSGs                        []string                  `json:"networkSecurityGroupIds,omitempty"`
	// NLBIPVersion is IPV6 or IPV4_AND_IPV6 ("": IPV4, the API's default).
	NLBIPVersion string `json:"nlbIpVersion,omitempty"`
	// AssignedPrivateIPv4 and AssignedIPv6 are addresses of its subnet it
	// takes ("": OCI's choice).
	AssignedPrivateIPv4 string `json:"assignedPrivateIpv4,omitempty"`
	AssignedIPv6        string `json:"assignedIpv6,omitempty"`
}

// ReservedIP names a reserved public IP a load balancer takes.
type ReservedIP struct {
	ID string `json:"id"`
}

// WorkRequest is a load balancer's work request, of either kind: an NLB's
// (operationType, status, resources) is read into the LB's fields.
type WorkRequest struct {
	ID             string     `json:"id"`
	LoadBalancerID string     `json:"loadBalancerId"`
	Type           string     `json:"type"`
	LifecycleState string     `json:"lifecycleState"`
	Message        string     `json:"message"`
	TimeAccepted   time.Time  `json:"timeAccepted"`
	TimeFinished   *time.Time `json:"timeFinished"`
	// An NLB's.
	OperationType string `json:"operationType"`
	Status        string `json:"status"`
	Resources     []struct {
		EntityType string `json:"entityType"`
		Identifier string `json:"identifier"`
	} `json:"resources"`
}

// api is where a kind's API is: its service (as metrics name it), base URL
// and version.
func (g *Client) api(kind string) (service, base, version string) {
	if kind == KindNLB {
		return "networkloadbalancer", g.ep.NetworkLoadBalancer, nlbAPI
	}
	return "loadbalancer", g.ep.LoadBalancer, lbAPI
}

// collection is the path of a kind's load balancers.
func collection(kind string) string {
	if kind == KindNLB {
		return "/networkLoadBalancers"
	}
	return "/loadBalancers"
}

// LoadBalancers lists the load balancers of a kind a query names (its
// compartment, and displayName …).
func (g *Client) LoadBalancers(ctx context.Context, kind string, q url.Values) ([]LB, error) {
	service, base, version := g.api(kind)
	q = With(maps.Clone(q), "limit", strconv.Itoa(lbFirstPage))
	var out []LB
	var err error
	if kind == KindNLB {
		out, err = listItems[LB](ctx, g, service, base, version+collection(kind), q)
	} else {
		out, err = list[LB](ctx, g, service, base, version+collection(kind), q)
	}
	for i := range out {
		out[i].Kind = kind
		if out[i].SubnetID != "" {
			out[i].SubnetIDs = []string{out[i].SubnetID}
		}
	}
	return out, err
}

// lbChange makes a change of a kind's API and returns its work request's
// OCID.
func (g *Client) lbChange(ctx context.Context, kind, method, path string, in any, header http.Header) (string, error) {
	service, base, version := g.api(kind)
	h, err := g.callWith(ctx, service, method, base, version+path, in, header)
	if err != nil {
		return "", err
	}
	wr := h.Get("opc-work-request-id")
	if wr == "" {
		return "", fmt.Errorf("OCI answered %s %s without an opc-work-request-id", method, operationPath(path))
	}
	return wr, nil
}

// CreateLoadBalancer creates a load balancer whole; token makes a retry of
// the same call (by the transport) the same creation.
func (g *Client) CreateLoadBalancer(ctx context.Context, d CreateLoadBalancer, token string) (string, error) {
	return g.lbChange(ctx, KindLB, http.MethodPost, "/loadBalancers", d, http.Header{"Opc-Retry-Token": {token}})
}

// CreateNetworkLoadBalancer creates a network load balancer whole, as
// createLoadBalancer does.
func (g *Client) CreateNetworkLoadBalancer(ctx context.Context, d CreateNetworkLoadBalancer, token string) (string, error) {
	return g.lbChange(ctx, KindNLB, http.MethodPost, "/networkLoadBalancers", d, http.Header{"Opc-Retry-Token": {token}})
}

// DeleteLoadBalancer deletes load balancer id of kind; the work request
// that does it.
func (g *Client) DeleteLoadBalancer(ctx context.Context, kind, id string) (string, error) {
	return g.lbChange(ctx, kind, http.MethodDelete, collection(kind)+"/"+url.PathEscape(id), nil, nil)
}

// CreateChild creates a child of load balancer lb of a kind (child
// backendSets, listeners or ruleSets), its body naming it.
func (g *Client) CreateChild(ctx context.Context, kind, lb, child string, body any) (string, error) {
	return g.lbChange(ctx, kind, http.MethodPost, childPath(kind, lb, child, ""), body, nil)
}

// UpdateChild replaces the child name of load balancer lb of a kind with
// body (which names it not: the path does).
func (g *Client) UpdateChild(ctx context.Context, kind, lb, child, name string, body any) (string, error) {
	return g.lbChange(ctx, kind, http.MethodPut, childPath(kind, lb, child, name), body, nil)
}

// DeleteChild deletes the child name of load balancer lb of a kind (child
// backendSets, listeners, ruleSets or certificates).
func (g *Client) DeleteChild(ctx context.Context, kind, lb, child, name string) (string, error) {
	return g.lbChange(ctx, kind, http.MethodDelete, childPath(kind, lb, child, name), nil, nil)
}

// Backends are the backends of load balancer lb's backend set of a kind
// (ListBackends: an LB's answered whole, an NLB's by pages).
func (g *Client) Backends(ctx context.Context, kind, lb, set string) ([]Backend, error) {
	service, base, version := g.api(kind)
	path := version + childPath(kind, lb, "backendSets", set) + "/backends"
	if kind == KindNLB {
		return listItems[Backend](ctx, g, service, base, path, nil)
	}
	return get[[]Backend](ctx, g, service, base, path)
}

// UpdateBackend is the path of load balancer lb's children of a kind, or of
// the one named name.
// UpdateBackend changes one backend of backend set set of lb to body (an
// LB's UpdateBackendDetails, an NLB's UpdateBackendDetails): the CCM never
// changes a backend in place (it puts the whole set), tests change one
// behind its back with it.
func (g *Client) UpdateBackend(ctx context.Context, kind, lb, set string, b Backend, body map[string]any) (string, error) {
	path := childPath(kind, lb, "backendSets", set) + "/backends/" + url.PathEscape(fmt.Sprintf("%s:%d", b.IPAddress, b.Port))
	return g.lbChange(ctx, kind, http.MethodPut, path, body, nil)
}

func childPath(kind, lb, child, name string) string {
	path := collection(kind) + "/" + url.PathEscape(lb) + "/" + child
	if name != "" {
		path += "/" + url.PathEscape(name)
	}
	return path
}

// CreateCertificate adds a certificate to load balancer lb (an lb).
func (g *Client) CreateCertificate(ctx context.Context, lb string, c Certificate) (string, error) {
	return g.lbChange(ctx, KindLB, http.MethodPost, "/loadBalancers/"+url.PathEscape(lb)+"/certificates", c, nil)
}

// WorkRequest reads a work request of a kind, an NLB's read as an LB's.
func (g *Client) WorkRequest(ctx context.Context, kind, id string) (WorkRequest, error) {
	service, base, version := g.api(kind)
	if kind != KindNLB {
		return get[WorkRequest](ctx, g, service, base, version+"/loadBalancerWorkRequests/"+url.PathEscape(id))
	}
	wr, err := get[WorkRequest](ctx, g, service, base, version+"/workRequests/"+url.PathEscape(id))
	wr.Type, wr.LifecycleState = wr.OperationType, wr.Status
	for _, r := range wr.Resources {
		if r.EntityType == "NetworkLoadBalancer" {
			wr.LoadBalancerID = r.Identifier
		}
	}
	return wr, err
}

// SetNLBIPVersion changes network load balancer id's nlbIpVersion
// (UpdateNetworkLoadBalancer).
func (g *Client) SetNLBIPVersion(ctx context.Context, id, version string) (string, error) {
	return g.lbChange(ctx, KindNLB, http.MethodPut, "/networkLoadBalancers/"+url.PathEscape(id), map[string]string{"nlbIpVersion": version}, nil)
}

// SetNSGs puts load balancer lb (of a kind) in NSGs ids.
func (g *Client) SetNSGs(ctx context.Context, kind, lb string, ids []string) (string, error) {
	return g.lbChange(ctx, kind, http.MethodPut, collection(kind)+"/"+url.PathEscape(lb)+"/networkSecurityGroups",
		map[string]any{"networkSecurityGroupIds": ids}, nil)
}
