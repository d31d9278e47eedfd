package oci

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

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

// lbFirstPage is what a listing of load balancers asks for its first page
// while the size of a load balancer is not known: OCI lists them whole,
// with every backend, half a megabyte each on 5,000 Nodes.
const lbFirstPage = 10

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
	backends(ctx context.Context, kind, lb, set string) ([]Backend, error)
	createCertificate(ctx context.Context, lb string, c Certificate) (string, error)
	createChild(ctx context.Context, kind, lb, child string, body any) (string, error)
	createLoadBalancer(ctx context.Context, d CreateLoadBalancer, token string) (string, error)
	createNSG(ctx context.Context, compartment, vcn, name string, tags map[string]string, token string) (NSG, error)
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
	ipv6sAt(ctx context.Context, subnet, ip string) ([]IPv6, error)
	loadBalancers(ctx context.Context, kind string, q url.Values) ([]LB, error)
	nsg(ctx context.Context, id string) (NSG, error)
	nsgRead(ctx context.Context, id string) (NSG, string, error)
	nsgRules(ctx context.Context, id string) ([]NSGRule, error)
	nsgs(ctx context.Context, q url.Values) ([]NSG, error)
	privateIPs(ctx context.Context, subnet string) ([]PrivateIP, error)
	privateIPsAt(ctx context.Context, subnet, ip string) ([]PrivateIP, error)
	publicIPByAddress(ctx context.Context, ip string) (PublicIP, error)
	removeNSGRules(ctx context.Context, id string, ids []string) error
	reservedPublicIPs(ctx context.Context, compartment string) ([]PublicIP, error)
	securityList(ctx context.Context, id string) (SecurityList, error)
	setNLBIPVersion(ctx context.Context, id, version string) (string, error)
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
	// pageLimits are the limits of the listings (by path) that keep their
	// pages near pageBytes (fit), or under the response limit (pageLimit).
	pageLimits sync.Map
	// pageBytes is the size pages are fitted to: half the response limit
	// (cloudapi.Config.MaxResponseBytes).
	pageBytes int64
	// attemptTimeout bounds one attempt of a call (0: the transport's,
	// cloudapi.DefaultTimeout; shorter in tests of lost answers).
	attemptTimeout time.Duration
}

// Limits are the client's limits of calls a second and of their bursts,
// each way (0: the peer's defaults, 20 a second in bursts of 5); Disabled
// lifts them.
type Limits struct {
	Disabled              bool
	ReadQPS, WriteQPS     float64
	ReadBurst, WriteBurst int
}

// cloudName names the client's calls in metrics and errors (the provider's
// ProviderName).
const cloudName = "oci"

// newGateway is a gateway to ep signed with creds, limited as l says.
func newGateway(ep Endpoints, creds credentials, l Limits, now func() time.Time) (*gateway, error) {
	limits := cloudapi.Config{Cloud: cloudName, AnswersJSON: true, Endpoint: "auth.region (or endpoints)", ReadQPS: 20, ReadBurst: 5, WriteQPS: 20, WriteBurst: 5}
	if l.Disabled {
		limits.ReadQPS, limits.WriteQPS = math.Inf(1), math.Inf(1)
	} else {
		limits.ReadQPS, limits.WriteQPS = cmp.Or(l.ReadQPS, limits.ReadQPS), cmp.Or(l.WriteQPS, limits.WriteQPS)
		limits.ReadBurst, limits.WriteBurst = cmp.Or(l.ReadBurst, limits.ReadBurst), cmp.Or(l.WriteBurst, limits.WriteBurst)
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
	return &gateway{http: hc, ep: ep, pageSize: listLimit, pageBytes: cloudapi.DefaultMaxResponseBytes / 2, writeBurst: burst}, nil
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
	if g.attemptTimeout > 0 {
		ctx = cloudapi.WithAttemptTimeout(ctx, g.attemptTimeout)
	}
	req, err := http.NewRequestWithContext(cloudapi.WithService(signedAs(ctx, service), service), method, u, body)
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
	if err := decodeAnswer(counted(ctx, resp.Body), out); err != nil {
		return resp.Header, fmt.Errorf("decoding OCI's answer to %s %s: %w", method, operationPath(path), err)
	}
	return resp.Header, nil
}

// decodeAnswer decodes an answer's body into out as it is read (a
// listing's page is megabytes: a backend set decodes its backends one at a
// time, BackendSet.UnmarshalJSONFrom), with encoding/json's rules but for
// one: a value is not read whole to be checked before it is decoded.
func decodeAnswer(body io.Reader, out any) error {
	return jsonv2.UnmarshalRead(body, out, jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false))
}

// workloadTooKey marks a call outside the load balancer APIs that a
// Service's workload makes too (the peer's: the lookup of its reserved IP).
type workloadTooKey struct{}

// signedAs is ctx with the credentials that sign a call of service: the
// workload of the Service the call is for (asWorkload) for the calls the
// peer makes as it, those of the Load Balancer and Network Load Balancer
// APIs and the ones marked workloadTooKey; the CCM's own for every other.
func signedAs(ctx context.Context, service string) context.Context {
	creds, ok := workloadOf(ctx)
	if !ok || (service != "loadbalancer" && service != "networkloadbalancer" && ctx.Value(workloadTooKey{}) == nil) {
		return ctx
	}
	return context.WithValue(ctx, signerKey{}, creds)
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
	limit := g.pageLimit(path, query)
	q.Set("limit", strconv.Itoa(limit))
	var out []T
	for range maxPages {
		var page []T
		var into any = &page
		if items {
			into = &struct {
				Items *[]T `json:"items"`
			}{&page}
		}
		var size int64
		h, err := g.read(countInto(ctx, &size), service, base, path, q, into)
		if errors.Is(err, cloudapi.ErrResponseTooLarge) && limit > 1 {
			limit = max(1, limit/4)
			g.pageLimits.Store(path, limit)
			q.Set("limit", strconv.Itoa(limit))
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		next := h.Get("opc-next-page")
		if next == "" {
			return out, nil
		}
		if len(page) > 0 {
			limit = g.fit(path, size/int64(len(page)))
			q.Set("limit", strconv.Itoa(limit))
		}
		q.Set("page", next)
	}
	return nil, fmt.Errorf("listing %s: more than %d pages", path, maxPages)
}

// pageLimit is the limit a listing of path asks first: the one its last
// pages fit pageBytes with (fit) or came under the response limit with,
// else the query's (a first page of items whose size is not known), else
// pageSize. OCI's load balancers are listed whole: 1,000 of them on 5,000
// Nodes would be half a gigabyte a page.
func (g *gateway) pageLimit(path string, query url.Values) int {
	if n, ok := g.pageLimits.Load(path); ok {
		return n.(int)
	}
	if n, err := strconv.Atoi(query.Get("limit")); err == nil && n > 0 {
		return min(n, g.pageSize)
	}
	return g.pageSize
}

// fit is the limit of the next pages of path that keeps them near
// pageBytes, from an item's size in the last page; remembered.
func (g *gateway) fit(path string, itemBytes int64) int {
	limit := int(min(int64(g.pageSize), max(1, g.pageBytes/max(itemBytes, 1))))
	g.pageLimits.Store(path, limit)
	return limit
}

// countInto is ctx with the bytes of the answer's body to be counted into
// n (counted).
func countInto(ctx context.Context, n *int64) context.Context {
	return context.WithValue(ctx, bodyBytesKey{}, n)
}

type bodyBytesKey struct{}

// counted is body, counted into the counter of ctx (countInto) if any.
func counted(ctx context.Context, body io.Reader) io.Reader {
	if n, ok := ctx.Value(bodyBytesKey{}).(*int64); ok {
		return &countingReader{r: body, n: n}
	}
	return body
}

type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// get reads the object at path.
func get[T any](ctx context.Context, g *gateway, service, base, path string) (T, error) {
	var v T
	_, err := g.read(ctx, service, base, path, nil, &v)
	return v, err
}

// workloadKey holds the credentials of the Service's workload in a context.
type workloadKey struct{}

// asWorkload is ctx whose calls of the Service's load balancer go signed
// with creds (gateway.go says which).
func asWorkload(ctx context.Context, creds credentials) context.Context {
	return context.WithValue(ctx, workloadKey{}, creds)
}

// workloadOf is the workload's credentials in ctx, if any.
func workloadOf(ctx context.Context) (credentials, bool) {
	c, ok := ctx.Value(workloadKey{}).(credentials)
	return c, ok
}
