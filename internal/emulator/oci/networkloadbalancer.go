package oci

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// The Network Load Balancer API (/20200501), as oci-go-sdk's
// networkloadbalancer package models it (mandatory fields:
// NetworkLoadBalancer, Listener, BackendSet, Backend, HealthChecker,
// WorkRequest, WorkRequestResource) and as facts §5 records the service: a
// create answers the new network load balancer (CREATING) with its etag and
// an opc-work-request-id; lists are {"items": [...]} paged with
// opc-next-page; every change answers an opc-work-request-id at once and
// takes effect when that work request succeeds; while a change runs the
// network load balancer is UPDATING and another change is refused with 409
// (unlike the Load Balancing API, which queues it); a FAILED one still takes
// changes. Work requests: operationType, status, resources and
// percentComplete, under /workRequests. oci-go-sdk reads only the headers of
// a change's answer (202 Accepted here).

// Network load balancer lifecycle states (networkloadbalancer.LifecycleStateEnum):
// the Load Balancing API's words, and UPDATING while a change runs.
const (
	NLBCreating = LBCreating
	NLBUpdating = "UPDATING"
	NLBActive   = LBActive
	NLBDeleting = LBDeleting
	NLBFailed   = LBFailed
)

type nlbIPAddress struct {
	IPAddress  string       `json:"ipAddress"`
	IsPublic   bool         `json:"isPublic"`
	IPVersion  string       `json:"ipVersion"`
	ReservedIP *reservedRef `json:"reservedIp,omitempty"`
}

type nlbListener struct {
	Name                  string `json:"name"`
	DefaultBackendSetName string `json:"defaultBackendSetName"`
	Port                  int    `json:"port"`
	Protocol              string `json:"protocol"`
	IPVersion             string `json:"ipVersion"`
	IsPPv2Enabled         bool   `json:"isPpv2Enabled"`
}

type nlbBackend struct {
	Name      string  `json:"name"`
	IPAddress string  `json:"ipAddress"`
	TargetID  *string `json:"targetId,omitempty"`
	Port      int     `json:"port"`
	Weight    int     `json:"weight"`
	IsDrain   bool    `json:"isDrain"`
	IsBackup  bool    `json:"isBackup"`
	IsOffline bool    `json:"isOffline"`
}

type nlbHealthChecker struct {
	Protocol          string `json:"protocol"`
	Port              int    `json:"port"`
	Retries           int    `json:"retries"`
	TimeoutInMillis   int    `json:"timeoutInMillis"`
	IntervalInMillis  int    `json:"intervalInMillis"`
	URLPath           string `json:"urlPath,omitempty"`
	ReturnCode        int    `json:"returnCode,omitempty"`
	ResponseBodyRegex string `json:"responseBodyRegex,omitempty"`
}

type nlbBackendSet struct {
	Name             string            `json:"name"`
	Policy           string            `json:"policy"`
	IsPreserveSource bool              `json:"isPreserveSource"`
	IsFailOpen       bool              `json:"isFailOpen"`
	IPVersion        string            `json:"ipVersion"`
	Backends         []nlbBackend      `json:"backends"`
	HealthChecker    *nlbHealthChecker `json:"healthChecker"`
}

// nlbConfig is what a create gives a network load balancer and a GET
// shows of it as given.
type nlbConfig struct {
	DisplayName                 string                    `json:"displayName"`
	SubnetID                    string                    `json:"subnetId"`
	IsPrivate                   bool                      `json:"isPrivate"`
	IsPreserveSourceDestination bool                      `json:"isPreserveSourceDestination"`
	IsSymmetricHashEnabled      bool                      `json:"isSymmetricHashEnabled"`
	NLBIPVersion                string                    `json:"nlbIpVersion"`
	NetworkSecurityGroupIDs     []string                  `json:"networkSecurityGroupIds"`
	Listeners                   map[string]*nlbListener   `json:"listeners"`
	BackendSets                 map[string]*nlbBackendSet `json:"backendSets"`
	FreeformTags                map[string]string         `json:"freeformTags"`
	DefinedTags                 map[string]map[string]any `json:"definedTags"`
}

type networkLoadBalancer struct {
	resource
	nlbConfig
	IPAddresses      []nlbIPAddress            `json:"ipAddresses"`
	SystemTags       map[string]map[string]any `json:"systemTags"`
	TimeUpdated      *time.Time                `json:"timeUpdated,omitempty"`
	LifecycleDetails string                    `json:"lifecycleDetails,omitempty"`
	revision         int                       // the etag's
}

type nlbWorkRequest struct {
	// errors are why it failed (ListWorkRequestErrors).
	errors          []nlbWRError
	ID              string     `json:"id"`
	OperationType   string     `json:"operationType"`
	Status          string     `json:"status"`
	CompartmentID   string     `json:"compartmentId"`
	Resources       []wrEntity `json:"resources"`
	PercentComplete float32    `json:"percentComplete"`
	TimeAccepted    time.Time  `json:"timeAccepted"`
	TimeStarted     *time.Time `json:"timeStarted,omitempty"`
	TimeFinished    *time.Time `json:"timeFinished,omitempty"`
	start, end      time.Time  // when it runs
}

// nlbWRError is networkloadbalancer.WorkRequestError.
type nlbWRError struct {
	Code      string    `json:"code"`
	Message   string    `json:"message"`
	Timestamp time.Time `json:"timestamp"`
}

// wrEntity is networkloadbalancer.WorkRequestResource.
type wrEntity struct {
	EntityType string `json:"entityType"`
	ActionType string `json:"actionType"`
	Identifier string `json:"identifier"`
	EntityURI  string `json:"entityUri"`
}

func (w *nlbWorkRequest) ocid() string { return w.ID }

// nlbCreateDetails is CreateNetworkLoadBalancerDetails, the parts checked or
// kept. AssignedPrivateIPv4 and AssignedIPv6 are the addresses it asks to
// take in its subnet (a GET does not show them: its ipAddresses do).
type nlbCreateDetails struct {
	CompartmentID string `json:"compartmentId"`
	nlbConfig
	ReservedIPs         []reservedRef `json:"reservedIps"`
	AssignedPrivateIPv4 string        `json:"assignedPrivateIpv4"`
	AssignedIPv6        string        `json:"assignedIpv6"`
}

// nlbPolicies and the protocols are the API's enums
// (NetworkLoadBalancingPolicyEnum, ListenerProtocolsEnum,
// HealthCheckProtocolsEnum).
var (
	nlbPolicies        = []string{"TWO_TUPLE", "THREE_TUPLE", "FIVE_TUPLE"}
	nlbListenerProtos  = []string{"ANY", "TCP", "UDP", "TCP_AND_UDP", "L3IP"}
	nlbHealthProtocols = []string{"HTTP", "HTTPS", "TCP", "UDP", "DNS"}
)

func (e *Emulator) routeNetworkLoadBalancers() {
	p := nlbPath + "/networkLoadBalancers"
	resourceRoutes[*networkLoadBalancer]{path: p, create: e.createNLB, remove: e.deleteNLB,
		list: filtered[*networkLoadBalancer]{st: e.nlbs, view: viewNLB, items: true, fields: func(n *networkLoadBalancer) (string, map[string]string) {
			return nameAndState(n.CompartmentID, n.DisplayName, n.LifecycleState)
		}}}.route(e)
	routeChildren(e, p, children[*networkLoadBalancer, nlbBackendSet]{
		change: e.nlbChangeNamed, path: "backendSets", op: "BackendSet", noun: "Backend set",
		of:   func(n *networkLoadBalancer) map[string]*nlbBackendSet { return n.BackendSets },
		name: func(bs *nlbBackendSet) *string { return &bs.Name },
		check: func(n *networkLoadBalancer, bs *nlbBackendSet, _ map[string]*nlbBackendSet) error {
			if err := checkNLBBackendSet(bs); err != nil {
				return err
			}
			return checkSetFamily(n.NLBIPVersion, bs)
		},
		inUse: func(n *networkLoadBalancer, name string) error {
			return usedBy(n.Listeners, "Backend set "+name, func(l *nlbListener) (string, bool) { return l.Name, l.DefaultBackendSetName == name })
		},
	})
	routeChildren(e, p, children[*networkLoadBalancer, nlbListener]{
		change: e.nlbChangeNamed, path: "listeners", op: "Listener", noun: "Listener",
		of:   func(n *networkLoadBalancer) map[string]*nlbListener { return n.Listeners },
		name: func(l *nlbListener) *string { return &l.Name },
		check: func(n *networkLoadBalancer, l *nlbListener, others map[string]*nlbListener) error {
			if err := checkNLBListener(n.BackendSets, l, others); err != nil {
				return err
			}
			return checkListenerFamily(n.NLBIPVersion, n.BackendSets, l)
		},
	})
	e.routeNLBUpdate(p)
	routeNSGMembership(e, p, e.nlbChange, "UPDATE_NSGS", func(n *networkLoadBalancer) *[]string { return &n.NetworkSecurityGroupIDs })
	e.handle("GET "+nlbPath+"/workRequests/{id}", func(w http.ResponseWriter, r *http.Request) { getOne(e, w, r, e.nlbWRs, e.viewNLBWR) })
	e.handle("GET "+nlbPath+"/workRequests/{id}/errors", e.nlbWRErrors)
	e.handle("GET "+nlbPath+"/workRequests", filtered[*nlbWorkRequest]{st: e.nlbWRs, view: e.viewNLBWR, items: true,
		fields: func(wr *nlbWorkRequest) (string, map[string]string) { return wr.CompartmentID, nil }}.serve(e))
}

// deleteNLB answers DeleteNetworkLoadBalancer: DELETING at once, gone (its
// reserved address released) when its work request succeeds.
func (e *Emulator) deleteNLB(w http.ResponseWriter, r *http.Request) {
	e.nlbChange(w, r, "DELETE_NETWORK_LOAD_BALANCER", func(n *networkLoadBalancer) (func(), error) {
		return func() {
			e.nlbs.Remove(n.ID)
			e.releaseReserved(n.ID)
			e.holdFor(n.ID, "", nil, nil)
		}, nil
	})
}

func (n *networkLoadBalancer) etag() string { return strconv.Itoa(n.revision) }

// The operation types of the work requests of children
// (networkloadbalancer.OperationTypeEnum).
var nlbOperations = map[string]string{
	"CreateBackendSet": "CREATE_BACKEND_SET", "UpdateBackendSet": "UPDATE_BACKEND_SET", "DeleteBackendSet": "DELETE_BACKEND_SET",
	"CreateListener": "CREATE_LISTENER", "UpdateListener": "UPDATE_LISTENER", "DeleteListener": "DELETE_LISTENER",
}

// nlbChangeNamed is nlbChange for the children's operations, named as the
// Load Balancing API's (routeChildren).
func (e *Emulator) nlbChangeNamed(w http.ResponseWriter, r *http.Request, op string, check func(*networkLoadBalancer) (func(), error)) {
	e.nlbChange(w, r, nlbOperations[op], check)
}

// nlbChange answers a change of the network load balancer {id}: refused
// while it is being created, changed or deleted; else check decides at once
// and the effect applies when the work request succeeds, the network load
// balancer UPDATING (or DELETING) meanwhile.
func (e *Emulator) nlbChange(w http.ResponseWriter, r *http.Request, op string, check func(*networkLoadBalancer) (func(), error)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := lookup(w, e.nlbs, r.PathValue("id"))
	if !ok {
		return
	}
	if n.LifecycleState != NLBActive && n.LifecycleState != NLBFailed {
		writeError(w, http.StatusConflict, "Conflict", fmt.Sprintf("Invalid State Transition of NLB lifeCycle state from %s to %s",
			titleCase(n.LifecycleState), titleCase(NLBUpdating)))
		return
	}
	if m := r.Header.Get("if-match"); m != "" && m != n.etag() {
		writeError(w, http.StatusPreconditionFailed, "NoEtagMatch", "The resource's etag does not match the if-match header.")
		return
	}
	effect, err := check(n)
	if err != nil {
		writeAPIErr(w, err)
		return
	}
	was, next, action := n.LifecycleState, NLBUpdating, "UPDATED"
	if op == "DELETE_NETWORK_LOAD_BALANCER" {
		next, action = NLBDeleting, "DELETED"
	}
	n.LifecycleState = next
	n.revision++
	w.Header().Set("opc-work-request-id", e.startNLBWR(n, op, action, e.opts.Clock(), func() {
		effect()
		if next == NLBUpdating {
			n.LifecycleState = NLBActive
			if was == NLBFailed {
				n.LifecycleState = NLBFailed
			}
			n.revision++
		}
	}))
	w.WriteHeader(http.StatusAccepted)
}

// titleCase is OCI's spelling of a state in its messages (Updating).
func titleCase(s string) string {
	if s == "" {
		return s
	}
	b := []byte(s)
	for i := 1; i < len(b); i++ {
		if b[i] >= 'A' && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// startNLBWR starts a work request of n that applies effect when it
// succeeds, one provisioning time from now. Call with mu held.
func (e *Emulator) startNLBWR(n *networkLoadBalancer, op, action string, now time.Time, effect func()) string {
	return e.runNLBWR(n, op, action, now, func() *nlbWRError { effect(); return nil })
}

// runNLBWR starts a work request of n that runs effect one provisioning
// time from now: SUCCEEDED, or FAILED with the error effect returns. Call
// with mu held.
func (e *Emulator) runNLBWR(n *networkLoadBalancer, op, action string, now time.Time, effect func() *nlbWRError) string {
	wr := &nlbWorkRequest{ID: e.newID("nlbworkrequest"), OperationType: op, Status: wrAccepted, CompartmentID: n.CompartmentID,
		Resources: []wrEntity{{EntityType: "NetworkLoadBalancer", ActionType: "IN_PROGRESS", Identifier: n.ID,
			EntityURI: nlbPath + "/networkLoadBalancers/" + n.ID}},
		TimeAccepted: now, start: now, end: now.Add(e.provisioning.Get())}
	e.nlbWRs.Add(wr.ID, wr)
	e.jobs.Start(wr.ID, now, wr.end.Sub(now), func() (any, error) {
		failed := effect()
		wr.Status, wr.PercentComplete, wr.Resources[0].ActionType = wrSucceeded, 100, action
		if failed != nil {
			failed.Timestamp = wr.end
			wr.Status, wr.errors = wrFailed, append(wr.errors, *failed)
		}
		done := wr.end
		wr.TimeFinished = &done
		return nil, nil
	})
	return wr.ID
}

// nlbWRErrors answers ListWorkRequestErrors (compartmentId required, as
// the SDK has it): why a work request failed, in a
// WorkRequestErrorCollection ({"items": [...]}, one page).
func (e *Emulator) nlbWRErrors(w http.ResponseWriter, r *http.Request) {
	comp, ok := requireCompartment(w, r)
	if !ok {
		return
	}
	e.mu.Lock()
	wr, ok := e.nlbWRs.Get(r.PathValue("id"))
	ok = ok && wr.CompartmentID == comp
	items := []nlbWRError{}
	if ok {
		items = append(items, wr.errors...)
	}
	e.mu.Unlock()
	if !ok {
		writeNotFound(w)
		return
	}
	core.WriteJSON(w, http.StatusOK, map[string]any{"items": items})
}

// createNLB answers CreateNetworkLoadBalancer: checked whole, then a
// CREATING network load balancer with its address, ACTIVE when its work
// request succeeds.
func (e *Emulator) createNLB(w http.ResponseWriter, r *http.Request) {
	serveCreate(e, w, r, e.checkNLBCreate, func(prev retried) bool {
		n, ok := e.nlbs.Get(prev.created)
		if ok {
			w.Header().Set("etag", n.etag())
			w.Header().Set("opc-work-request-id", prev.wr)
			core.WriteJSON(w, http.StatusOK, viewNLB(n))
		}
		return ok
	}, e.newNLB)
}

// newNLB makes the network load balancer a create asks for. Call with mu
// held. One whose assigned address something else holds is made with no
// address, and its work request fails, leaving it FAILED: as OCI leaves it
// (oci-cloud-controller-manager v1.35.0, load_balancer.go
// loadBalancerToStatus: "NLB created with an intent to assign an IP address
// which is already consumed goes into FAILED state"; "An NLB in FAILED state
// without an IP address is FAILED during create operation").
func (e *Emulator) newNLB(c *creation, d *nlbCreateDetails) (core.Reply, error) {
	now := c.now
	n := &networkLoadBalancer{resource: e.newResource("networkloadbalancer", d.CompartmentID, NLBCreating, now),
		nlbConfig: d.nlbConfig, SystemTags: map[string]map[string]any{}, revision: 1}
	n.NLBIPVersion, n.NetworkSecurityGroupIDs = versionOr(d.NLBIPVersion), nonNil(d.NetworkSecurityGroupIDs)
	n.FreeformTags, n.DefinedTags = tagsOrEmpty(n.FreeformTags, n.DefinedTags)
	reserved, err := e.reservedFor(d.ReservedIPs, d.IsPrivate, n.ID, "network load balancer")
	if err != nil {
		return core.Reply{}, err
	}
	taken := e.takenAssigned(d)
	if taken == nil {
		n.IPAddresses = e.nlbFamilyAddresses(n, e.nlbAddresses(n.IsPrivate, reserved, d.AssignedPrivateIPv4), d.AssignedIPv6)
	} else {
		e.releaseReserved(n.ID)
		n.IPAddresses = []nlbIPAddress{}
	}
	e.nlbs.Add(n.ID, n)
	e.principals.made(n.ID, c.by)
	e.holdNLB(n)
	wr := e.runNLBWR(n, "CREATE_NETWORK_LOAD_BALANCER", "CREATED", now, func() *nlbWRError {
		n.LifecycleState = NLBActive
		if taken != nil {
			n.LifecycleState = NLBFailed
		}
		n.revision++
		return taken
	})
	c.remember(wr, n.ID)
	return core.Reply{Status: http.StatusOK, Body: viewNLB(n), Header: map[string]string{"etag": n.etag(), "opc-work-request-id": wr}}, nil
}

// nlbAddresses are a new network load balancer's IPv4 addresses, its own
// from its creation: its reserved public IP (and its assigned private
// address, when it has one), or a new public one and its private address
// (assigned, or the pool's) for a public one, its private address alone for
// a private one. Call with mu held.
func (e *Emulator) nlbAddresses(private bool, reserved []*publicIP, assigned string) []nlbIPAddress {
	var out []nlbIPAddress
	switch {
	case len(reserved) > 0:
		out = append(out, nlbIPAddress{IPAddress: reserved[0].IPAddress, IsPublic: true, IPVersion: "IPV4", ReservedIP: &reservedRef{ID: reserved[0].ID}})
		if assigned == "" {
			return out
		}
	case !private:
		out = append(out, nlbIPAddress{IPAddress: e.lbAddress(false).IPAddress, IsPublic: true, IPVersion: "IPV4"})
	}
	if assigned == "" {
		assigned = e.lbAddress(true).IPAddress
	}
	return append(out, nlbIPAddress{IPAddress: assigned, IPVersion: "IPV4"})
}

// holdNLB makes n's private and IPv6 addresses held in its subnet. Call
// with mu held.
func (e *Emulator) holdNLB(n *networkLoadBalancer) {
	e.holdFor(n.ID, n.CompartmentID, []string{n.SubnetID}, lbHeld(n.IPAddresses, func(a nlbIPAddress) (string, bool) { return a.IPAddress, a.IsPublic }))
}

// checkNLBCreate is what OCI refuses of a create, before anything is made.
// Call with mu held.
func (e *Emulator) checkNLBCreate(d *nlbCreateDetails) error {
	if err := requireNamed(d.CompartmentID, d.DisplayName); err != nil {
		return err
	}
	if d.SubnetID == "" {
		return &apiErr{http.StatusBadRequest, "MissingParameter", "subnetId is required."}
	}
	if err := e.checkSubnets(d.SubnetID); err != nil {
		return err
	}
	if err := e.checkNLBVersion(d.NLBIPVersion, d.SubnetID); err != nil {
		return err
	}
	if err := e.checkNSGs(d.NetworkSecurityGroupIDs); err != nil {
		return err
	}
	if err := e.checkAssigned(d); err != nil {
		return err
	}
	err := checkNamed(&d.BackendSets, func(bs *nlbBackendSet) *string { return &bs.Name },
		func(bs *nlbBackendSet, _ map[string]*nlbBackendSet) error { return checkNLBBackendSet(bs) })
	if err != nil {
		return err
	}
	err = checkNamed(&d.Listeners, func(l *nlbListener) *string { return &l.Name },
		func(l *nlbListener, others map[string]*nlbListener) error {
			return checkNLBListener(d.BackendSets, l, others)
		})
	if err != nil {
		return err
	}
	return checkNLBFamilies(d.NLBIPVersion, d.Listeners, d.BackendSets)
}

func checkNLBBackendSet(bs *nlbBackendSet) error {
	switch {
	case bs.Name == "":
		return invalid("A backend set needs a name.")
	case bs.HealthChecker == nil:
		return invalid("Backend set %s: healthChecker is required.", bs.Name)
	case !slices.Contains(nlbHealthProtocols, bs.HealthChecker.Protocol):
		return invalid("Backend set %s: health checker protocol %q is not one of %v.", bs.Name, bs.HealthChecker.Protocol, nlbHealthProtocols)
	}
	if bs.Policy == "" {
		bs.Policy = "FIVE_TUPLE"
	}
	if !slices.Contains(nlbPolicies, bs.Policy) {
		return invalid("Backend set %s: policy %q is not one of %v.", bs.Name, bs.Policy, nlbPolicies)
	}
	if bs.IPVersion == "" {
		bs.IPVersion = "IPV4"
	}
	hc := bs.HealthChecker
	healthDefaults(&hc.Retries, &hc.TimeoutInMillis, &hc.IntervalInMillis)
	names := backendNames{set: bs.Name}
	for i := range bs.Backends {
		b := &bs.Backends[i]
		if err := names.add(&b.Name, b.IPAddress, b.TargetID, b.Port, &b.Weight); err != nil {
			return err
		}
	}
	if bs.Backends == nil {
		bs.Backends = []nlbBackend{}
	}
	return nil
}

func checkNLBListener(sets map[string]*nlbBackendSet, l *nlbListener, others map[string]*nlbListener) error {
	switch {
	case l.Name == "":
		return invalid("A listener needs a name.")
	case !slices.Contains(nlbListenerProtos, l.Protocol):
		return invalid("Listener %s: protocol %q is not one of %v.", l.Name, l.Protocol, nlbListenerProtos)
	case l.Port < 0 || l.Port > 65535:
		return invalid("Listener %s: port %d is not a port.", l.Name, l.Port)
	case sets[l.DefaultBackendSetName] == nil:
		return invalid("Listener %s: backend set %q does not exist.", l.Name, l.DefaultBackendSetName)
	}
	if l.IPVersion == "" {
		l.IPVersion = "IPV4"
	}
	for _, o := range others {
		// One port serves a listener of each IP version (TCP-80, TCP-80-IPv6).
		if o.Port == l.Port && overlap(o.Protocol, l.Protocol) && versionOr(o.IPVersion) == l.IPVersion {
			return invalid("Listener %s: port %d/%s is taken by listener %s.", l.Name, l.Port, l.Protocol, o.Name)
		}
	}
	return nil
}

// overlap says whether two listeners' protocols share a transport.
func overlap(a, b string) bool {
	has := func(p, t string) bool { return p == t || p == "TCP_AND_UDP" || p == "ANY" }
	return (has(a, "TCP") && has(b, "TCP")) || (has(a, "UDP") && has(b, "UDP"))
}

// viewNLB is a copy of a network load balancer to encode outside the lock.
func viewNLB(n *networkLoadBalancer) any {
	c := *n
	c.Listeners = cloneValues(n.Listeners, nil)
	c.BackendSets = cloneValues(n.BackendSets, func(bs *nlbBackendSet) {
		bs.Backends = slices.Clone(bs.Backends)
		if bs.HealthChecker != nil {
			hc := *bs.HealthChecker
			bs.HealthChecker = &hc
		}
	})
	c.IPAddresses = slices.Clone(n.IPAddresses)
	return &c
}

// viewNLBWR is a work request as it stands at the emulator's time.
func (e *Emulator) viewNLBWR(wr *nlbWorkRequest) any {
	c := *wr
	c.Resources = slices.Clone(wr.Resources)
	if c.Status == wrAccepted && e.opts.Clock().After(c.start) {
		c.Status = wrInProgress
		started := c.start
		c.TimeStarted = &started
		if total := c.end.Sub(c.start); total > 0 {
			c.PercentComplete = float32(100 * e.opts.Clock().Sub(c.start) / total)
		}
	}
	return &c
}
