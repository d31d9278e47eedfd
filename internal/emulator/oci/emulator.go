// Package oci is an in-memory emulator of the Oracle Cloud Infrastructure APIs
// overcast-ccm uses, for tests, the bench and `overcast emulate oci`, reached
// through oci-go-sdk's own clients (a test drives every operation with them)
// and overcast-ccm's client. It runs on the emulator core
// (internal/emulator/core): latency, faults, calls counted by operation,
// /_emulator.
//
// Held to the real API (sources in ../shared/facts/oci-api.md; the SDK's
// models for the mandatory fields): every request's HTTP signature verified as
// OCI verifies it (401 NotAuthenticated for a missing header, a bad signature,
// an unknown key or a date more than 5 minutes off), users with rights per
// service (a user without them gets 404 NotAuthorizedOrNotFound, as OCI
// answers a missing policy), errors as {"code", "message"}, opc-request-id on
// every answer, list bodies as bare arrays paged with limit, page and
// opc-next-page.
//
// It serves what Nodes need (instances, their VNIC attachments and VNICs,
// subnets, VCNs, availability domains, addresses) and what load balancers
// need (load balancers and network load balancers with their children and
// work requests, certificates, security lists, network security groups,
// public IPs): docs/oci-emulator.md lists it.
package oci

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// The API versions, the first segment of every path.
const (
	corePath     = "/20160918"
	lbPath       = "/20170115"
	nlbPath      = "/20200501"
	defaultLimit = 100 // what a list answers without limit (ListInstances' documented default)
	maxLimit     = 1000
)

// Options of an Emulator; the zero value is usable.
type Options struct {
	// Latency is added to every API call.
	Latency time.Duration
	// Region is the region of everything; default us-ashburn-1.
	Region string
	// MachineCIDR is the node subnet's CIDR, where instances' private
	// addresses come from; default 10.0.10.0/24.
	MachineCIDR string
	// PublicCIDR is where public addresses come from (from its 10th address
	// on); default 203.0.113.0/24.
	PublicCIDR string
	// Provisioning is how long a load balancer's work request takes (its
	// creation, and each change); default 0, done by the next request.
	Provisioning time.Duration
	// IPv6CIDR makes the node subnet dual-stack: its IPv6 prefix (a /64),
	// from which every new VNIC gets an address; "" for IPv4 only.
	IPv6CIDR string
	// ServeTraffic makes the load balancers carry traffic (dataplane.go);
	// MachineCIDR and PublicCIDR must then be loopback prefixes.
	ServeTraffic bool
	// Clock is the emulator's clock, against which request dates are
	// checked; default time.Now.
	Clock func() time.Time
	// InstancePrincipals makes the emulator the metadata service of an
	// instance, the CCM's host, and the federation endpoint of its
	// identity (instanceprincipal.go).
	InstancePrincipals bool
	// WorkloadIdentity makes the emulator OKE's workload identity endpoint
	// too, on an HTTPS listener of its own (WorkloadIdentityURL), which
	// trades the ServiceAccount tokens of ServiceAccountToken for session
	// tokens (workloadidentity.go).
	WorkloadIdentity bool
	// IdentityDomain makes the emulator an OCI IAM identity domain's
	// OAuth token endpoint too, on an HTTPS listener of its own
	// (IdentityDomainURL), which trades the ServiceAccount tokens of
	// ServiceAccountToken for session tokens: the peer's self-managed
	// workload identity (identitydomain.go).
	IdentityDomain bool
	// SessionLifetime is how long a session token lasts (instance
	// principals, workload identity and the identity domain's); default
	// 20 minutes.
	SessionLifetime time.Duration
}

// Fixture is what the emulator starts with: a tenancy, a user with an API key
// and every right, a compartment, a VCN with a regional subnet, three
// availability domains.
type Fixture struct {
	TenancyID, UserID, CompartmentID, VCNID, SubnetID string
	// SecurityListID is the subnet's (the VCN's default) security list.
	SecurityListID string
	// PrivateKeyPEM and Fingerprint are the user's API key.
	PrivateKeyPEM, Fingerprint string
	AvailabilityDomains        []string
	// HostInstanceID is the instance of the metadata service (the CCM's
	// host), with InstancePrincipals.
	HostInstanceID string
	// DualStackSubnetID is a regional subnet of the VCN with an IPv6
	// prefix (DualStackIPv6CIDR) beside its IPv4 CIDR, for IPv6 and
	// dual-stack load balancers (ipv6.go).
	DualStackSubnetID string
}

// Emulator is the OCI emulator.
type Emulator struct {
	*core.Server
	opts Options
	fx   Fixture
	mux  *http.ServeMux

	mu    sync.Mutex
	seq   int
	users map[string]*user // by keyId
	networking
	balancing
	host         *hostIdentity
	sessions     map[string]session // by token
	principals   principals
	workload     workloadEndpoint
	domain       identityDomain
	jobs         *core.Jobs
	retryTokens  map[string]retried
	provisioning core.Delay // of work requests (Options.Provisioning)
	dataPlane    core.DataPlane
	ca           *core.CA
	machineNet   netip.Prefix
	ipv6Next     netip.Addr // the next VNIC's IPv6 address (invalid: IPv4 only)
	machineNext  netip.Addr
	publicNext   netip.Addr
	// ipv6State is the other dual-stack subnets' addresses (ipv6.go).
	ipv6State
}

// networking are the objects of the Compute and Virtual Network APIs.
type networking struct {
	instances     *core.Store[*instance]
	attachments   *core.Store[*vnicAttachment]
	vnics         *core.Store[*vnic]
	subnets       *core.Store[*subnet]
	vcns          *core.Store[*vcn]
	securityLists *core.Store[*securityList]
	publicIPs     *core.Store[*publicIP]
	nsgs          *core.Store[*nsg]
	// addressBook are the subnets' private IPs and IPv6 addresses
	// (addresses.go).
	addressBook
}

// balancing are the objects of the Load Balancing and Network Load
// Balancer APIs, with their work requests.
type balancing struct {
	lbs    *core.Store[*loadBalancer]
	wrs    *core.Store[*workRequest]
	nlbs   *core.Store[*networkLoadBalancer]
	nlbWRs *core.Store[*nlbWorkRequest]
}

// New returns an emulator with its Fixture.
func New(opts Options) (*Emulator, error) {
	if opts.Region == "" {
		opts.Region = "us-ashburn-1"
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.SessionLifetime <= 0 {
		opts.SessionLifetime = defaultSessionLifetime
	}
	nets, err := core.ParseNetworks("oci emulator", opts.MachineCIDR, opts.PublicCIDR, "10.0.10.0/24", "203.0.113.0/24", opts.ServeTraffic)
	if err != nil {
		return nil, err
	}
	e := &Emulator{opts: opts, mux: http.NewServeMux(), users: map[string]*user{},
		networking: networking{instances: core.NewStore[*instance](), attachments: core.NewStore[*vnicAttachment](),
			vnics: core.NewStore[*vnic](), subnets: core.NewStore[*subnet](), vcns: core.NewStore[*vcn](),
			securityLists: core.NewStore[*securityList](), publicIPs: core.NewStore[*publicIP](), nsgs: core.NewStore[*nsg](),
			addressBook: newAddressBook()},
		balancing: balancing{lbs: core.NewStore[*loadBalancer](), wrs: core.NewStore[*workRequest](),
			nlbs: core.NewStore[*networkLoadBalancer](), nlbWRs: core.NewStore[*nlbWorkRequest]()},
		sessions: map[string]session{}, workload: workloadEndpoint{tokens: map[string]serviceAccount{}}, jobs: core.NewJobs(), retryTokens: map[string]retried{},
		machineNet: nets.Machine, machineNext: nets.Machine.Addr().Next().Next(),
		publicNext: nth(nets.Public.Addr(), 10)}
	e.provisioning.Set(opts.Provisioning)
	e.domain.clientID, e.domain.clientSecret = newDomainClient()
	if err := e.seedFixture(); err != nil {
		return nil, err
	}
	e.routeLoadBalancers()
	e.routeNetworkLoadBalancers()
	e.routeBackendUpdates()
	e.routeBackendLists()
	e.routeSecurityLists()
	e.routeNSGs()
	e.routePublicIPs()
	e.routeCompute()
	if e.ca, err = core.NewCA("oci emulator"); err != nil {
		return nil, err
	}
	if opts.InstancePrincipals {
		if err := e.seedHost(); err != nil {
			return nil, err
		}
	}
	e.Server = core.New(http.HandlerFunc(e.serveAPI), core.Options{Name: "oci emulator", Latency: opts.Latency,
		Classify: classify, WriteError: func(w http.ResponseWriter, _ *http.Request, _ string, status int, msg string) {
			writeError(w, status, codeForStatus(status), msg)
		}, Clock: opts.Clock, Pager: pager{}})
	// OCI's real host names through HTTPS_PROXY (core/tlsproxy.go).
	e.ServeTunnels(e.ca, ".oraclecloud.com")
	e.Control().HandleFunc("POST /_emulator/provisioning-delay", core.DurationSetter(e.SetProvisioning))
	return e, nil
}

func nth(a netip.Addr, n int) netip.Addr {
	for range n {
		a = a.Next()
	}
	return a
}

// Start serves the API on addr (a loopback IP:PORT), with ServeTraffic the
// load balancers too, and with WorkloadIdentity the workload identity
// endpoint, with IdentityDomain the identity domain, each on another port
// of the same address, until Close.
func (e *Emulator) Start(addr string) error {
	if err := e.StartServing(addr, e.opts.ServeTraffic, &e.dataPlane, e.dataPlaneSpecs); err != nil {
		return err
	}
	var err error
	if e.opts.WorkloadIdentity {
		err = e.startWorkloadEndpoint(addr)
	}
	if err == nil && e.opts.IdentityDomain {
		err = e.startIdentityDomain(addr)
	}
	if err != nil {
		_ = e.Close()
	}
	return err
}

// Close stops what Start started.
func (e *Emulator) Close() error {
	e.workload.stop()
	e.domain.stop()
	return e.Server.Close()
}

// SetProvisioning changes how long work requests accepted from now take.
func (e *Emulator) SetProvisioning(d time.Duration) {
	e.provisioning.Set(d)
}

// CA is the PEM of the certificate authority of the emulator's HTTPS: a
// client that sends its requests for OCI's host names through the emulator
// as an HTTPS proxy (HTTPS_PROXY=URL()) trusts it (SSL_CERT_FILE).
func (e *Emulator) CA() []byte { return e.ca.PEM() }

// CAPool is a pool of the emulator's CA alone.
func (e *Emulator) CAPool() *x509.CertPool { return e.ca.Pool() }

// Fixture is what the emulator started with.
func (e *Emulator) Fixture() Fixture { return e.fx }

// Region is the emulator's region.
func (e *Emulator) Region() string { return e.opts.Region }

// CloudConfig is a cloud-provider.yaml of oci-cloud-controller-manager's form
// for the fixture's user, with Overcast's endpoints key for the emulator's
// URL (call after Start).
func (e *Emulator) CloudConfig() string {
	f := e.fx
	return fmt.Sprintf(`auth:
  region: %s
  tenancy: %s
  user: %s
  key: |
    %s
  fingerprint: %s
compartment: %s
vcn: %s
loadBalancer:
  subnet1: %s
endpoints:
  api: %s
`, e.opts.Region, f.TenancyID, f.UserID, strings.ReplaceAll(strings.TrimSpace(f.PrivateKeyPEM), "\n", "\n    "),
		f.Fingerprint, f.CompartmentID, f.VCNID, f.SubnetID, e.URL())
}

// newID is an OCID of kind (ocid1.<kind>.oc1.<region>.<unique>). Call with mu
// held (or before serving).
func (e *Emulator) newID(kind string) string {
	e.seq++
	region := "iad"
	if kind == "tenancy" || kind == "user" || kind == "compartment" {
		region = ""
	}
	return fmt.Sprintf("ocid1.%s.oc1.%s.aaaaemulator%06d", kind, region, e.seq)
}

func (e *Emulator) seedFixture() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	f := &e.fx
	f.TenancyID, f.UserID, f.CompartmentID = e.newID("tenancy"), e.newID("user"), e.newID("compartment")
	f.PrivateKeyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	f.Fingerprint = e.addKey(f.TenancyID, f.UserID, &key.PublicKey, allRights...)
	for i := 1; i <= 3; i++ {
		f.AvailabilityDomains = append(f.AvailabilityDomains, fmt.Sprintf("Uocm:US-ASHBURN-AD-%d", i))
	}
	now := e.opts.Clock()
	v := &vcn{resource: e.newResource("vcn", f.CompartmentID, "AVAILABLE", now),
		DisplayName: "cluster", CIDRBlock: "10.0.0.0/16", CIDRBlocks: []string{"10.0.0.0/16"}}
	e.vcns.Add(v.ID, v)
	// The VCN's default security list, with the rules OCI gives it: SSH and
	// ICMP in, everything out.
	sl := &securityList{resource: e.newResource("securitylist", f.CompartmentID, "AVAILABLE", now),
		DisplayName: "Default Security List for cluster", VCNID: v.ID, FreeformTags: map[string]string{},
		IngressSecurityRules: []json.RawMessage{
			json.RawMessage(`{"protocol":"6","source":"0.0.0.0/0","sourceType":"CIDR_BLOCK","isStateless":false,"tcpOptions":{"destinationPortRange":{"min":22,"max":22}}}`),
			json.RawMessage(`{"protocol":"1","source":"0.0.0.0/0","sourceType":"CIDR_BLOCK","isStateless":false,"icmpOptions":{"type":3,"code":4}}`),
		},
		EgressSecurityRules: []json.RawMessage{
			json.RawMessage(`{"protocol":"all","destination":"0.0.0.0/0","destinationType":"CIDR_BLOCK","isStateless":false}`),
		}}
	e.securityLists.Add(sl.ID, sl)
	f.SecurityListID = sl.ID
	s := &subnet{resource: e.newResource("subnet", f.CompartmentID, "AVAILABLE", now),
		VCNID: v.ID, DisplayName: "nodes", CIDRBlock: e.machineNet.String(), RouteTableID: e.newID("routetable"),
		VirtualRouterIP: e.machineNet.Addr().Next().String(), VirtualRouterMac: "00:00:17:00:00:01",
		SecurityListIDs: []string{sl.ID}}
	if e.opts.IPv6CIDR != "" {
		p, err := netip.ParsePrefix(e.opts.IPv6CIDR)
		if err != nil || !p.Addr().Is6() || p.Bits() != 64 {
			return fmt.Errorf("oci emulator: IPv6CIDR %q is not an IPv6 /64", e.opts.IPv6CIDR)
		}
		s.IPv6CIDRBlock, s.IPv6CIDRBlocks = p.Masked().String(), []string{p.Masked().String()}
		e.ipv6Next = nth(p.Masked().Addr(), 16)
	}
	e.subnets.Add(s.ID, s)
	f.VCNID, f.SubnetID = v.ID, s.ID
	e.seedDualStackSubnet(v, sl.ID)
	return nil
}

// serveAPI authenticates the request, then routes it.
func (e *Emulator) serveAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("opc-request-id", e.requestID())
	switch {
	case strings.HasPrefix(r.URL.Path, "/opc/v2/"):
		e.serveMetadata(w, r)
		return
	case r.URL.Path == "/v1/x509" && r.Method == http.MethodPost:
		e.federate(w, r)
		return
	case r.URL.Path == sessionTokensPath && viaWorkloadEndpoint(r):
		e.issueWorkloadSession(w, r)
		return
	case r.URL.Path == domainTokenPath && viaIdentityDomain(r):
		e.issueDomainToken(w, r)
		return
	}
	u, msg := e.authenticate(r)
	if u == nil {
		writeError(w, http.StatusUnauthorized, "NotAuthenticated", msg)
		return
	}
	r = e.signedBy(r, u.principal)
	e.mu.Lock()
	e.jobs.Settle(e.opts.Clock())
	e.mu.Unlock()
	if svc, _ := classify(r); !u.rights[svc] {
		// OCI answers a request its policies do not allow as it answers one
		// for a resource that does not exist.
		writeNotFound(w)
		return
	}
	e.mux.ServeHTTP(w, r)
}

func (e *Emulator) requestID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	return fmt.Sprintf("EMULATOR%08X", e.seq)
}

// handle registers h for pattern; a pattern's missing routes answer OCI's 404.
func (e *Emulator) handle(pattern string, h http.HandlerFunc) { e.mux.HandleFunc(pattern, h) }

// classify names a request's service (the rights of a user are per service)
// and operation, as Calls count them.
func classify(r *http.Request) (service, operation string) {
	p := r.URL.Path
	switch p {
	case sessionTokensPath:
		return "workloadidentity", r.Method + " " + p
	case domainTokenPath:
		if viaIdentityDomain(r) {
			return "identitydomain", r.Method + " " + p
		}
	}
	version, rest, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	resource, rest, _ := strings.Cut(rest, "/")
	id, rest, _ := strings.Cut(rest, "/")
	sub, subID, _ := strings.Cut(rest, "/")
	switch {
	case "/"+version == lbPath:
		service = "loadbalancer"
	case "/"+version == nlbPath:
		service = "networkloadbalancer"
	case resource == "availabilityDomains":
		service = "identity"
	case resource == "instances" || resource == "vnicAttachments":
		service = "compute"
	default:
		service = "network"
	}
	route := "/" + version + "/" + resource
	if id != "" {
		route += "/{id}"
	}
	if sub != "" {
		route += "/" + sub
	}
	if subID != "" {
		route += "/{name}"
	}
	return service, r.Method + " " + route
}

// apiError is OCI's error body.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	core.WriteJSON(w, status, apiError{Code: code, Message: msg})
}

// writeNotFound is OCI's answer for an object that does not exist or that
// the caller may not see: the two are not told apart.
func writeNotFound(w http.ResponseWriter) {
	writeError(w, http.StatusNotFound, "NotAuthorizedOrNotFound", "Authorization failed or requested resource not found.")
}

// codeForStatus is the code OCI gives an injected fault's status.
func codeForStatus(status int) string {
	switch status {
	case 400:
		return "InvalidParameter"
	case 401:
		return "NotAuthenticated"
	case 404:
		return "NotAuthorizedOrNotFound"
	case 409:
		return "IncorrectState"
	case 412:
		return "NoEtagMatch"
	case 429:
		return "TooManyRequests"
	}
	return "InternalServerError"
}

// listPage answers a list: the page of st's objects that keep accepts, after
// the request's page token, as a bare JSON array with opc-next-page when
// more follow. Call without mu held.
func listPage[T interface{ ocid() string }](e *Emulator, w http.ResponseWriter, r *http.Request, st *core.Store[T], keep func(T) bool, view func(T) any) {
	if views, ok := page(e, w, r, st, keep, view); ok {
		core.WriteJSON(w, http.StatusOK, views)
	}
}

// listItems answers a list as listPage does, in the body {"items": [...]}
// (the Network Load Balancer API's collections).
func listItems[T interface{ ocid() string }](e *Emulator, w http.ResponseWriter, r *http.Request, st *core.Store[T], keep func(T) bool, view func(T) any) {
	if views, ok := page(e, w, r, st, keep, view); ok {
		core.WriteJSON(w, http.StatusOK, map[string]any{"items": views})
	}
}

// pager makes a list answer name a next page in opc-next-page
// (core.MangleEndlessPages).
type pager struct{}

func (pager) MorePages(r *http.Request, h http.Header, body []byte) []byte {
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		var coll struct {
			Items []json.RawMessage `json:"items"`
		}
		if json.Unmarshal(body, &coll) != nil {
			return body
		}
		items = coll.Items
	}
	if r.Method == http.MethodGet && len(items) > 0 {
		h.Set("opc-next-page", "more")
	}
	return body
}

// page is a list's page of views, opc-next-page set; false when the
// request was answered with an error.
func page[T interface{ ocid() string }](e *Emulator, w http.ResponseWriter, r *http.Request, st *core.Store[T], keep func(T) bool, view func(T) any) ([]any, bool) {
	q := r.URL.Query()
	limit := defaultLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			writeError(w, http.StatusBadRequest, "InvalidParameter", fmt.Sprintf("limit must be between 1 and %d", maxLimit))
			return nil, false
		}
		limit = n
	}
	token := q.Get("page")
	if core.OnlyFirstPage(r) {
		token = ""
	}
	views, next, err := core.Views(&e.mu, st, token, limit, keep, view, T.ocid)
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "Invalid page token.")
		return nil, false
	}
	if next != "" {
		w.Header().Set("opc-next-page", next)
	}
	return views, true
}

// lookup is the object id of st, or false with 404 NotAuthorizedOrNotFound
// answered. Call with mu held.
func lookup[T any](w http.ResponseWriter, st *core.Store[T], id string) (T, bool) {
	o, ok := st.Get(id)
	if !ok {
		writeNotFound(w)
	}
	return o, ok
}

// getOne answers the object id of st, with its etag if it has one, or 404
// NotAuthorizedOrNotFound.
func getOne[T any](e *Emulator, w http.ResponseWriter, r *http.Request, st *core.Store[T], view func(T) any) {
	v, ok := core.View(&e.mu, st, r.PathValue("id"), func(o T) any {
		if t, tagged := any(o).(interface{ etag() string }); tagged {
			w.Header().Set("etag", t.etag())
		}
		return view(o)
	})
	if !ok {
		writeNotFound(w)
		return
	}
	core.WriteJSON(w, http.StatusOK, v)
}

// filtered is a list route of objects of a compartment (compartmentId, which
// a list must name) filtered as the API filters them: fields gives an
// object's compartment and its value of each filter the API takes
// (displayName, lifecycleState…); a filter the request gives keeps the
// objects of that value. items: the Network Load Balancer API's
// {"items": [...]} body, else a bare array.
type filtered[T interface{ ocid() string }] struct {
	st     *core.Store[T]
	fields func(T) (compartment string, filters map[string]string)
	view   func(T) any
	items  bool
}

func (f filtered[T]) serve(e *Emulator) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		comp, ok := requireCompartment(w, r)
		if !ok {
			return
		}
		q := r.URL.Query()
		keep := func(o T) bool {
			c, fs := f.fields(o)
			if c != comp {
				return false
			}
			for k, v := range fs {
				if want := q.Get(k); want != "" && want != v {
					return false
				}
			}
			return true
		}
		if f.items {
			listItems(e, w, r, f.st, keep, f.view)
		} else {
			listPage(e, w, r, f.st, keep, f.view)
		}
	}
}

// requireCompartment is the compartmentId a list must name.
func requireCompartment(w http.ResponseWriter, r *http.Request) (string, bool) {
	c := r.URL.Query().Get("compartmentId")
	if c == "" {
		writeError(w, http.StatusBadRequest, "MissingParameter", "Missing compartmentId.")
		return "", false
	}
	return c, true
}

// resourceRoutes are the routes every top-level resource of these APIs has
// (load balancers, network load balancers, NSGs): create, list of a
// compartment (filtered), get (with its etag) and delete.
type resourceRoutes[T interface{ ocid() string }] struct {
	path           string
	list           filtered[T]
	create, remove http.HandlerFunc
}

// route registers the resource's routes under its path.
func (rr resourceRoutes[T]) route(e *Emulator) {
	e.handle("POST "+rr.path, rr.create)
	e.handle("GET "+rr.path, rr.list.serve(e))
	e.handle("GET "+rr.path+"/{id}", func(w http.ResponseWriter, r *http.Request) { getOne(e, w, r, rr.list.st, rr.list.view) })
	e.handle("DELETE "+rr.path+"/{id}", rr.remove)
}

// nameAndState are the filters a list of load balancers takes.
func nameAndState(compartment, name, state string) (string, map[string]string) {
	return compartment, map[string]string{"displayName": name, "lifecycleState": state}
}
