// Package ociapi is Overcast's client of OCI's APIs: every call the oci
// provider makes (Core, Identity, Load Balancer, Network Load Balancer), the
// answers' types and their decoding, the errors translated into
// internal/outcome's kinds, and the four ways to sign (an API key, an
// instance principal, OKE's workload identity and the peer's self-managed
// one). It alone imports net/http; the provider holds its API.
package ociapi

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

// The client is the one place OCI's APIs are called: every call the CCM
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

// EndpointsFor are the public endpoints of region in realm oc1
// (oci-go-sdk's common/regions.go templates).
func EndpointsFor(region string) Endpoints {
	return Endpoints{
		Core:                "https://iaas." + region + ".oraclecloud.com",
		Identity:            "https://identity." + region + ".oci.oraclecloud.com",
		LoadBalancer:        "https://iaas." + region + ".oraclecloud.com",
		NetworkLoadBalancer: "https://network-load-balancer-api." + region + ".oci.oraclecloud.com",
	}
}

// API is every call the provider makes, and no more: the
// compile-time check below keeps the client to it, and a test can put
// anything that answers it in the client's place.
type API interface {
	// endpoints are the URLs the calls go to (the doctor names them).
	Endpoints() Endpoints
	AddNSGRules(ctx context.Context, id string, rules []NSGRule) error
	Attachments(ctx context.Context, q url.Values) ([]VnicAttachment, error)
	AvailabilityDomains(ctx context.Context, compartment string) ([]string, error)
	Backends(ctx context.Context, kind, lb, set string) ([]Backend, error)
	CreateCertificate(ctx context.Context, lb string, c Certificate) (string, error)
	CreateChild(ctx context.Context, kind, lb, child string, body any) (string, error)
	CreateLoadBalancer(ctx context.Context, d CreateLoadBalancer, token string) (string, error)
	CreateNSG(ctx context.Context, compartment, vcn, name string, tags map[string]string, token string) (NSG, error)
	CreateNetworkLoadBalancer(ctx context.Context, d CreateNetworkLoadBalancer, token string) (string, error)
	DeleteChild(ctx context.Context, kind, lb, child, name string) (string, error)
	DeleteLoadBalancer(ctx context.Context, kind, id string) (string, error)
	DeleteNSG(ctx context.Context, id string) error
	EphemeralPublicIPs(ctx context.Context, compartment, ad string) ([]PublicIP, error)
	FirstInstance(ctx context.Context, compartment string) ([]Instance, error)
	FirstLoadBalancer(ctx context.Context, compartment string) error
	Instance(ctx context.Context, id string) (Instance, error)
	Instances(ctx context.Context, q url.Values) ([]Instance, error)
	IPv6s(ctx context.Context, subnet string) ([]IPv6, error)
	IPv6sAt(ctx context.Context, subnet, ip string) ([]IPv6, error)
	LoadBalancers(ctx context.Context, kind string, q url.Values) ([]LB, error)
	NSG(ctx context.Context, id string) (NSG, error)
	NSGRead(ctx context.Context, id string) (NSG, string, error)
	NSGRules(ctx context.Context, id string) ([]NSGRule, error)
	NSGs(ctx context.Context, q url.Values) ([]NSG, error)
	PrivateIPs(ctx context.Context, subnet string) ([]PrivateIP, error)
	PrivateIPsAt(ctx context.Context, subnet, ip string) ([]PrivateIP, error)
	PublicIPByAddress(ctx context.Context, ip string) (PublicIP, error)
	RemoveNSGRules(ctx context.Context, id string, ids []string) error
	ReservedPublicIPs(ctx context.Context, compartment string) ([]PublicIP, error)
	SecurityList(ctx context.Context, id string) (SecurityList, error)
	SetNLBIPVersion(ctx context.Context, id, version string) (string, error)
	SetNSGs(ctx context.Context, kind, lb string, ids []string) (string, error)
	Subnet(ctx context.Context, id string) (Subnet, error)
	TagNSG(ctx context.Context, id, etag string, tags map[string]string) error
	UpdateChild(ctx context.Context, kind, lb, child, name string, body any) (string, error)
	UpdateSecurityList(ctx context.Context, sl SecurityList) (SecurityList, error)
	Vcn(ctx context.Context, id string) error
	Vnic(ctx context.Context, id string) (Vnic, error)
	WorkRequest(ctx context.Context, kind, id string) (WorkRequest, error)
}

var _ API = (*Client)(nil)

// Endpoints are the URLs the calls go to (the doctor names them).
func (g *Client) Endpoints() Endpoints { return g.ep }

// WriteBurst is how many writes go at once: the write limit's burst
// (creations are asked for that many at a time).
func (g *Client) WriteBurst() int { return g.writeBurst }

// SetAttemptTimeout bounds each attempt of a call from now on (tests of lost
// answers shorten it).
// SetAttemptTimeout bounds each attempt of a call from now on (tests of
// lost answers shorten it).
func (g *Client) SetAttemptTimeout(d time.Duration) { g.attemptTimeout = d }

// Client calls OCI's APIs, signed with its credentials (or a Service's
// workload's: AsWorkload) under its limits.
type Client struct {
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

// New is a client of ep signed with creds, limited as l says.
func New(ep Endpoints, creds Credentials, l Limits, now func() time.Time) (*Client, error) {
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
	return &Client{http: hc, ep: ep, pageSize: listLimit, pageBytes: cloudapi.DefaultMaxResponseBytes / 2, writeBurst: burst}, nil
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
func (g *Client) callWith(ctx context.Context, service, method, base, path string, in any, header http.Header) (http.Header, error) {
	return g.do(ctx, service, method, base, path, nil, in, nil, header)
}

// read GETs base+path with query, decoding the answer into out (nil:
// ignored). It returns the answer's headers (etag, opc-next-page).
func (g *Client) read(ctx context.Context, service, base, path string, query url.Values, out any) (http.Header, error) {
	return g.do(ctx, service, http.MethodGet, base, path, query, nil, out, nil)
}

// do makes one request of base+path with query, the body in (nil for none)
// and the headers header, decoding the answer into out (nil: ignored). It
// returns the answer's headers (etag, opc-work-request-id, opc-next-page).

func (g *Client) do(ctx context.Context, service, method, base, path string, query url.Values, in, out any, header http.Header) (http.Header, error) {
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
	creds, ok := WorkloadOf(ctx)
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
func list[T any](ctx context.Context, g *Client, service, base, path string, query url.Values) ([]T, error) {
	return listing[T](ctx, g, service, base, path, query, false)
}

// listItems reads every page of an {"items": [...]} listing (the Network
// Load Balancer API's).
func listItems[T any](ctx context.Context, g *Client, service, base, path string, query url.Values) ([]T, error) {
	return listing[T](ctx, g, service, base, path, query, true)
}

func listing[T any](ctx context.Context, g *Client, service, base, path string, query url.Values, items bool) ([]T, error) {
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
func (g *Client) pageLimit(path string, query url.Values) int {
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
func (g *Client) fit(path string, itemBytes int64) int {
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
func get[T any](ctx context.Context, g *Client, service, base, path string) (T, error) {
	var v T
	_, err := g.read(ctx, service, base, path, nil, &v)
	return v, err
}

// workloadKey holds the credentials of the Service's workload in a context.
type workloadKey struct{}

// AsWorkload is ctx whose calls of the Service's load balancer go signed
// with creds (client.go says which).
func AsWorkload(ctx context.Context, creds Credentials) context.Context {
	return context.WithValue(ctx, workloadKey{}, creds)
}

// WorkloadOf is the workload's credentials in ctx, if any.
func WorkloadOf(ctx context.Context) (Credentials, bool) {
	c, ok := ctx.Value(workloadKey{}).(Credentials)
	return c, ok
}
