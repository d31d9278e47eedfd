package oci

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// OCI's steps of the load-balancer cycle (internal/lbcycle). A Service's load
// balancer is found by its displayName, the peer's (so the peer's load
// balancers are adopted as they are). It is created whole in one call; each
// later step makes one change (a backend set, a listener), which OCI answers
// with a work request: the Service is looked at again when the work requests
// of its kind usually finish, and no worker waits for one.

const (
	pendingRetry = time.Second
	// createPoll is how old the shared listing may be that tells a load
	// balancer being created is done.
	createPoll        = 500 * time.Millisecond
	fullCheckInterval = time.Hour
	listingMaxAge     = 60 * time.Second
	listingMinMiss    = 10 * time.Second
)

type ociLB = lbcycle.LB[LB]

type steps struct{ *Cloud }

var (
	_ lbcycle.Cloud[lbSpec, LB] = steps{}
	_ lbcycle.Relister          = steps{}
	_ lbcycle.Pacer             = steps{}
	_ lbcycle.DriftChecker[LB]  = steps{}
)

// Drift finds a renewed TLS Secret: a certificate its SSL listeners or
// backend sets present that is no longer the Secret's (cert-manager renews
// them in place). One read of each TLS Secret per drift period; a Service
// without SSL costs nothing.
func (s steps) Drift(ctx context.Context, svc *v1.Service, _ lbcycle.Record, lb ociLB) (string, error) {
	spec, err := s.parseSpec(svc)
	if err != nil || len(spec.tls) == 0 {
		return "", nil //nolint:nilerr // an invalid Service is the sync's to report
	}
	if err := s.readCerts(ctx, &spec); err != nil {
		return "", nil //nolint:nilerr // as above: the sync reports it
	}
	inUse := map[string]bool{}
	for _, l := range lb.Obj.Listeners {
		if l.SSLConfiguration != nil {
			inUse[l.SSLConfiguration.CertificateName] = true
		}
	}
	for _, bs := range lb.Obj.BackendSets {
		if bs.SSLConfiguration != nil {
			inUse[bs.SSLConfiguration.CertificateName] = true
		}
	}
	for secret, c := range spec.certs {
		name := certNames(lb.Obj, spec)[secret]
		if got, ok := lb.Obj.Certificates[name]; !ok || !sameCertificate(got, c) || !inUse[name] {
			return fmt.Sprintf("the TLS Secret %s was renewed", spec.tls[secret]), nil
		}
	}
	return "", nil
}

func newCycle(c *Cloud) *lbcycle.Cycle[lbSpec, LB] {
	return lbcycle.New[lbSpec, LB](steps{c}, c.records, lbcycle.Options{Retry: pendingRetry, FullCheck: fullCheckInterval})
}

// workRequests are the work requests this process started, by Service, and
// how long OCI takes to finish them.
type workRequests struct {
	mu      sync.Mutex
	pending map[types.UID]pendingWR
	took    time.Duration // a moving average of how long one took
}

// whatCreate is the work of a load balancer's creation.
const whatCreate = "being created"

type pendingWR struct {
	kind    string // of the load balancer
	id      string // "" while the creation is being asked for (Create)
	what    string
	started time.Time
	err     error // the creation's refusal, for the next look to tell
}

func newWorkRequests() *workRequests { return &workRequests{pending: map[types.UID]pendingWR{}} }

func (w *workRequests) start(svc *v1.Service, kind, id, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending[svc.UID] = pendingWR{kind: kind, id: id, what: what, started: time.Now()}
}

// asked records how the asking for a creation went: its work request, or
// the error, which the Service's next look reports.
func (w *workRequests) asked(svc *v1.Service, id string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[svc.UID]
	if !ok || p.id != "" {
		return
	}
	p.id, p.err, p.started = id, err, time.Now()
	w.pending[svc.UID] = p
}

func (w *workRequests) get(svc *v1.Service) (pendingWR, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[svc.UID]
	return p, ok
}

// done forgets the Service's work request, which took took (0: unknown).
func (w *workRequests) done(svc *v1.Service, took time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, svc.UID)
	if took > 0 {
		if w.took == 0 {
			w.took = took
		} else {
			w.took = (3*w.took + took) / 4
		}
	}
}

// retryAfter is how long the Service's work request should still take.
func (w *workRequests) retryAfter(svc *v1.Service) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[svc.UID]
	if !ok || w.took == 0 {
		return 0
	}
	left := time.Until(p.started.Add(w.took))
	return min(max(left, 250*time.Millisecond), 10*time.Second)
}

func (s steps) Spec(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	spec, err := s.parseSpec(svc)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	if s.Cluster.Get() == "" {
		return lbSpec{}, lbcycle.Fingerprint{}, errors.New("the cluster UID (the kube-system namespace's) is not known yet")
	}
	spec.freeform[tagCluster] = s.Cluster.Get()
	if err := s.readCerts(ctx, &spec); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	if err := s.resolveBackends(ctx, svc, &spec, nodes); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	return spec, lbcycle.Fingerprint{Config: spec.configFingerprint(), Members: spec.membersFingerprint()}, nil
}

// asLB is the load balancer as the cycle sees it: busy while OCI creates or
// deletes it, or runs a work request this process started.
func (c *Cloud) asLB(svc *v1.Service, lb LB) ociLB {
	out := ociLB{ID: lb.ID, Status: lb.LifecycleState, State: lbcycle.Ready, Obj: lb}
	switch lb.LifecycleState {
	case "ACTIVE":
		if p, ok := c.wrs.get(svc); ok {
			out.State, out.Status = lbcycle.Busy, p.what
		}
	case "FAILED":
		out.State = lbcycle.Failed
	default:
		out.State = lbcycle.Busy
	}
	return out
}

// newListing is the shared listing of the compartment's load balancers of
// a kind.
func newListing(c *Cloud, kind string) *snapshot.Snapshot[LB] {
	return snapshot.New(ProviderName+"-"+kind, listingMaxAge, listingMinMiss, func(ctx context.Context) ([]LB, error) {
		all, err := c.gw.loadBalancers(ctx, kind, inCompartment(c.cfg.CompartmentID))
		return slices.DeleteFunc(all, func(lb LB) bool { return lb.LifecycleState == "DELETED" }), err
	}, func(lb LB) []string { return []string{"id/" + lb.ID, "name/" + lb.DisplayName} })
}

// listed is the Service's load balancer of a kind in the shared listing.
func (c *Cloud) listed(ctx context.Context, svc *v1.Service, kind string) (LB, bool, error) {
	return c.listings[kind].Get(ctx, "name/"+nameOf(svc, kind))
}

func (s steps) Listed(ctx context.Context, svc *v1.Service) (ociLB, bool, error) {
	lb, found, err := s.listed(ctx, svc, kindOf(svc))
	if err != nil || !found {
		return ociLB{}, false, err
	}
	return s.asLB(svc, lb), true, nil
}

func (s steps) Relist() {
	for _, l := range s.listings {
		l.Invalidate()
	}
	s.listPass.forget()
	s.nsgPass.Pass()
}

func (s steps) RetryAfter(svc *v1.Service) time.Duration { return s.wrs.retryAfter(svc) }

// Find reads the Service's load balancer now: first how the work this
// process started for it went (so that the load balancer read after it
// shows its effect), then the load balancer by its name. A load balancer
// being created, or one of a Service this process has no work in flight
// for, is looked for in the shared listing, made at most createPoll ago:
// the Services looked at meanwhile share one call.
func (s steps) Find(ctx context.Context, svc *v1.Service) (ociLB, bool, error) {
	return s.find(ctx, svc, kindOf(svc))
}

// find is Find of the Service's load balancer of a kind.
func (s steps) find(ctx context.Context, svc *v1.Service, kind string) (ociLB, bool, error) {
	p, waited := s.wrs.get(svc)
	if waited && p.kind == kind {
		switch {
		case p.id == "" && p.err != nil:
			s.wrs.done(svc, 0)
			return ociLB{}, false, p.err
		case p.id == "":
			return ociLB{ID: nameOf(svc, kind), Status: "being asked for (the client-side write limit)", State: lbcycle.Busy}, true, nil
		}
		if p.what == whatCreate {
			lb, found, err := s.listings[kind].GetFresh(ctx, "name/"+nameOf(svc, kind), createPoll)
			switch {
			case err != nil:
				return ociLB{}, false, err
			case found && lb.LifecycleState == "CREATING":
				return ociLB{ID: lb.ID, Status: whatCreate, State: lbcycle.Busy}, true, nil
			case found:
				s.wrs.done(svc, time.Since(p.started))
				return s.asLB(svc, lb), true, nil
			}
			// Not listed: the work request says whether it is still to come.
		}
		wr, err := s.gw.workRequest(ctx, kind, p.id)
		switch {
		case errors.Is(err, outcome.ErrNotFound):
			s.wrs.done(svc, 0)
		case err != nil:
			return ociLB{}, false, err
		case wr.LifecycleState == "ACCEPTED" || wr.LifecycleState == "IN_PROGRESS":
			return ociLB{ID: wr.LoadBalancerID, Status: p.what, State: lbcycle.Busy}, true, nil
		default:
			s.wrs.done(svc, took(wr))
			if wr.LifecycleState == "FAILED" {
				klog.FromContext(ctx).Info("A load balancer's work request failed; the next step tries again", "service", klog.KObj(svc),
					"loadBalancer", wr.LoadBalancerID, "workRequest", wr.ID, "type", wr.Type, "message", wr.Message)
			}
		}
	}
	key := "name/" + nameOf(svc, kind)
	if !waited {
		// Nothing this process started for the Service is in between: a
		// listing of at most createPoll ago, shared by every Service
		// looked at meanwhile (a burst of new Services costs one call, not
		// one each), knows its load balancer as well as a read by name.
		lb, found, err := s.listings[kind].GetFresh(ctx, key, createPoll)
		switch {
		case err != nil:
			return ociLB{}, false, err
		case found:
			return s.asLB(svc, lb), true, nil
		case !s.listings[kind].Shared(key):
			return ociLB{}, false, nil
		}
		// Two of that name: the read by name below says so.
	}
	list, err := s.gw.loadBalancers(ctx, kind, with(inCompartment(s.cfg.CompartmentID), "displayName", nameOf(svc, kind)))
	if err != nil {
		return ociLB{}, false, err
	}
	list = slices.DeleteFunc(list, func(lb LB) bool { return lb.LifecycleState == "DELETED" })
	switch len(list) {
	case 0:
		return ociLB{}, false, nil
	case 1:
		s.listings[kind].Put(list[0])
		return s.asLB(svc, list[0]), true, nil
	}
	return ociLB{}, false, outcome.Refuse(outcome.ReasonCloudRefused, "%d load balancers are named %s: delete all but one", len(list), nameOf(svc, kind))
}

// took is how long a finished work request took (0: unknown).
func took(wr WorkRequest) time.Duration {
	if wr.TimeFinished == nil {
		return 0
	}
	return wr.TimeFinished.Sub(wr.TimeAccepted)
}

// newToken is an opc-retry-token: the transport's retries of one create are
// the same creation.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s steps) Create(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	var reserved []ReservedIP
	if spec.ip != "" {
		id, err := s.reservedIP(ctx, spec.ip)
		if err != nil {
			return "", err
		}
		reserved = []ReservedIP{{ID: id}}
	}
	front, made, err := s.ensureFrontendNSG(ctx, svc, spec)
	if made != "" || err != nil {
		return made, err
	}
	nsgs := wantedNSGs(spec, front)
	create := func(ctx context.Context) (string, error) {
		if spec.kind == kindNLB {
			return s.gw.createNetworkLoadBalancer(ctx, CreateNetworkLoadBalancer{CompartmentID: s.cfg.CompartmentID, DisplayName: spec.name,
				SubnetID: spec.subnets[0], IsPrivate: spec.internal, Listeners: spec.listeners, BackendSets: spec.backendSets,
				FreeformTags: spec.freeform, DefinedTags: spec.defined, ReservedIPs: reserved, NSGs: nsgs}, newToken())
		}
		return s.gw.createLoadBalancer(ctx, CreateLoadBalancer{CompartmentID: s.cfg.CompartmentID, DisplayName: spec.name,
			ShapeName: spec.shape, ShapeDetails: spec.flex, SubnetIDs: spec.subnets, IsPrivate: spec.internal, Listeners: spec.listeners,
			BackendSets: spec.backendSets, FreeformTags: spec.freeform, DefinedTags: spec.defined, ReservedIPs: reserved,
			Certificates: spec.certs, RuleSets: spec.ruleSets, NSGs: nsgs}, newToken())
	}
	// Busy (CREATING) until the shared listing shows it otherwise.
	select {
	case s.asks <- struct{}{}:
		// A place among the creations asked for at once: asked now.
		wr, err := create(ctx)
		<-s.asks
		if err != nil {
			return "", err
		}
		s.wrs.start(svc, spec.kind, wr, whatCreate)
		return fmt.Sprintf("%s %s is being created (work request %s)", noun(spec.kind), spec.name, wr), nil
	default:
	}
	// Every place taken (a burst of Services): the creation is asked for
	// without a worker waiting for its turn of the client-side write limit
	// (the burst would hold every worker there, and none would see the first
	// load balancers ready). The Service is busy until it is answered, and
	// its next look tells how that went.
	s.wrs.start(svc, spec.kind, "", whatCreate)
	logger := klog.FromContext(ctx)
	go func() {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createAskTimeout)
		defer cancel()
		var wr string
		var err error
		select {
		case s.asks <- struct{}{}:
			wr, err = create(actx)
			<-s.asks
		case <-actx.Done():
			err = actx.Err()
		}
		if err != nil {
			logger.V(2).Info("A load balancer's creation was refused", "service", klog.KObj(svc), "err", err.Error())
		}
		s.wrs.asked(svc, wr, err)
	}()
	return fmt.Sprintf("%s %s is being asked for", noun(spec.kind), spec.name), nil
}

// asking says, while a creation for the Service is being asked for, that
// it is (it may yet be made: what is deleted or replaced waits for it).
func (s steps) asking(svc *v1.Service) string {
	if p, ok := s.wrs.get(svc); ok && p.id == "" && p.err == nil {
		return fmt.Sprintf("the creation of %s %s is being asked for", noun(p.kind), nameOf(svc, p.kind))
	}
	return ""
}

// createAskTimeout bounds the asking for one creation, the wait for the
// client-side write limit included.
const createAskTimeout = 5 * time.Minute

// noun names a kind of load balancer in messages.
func noun(kind string) string {
	if kind == kindNLB {
		return "network load balancer"
	}
	return "load balancer"
}

func (s steps) Replace(ctx context.Context, svc *v1.Service, lb ociLB) (string, error) {
	wr, err := s.gw.deleteLoadBalancer(ctx, lb.Obj.Kind, lb.ID)
	if err != nil {
		return "", err
	}
	s.wrs.done(svc, 0) // DELETING says it is busy
	s.listings[lb.Obj.Kind].Invalidate()
	return fmt.Sprintf("%s %s is %s: deleting it to build it anew (work request %s)", noun(lb.Obj.Kind), lb.ID, lb.Status, wr), nil
}

// Converge makes one change toward spec: the backend sets first (a listener
// needs its set), then the listeners, then what is no longer asked.
func (s steps) Converge(ctx context.Context, svc *v1.Service, spec lbSpec, lb ociLB) (string, error) {
	have := lb.Obj
	change := func(wr string, err error, what string) (string, error) {
		if err != nil {
			return "", err
		}
		s.wrs.start(svc, have.Kind, wr, what)
		return fmt.Sprintf("%s %s: %s (work request %s)", noun(have.Kind), lb.ID, what, wr), nil
	}
	// write creates (POST) or updates (PUT) one child of the load balancer:
	// named in the path only to update, where its body names it not.
	write := func(method, kind, name string, body, unnamedBody any, what string) (string, error) {
		if method == http.MethodPost {
			wr, err := s.gw.changeChild(ctx, have.Kind, method, lb.ID, kind, "", body)
			return change(wr, err, "creating "+what)
		}
		wr, err := s.gw.changeChild(ctx, have.Kind, method, lb.ID, kind, name, unnamedBody)
		return change(wr, err, "updating "+what)
	}
	remove := func(kind, name, what string) (string, error) {
		wr, err := s.gw.changeChild(ctx, have.Kind, http.MethodDelete, lb.ID, kind, name, nil)
		return change(wr, err, "deleting "+what)
	}
	// Certificates first (a listener needs its own), under the names this
	// load balancer gives the Secrets' certificates.
	names := certNames(have, spec)
	for _, secret := range slices.Sorted(maps.Keys(spec.certs)) {
		name := names[secret]
		if _, ok := have.Certificates[name]; !ok {
			c := spec.certs[secret]
			c.CertificateName = name
			wr, err := s.gw.createCertificate(ctx, lb.ID, c)
			return change(wr, err, "creating certificate "+name+" (of Secret "+spec.tls[secret].String()+")")
		}
	}
	spec = withCertNames(spec, names)
	if spec.ruleSets == nil {
		spec = keepRuleSetNames(spec, have)
	} else if name, method := childChange(spec.ruleSets, have.RuleSets, sameRuleSet); method != "" {
		want := spec.ruleSets[name]
		named := want
		named.Name = name
		return write(method, "ruleSets", name, named, want, "rule set "+name)
	}
	if name, method := childChange(spec.backendSets, have.BackendSets, sameBackendSet); method != "" {
		want := spec.backendSets[name]
		return write(method, "backendSets", name, want, unnamed(want), "backend set "+name)
	}
	if name, method := childChange(spec.listeners, have.Listeners, sameListener); method != "" {
		want := spec.listeners[name]
		if l := listenerOnPort(have, want.Port); method == http.MethodPost && l != "" {
			return remove("listeners", l, "listener "+l+" (its port is "+name+"'s)")
		}
		return write(method, "listeners", name, want, unnamedListener(want), "listener "+name)
	}
	if name := unasked(have.Listeners, spec.listeners); name != "" {
		return remove("listeners", name, "listener "+name)
	}
	if name := unasked(have.BackendSets, spec.backendSets); name != "" {
		return remove("backendSets", name, "backend set "+name)
	}
	if name := unasked(have.RuleSets, spec.ruleSets); spec.ruleSets != nil && name != "" {
		return remove("ruleSets", name, "rule set "+name)
	}
	if name := staleCertificate(have, spec, names); name != "" {
		return remove("certificates", name, "certificate "+name+" (its Secret was renewed)")
	}
	if msg, err := s.convergeNSGs(ctx, svc, spec, lb, change); msg != "" || err != nil {
		return msg, err
	}
	if msg := shapeDrift(have, spec); msg != "" {
		return "", outcome.Refuse(outcome.ReasonUnsupportedService, "%s", msg)
	}
	return s.removeOtherKind(ctx, svc, spec.kind)
}

// convergeNSGs puts the load balancer in the NSGs the Service asks for (its
// own, and its frontend NSG in NSG mode, made first), one step; an NSG it
// leaves that is the Service's frontend NSG is deleted once it is out.
func (s steps) convergeNSGs(ctx context.Context, svc *v1.Service, spec lbSpec, lb ociLB,
	change func(wr string, err error, what string) (string, error)) (string, error) {
	have := lb.Obj
	front, made, err := s.ensureFrontendNSG(ctx, svc, spec)
	if made != "" || err != nil {
		return made, err
	}
	want := wantedNSGs(spec, front)
	got := slices.Sorted(slices.Values(have.NetworkSecurityGroupIDs))
	if !slices.Equal(want, got) {
		s.nsgsLeft.put(svc.UID, slices.DeleteFunc(got, func(id string) bool { return slices.Contains(want, id) }))
		wr, err := s.gw.setNSGs(ctx, have.Kind, lb.ID, want)
		return change(wr, err, "setting its network security groups")
	}
	for _, id := range s.nsgsLeft.take(svc.UID) {
		g, err := s.gw.nsg(ctx, id)
		if errors.Is(err, outcome.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", err
		}
		if g.FreeformTags["ServiceUid"] == string(svc.UID) {
			if err := s.gw.deleteNSG(ctx, id); err != nil && !errors.Is(err, outcome.ErrNotFound) {
				s.nsgsLeft.put(svc.UID, []string{id})
				return "", err
			}
			return fmt.Sprintf("network security group %s deleted (the Service's rules are no longer in NSGs)", id), nil
		}
	}
	return "", nil
}

// removeOtherKind deletes the Service's load balancer of the kind it no
// longer asks for (its type annotation changed), once the one it asks for
// is built: one call, then the Service is looked at again until it is gone.
func (s steps) removeOtherKind(ctx context.Context, svc *v1.Service, kind string) (string, error) {
	other := kindLB
	if kind == kindLB {
		other = kindNLB
	}
	if asking := s.asking(svc); asking != "" {
		return asking, nil
	}
	old, found, err := s.listed(ctx, svc, other)
	if err != nil || !found || old.LifecycleState == "DELETING" || old.LifecycleState == "DELETED" {
		return "", err
	}
	wr, err := s.gw.deleteLoadBalancer(ctx, other, old.ID)
	if errors.Is(err, outcome.ErrNotFound) {
		s.listings[other].Invalidate()
		return "", nil
	}
	if err != nil {
		return "", err
	}
	s.listings[other].Invalidate()
	return fmt.Sprintf("%s %s is no longer asked for (the Service asks for a%s): deleting it (work request %s)", noun(other), old.ID,
		map[string]string{kindLB: " load balancer", kindNLB: " network load balancer"}[kind], wr), nil
}

// certNames are the names in load balancer have of the spec's certificates
// (by Secret name): the Secret's name, as the peer names it, unless have
// holds a certificate of that name with other content (the Secret was
// renewed since: OCI cannot change a certificate), then the name with a
// hash of the content.
func certNames(have LB, spec lbSpec) map[string]string {
	out := map[string]string{}
	for secret, c := range spec.certs {
		name := secret
		if got, ok := have.Certificates[secret]; ok && !sameCertificate(got, c) {
			sum := sha256.Sum256([]byte(strings.TrimSpace(c.PublicCertificate) + strings.TrimSpace(c.CaCertificate)))
			name = secret + "-" + hex.EncodeToString(sum[:4])
		}
		out[secret] = name
	}
	return out
}

func sameCertificate(got, want Certificate) bool {
	return strings.TrimSpace(got.PublicCertificate) == strings.TrimSpace(want.PublicCertificate) &&
		strings.TrimSpace(got.CaCertificate) == strings.TrimSpace(want.CaCertificate)
}

// withCertNames is spec with its SSL configurations naming the
// certificates as names says.
func withCertNames(spec lbSpec, names map[string]string) lbSpec {
	rename := func(c *SSLConfiguration) *SSLConfiguration {
		if c == nil || names[c.CertificateName] == "" || names[c.CertificateName] == c.CertificateName {
			return c
		}
		r := *c
		r.CertificateName = names[c.CertificateName]
		return &r
	}
	ls, bss := maps.Clone(spec.listeners), maps.Clone(spec.backendSets)
	for name, l := range ls {
		l.SSLConfiguration = rename(l.SSLConfiguration)
		ls[name] = l
	}
	for name, bs := range bss {
		bs.SSLConfiguration = rename(bs.SSLConfiguration)
		bss[name] = bs
	}
	spec.listeners, spec.backendSets = ls, bss
	return spec
}

// staleCertificate is a certificate of the load balancer that no listener
// or backend set uses and that was made of one of the spec's Secrets before
// it was renewed (its name is the Secret's, or that with a hash): "" for
// none. Other certificates are not this Service's to remove.
func staleCertificate(have LB, spec lbSpec, names map[string]string) string {
	used := map[string]bool{}
	for _, l := range have.Listeners {
		if l.SSLConfiguration != nil {
			used[l.SSLConfiguration.CertificateName] = true
		}
	}
	for _, bs := range have.BackendSets {
		if bs.SSLConfiguration != nil {
			used[bs.SSLConfiguration.CertificateName] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(have.Certificates)) {
		if used[name] || slices.Contains(slices.Collect(maps.Values(names)), name) {
			continue
		}
		for secret := range spec.tls {
			if name == secret || (strings.HasPrefix(name, secret+"-") && len(name) == len(secret)+9) {
				return name
			}
		}
	}
	return ""
}

// keepRuleSetNames is spec with the listeners' rule sets as have's: rule
// sets are left as they are when the Service does not ask for any (as the
// peer leaves them).
func keepRuleSetNames(spec lbSpec, have LB) lbSpec {
	ls := maps.Clone(spec.listeners)
	for name, l := range ls {
		l.RuleSetNames = have.Listeners[name].RuleSetNames
		ls[name] = l
	}
	spec.listeners = ls
	return spec
}

// sameRuleSet says whether got has want's rules, in order: each rule with
// want's fields as want has them (OCI may fill in others).
func sameRuleSet(got, want RuleSet) bool {
	if len(got.Items) != len(want.Items) {
		return false
	}
	for i := range want.Items {
		var g, w any
		if json.Unmarshal(got.Items[i], &g) != nil || json.Unmarshal(want.Items[i], &w) != nil || !subset(w, g) {
			return false
		}
	}
	return true
}

// subset says whether got has every field of want, equal (lists equal
// item by item).
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !subset(v, g[k]) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return want == got
}

// childChange is the first child (by name) of a kind that want asks and have
// lacks (POST) or has otherwise (PUT); "" when have has them all as asked.
func childChange[T any](want, have map[string]T, same func(got, want T) bool) (name, method string) {
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, ok := have[name]
		if !ok {
			return name, http.MethodPost
		}
		if !same(got, want[name]) {
			return name, http.MethodPut
		}
	}
	return "", ""
}

// unasked is the first child (by name) have has and want does not ask.
func unasked[T any](have, want map[string]T) string {
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[name]; !ok {
			return name
		}
	}
	return ""
}

// reservedIP is the OCID of the reserved public IP of address ip, when it
// is free for a new load balancer; otherwise a Problem saying why.
func (s steps) reservedIP(ctx context.Context, ip string) (string, error) {
	p, err := s.gw.publicIPByAddress(ctx, ip)
	switch {
	case errors.Is(err, outcome.ErrNotFound):
		return "", outcome.Refuse(outcome.ReasonUnsupportedService,
			"spec.loadBalancerIP %s is not a reserved public IP this CCM may use: reserve it (oci network public-ip create --lifetime RESERVED) in a compartment the CCM's policies cover", ip)
	case err != nil:
		return "", err
	case p.Lifetime != "RESERVED":
		return "", outcome.Refuse(outcome.ReasonUnsupportedService, "spec.loadBalancerIP %s is an ephemeral public IP; a load balancer takes a reserved one", ip)
	case p.LifecycleState != "AVAILABLE":
		return "", outcome.Refuse(outcome.ReasonUnsupportedService, "spec.loadBalancerIP %s is %s (to %s): it is not free", ip, p.LifecycleState, p.AssignedEntityID)
	}
	return p.ID, nil
}

// shapeDrift says what cannot be changed in place yet.
func shapeDrift(have LB, spec lbSpec) string {
	switch {
	case spec.ip != "" && address(have, false) != spec.ip:
		return fmt.Sprintf("load balancer %s has the address %s and the Service asks for %s: a load balancer's address cannot change once built; delete and recreate the Service",
			have.ID, address(have, false), spec.ip)
	case have.IsPrivate != spec.internal:
		return fmt.Sprintf("load balancer %s is %s and the Service asks for it %s: this cannot change once built; delete and recreate the Service",
			have.ID, privacy(have.IsPrivate), privacy(spec.internal))
	case !slices.Equal(slices.Sorted(slices.Values(have.SubnetIDs)), slices.Sorted(slices.Values(spec.subnets))):
		return fmt.Sprintf("load balancer %s is on subnets %s and the Service asks for %s: subnets cannot change once built",
			have.ID, strings.Join(have.SubnetIDs, ", "), strings.Join(spec.subnets, ", "))
	}
	return ""
}

func privacy(internal bool) string {
	if internal {
		return "internal"
	}
	return "public"
}

func listenerOnPort(lb LB, port int) string {
	for name, l := range lb.Listeners {
		if l.Port == port {
			return name
		}
	}
	return ""
}

// unnamed is bs as an update's body (UpdateBackendSetDetails has no name).
func unnamed(bs BackendSet) BackendSet { bs.Name = ""; return bs }

// unnamedListener is l as an update's body (UpdateListenerDetails has no name).
func unnamedListener(l Listener) Listener { l.Name = ""; return l }

func sameBackendSet(got, want BackendSet) bool {
	return got.Policy == want.Policy && got.HealthChecker == want.HealthChecker && slices.Equal(backendKeys(got), backendKeys(want)) &&
		isTrue(got.IsPreserveSource) == isTrue(want.IsPreserveSource) && sameSSL(got.SSLConfiguration, want.SSLConfiguration)
}

// sameSSL compares SSL configurations as the peer does: the cipher suite
// and protocols only when they are asked for (OCI fills in its defaults).
func sameSSL(got, want *SSLConfiguration) bool {
	switch {
	case got == nil || want == nil:
		return got == want
	case got.CertificateName != want.CertificateName || got.VerifyDepth != want.VerifyDepth || got.VerifyPeerCertificate != want.VerifyPeerCertificate:
		return false
	case want.CipherSuiteName != "" && got.CipherSuiteName != want.CipherSuiteName:
		return false
	}
	return len(want.Protocols) == 0 || slices.Equal(got.Protocols, want.Protocols)
}

func isTrue(b *bool) bool { return b != nil && *b }

// backendKeys are a backend set's backends as sorted strings.
func backendKeys(bs BackendSet) []string {
	keys := make([]string, len(bs.Backends))
	for i, b := range bs.Backends {
		keys[i] = fmt.Sprintf("%s:%d/%d/%s", b.IPAddress, b.Port, b.Weight, b.TargetID)
	}
	slices.Sort(keys)
	return keys
}

func sameListener(got, want Listener) bool {
	if got.Port != want.Port || got.Protocol != want.Protocol || got.DefaultBackendSetName != want.DefaultBackendSetName ||
		isTrue(got.IsPPv2Enabled) != isTrue(want.IsPPv2Enabled) || !sameSSL(got.SSLConfiguration, want.SSLConfiguration) ||
		!slices.Equal(slices.Sorted(slices.Values(got.RuleSetNames)), slices.Sorted(slices.Values(want.RuleSetNames))) {
		return false
	}
	if want.ConnectionConfiguration == nil { // an NLB's
		return true
	}
	var g ConnectionConfiguration
	if got.ConnectionConfiguration != nil {
		g = *got.ConnectionConfiguration
	}
	return g == *want.ConnectionConfiguration
}

// address is the load balancer's address the Service is given: its public
// one, or its private one when internal.
func address(lb LB, internal bool) string {
	for _, a := range lb.IPAddresses {
		if a.IsPublic != internal {
			return a.IPAddress
		}
	}
	return ""
}

// ingress are the addresses the Service's status shows, its address first:
// a network load balancer's private address too (as the peer shows it)
// unless it is internal or externalOnly.
func ingress(lb LB, internal, externalOnly bool) []string {
	first := address(lb, internal)
	if first == "" {
		return nil
	}
	out := []string{first}
	if lb.Kind == kindNLB && !internal && !externalOnly {
		for _, a := range lb.IPAddresses {
			if !a.IsPublic {
				out = append(out, a.IPAddress)
			}
		}
	}
	return out
}

func status(addrs []string, proxy bool) *v1.LoadBalancerStatus {
	st := &v1.LoadBalancerStatus{}
	for _, a := range addrs {
		ing := v1.LoadBalancerIngress{IP: a}
		if proxy {
			mode := v1.LoadBalancerIPModeProxy
			ing.IPMode = &mode
		}
		st.Ingress = append(st.Ingress, ing)
	}
	return st
}

// Publish opens the security lists as the Service's mode asks (and closes
// what it no longer asks), then gives the address.
func (s steps) Publish(ctx context.Context, svc *v1.Service, spec lbSpec, lb ociLB) (*v1.LoadBalancerStatus, string, error) {
	addrs := ingress(lb.Obj, spec.internal, spec.externalOnly)
	if len(addrs) == 0 {
		return nil, "", fmt.Errorf("%s %s has no %s address yet", noun(lb.Obj.Kind), lb.ID, privacy(spec.internal))
	}
	listSpec := spec
	if spec.mode == ModeNSG {
		listSpec.mode = ModeNone // no security list rule; those of a former mode go
		front, err := s.frontendNSG(ctx, svc)
		if err != nil {
			return nil, "", err
		}
		if front == "" {
			return nil, "", fmt.Errorf("the network security group of the Service is not there yet")
		}
		if err := s.publishNSGRules(ctx, svc, spec, front); err != nil {
			return nil, "", err
		}
	} else if err := s.removeBackendNSGRules(ctx, svc, spec.backendNSGs); err != nil {
		return nil, "", err
	}
	want, lists, err := s.wantedRules(ctx, svc, listSpec)
	if err != nil {
		return nil, "", err
	}
	if err := s.applyRules(ctx, svc, want, lists, !s.builtHere(lb.Obj)); err != nil {
		return nil, "", err
	}
	return status(addrs, spec.proxyMode), addrs[0], nil
}

func (s steps) Published(_ context.Context, _ *v1.Service, spec lbSpec, rec lbcycle.Record, lb ociLB) (*v1.LoadBalancerStatus, bool, error) {
	addrs := ingress(lb.Obj, spec.internal, spec.externalOnly)
	if len(addrs) == 0 || addrs[0] != rec.Address {
		return nil, false, nil
	}
	return status(addrs, spec.proxyMode), true, nil
}

// Delete removes the Service's security rules, then deletes its load
// balancer (found by its name), and one of the other kind if the Service
// had asked for that before: one call a step, then the Service is looked
// at again until they are gone.
func (s steps) Delete(ctx context.Context, _ string, svc *v1.Service) (string, error) {
	if asking := s.asking(svc); asking != "" {
		return asking, nil
	}
	kind := kindOf(svc)
	var lbs []ociLB
	lb, found, err := s.find(ctx, svc, kind)
	if err != nil {
		return "", err
	}
	if found {
		lbs = append(lbs, lb)
	}
	other := map[string]string{kindLB: kindNLB, kindNLB: kindLB}[kind]
	old, found, err := s.listed(ctx, svc, other)
	if err != nil {
		return "", err
	}
	if found {
		lbs = append(lbs, s.asLB(svc, old))
	}
	var subnets []string
	for _, lb := range lbs {
		switch {
		case lb.Obj.LifecycleState == "DELETING":
			// Its rules went before the delete was asked.
			return fmt.Sprintf("%s %s is being deleted", noun(lb.Obj.Kind), lb.ID), nil
		case lb.State == lbcycle.Busy:
			return fmt.Sprintf("%s %s is %s; deleting it next", noun(lb.Obj.Kind), lb.ID, lb.Status), nil
		}
		subnets = append(subnets, lb.Obj.SubnetIDs...)
	}
	if len(lbs) == 0 {
		if cfg := s.cfg.LoadBalancer; cfg != nil && cfg.Subnet1 != "" {
			subnets = []string{cfg.Subnet1}
		}
	}
	if err := s.removeRules(ctx, svc, subnets); err != nil {
		return "", err
	}
	for _, lb := range lbs {
		if s.builtHere(lb.Obj) {
			continue
		}
		lists, err := s.lbLists(ctx, lb.Obj.SubnetIDs)
		if err != nil {
			return "", err
		}
		if err := s.removePeerRules(ctx, svc, lb.Obj, lists); err != nil {
			return "", err
		}
	}
	if backends, err := annotation.OCIBackendNetworkSecurityGroups.OCIDs(svc, "networksecuritygroup", 0); err == nil {
		if err := s.removeBackendNSGRules(ctx, svc, backends); err != nil {
			return "", err
		}
	}
	if len(lbs) == 0 {
		// Last, the Service's frontend NSG (NSG mode), now that no load
		// balancer is in it.
		front, err := s.frontendNSG(ctx, svc)
		if err != nil || front == "" {
			return "", err
		}
		if err := s.gw.deleteNSG(ctx, front); err != nil && !errors.Is(err, outcome.ErrNotFound) {
			return "", err
		}
		return fmt.Sprintf("network security group %s deleted", front), nil
	}
	lb = lbs[0]
	wr, err := s.gw.deleteLoadBalancer(ctx, lb.Obj.Kind, lb.ID)
	s.listings[lb.Obj.Kind].Invalidate()
	if errors.Is(err, outcome.ErrNotFound) {
		return fmt.Sprintf("%s %s is gone", noun(lb.Obj.Kind), lb.ID), nil
	}
	if err != nil {
		return "", err
	}
	s.wrs.done(svc, 0) // DELETING says it is busy
	return fmt.Sprintf("%s %s is being deleted (work request %s)", noun(lb.Obj.Kind), lb.ID, wr), nil
}

// GetLoadBalancer is the Service's load balancer's status, from the shared
// listing.
func (c *Cloud) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	kind := kindOf(svc)
	lb, found, err := c.listed(ctx, svc, kind)
	if err != nil || !found {
		return nil, false, err
	}
	externalOnly, _ := annotation.OCINLBExternalIPOnly.Bool(svc)
	return status(ingress(lb, lb.IsPrivate, externalOnly), false), true, nil
}

// GetLoadBalancerName is the peer's name of the Service's load balancer.
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return nameOf(svc, kindOf(svc))
}
