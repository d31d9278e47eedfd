package oci

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// The Load Balancing API (/20170115), as oci-go-sdk's loadbalancer package
// models it (mandatory fields: loadbalancer.LoadBalancer, Listener,
// BackendSet, Backend, HealthChecker, WorkRequest) and as the API reference
// describes it (https://docs.oracle.com/en-us/iaas/api/#/en/loadbalancer/20170115/):
// every change answers at once with an opc-work-request-id and takes effect
// when its work request succeeds; a load balancer's work requests run one
// after the other (ACCEPTED, IN_PROGRESS, SUCCEEDED or FAILED); the create
// answers no body, the new load balancer's OCID is the work request's
// loadBalancerId (facts §5); opc-retry-token makes a create idempotent for
// 24 hours (the same token with another body: 409 InvalidatedRetryToken).

type shapeDetails struct {
	MinimumBandwidthInMbps int `json:"minimumBandwidthInMbps"`
	MaximumBandwidthInMbps int `json:"maximumBandwidthInMbps"`
}

type lbIPAddress struct {
	IPAddress  string       `json:"ipAddress"`
	IsPublic   bool         `json:"isPublic"`
	ReservedIP *reservedRef `json:"reservedIp,omitempty"`
}

type connectionConfiguration struct {
	IdleTimeout                    int64 `json:"idleTimeout"`
	BackendTCPProxyProtocolVersion *int  `json:"backendTcpProxyProtocolVersion,omitempty"`
}

type listener struct {
	Name                    string                   `json:"name"`
	DefaultBackendSetName   string                   `json:"defaultBackendSetName"`
	Port                    int                      `json:"port"`
	Protocol                string                   `json:"protocol"`
	HostnameNames           []string                 `json:"hostnameNames"`
	PathRouteSetName        *string                  `json:"pathRouteSetName,omitempty"`
	SSLConfiguration        *sslConfiguration        `json:"sslConfiguration,omitempty"`
	ConnectionConfiguration *connectionConfiguration `json:"connectionConfiguration,omitempty"`
	RuleSetNames            []string                 `json:"ruleSetNames"`
}

type backend struct {
	Name      string `json:"name"`
	IPAddress string `json:"ipAddress"`
	Port      int    `json:"port"`
	Weight    int    `json:"weight"`
	Drain     bool   `json:"drain"`
	Backup    bool   `json:"backup"`
	Offline   bool   `json:"offline"`
}

type healthChecker struct {
	Protocol          string `json:"protocol"`
	URLPath           string `json:"urlPath,omitempty"`
	Port              int    `json:"port"`
	ReturnCode        int    `json:"returnCode"`
	Retries           int    `json:"retries"`
	TimeoutInMillis   int    `json:"timeoutInMillis"`
	IntervalInMillis  int    `json:"intervalInMillis"`
	ResponseBodyRegex string `json:"responseBodyRegex,omitempty"`
	IsForcePlainText  bool   `json:"isForcePlainText"`
}

type backendSet struct {
	Name                            string            `json:"name"`
	Policy                          string            `json:"policy"`
	Backends                        []backend         `json:"backends"`
	HealthChecker                   *healthChecker    `json:"healthChecker"`
	SSLConfiguration                *sslConfiguration `json:"sslConfiguration,omitempty"`
	SessionPersistenceConfiguration json.RawMessage   `json:"sessionPersistenceConfiguration,omitempty"`
}

// Load balancer lifecycle states (loadbalancer.LoadBalancerLifecycleStateEnum).
const (
	LBCreating = "CREATING"
	LBFailed   = "FAILED"
	LBActive   = "ACTIVE"
	LBDeleting = "DELETING"
)

type loadBalancer struct {
	resource
	DisplayName             string                    `json:"displayName"`
	ShapeName               string                    `json:"shapeName"`
	ShapeDetails            *shapeDetails             `json:"shapeDetails,omitempty"`
	IPAddresses             []lbIPAddress             `json:"ipAddresses"`
	IsPrivate               bool                      `json:"isPrivate"`
	IPMode                  string                    `json:"ipMode"`
	SubnetIDs               []string                  `json:"subnetIds"`
	NetworkSecurityGroupIDs []string                  `json:"networkSecurityGroupIds"`
	Listeners               map[string]*listener      `json:"listeners"`
	BackendSets             map[string]*backendSet    `json:"backendSets"`
	Certificates            map[string]*certificate   `json:"certificates"`
	RuleSets                map[string]*ruleSet       `json:"ruleSets"`
	FreeformTags            map[string]string         `json:"freeformTags"`
	DefinedTags             map[string]map[string]any `json:"definedTags"`
	SystemTags              map[string]map[string]any `json:"systemTags"`
}

type workRequest struct {
	ID             string     `json:"id"`
	LoadBalancerID string     `json:"loadBalancerId"`
	Type           string     `json:"type"`
	LifecycleState string     `json:"lifecycleState"`
	Message        string     `json:"message"`
	TimeAccepted   time.Time  `json:"timeAccepted"`
	TimeFinished   *time.Time `json:"timeFinished,omitempty"`
	ErrorDetails   []any      `json:"errorDetails"`
	CompartmentID  string     `json:"compartmentId"`
	// start and end are when it runs: queued behind the load balancer's
	// earlier work requests.
	start, end time.Time
}

func (w *workRequest) ocid() string { return w.ID }

// Work request states (loadbalancer.WorkRequestLifecycleStateEnum).
const (
	wrAccepted   = "ACCEPTED"
	wrInProgress = "IN_PROGRESS"
	wrFailed     = "FAILED"
	wrSucceeded  = "SUCCEEDED"
)

// creation is a create request being answered: its time, and its
// opc-retry-token with a digest of its body.
type creation struct {
	e        *Emulator
	now      time.Time
	by       string // the principal asking (principals.go)
	token    string
	sum      [32]byte
	answered bool // replay answered it (409 InvalidatedRetryToken)
}

// startCreate reads a create's body into d (400 CannotParseRequest if it
// cannot), then takes mu: the caller unlocks it when ok.
func (e *Emulator) startCreate(w http.ResponseWriter, r *http.Request, d any) (*creation, bool) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "CannotParseRequest", err.Error())
		return nil, false
	}
	if err := json.Unmarshal(raw, d); err != nil {
		writeError(w, http.StatusBadRequest, "CannotParseRequest", "The request body is not valid JSON: "+err.Error())
		return nil, false
	}
	e.mu.Lock()
	return &creation{e: e, now: e.opts.Clock(), by: principalOf(r), token: r.Header.Get("opc-retry-token"), sum: sha256.Sum256(raw)}, true
}

// replay is what the same opc-retry-token answered first, for the same
// body, within 24 hours: the create is answered again as then. Another body:
// 409 InvalidatedRetryToken (answered set).
func (c *creation) replay(w http.ResponseWriter) (retried, bool) {
	prev, ok := c.e.retryTokens[c.token]
	if c.token == "" || !ok || !c.now.Before(prev.expiresAt) {
		return retried{}, false
	}
	if prev.body != c.sum {
		writeError(w, http.StatusConflict, "InvalidatedRetryToken", "The retry token was used for a request with another body.")
		c.answered = true
		return retried{}, false
	}
	return prev, true
}

// remember keeps what the create answered for its retry token.
func (c *creation) remember(wr, created string) {
	if c.token != "" {
		c.e.retryTokens[c.token] = retried{body: c.sum, wr: wr, created: created, expiresAt: c.now.Add(24 * time.Hour)}
	}
}

// serveCreate answers a create of the body D: read (startCreate), then
// under mu answered again as first when its opc-retry-token was seen with
// the same body (replayed: false when what it made is gone, and it is made
// anew), else checked whole by check before create makes anything.
func serveCreate[D any](e *Emulator, w http.ResponseWriter, r *http.Request, check func(*D) error, replayed func(retried) bool, create func(*creation, *D) (core.Reply, error)) {
	var d D
	c, ok := e.startCreate(w, r, &d)
	if !ok {
		return
	}
	defer e.mu.Unlock()
	prev, replay := c.replay(w)
	if replay && replayed(prev) || c.answered {
		return
	}
	if err := check(&d); err != nil {
		writeAPIErr(w, err)
		return
	}
	rep, err := create(c, &d)
	if err != nil {
		writeAPIErr(w, err)
		return
	}
	rep.Write(w)
}

// retried is what an opc-retry-token answered first.
type retried struct {
	body      [32]byte
	wr        string
	created   string // what the create made, when its answer names it (NLB)
	expiresAt time.Time
}

// createDetails is CreateLoadBalancerDetails, the parts checked or kept.
type createDetails struct {
	CompartmentID           string                        `json:"compartmentId"`
	DisplayName             string                        `json:"displayName"`
	ShapeName               string                        `json:"shapeName"`
	ShapeDetails            *shapeDetails                 `json:"shapeDetails"`
	SubnetIDs               []string                      `json:"subnetIds"`
	IsPrivate               bool                          `json:"isPrivate"`
	IPMode                  string                        `json:"ipMode"`
	Listeners               map[string]*listener          `json:"listeners"`
	BackendSets             map[string]*backendSet        `json:"backendSets"`
	NetworkSecurityGroupIDs []string                      `json:"networkSecurityGroupIds"`
	Certificates            map[string]certificateDetails `json:"certificates"`
	RuleSets                map[string]*ruleSet           `json:"ruleSets"`
	FreeformTags            map[string]string             `json:"freeformTags"`
	DefinedTags             map[string]map[string]any     `json:"definedTags"`
	// certs are Certificates checked (checkCreate).
	certs       map[string]*certificate
	ReservedIPs []reservedRef `json:"reservedIps"`
}

// fixedShapes are the retired fixed shapes OCI still accepts.
var fixedShapes = []string{"10Mbps", "100Mbps", "400Mbps", "8000Mbps", "10Mbps-Micro"}

// lbPolicies are the load balancing policies (ListPolicies).
var lbPolicies = []string{"ROUND_ROBIN", "LEAST_CONNECTIONS", "IP_HASH"}

func (e *Emulator) routeLoadBalancers() {
	p := lbPath + "/loadBalancers"
	resourceRoutes[*loadBalancer]{path: p, create: e.createLoadBalancer, remove: e.deleteLoadBalancer,
		list: filtered[*loadBalancer]{st: e.lbs, view: viewLB, fields: func(lb *loadBalancer) (string, map[string]string) {
			return nameAndState(lb.CompartmentID, lb.DisplayName, lb.LifecycleState)
		}}}.route(e)
	routeChildren(e, p, children[*loadBalancer, backendSet]{
		change: e.change, path: "backendSets", op: "BackendSet", noun: "Backend set",
		of:   func(lb *loadBalancer) map[string]*backendSet { return lb.BackendSets },
		name: func(bs *backendSet) *string { return &bs.Name },
		check: func(lb *loadBalancer, bs *backendSet, _ map[string]*backendSet) error {
			return checkBackendSet(bs, lb.Certificates)
		},
		inUse: func(lb *loadBalancer, name string) error {
			return usedBy(lb.Listeners, "Backend set "+name, func(l *listener) (string, bool) { return l.Name, l.DefaultBackendSetName == name })
		},
	})
	e.routeCertificates(p)
	routeNSGMembership(e, p, e.change, "UpdateNetworkSecurityGroups", func(lb *loadBalancer) *[]string { return &lb.NetworkSecurityGroupIDs })
	e.routeRuleSets(p)
	routeChildren(e, p, children[*loadBalancer, listener]{
		change: e.change, path: "listeners", op: "Listener", noun: "Listener",
		of:   func(lb *loadBalancer) map[string]*listener { return lb.Listeners },
		name: func(l *listener) *string { return &l.Name },
		check: func(lb *loadBalancer, l *listener, others map[string]*listener) error {
			if err := checkRuleSetNames(l, lb.RuleSets); err != nil {
				return err
			}
			return checkListener(lb.BackendSets, l, others, lb.Certificates)
		},
	})
	e.handle("GET "+p+"/{id}/workRequests", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		e.mu.Lock()
		_, ok := e.lbs.Get(id)
		e.mu.Unlock()
		if !ok {
			writeNotFound(w)
			return
		}
		listPage(e, w, r, e.wrs, func(wr *workRequest) bool { return wr.LoadBalancerID == id }, e.viewWR)
	})
	e.handle("GET "+lbPath+"/loadBalancerWorkRequests/{id}", func(w http.ResponseWriter, r *http.Request) { getOne(e, w, r, e.wrs, e.viewWR) })
}

// deleteLoadBalancer answers DeleteLoadBalancer: DELETING at once, gone
// (its reserved address released) when its work request succeeds.
func (e *Emulator) deleteLoadBalancer(w http.ResponseWriter, r *http.Request) {
	e.change(w, r, "DeleteLoadBalancer", func(lb *loadBalancer) (func(), error) {
		lb.LifecycleState = LBDeleting
		return func() {
			e.lbs.Remove(lb.ID)
			e.releaseReserved(lb.ID)
			e.holdFor(lb.ID, "", nil, nil)
		}, nil
	})
}

// children is a kind of child of a load balancer P (backend sets,
// listeners), keyed by name: OCI creates (409 on a taken name), updates
// (the name from the path) and deletes each with one work request.
type children[P, T any] struct {
	// change answers a change of the load balancer {id} (the API's own).
	change         func(w http.ResponseWriter, r *http.Request, op string, check func(P) (func(), error))
	path, op, noun string // "backendSets", "BackendSet" (CreateBackendSet…), "Backend set"
	of             func(P) map[string]*T
	name           func(*T) *string
	// check refuses a child (400) given the load balancer's others.
	check func(lb P, c *T, others map[string]*T) error
	// inUse refuses the deletion of a child others need; nil: none do.
	inUse func(lb P, name string) error
}

func routeChildren[P, T any](e *Emulator, p string, k children[P, T]) {
	put := func(w http.ResponseWriter, r *http.Request, create bool) {
		c := new(T)
		if !decodeBody(w, r, c) {
			return
		}
		op := "Update" + k.op
		if create {
			op = "Create" + k.op
		} else {
			*k.name(c) = r.PathValue("name")
		}
		name := *k.name(c)
		k.change(w, r, op, func(lb P) (func(), error) {
			m := k.of(lb)
			switch _, ok := m[name]; {
			case create && ok:
				return nil, conflict("%s %s already exists.", k.noun, name)
			case !create && !ok:
				return nil, notFound("%s %s not found.", k.noun, name)
			}
			if err := k.check(lb, c, without(m, name)); err != nil {
				return nil, err
			}
			return func() { k.of(lb)[name] = c }, nil
		})
	}
	e.handle("POST "+p+"/{id}/"+k.path, func(w http.ResponseWriter, r *http.Request) { put(w, r, true) })
	e.handle("PUT "+p+"/{id}/"+k.path+"/{name}", func(w http.ResponseWriter, r *http.Request) { put(w, r, false) })
	e.handle("DELETE "+p+"/{id}/"+k.path+"/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		k.change(w, r, "Delete"+k.op, func(lb P) (func(), error) {
			if k.of(lb)[name] == nil {
				return nil, notFound("%s %s not found.", k.noun, name)
			}
			if k.inUse != nil {
				if err := k.inUse(lb, name); err != nil {
					return nil, err
				}
			}
			return func() { delete(k.of(lb), name) }, nil
		})
	})
}

// without is m without key.
func without[T any](m map[string]T, key string) map[string]T {
	out := make(map[string]T, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// apiErr is an OCI error a check returns.
type apiErr struct {
	status int
	code   string
	msg    string
}

func (a *apiErr) Error() string { return a.msg }

func invalid(format string, args ...any) error {
	return &apiErr{http.StatusBadRequest, "InvalidParameter", fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &apiErr{http.StatusConflict, "Conflict", fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &apiErr{http.StatusNotFound, "NotAuthorizedOrNotFound", fmt.Sprintf(format, args...)}
}

func writeAPIErr(w http.ResponseWriter, err error) {
	if a, ok := errors.AsType[*apiErr](err); ok {
		writeError(w, a.status, a.code, a.msg)
		return
	}
	writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
}

// decodeBody reads a JSON body into v, or answers 400 CannotParseRequest.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := readBody(r, v); err != nil {
		writeAPIErr(w, err)
		return false
	}
	return true
}

func checkBackendSet(bs *backendSet, certs map[string]*certificate) error {
	if err := checkSSL(bs.SSLConfiguration, certs, "Backend set "+bs.Name); err != nil {
		return err
	}
	switch {
	case bs.Name == "":
		return invalid("A backend set needs a name.")
	case !slices.Contains(lbPolicies, bs.Policy):
		return invalid("Policy %q is not one of %v.", bs.Policy, lbPolicies)
	case bs.HealthChecker == nil || (bs.HealthChecker.Protocol != "HTTP" && bs.HealthChecker.Protocol != "TCP"):
		return invalid("Backend set %s: healthChecker.protocol must be HTTP or TCP.", bs.Name)
	}
	hc := bs.HealthChecker
	healthDefaults(&hc.Retries, &hc.TimeoutInMillis, &hc.IntervalInMillis)
	if hc.ReturnCode == 0 && hc.Protocol == "HTTP" {
		hc.ReturnCode = 200
	}
	names := backendNames{set: bs.Name}
	for i := range bs.Backends {
		b := &bs.Backends[i]
		if _, err := netip.ParseAddr(b.IPAddress); err != nil {
			return invalid("Backend %s:%d is not an address and a port.", b.IPAddress, b.Port)
		}
		if err := names.add(&b.Name, b.IPAddress, nil, b.Port, &b.Weight); err != nil {
			return err
		}
	}
	if bs.Backends == nil {
		bs.Backends = []backend{}
	}
	return nil
}

// healthDefaults fills a health checker's unset timings with the API's
// defaults, echoed as given (the SDK's HealthCheckerDetails docs, LB and NLB).
func healthDefaults(retries, timeoutMillis, intervalMillis *int) {
	for _, f := range []struct {
		v   *int
		def int
	}{{retries, 3}, {timeoutMillis, 3000}, {intervalMillis, 10000}} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
}

// backendNames names a backend set's backends as the API does: by address
// (or, on an NLB, target) and port (BackendDetails), each once.
type backendNames struct {
	set  string
	seen map[string]bool
}

// add checks one backend, sets its name, and its weight to 1 when unset.
func (n *backendNames) add(name *string, ip string, target *string, port int, weight *int) error {
	addr, err := netip.ParseAddr(ip)
	switch {
	case err != nil && target == nil:
		return invalid("Backend set %s: a backend needs an ipAddress or a targetId.", n.set)
	case port < 1 || port > 65535:
		return invalid("Backend set %s: backend port %d is not a port.", n.set, port)
	case err == nil:
		*name = netip.AddrPortFrom(addr, uint16(port)).String()
	default:
		*name = fmt.Sprintf("%s:%d", *target, port)
	}
	if n.seen[*name] {
		return invalid("Backend %s is given twice.", *name)
	}
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	n.seen[*name] = true
	if *weight == 0 {
		*weight = 1
	}
	return nil
}

// usedBy refuses to delete what (a backend set, a rule set) while a
// listener uses it: uses names a listener and says whether it does.
func usedBy[L any](listeners map[string]*L, what string, uses func(*L) (listener string, using bool)) error {
	for _, l := range listeners {
		if name, using := uses(l); using {
			return invalid("%s is used by listener %s.", what, name)
		}
	}
	return nil
}

// cloneValues copies a map of pointers and what they point at, so a view
// is encoded outside the lock; deep, when given, copies what a value
// still shares.
func cloneValues[T any](m map[string]*T, deep func(*T)) map[string]*T {
	c := make(map[string]*T, len(m))
	for k, v := range m {
		cv := *v
		if deep != nil {
			deep(&cv)
		}
		c[k] = &cv
	}
	return c
}

func checkListener(sets map[string]*backendSet, l *listener, others map[string]*listener, certs map[string]*certificate) error {
	if err := checkSSL(l.SSLConfiguration, certs, "Listener "+l.Name); err != nil {
		return err
	}
	switch {
	case l.Name == "":
		return invalid("A listener needs a name.")
	case l.Protocol != "TCP" && l.Protocol != "HTTP" && l.Protocol != "HTTP2" && l.Protocol != "GRPC":
		return invalid("Listener %s: protocol %q is not TCP, HTTP, HTTP2 or GRPC.", l.Name, l.Protocol)
	case l.Port < 1 || l.Port > 65535:
		return invalid("Listener %s: port %d is not a port.", l.Name, l.Port)
	case sets[l.DefaultBackendSetName] == nil:
		return invalid("Listener %s: backend set %q does not exist.", l.Name, l.DefaultBackendSetName)
	}
	for _, o := range others {
		if o.Port == l.Port {
			return invalid("Listener %s: port %d is taken by listener %s.", l.Name, l.Port, o.Name)
		}
	}
	if l.ConnectionConfiguration == nil {
		idle := int64(300)
		if l.Protocol == "HTTP" {
			idle = 60
		}
		l.ConnectionConfiguration = &connectionConfiguration{IdleTimeout: idle}
	}
	if l.HostnameNames == nil {
		l.HostnameNames = []string{}
	}
	if l.RuleSetNames == nil {
		l.RuleSetNames = []string{}
	}
	return nil
}

// createLoadBalancer answers CreateLoadBalancer: checked whole, then a
// CREATING load balancer whose work request makes it ACTIVE with its
// addresses.
func (e *Emulator) createLoadBalancer(w http.ResponseWriter, r *http.Request) {
	serveCreate(e, w, r, e.checkCreate, func(prev retried) bool {
		w.Header().Set("opc-work-request-id", prev.wr)
		w.WriteHeader(http.StatusOK)
		return true
	}, e.newLoadBalancer)
}

// newLoadBalancer makes the load balancer a create asks for. Call with mu
// held.
func (e *Emulator) newLoadBalancer(c *creation, d *createDetails) (core.Reply, error) {
	now := c.now
	lb := &loadBalancer{resource: e.newResource("loadbalancer", d.CompartmentID, LBCreating, now),
		DisplayName: d.DisplayName, ShapeName: d.ShapeName, ShapeDetails: d.ShapeDetails, IsPrivate: d.IsPrivate, IPMode: d.IPMode,
		IPAddresses: []lbIPAddress{}, SubnetIDs: d.SubnetIDs, NetworkSecurityGroupIDs: nonNil(d.NetworkSecurityGroupIDs),
		Listeners: d.Listeners, BackendSets: d.BackendSets, Certificates: d.certs, RuleSets: d.RuleSets,
		FreeformTags: d.FreeformTags, DefinedTags: d.DefinedTags, SystemTags: map[string]map[string]any{}}
	if lb.RuleSets == nil {
		lb.RuleSets = map[string]*ruleSet{}
	}
	lb.FreeformTags, lb.DefinedTags = tagsOrEmpty(lb.FreeformTags, lb.DefinedTags)
	reserved, err := e.reservedFor(d.ReservedIPs, d.IsPrivate, lb.ID, "load balancer")
	if err != nil {
		return core.Reply{}, err
	}
	e.lbs.Add(lb.ID, lb)
	e.principals.made(lb.ID, c.by)
	wr := e.startWR(lb, "CreateLoadBalancer", now, func() {
		lb.LifecycleState = LBActive
		if len(reserved) > 0 {
			lb.IPAddresses = []lbIPAddress{{IPAddress: reserved[0].IPAddress, IsPublic: true, ReservedIP: &reservedRef{ID: reserved[0].ID}}}
		} else {
			lb.IPAddresses = []lbIPAddress{e.lbAddress(lb.IsPrivate)}
		}
		e.lbIPv6(lb)
		e.holdFor(lb.ID, lb.CompartmentID, lb.SubnetIDs, lbHeld(lb.IPAddresses, func(a lbIPAddress) (string, bool) { return a.IPAddress, a.IsPublic }))
	})
	c.remember(wr, "")
	return core.Reply{Status: http.StatusOK, Header: map[string]string{"opc-work-request-id": wr}}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// checkCreate is what OCI refuses of a create, before anything is made.
// Call with mu held.
func (e *Emulator) checkCreate(d *createDetails) error {
	if err := requireNamed(d.CompartmentID, d.DisplayName); err != nil {
		return err
	}
	if len(d.SubnetIDs) == 0 || len(d.SubnetIDs) > 2 {
		return invalid("subnetIds must name one regional subnet or two availability-domain subnets.")
	}
	if err := e.checkSubnets(d.SubnetIDs...); err != nil {
		return err
	}
	if err := e.checkIPMode(d); err != nil {
		return err
	}
	if err := e.checkNSGs(d.NetworkSecurityGroupIDs); err != nil {
		return err
	}
	switch {
	case d.ShapeName == "flexible":
		s := d.ShapeDetails
		if s == nil || s.MinimumBandwidthInMbps < 10 || s.MaximumBandwidthInMbps > 8192 || s.MinimumBandwidthInMbps > s.MaximumBandwidthInMbps {
			return invalid("The flexible shape needs shapeDetails with 10 <= minimumBandwidthInMbps <= maximumBandwidthInMbps <= 8192.")
		}
	case slices.Contains(fixedShapes, d.ShapeName):
		if d.ShapeDetails != nil {
			return invalid("shapeDetails are for the flexible shape only.")
		}
	default:
		return invalid("Shape %q does not exist.", d.ShapeName)
	}
	for name, rs := range d.RuleSets {
		if rs == nil {
			return invalid("Rule set %s has no items.", name)
		}
		rs.Name = name
		if err := checkRuleSet(rs); err != nil {
			return err
		}
	}
	d.certs = map[string]*certificate{}
	for name, cd := range d.Certificates {
		cd.CertificateName = name
		c, err := cd.asCertificate()
		if err != nil {
			return err
		}
		d.certs[name] = c
	}
	err := checkNamed(&d.BackendSets, func(bs *backendSet) *string { return &bs.Name },
		func(bs *backendSet, _ map[string]*backendSet) error { return checkBackendSet(bs, d.certs) })
	if err != nil {
		return err
	}
	return checkNamed(&d.Listeners, func(l *listener) *string { return &l.Name },
		func(l *listener, others map[string]*listener) error {
			if err := checkRuleSetNames(l, d.RuleSets); err != nil {
				return err
			}
			return checkListener(d.BackendSets, l, others, d.certs)
		})
}

// lbAddress is a new load balancer's address: public, or of the node
// subnet. Call with mu held.
func (e *Emulator) lbAddress(private bool) lbIPAddress {
	if private {
		return lbIPAddress{IPAddress: e.free(&e.machineNext).String()}
	}
	a := e.publicNext
	e.publicNext = a.Next()
	return lbIPAddress{IPAddress: a.String(), IsPublic: true}
}

// change answers a change of the load balancer {id}: check decides at once
// (an error is the answer) and returns the effect, applied when the change's
// work request succeeds.
func (e *Emulator) change(w http.ResponseWriter, r *http.Request, kind string, check func(*loadBalancer) (func(), error)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, ok := lookup(w, e.lbs, r.PathValue("id"))
	if !ok {
		return
	}
	if lb.LifecycleState == LBDeleting {
		writeError(w, http.StatusConflict, "IncorrectState", fmt.Sprintf("Load balancer %s is being deleted.", lb.ID))
		return
	}
	effect, err := check(lb)
	if err != nil {
		writeAPIErr(w, err)
		return
	}
	w.Header().Set("opc-work-request-id", e.startWR(lb, kind, e.opts.Clock(), effect))
	w.WriteHeader(http.StatusOK)
}

// startWR queues a work request of lb that applies effect when it succeeds,
// after the load balancer's earlier ones, and returns its OCID. Call with mu
// held.
func (e *Emulator) startWR(lb *loadBalancer, kind string, now time.Time, effect func()) string {
	start := now
	for _, wr := range e.wrs.All() {
		if wr.LoadBalancerID == lb.ID && wr.end.After(start) {
			start = wr.end
		}
	}
	wr := &workRequest{ID: e.newID("loadbalancerworkrequest"), LoadBalancerID: lb.ID, Type: kind, LifecycleState: wrAccepted,
		Message: "{}", TimeAccepted: now, ErrorDetails: []any{}, CompartmentID: lb.CompartmentID,
		start: start, end: start.Add(e.provisioning.Get())}
	e.wrs.Add(wr.ID, wr)
	e.jobs.Start(wr.ID, now, wr.end.Sub(now), func() (any, error) {
		// Jobs run from settle, with mu held.
		effect()
		wr.LifecycleState = wrSucceeded
		done := wr.end
		wr.TimeFinished = &done
		return nil, nil
	})
	return wr.ID
}

// viewLB is a copy of a load balancer to encode outside the lock.
func viewLB(lb *loadBalancer) any {
	c := *lb
	c.Listeners = cloneValues(lb.Listeners, nil)
	c.BackendSets = cloneValues(lb.BackendSets, func(bs *backendSet) { bs.Backends = slices.Clone(bs.Backends) })
	c.IPAddresses = slices.Clone(lb.IPAddresses)
	c.Certificates = maps.Clone(lb.Certificates)
	c.RuleSets = maps.Clone(lb.RuleSets)
	return &c
}

// viewWR is a work request as it stands at the emulator's time.
func (e *Emulator) viewWR(wr *workRequest) any {
	c := *wr
	if c.LifecycleState == wrAccepted && !e.opts.Clock().Before(c.start) {
		c.LifecycleState = wrInProgress
	}
	return &c
}

// SetLoadBalancerState moves a load balancer or a network load balancer to
// a lifecycle state (FAILED, as OCI leaves one it could not build or
// repair).
func (e *Emulator) SetLoadBalancerState(id, state string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if lb, ok := e.lbs.Get(id); ok {
		lb.LifecycleState = state
		return nil
	}
	if n, ok := e.nlbs.Get(id); ok {
		n.LifecycleState = state
		return nil
	}
	return fmt.Errorf("no load balancer %s", id)
}
