package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// The gateway is the one place OCI's APIs are called: every call the CCM
// makes is a method here, every answer is decoded into the few fields the CCM
// uses, and every error is translated once (translate) into outcome's kinds
// with OCI's own code and message. Requests are signed (sign.go) under the
// shared transport (internal/cloudapi: rate limits, retries honouring
// Retry-After, per-attempt timeouts, metrics).
//
// Overcast's own client rather than oci-go-sdk: the SDK costs every cloud's
// binary 0.6 MB of anonymous memory and 1 MB of read-only data touched at
// start (docs/benchmarks.md, session 11), and installs a circuit breaker of
// its own. oci-go-sdk drives the emulator in its tests, and signs the same
// requests byte for byte as sign.go (sign_test.go).

// API versions: the first segment of every path.
const (
	coreAPI     = "/20160918"
	identityAPI = "/20160918"
)

// maxPages bounds a listing (1,000 × 1,000 objects).
const maxPages = 1000

// listLimit is what a listing asks for a page: the most OCI allows.
const listLimit = 1000

// Endpoints are the base URLs of OCI's services.
type Endpoints struct {
	Core, Identity, LoadBalancer, NetworkLoadBalancer string
}

// endpointsFor are the public endpoints of region in realm oc1
// (oci-go-sdk's common/regions.go templates).
func endpointsFor(region string) Endpoints {
	return Endpoints{
		Core:                "https://iaas." + region + ".oraclecloud.com",
		Identity:            "https://identity." + region + ".oci.oraclecloud.com",
		LoadBalancer:        "https://iaas." + region + ".oraclecloud.com",
		NetworkLoadBalancer: "https://network-load-balancer-api." + region + ".oci.oraclecloud.com",
	}
}

// gatewayAPI is every call the rest of the provider makes, and no more: the
// compile-time check below keeps the gateway to it, and a test can put
// anything that answers it in the gateway's place.
type gatewayAPI interface {
	// endpoints are the URLs the calls go to (the doctor names them).
	endpoints() Endpoints
	addNSGRules(ctx context.Context, id string, rules []NSGRule) error
	attachments(ctx context.Context, q url.Values) ([]VnicAttachment, error)
	availabilityDomains(ctx context.Context, compartment string) ([]string, error)
	createCertificate(ctx context.Context, lb string, c Certificate) (string, error)
	createChild(ctx context.Context, kind, lb, child string, body any) (string, error)
	createLoadBalancer(ctx context.Context, d CreateLoadBalancer, token string) (string, error)
	createNSG(ctx context.Context, compartment, vcn, name string, tags map[string]string) (NSG, error)
	createNetworkLoadBalancer(ctx context.Context, d CreateNetworkLoadBalancer, token string) (string, error)
	deleteChild(ctx context.Context, kind, lb, child, name string) (string, error)
	deleteLoadBalancer(ctx context.Context, kind, id string) (string, error)
	deleteNSG(ctx context.Context, id string) error
	ephemeralPublicIPs(ctx context.Context, compartment, ad string) ([]PublicIP, error)
	firstInstance(ctx context.Context, compartment string) ([]Instance, error)
	firstLoadBalancer(ctx context.Context, compartment string) error
	instance(ctx context.Context, id string) (Instance, error)
	instances(ctx context.Context, q url.Values) ([]Instance, error)
	ipv6s(ctx context.Context, subnet string) ([]IPv6, error)
	loadBalancers(ctx context.Context, kind string, q url.Values) ([]LB, error)
	nsg(ctx context.Context, id string) (NSG, error)
	nsgRead(ctx context.Context, id string) (NSG, string, error)
	nsgRules(ctx context.Context, id string) ([]NSGRule, error)
	nsgs(ctx context.Context, q url.Values) ([]NSG, error)
	privateIPs(ctx context.Context, subnet string) ([]PrivateIP, error)
	publicIPByAddress(ctx context.Context, ip string) (PublicIP, error)
	removeNSGRules(ctx context.Context, id string, ids []string) error
	reservedPublicIPs(ctx context.Context, compartment string) ([]PublicIP, error)
	securityList(ctx context.Context, id string) (SecurityList, error)
	setNSGs(ctx context.Context, kind, lb string, ids []string) (string, error)
	subnet(ctx context.Context, id string) (Subnet, error)
	tagNSG(ctx context.Context, id, etag string, tags map[string]string) error
	updateChild(ctx context.Context, kind, lb, child, name string, body any) (string, error)
	updateSecurityList(ctx context.Context, sl SecurityList) (SecurityList, error)
	vcn(ctx context.Context, id string) error
	vnic(ctx context.Context, id string) (Vnic, error)
	workRequest(ctx context.Context, kind, id string) (WorkRequest, error)
}

var _ gatewayAPI = (*gateway)(nil)

func (g *gateway) endpoints() Endpoints { return g.ep }

type gateway struct {
	http *http.Client
	ep   Endpoints
	// writeBurst is the client-side write limit's burst: how many
	// creations are asked for at once (Create).
	writeBurst int
	// pageSize is the limit a listing asks for (listLimit; smaller in tests).
	pageSize int
}

// newGateway is a gateway to ep signed with creds, limited as rl says (the
// peer's defaults: 20 calls a second, bursts of 5, each way).
func newGateway(ep Endpoints, creds credentials, rl *RateLimiter, now func() time.Time) (*gateway, error) {
	limits := cloudapi.Config{Cloud: ProviderName, AnswersJSON: true, Endpoint: "auth.region (or endpoints)", ReadQPS: 20, ReadBurst: 5, WriteQPS: 20, WriteBurst: 5}
	if rl != nil {
		if rl.DisableRateLimiter {
			limits.ReadQPS, limits.WriteQPS = math.Inf(1), math.Inf(1)
		} else {
			if rl.RateLimitQPSRead > 0 {
				limits.ReadQPS = float64(rl.RateLimitQPSRead)
			}
			if rl.RateLimitBucketRead > 0 {
				limits.ReadBurst = rl.RateLimitBucketRead
			}
			if rl.RateLimitQPSWrite > 0 {
				limits.WriteQPS = float64(rl.RateLimitQPSWrite)
			}
			if rl.RateLimitBucketWrite > 0 {
				limits.WriteBurst = rl.RateLimitBucketWrite
			}
		}
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	hc, err := cloudapi.NewClient(limits, &signingTransport{base: base, creds: creds, now: now})
	if err != nil {
		return nil, err
	}
	burst := limits.WriteBurst
	if math.IsInf(limits.WriteQPS, 1) {
		burst = unlimitedBurst
	}
	return &gateway{http: hc, ep: ep, pageSize: listLimit, writeBurst: burst}, nil
}

// unlimitedBurst stands for the write burst when the limit is disabled.
const unlimitedBurst = 64

// Error is OCI's answer to a call that failed.
type Error struct {
	Status    int
	Code      string // NotAuthorizedOrNotFound, IncorrectState, …
	Message   string
	Operation string // "GET /20160918/instances/{id}"
	RequestID string // opc-request-id, for Oracle's support
}

func (e *Error) Error() string {
	return fmt.Sprintf("OCI answered %d %s to %s: %s (opc-request-id %s)", e.Status, e.Code, e.Operation, e.Message, e.RequestID)
}

// translate is the outcome kind of an OCI error. A 404 is "not found" for
// the caller to weigh: OCI gives the same answer to a missing policy, so it
// never proves alone that an instance is gone.
func translate(e *Error) error {
	if e.Status == 412 { // a stale etag: read again and retry, as for 409 IncorrectState
		return outcome.Classify(outcome.ErrBusy, e)
	}
	return outcome.Classify(outcome.KindByStatus(e.Status), e)
}

// callWith is a change: method on base+path with the body in and the
// headers header; it returns the answer's headers.
func (g *gateway) callWith(ctx context.Context, service, method, base, path string, in any, header http.Header) (http.Header, error) {
	return g.do(ctx, service, method, base, path, nil, in, nil, header)
}

// read GETs base+path with query, decoding the answer into out (nil:
// ignored). It returns the answer's headers (etag, opc-next-page).
func (g *gateway) read(ctx context.Context, service, base, path string, query url.Values, out any) (http.Header, error) {
	return g.do(ctx, service, http.MethodGet, base, path, query, nil, out, nil)
}

// do makes one request of base+path with query, the body in (nil for none)
// and the headers header, decoding the answer into out (nil: ignored). It
// returns the answer's headers (etag, opc-work-request-id, opc-next-page).

func (g *gateway) do(ctx context.Context, service, method, base, path string, query url.Values, in, out any, header http.Header) (http.Header, error) {
	u := base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body io.Reader
	var data []byte
	if in != nil {
		var err error
		if data, err = json.Marshal(in); err != nil {
			return nil, err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(cloudapi.WithService(ctx, service), method, u, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return resp.Header, answerError(resp, method, path)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return resp.Header, nil
	}
	// The body is bounded by the transport (cloudapi.Config.MaxResponseBytes).
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.Header, fmt.Errorf("decoding OCI's answer to %s %s: %w", method, operationPath(path), err)
	}
	return resp.Header, nil
}

func answerError(resp *http.Response, method, path string) error {
	e := &Error{Status: resp.StatusCode, Operation: method + " " + operationPath(path), RequestID: resp.Header.Get("opc-request-id")}
	var b struct{ Code, Message string }
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(data, &b) == nil && b.Code != "" {
		e.Code, e.Message = b.Code, b.Message
	} else {
		e.Code, e.Message = "BadErrorResponse", strings.TrimSpace(string(data))
	}
	return translate(e)
}

// operationPath is path with OCIDs as {id}, for messages.
func operationPath(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "ocid1.") {
			parts[i] = "{id}"
		}
	}
	return strings.Join(parts, "/")
}

// list reads every page of a bare-array listing.
func list[T any](ctx context.Context, g *gateway, service, base, path string, query url.Values) ([]T, error) {
	return listing[T](ctx, g, service, base, path, query, false)
}

// listItems reads every page of an {"items": [...]} listing (the Network
// Load Balancer API's).
func listItems[T any](ctx context.Context, g *gateway, service, base, path string, query url.Values) ([]T, error) {
	return listing[T](ctx, g, service, base, path, query, true)
}

func listing[T any](ctx context.Context, g *gateway, service, base, path string, query url.Values, items bool) ([]T, error) {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	q.Set("limit", strconv.Itoa(g.pageSize))
	var out []T
	for range maxPages {
		var page []T
		var into any = &page
		if items {
			into = &struct {
				Items *[]T `json:"items"`
			}{&page}
		}
		h, err := g.read(ctx, service, base, path, q, into)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		next := h.Get("opc-next-page")
		if next == "" {
			return out, nil
		}
		q.Set("page", next)
	}
	return nil, fmt.Errorf("listing %s: more than %d pages", path, maxPages)
}

// get reads the object at path.
func get[T any](ctx context.Context, g *gateway, service, base, path string) (T, error) {
	var v T
	_, err := g.read(ctx, service, base, path, nil, &v)
	return v, err
}

// Instance is an instance as the CCM uses it.
type Instance struct {
	ID                 string `json:"id"`
	CompartmentID      string `json:"compartmentId"`
	AvailabilityDomain string `json:"availabilityDomain"`
	FaultDomain        string `json:"faultDomain"`
	DisplayName        string `json:"displayName"`
	LifecycleState     string `json:"lifecycleState"`
	Region             string `json:"region"`
	Shape              string `json:"shape"`
}

// VnicAttachment is a VNIC attachment as the CCM uses it.
type VnicAttachment struct {
	InstanceID     string `json:"instanceId"`
	VnicID         string `json:"vnicId"`
	SubnetID       string `json:"subnetId"`
	LifecycleState string `json:"lifecycleState"`
}

// Vnic is a VNIC as the CCM uses it.
type Vnic struct {
	ID            string   `json:"id"`
	IsPrimary     bool     `json:"isPrimary"`
	PrivateIP     string   `json:"privateIp"`
	PublicIP      string   `json:"publicIp"`
	IPv6Addresses []string `json:"ipv6Addresses"`
	HostnameLabel string   `json:"hostnameLabel"`
	SubnetID      string   `json:"subnetId"`
}

// Subnet is a subnet as the CCM uses it.
type Subnet struct {
	ID                 string   `json:"id"`
	VCNID              string   `json:"vcnId"`
	CIDRBlock          string   `json:"cidrBlock"`
	IPv6CIDRBlocks     []string `json:"ipv6CidrBlocks"`
	IPv6CIDRBlock      string   `json:"ipv6CidrBlock"`
	SecurityListIDs    []string `json:"securityListIds"`
	AvailabilityDomain *string  `json:"availabilityDomain"`
}

// inCompartment is the query of a listing of compartment.
func inCompartment(compartment string) url.Values { return url.Values{"compartmentId": {compartment}} }

// with is q and the query parameters of kv (name, value, …).
func with(q url.Values, kv ...string) url.Values {
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q
}

// instances lists the instances a query names (its compartment, and
// displayName, availabilityDomain …).
func (g *gateway) instances(ctx context.Context, q url.Values) ([]Instance, error) {
	return list[Instance](ctx, g, "compute", g.ep.Core, coreAPI+"/instances", q)
}

// instance reads one instance.
func (g *gateway) instance(ctx context.Context, id string) (Instance, error) {
	return get[Instance](ctx, g, "compute", g.ep.Core, coreAPI+"/instances/"+url.PathEscape(id))
}

// attachments lists the VNIC attachments a query names (its compartment,
// and instanceId …).
func (g *gateway) attachments(ctx context.Context, q url.Values) ([]VnicAttachment, error) {
	return list[VnicAttachment](ctx, g, "compute", g.ep.Core, coreAPI+"/vnicAttachments", q)
}

// vnic reads one VNIC.
func (g *gateway) vnic(ctx context.Context, id string) (Vnic, error) {
	return get[Vnic](ctx, g, "network", g.ep.Core, coreAPI+"/vnics/"+url.PathEscape(id))
}

// subnet reads one subnet.
func (g *gateway) subnet(ctx context.Context, id string) (Subnet, error) {
	return get[Subnet](ctx, g, "network", g.ep.Core, coreAPI+"/subnets/"+url.PathEscape(id))
}

// firstInstance is the first page of one of the compartment's instances:
// the doctor's harmless read of the Compute API.
func (g *gateway) firstInstance(ctx context.Context, compartment string) ([]Instance, error) {
	var page []Instance
	_, err := g.read(ctx, "compute", g.ep.Core, coreAPI+"/instances", onePage(compartment), &page)
	return page, err
}

// firstLoadBalancer reads the first page of one of the compartment's load
// balancers: the doctor's harmless read of the Load Balancing API.
func (g *gateway) firstLoadBalancer(ctx context.Context, compartment string) error {
	var page []LB
	_, err := g.read(ctx, "loadbalancer", g.ep.LoadBalancer, lbAPI+"/loadBalancers", onePage(compartment), &page)
	return err
}

// vcn reads VCN id, to see that it is there and readable.
func (g *gateway) vcn(ctx context.Context, id string) error {
	_, err := g.read(ctx, "network", g.ep.Core, coreAPI+"/vcns/"+url.PathEscape(id), nil, nil)
	return err
}

// onePage is the query of a listing's first page of one object.
func onePage(compartment string) url.Values {
	q := inCompartment(compartment)
	q.Set("limit", "1")
	return q
}

// PrivateIP is a private IP as the CCM uses it.
type PrivateIP struct {
	ID            string `json:"id"`
	IPAddress     string `json:"ipAddress"`
	IsPrimary     bool   `json:"isPrimary"`
	VnicID        string `json:"vnicId"`
	HostnameLabel string `json:"hostnameLabel"`
}

// PublicIP is a public IP as the CCM uses it.
type PublicIP struct {
	ID               string `json:"id"`
	IPAddress        string `json:"ipAddress"`
	PrivateIPID      string `json:"privateIpId"`
	Lifetime         string `json:"lifetime"`
	LifecycleState   string `json:"lifecycleState"`
	AssignedEntityID string `json:"assignedEntityId"`
}

// IPv6 is an IPv6 address of a VNIC.
type IPv6 struct {
	IPAddress string `json:"ipAddress"`
	VnicID    string `json:"vnicId"`
}

// ipv6s lists the IPv6 addresses of subnet.
func (g *gateway) ipv6s(ctx context.Context, subnet string) ([]IPv6, error) {
	return list[IPv6](ctx, g, "network", g.ep.Core, coreAPI+"/ipv6", url.Values{"subnetId": {subnet}})
}

// publicIPByAddress reads the public IP of address ip.
func (g *gateway) publicIPByAddress(ctx context.Context, ip string) (PublicIP, error) {
	var p PublicIP
	_, err := g.do(ctx, "network", http.MethodPost, g.ep.Core, coreAPI+"/publicIps/actions/getByIpAddress", nil, map[string]string{"ipAddress": ip}, &p, nil)
	return p, err
}

// privateIPs lists the private IPs of subnet.
func (g *gateway) privateIPs(ctx context.Context, subnet string) ([]PrivateIP, error) {
	return list[PrivateIP](ctx, g, "network", g.ep.Core, coreAPI+"/privateIps", url.Values{"subnetId": {subnet}})
}

// ephemeralPublicIPs lists the ephemeral public IPs of availability domain
// ad (those of instances' VNICs) in compartment.
func (g *gateway) ephemeralPublicIPs(ctx context.Context, compartment, ad string) ([]PublicIP, error) {
	q := inCompartment(compartment)
	q.Set("scope", "AVAILABILITY_DOMAIN")
	q.Set("availabilityDomain", ad)
	q.Set("lifetime", "EPHEMERAL")
	return list[PublicIP](ctx, g, "network", g.ep.Core, coreAPI+"/publicIps", q)
}

// reservedPublicIPs lists the regional (reserved) public IPs of compartment.
func (g *gateway) reservedPublicIPs(ctx context.Context, compartment string) ([]PublicIP, error) {
	q := inCompartment(compartment)
	q.Set("scope", "REGION")
	q.Set("lifetime", "RESERVED")
	return list[PublicIP](ctx, g, "network", g.ep.Core, coreAPI+"/publicIps", q)
}

// availabilityDomains lists the availability domains' names.
func (g *gateway) availabilityDomains(ctx context.Context, compartment string) ([]string, error) {
	var ads []struct {
		Name string `json:"name"`
	}
	// Not paged: the API takes no limit or page.
	_, err := g.read(ctx, "identity", g.ep.Identity, identityAPI+"/availabilityDomains", inCompartment(compartment), &ads)
	names := make([]string, len(ads))
	for i, a := range ads {
		names[i] = a.Name
	}
	return names, err
}

// The Load Balancing API and the Network Load Balancer API.
const (
	lbAPI  = "/20170115"
	nlbAPI = "/20200501"
)

// The kinds of load balancer (oci.oraclecloud.com/load-balancer-type).
const (
	kindLB  = "lb"
	kindNLB = "nlb"
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
	IPAddresses    []struct {
		IPAddress string `json:"ipAddress"`
		IsPublic  bool   `json:"isPublic"`
	} `json:"ipAddresses"`
	IsPrivate                   bool                  `json:"isPrivate"`
	SubnetIDs                   []string              `json:"subnetIds"`
	SubnetID                    string                `json:"subnetId"` // NLB
	NetworkSecurityGroupIDs     []string              `json:"networkSecurityGroupIds"`
	IsPreserveSourceDestination bool                  `json:"isPreserveSourceDestination"`
	Listeners                   map[string]Listener   `json:"listeners"`
	BackendSets                 map[string]BackendSet `json:"backendSets"`
	FreeformTags                map[string]string     `json:"freeformTags"`
	// Certificates and RuleSets are an LB's, by name.
	Certificates map[string]Certificate `json:"certificates"`
	RuleSets     map[string]RuleSet     `json:"ruleSets"`
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
}

// Backend is a node's address and port in a backend set; an NLB's backend
// names its instance too (TargetID), as the peer's do.
type Backend struct {
	IPAddress string `json:"ipAddress"`
	TargetID  string `json:"targetId,omitempty"`
	Port      int    `json:"port"`
	Weight    int    `json:"weight,omitempty"`
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
func (g *gateway) api(kind string) (service, base, version string) {
	if kind == kindNLB {
		return "networkloadbalancer", g.ep.NetworkLoadBalancer, nlbAPI
	}
	return "loadbalancer", g.ep.LoadBalancer, lbAPI
}

// collection is the path of a kind's load balancers.
func collection(kind string) string {
	if kind == kindNLB {
		return "/networkLoadBalancers"
	}
	return "/loadBalancers"
}

// loadBalancers lists the load balancers of a kind a query names (its
// compartment, and displayName …).
func (g *gateway) loadBalancers(ctx context.Context, kind string, q url.Values) ([]LB, error) {
	service, base, version := g.api(kind)
	var out []LB
	var err error
	if kind == kindNLB {
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
func (g *gateway) lbChange(ctx context.Context, kind, method, path string, in any, header http.Header) (string, error) {
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

// createLoadBalancer creates a load balancer whole; token makes a retry of
// the same call (by the transport) the same creation.
func (g *gateway) createLoadBalancer(ctx context.Context, d CreateLoadBalancer, token string) (string, error) {
	return g.lbChange(ctx, kindLB, http.MethodPost, "/loadBalancers", d, http.Header{"Opc-Retry-Token": {token}})
}

// createNetworkLoadBalancer creates a network load balancer whole, as
// createLoadBalancer does.
func (g *gateway) createNetworkLoadBalancer(ctx context.Context, d CreateNetworkLoadBalancer, token string) (string, error) {
	return g.lbChange(ctx, kindNLB, http.MethodPost, "/networkLoadBalancers", d, http.Header{"Opc-Retry-Token": {token}})
}

func (g *gateway) deleteLoadBalancer(ctx context.Context, kind, id string) (string, error) {
	return g.lbChange(ctx, kind, http.MethodDelete, collection(kind)+"/"+url.PathEscape(id), nil, nil)
}

// createChild creates a child of load balancer lb of a kind (child
// backendSets, listeners or ruleSets), its body naming it.
func (g *gateway) createChild(ctx context.Context, kind, lb, child string, body any) (string, error) {
	return g.lbChange(ctx, kind, http.MethodPost, childPath(kind, lb, child, ""), body, nil)
}

// updateChild replaces the child name of load balancer lb of a kind with
// body (which names it not: the path does).
func (g *gateway) updateChild(ctx context.Context, kind, lb, child, name string, body any) (string, error) {
	return g.lbChange(ctx, kind, http.MethodPut, childPath(kind, lb, child, name), body, nil)
}

// deleteChild deletes the child name of load balancer lb of a kind (child
// backendSets, listeners, ruleSets or certificates).
func (g *gateway) deleteChild(ctx context.Context, kind, lb, child, name string) (string, error) {
	return g.lbChange(ctx, kind, http.MethodDelete, childPath(kind, lb, child, name), nil, nil)
}

// childPath is the path of load balancer lb's children of a kind, or of
// the one named name.
func childPath(kind, lb, child, name string) string {
	path := collection(kind) + "/" + url.PathEscape(lb) + "/" + child
	if name != "" {
		path += "/" + url.PathEscape(name)
	}
	return path
}

// createCertificate adds a certificate to load balancer lb (an lb).
func (g *gateway) createCertificate(ctx context.Context, lb string, c Certificate) (string, error) {
	return g.lbChange(ctx, kindLB, http.MethodPost, "/loadBalancers/"+url.PathEscape(lb)+"/certificates", c, nil)
}

// workRequest reads a work request of a kind, an NLB's read as an LB's.
func (g *gateway) workRequest(ctx context.Context, kind, id string) (WorkRequest, error) {
	service, base, version := g.api(kind)
	if kind != kindNLB {
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

// SecurityList is a security list; its rules are kept as OCI sent them, so
// that an update gives back every field of the rules it does not change.
type SecurityList struct {
	ID          string            `json:"id"`
	TimeCreated time.Time         `json:"timeCreated"`
	Ingress     []json.RawMessage `json:"ingressSecurityRules"`
	Egress      []json.RawMessage `json:"egressSecurityRules"`
	// etag is the version read, for If-Match.
	etag string
}

// securityList reads a security list and its etag.
func (g *gateway) securityList(ctx context.Context, id string) (SecurityList, error) {
	var sl SecurityList
	h, err := g.read(ctx, "network", g.ep.Core, coreAPI+"/securityLists/"+url.PathEscape(id), nil, &sl)
	if err != nil {
		return SecurityList{}, err
	}
	sl.etag = h.Get("etag")
	if sl.etag == "" {
		return SecurityList{}, fmt.Errorf("OCI answered GET /securityLists/{id} without an etag")
	}
	return sl, nil
}

// updateSecurityList replaces the rules of the security list read as sl,
// if it has not changed since (If-Match: a 412 NoEtagMatch is ErrBusy), and
// returns the list as OCI then holds it, with its new etag ("" if OCI gave
// none: read it again before the next change).
func (g *gateway) updateSecurityList(ctx context.Context, sl SecurityList) (SecurityList, error) {
	body := map[string][]json.RawMessage{"ingressSecurityRules": sl.Ingress, "egressSecurityRules": sl.Egress}
	var now SecurityList
	h, err := g.do(ctx, "network", http.MethodPut, g.ep.Core, coreAPI+"/securityLists/"+url.PathEscape(sl.ID), nil, body, &now,
		http.Header{"If-Match": {sl.etag}})
	if err != nil {
		return SecurityList{}, err
	}
	now.etag = h.Get("etag")
	return now, nil
}

// The gateway's NSG calls (Virtual Network API).
func (g *gateway) nsgs(ctx context.Context, q url.Values) ([]NSG, error) {
	return list[NSG](ctx, g, "network", g.ep.Core, coreAPI+"/networkSecurityGroups", q)
}

func (g *gateway) createNSG(ctx context.Context, compartment, vcn, name string, tags map[string]string) (NSG, error) {
	var out NSG
	_, err := g.do(ctx, "network", http.MethodPost, g.ep.Core, coreAPI+"/networkSecurityGroups", nil,
		map[string]any{"compartmentId": compartment, "vcnId": vcn, "displayName": name, "freeformTags": tags}, &out, nil)
	return out, err
}

func (g *gateway) nsg(ctx context.Context, id string) (NSG, error) {
	return get[NSG](ctx, g, "network", g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id))
}

// nsgRead is NSG id with its etag.
func (g *gateway) nsgRead(ctx context.Context, id string) (NSG, string, error) {
	var out NSG
	h, err := g.read(ctx, "network", g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id), nil, &out)
	if err != nil {
		return NSG{}, "", err
	}
	return out, h.Get("etag"), nil
}

// tagNSG replaces NSG id's freeform tags, if it has not changed since its
// etag was read (a 412 is ErrBusy).
func (g *gateway) tagNSG(ctx context.Context, id, etag string, tags map[string]string) error {
	_, err := g.do(ctx, "network", http.MethodPut, g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id), nil,
		map[string]any{"freeformTags": tags}, nil, http.Header{"If-Match": {etag}})
	return err
}

func (g *gateway) deleteNSG(ctx context.Context, id string) error {
	_, err := g.callWith(ctx, "network", http.MethodDelete, g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id), nil, nil)
	return err
}

func (g *gateway) nsgRules(ctx context.Context, id string) ([]NSGRule, error) {
	return list[NSGRule](ctx, g, "network", g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id)+"/securityRules", nil)
}

// addNSGRules adds rules to NSG id, 25 a call (the API's limit).
func (g *gateway) addNSGRules(ctx context.Context, id string, rules []NSGRule) error {
	return nsgAction(ctx, g, id, "addSecurityRules", "securityRules", rules)
}

// removeNSGRules removes the rules ids from NSG id, 25 a call.
func (g *gateway) removeNSGRules(ctx context.Context, id string, ids []string) error {
	return nsgAction(ctx, g, id, "removeSecurityRules", "securityRuleIds", ids)
}

// nsgAction posts action of NSG id with items under key, 25 a call.
func nsgAction[T any](ctx context.Context, g *gateway, id, action, key string, items []T) error {
	for batch := range slices.Chunk(items, 25) {
		if _, err := g.callWith(ctx, "network", http.MethodPost, g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id)+"/actions/"+action,
			map[string]any{key: batch}, nil); err != nil {
			return err
		}
	}
	return nil
}

// setNSGs puts load balancer lb (of a kind) in NSGs ids.
func (g *gateway) setNSGs(ctx context.Context, kind, lb string, ids []string) (string, error) {
	return g.lbChange(ctx, kind, http.MethodPut, collection(kind)+"/"+url.PathEscape(lb)+"/networkSecurityGroups",
		map[string]any{"networkSecurityGroupIds": ids}, nil)
}
