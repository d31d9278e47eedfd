package cloudstack

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// CloudStack's steps of the load-balancer cycle (internal/lbcycle). A
// Service's load balancer is its public address and its rules, one per port
// and protocol, named as the peer names them; the address is the load
// balancer's identity. A step starts the asynchronous jobs of independent
// changes together (rules, their machines, the openings for their sources)
// and the Service is looked at again; Find asks how they went.

// Ownership tags on the public addresses this CCM associates: the cluster's
// UID and the Service's. An address without them is never released.
const (
	tagCluster = "overcast-cluster"
	tagService = "overcast-service"
	// tagServiceName is the Service's namespace/name, for a person (and
	// `overcast sweep`) once the Service is gone; never used to find.
	tagServiceName = "overcast-service-name"
)

const (
	pendingRetry      = 2 * time.Second
	fullCheckInterval = time.Hour
	listingMaxAge     = 60 * time.Second
	// listingMinMiss: a Service not in the shared listing lists again at most
	// this often (a burst of misses costs one listing).
	listingMinMiss = 10 * time.Second
)

// lbState is a Service's load balancer as read.
type lbState struct {
	addr address
	// addrRead: addr was read itself (its state and tags are known), not
	// taken from its rules.
	addrRead bool
	rules    []rule
}

type csLB = lbcycle.LB[lbState]

type steps struct{ *Cloud }

var (
	_ lbcycle.Cloud[lbSpec, lbState]         = steps{}
	_ lbcycle.MemberUpdater[lbSpec, lbState] = steps{}
	_ lbcycle.DriftChecker[lbState]          = steps{}
	_ lbcycle.Relister                       = steps{}
	_ lbcycle.Pacer                          = steps{}
)

func newCycle(c *Cloud) *lbcycle.Cycle[lbSpec, lbState] {
	return lbcycle.New[lbSpec, lbState](steps{c}, c.records,
		lbcycle.Options{Retry: pendingRetry, FullCheck: fullCheckInterval})
}

func (c *Cloud) ownTags(svc *v1.Service) map[string]string {
	return map[string]string{tagCluster: c.Cluster.Get(), tagService: string(svc.UID)}
}

// newTags are what this CCM tags an object with: ownTags and the Service's
// name.
func (c *Cloud) newTags(svc *v1.Service) map[string]string {
	t := c.ownTags(svc)
	t[tagServiceName] = svc.Namespace + "/" + svc.Name
	return t
}

// owns says whether the address was associated by this CCM for the Service.
func (c *Cloud) owns(a address, svc *v1.Service) bool {
	return a.Tags[tagCluster] == c.Cluster.Get() && a.Tags[tagService] == string(svc.UID)
}

func (s steps) Spec(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (lbSpec, lbcycle.Fingerprint, error) {
	spec, err := parseSpec(svc)
	if err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, outcome.Invalid(err)
	}
	if s.Cluster.Get() == "" {
		return lbSpec{}, lbcycle.Fingerprint{}, errors.New("the cluster UID (the kube-system namespace's) is not known yet")
	}
	if err := s.resolveMembers(ctx, &spec, nodes); err != nil {
		return lbSpec{}, lbcycle.Fingerprint{}, err
	}
	return spec, lbcycle.Fingerprint{Config: spec.configFingerprint(), Members: spec.membersFingerprint()}, nil
}

var busyStates = []string{"Allocating", "Releasing", "Add", "Revoke", "Deleting", "Staged"}

// asLB is the state as the cycle sees it: busy while the address or a rule is
// being changed by the server.
func asLB(st lbState) csLB {
	lb := csLB{ID: st.addr.ID, Status: "ready", State: lbcycle.Ready, Obj: st}
	if oneOf(st.addr.State, busyStates) {
		lb.State, lb.Status = lbcycle.Busy, "being "+strings.ToLower(strings.TrimSuffix(st.addr.State, "ing"))+"ed"
	}
	if st.addr.settling != "" {
		lb.State, lb.Status = lbcycle.Busy, st.addr.settling
	}
	for _, r := range st.rules {
		if oneOf(r.State, busyStates) {
			lb.State, lb.Status = lbcycle.Busy, fmt.Sprintf("changing (rule %s is %s)", r.Name, r.State)
		}
	}
	return lb
}

// read is the Service's load balancer now: its rules (listed by the name's
// keyword, kept by exact name, never by the keyword alone), and its address:
// the rules', else the one associated for it (by its tags), else the
// address an interrupted association left (associating.go), else the
// allocated address its loadBalancerIP names.
func (c *Cloud) read(ctx context.Context, svc *v1.Service) (lbState, bool, error) {
	name := lbName(svc)
	listed, err := c.gw.rules(ctx, name)
	if err != nil {
		return lbState{}, false, err
	}
	var st lbState
	for _, r := range listed {
		if lbNameOf(r.Name) == name {
			st.rules = append(st.rules, r)
		}
	}
	if len(st.rules) > 0 {
		r := st.rules[0]
		st.addr = address{ID: r.AddressID, IP: r.IP, State: "Allocated"}
		return st, true, nil
	}
	own, err := c.gw.addressesTagged(ctx, c.ownTags(svc))
	if err != nil {
		return lbState{}, false, err
	}
	if len(own) > 0 {
		st.addr, st.addrRead = own[0], true
		return st, true, nil
	}
	ip := strings.TrimSpace(svc.Spec.LoadBalancerIP)
	if a, found, err := c.takeUpLeftover(ctx, svc, ip); err != nil || found {
		st.addr, st.addrRead = a, found
		return st, found, err
	}
	if ip != "" {
		a, found, err := c.gw.addressOf(ctx, ip)
		if err != nil {
			return lbState{}, false, err
		}
		if found && !strings.EqualFold(a.State, "Free") {
			st.addr, st.addrRead = a, true
			return st, true, nil
		}
	}
	return st, false, nil
}

func (s steps) Listed(ctx context.Context, svc *v1.Service) (csLB, bool, error) {
	rules, err := s.listedRules(ctx, lbName(svc))
	if err != nil || len(rules) == 0 {
		return csLB{}, false, err
	}
	r := rules[0]
	return asLB(lbState{addr: address{ID: r.AddressID, IP: r.IP, State: "Allocated"}, rules: rules}), true, nil
}

func (s steps) Find(ctx context.Context, svc *v1.Service) (csLB, bool, error) {
	progress, results, err := s.jobs.check(ctx, s.gw, svc.UID)
	if err != nil {
		return csLB{}, false, err
	}
	if progress != "" {
		return csLB{ID: lbName(svc), State: lbcycle.Busy, Status: "waiting: " + progress}, true, nil
	}
	// An address this process has just associated and tagged, as its job's
	// result says: it has no rules yet (the Service had none when it was
	// associated), nothing to read.
	if id, job := s.freshAddress(svc); job != "" {
		if a, ok := associated(results[job]); ok && a.ID == id && strings.EqualFold(a.State, "Allocated") {
			a.Tags = s.ownTags(svc)
			return asLB(lbState{addr: a, addrRead: true}), true, nil
		}
	}
	st, found, err := s.read(ctx, svc)
	if err != nil || !found {
		return csLB{}, false, err
	}
	return asLB(st), true, nil
}

// Create checks what could refuse the Service (its loadBalancerIP must be a
// free public address of the zone), then associates its public address and
// tags it as the Service's.
func (s steps) Create(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	if spec.network == "" {
		return "waiting for a Node whose virtual machine is known (its guest network is the load balancer's)", nil
	}
	n, err := s.network(ctx, spec.network)
	if err != nil {
		return "", err
	}
	if spec.ip != "" {
		a, found, err := s.gw.addressOf(ctx, spec.ip)
		switch {
		case err != nil:
			return "", err
		case !found:
			return "", outcome.Refuse(outcome.ReasonAddressUnavailable,
				"spec.loadBalancerIP %s is not a public address of the zone that the CCM's account can use; nothing was created", spec.ip)
		case strings.EqualFold(a.State, "Releasing"):
			return fmt.Sprintf("public address %s is being released", spec.ip), nil
		}
	}
	ask := spec.ip
	if ask == "" {
		ask = s.keptAddress(ctx, svc)
	}
	id, job, tagJob, tagErr, err := s.associateTagged(ctx, svc, n, ask)
	if err != nil && ask != spec.ip && refusedAddress(err) {
		klog.FromContext(ctx).Info("The Service's former address cannot be had again; associating another", "service", klog.KObj(svc), "address", ask, "err", err.Error())
		id, job, tagJob, tagErr, err = s.associateTagged(ctx, svc, n, "")
	}
	if err != nil {
		if spec.ip != "" {
			return "", outcome.RefusedProblem(outcome.ReasonAddressUnavailable, fmt.Errorf("cannot associate spec.loadBalancerIP %s: %w", spec.ip, err))
		}
		return "", fmt.Errorf("cannot associate a public address: %w", err)
	}
	s.jobs.add(svc.UID, job, "associating public address "+id)
	if tagErr != nil {
		// An address without its tags would be nobody's: give it back.
		fctx, cancel := followUp(ctx)
		defer cancel()
		if _, rerr := s.gw.disassociate(fctx, id); rerr != nil {
			klog.FromContext(ctx).Error(rerr, "Cannot release the public address that could not be tagged; release it by hand", "service", klog.KObj(svc), "address", id)
		}
		return "", fmt.Errorf("cannot tag public address %s: %w", id, tagErr)
	}
	s.jobs.add(svc.UID, tagJob, "tagging public address "+id)
	s.fresh.set(svc.UID, id+" "+job)
	if spec.ip != "" {
		s.markAssociated(ctx, svc)
	}
	klog.FromContext(ctx).Info("Associating public address", "service", klog.KObj(svc), "id", id, "requested", ask)
	return fmt.Sprintf("public address %s is being associated", id), nil
}

// refusedAddress says whether an association failed for the address it
// asked for (the server answered, and not "slow down", "who are you" or
// "busy"): another is then asked for at once. Any other failure is the
// pass's, retried later as the cloud asks, never with a second call now.
func refusedAddress(err error) bool {
	var e *APIError
	return errors.As(err, &e) && !errors.Is(err, outcome.ErrThrottled) && !errors.Is(err, outcome.ErrAuth) && !errors.Is(err, outcome.ErrBusy)
}

// keptAddress is the address the Service was last published with, when it
// is free again (its association was released behind our back): associated
// again, so that the Service keeps its address. "" when there is none.
func (s steps) keptAddress(ctx context.Context, svc *v1.Service) string {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP == "" {
			continue
		}
		a, found, err := s.gw.addressOf(ctx, in.IP)
		if err != nil || !found || !strings.EqualFold(a.State, "Free") {
			return ""
		}
		klog.FromContext(ctx).Info("The Service's address is free again: associating it for the Service", "service", klog.KObj(svc), "address", in.IP)
		return in.IP
	}
	return ""
}

// freshAddress is the address this process associated for the Service and
// the job that associated it, until the address's openings are made.
func (c *Cloud) freshAddress(svc *v1.Service) (id, job string) {
	id, job, _ = strings.Cut(c.fresh.get(svc.UID), " ")
	return id, job
}

// Replace is never called: rules have no failed state.
func (s steps) Replace(context.Context, *v1.Service, csLB) (string, error) {
	return "", errors.New("cloudstack load balancers are never replaced")
}

// Converge starts every change the load balancer needs, as far as they are
// independent: first rules that are wrong go (their ports are taken until
// they are gone), then missing rules are created with their machines, the
// openings for their sources, the existing rules' algorithm, machines and
// health checks are put right.
func (s steps) Converge(ctx context.Context, svc *v1.Service, spec lbSpec, lb csLB) (string, error) {
	st := lb.Obj
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc), "address", st.addr.IP)
	var changes []string
	if spec.ip != "" && st.addr.IP != spec.ip {
		return s.moveAddress(ctx, svc, st)
	}
	if s.created.get(svc.UID) == spec.configFingerprint()+"."+spec.membersFingerprint() && len(st.rules) == len(spec.ports) {
		s.created.set(svc.UID, "") // as created, and its jobs went well (Find)
		return "", nil
	}
	if !st.addrRead && spec.ip == "" {
		// Rules the peer made: their address is adopted (tagged) before
		// anything else, so that it is found and released with the Service
		// whatever becomes of the rules, as the peer would release it.
		adopting, err := s.adoptAddress(ctx, svc, st.addr)
		if err != nil {
			return "", err
		}
		if adopting {
			changes = append(changes, "adopting public address "+st.addr.IP)
		}
	}
	n, err := s.network(ctx, spec.network)
	if err != nil {
		return "", err
	}
	op, err := s.readOpenings(ctx, svc, st, n)
	if err != nil {
		return "", err
	}
	want := map[string]portSpec{}
	for _, p := range spec.ports {
		want[p.ruleName(spec.name)] = p
	}
	current := map[string]rule{}
	for _, r := range st.rules {
		if _, dup := current[openingKey(r.Protocol, r.PublicPort)]; !dup && want[r.Name].port == r.PublicPort {
			current[openingKey(r.Protocol, r.PublicPort)] = r
		}
	}
	plan := op.plan(spec, current)
	have := map[string]rule{}
	wrong := 0
	for _, r := range st.rules {
		p, ok := want[r.Name]
		_, dup := have[r.Name]
		if !ok || dup || r.AddressID != st.addr.ID || r.PublicPort != p.port || r.PrivatePort != p.nodePort || r.Protocol != p.proto ||
			!plan.ruleServes(r, spec) {
			job, err := s.gw.deleteRule(ctx, r.ID)
			if err != nil && !isNotFound(err) {
				return "", fmt.Errorf("cannot delete rule %s: %w", r.Name, err)
			}
			s.jobs.add(svc.UID, job, "deleting rule "+r.Name)
			logger.Info("Deleting a rule not as the Service asks", "rule", r.Name)
			wrong++
			continue
		}
		have[r.Name] = r
	}
	if wrong > 0 {
		changes = append(changes, fmt.Sprintf("%d rule(s) not as the Service asks are being deleted", wrong))
		return strings.Join(changes, ", "), nil
	}
	created := 0
	peerShaped := plan.alone && op.own
	if names := slices.Sorted(maps.Keys(have)); len(names) > 0 {
		// As the Service's other rules are: one shape for all of them.
		peerShaped = plan.alone && sameSet(have[names[0]].CIDRs, spec.peerRuleCIDRs)
	}
	for _, p := range spec.ports {
		name := p.ruleName(spec.name)
		if _, ok := have[name]; ok {
			continue
		}
		cidrs := spec.ruleCIDRs
		if peerShaped {
			// The peer's shape: the address is the Service's own, so its
			// firewall rules are all the Service's, and they let in the
			// sources (on an address shared with others, another firewall
			// rule may let everyone in: the cidrlist holds the sources).
			cidrs = spec.peerRuleCIDRs
		}
		id, job, err := s.gw.createRule(ctx, rule{Name: name, Algorithm: spec.algorithm, Protocol: p.proto, AddressID: st.addr.ID,
			Network: n.ID, PublicPort: p.port, PrivatePort: p.nodePort, CIDRs: cidrs})
		if err != nil {
			return "", outcome.RefusedProblem(outcome.ReasonCloudRefused, fmt.Errorf("cannot create rule %s: %w", name, err))
		}
		s.jobs.add(svc.UID, job, "creating rule "+name)
		if len(spec.members) > 0 {
			s.ruleMachines.Stale(id)
			job, err := s.gw.assign(ctx, id, spec.members)
			if err != nil {
				return "", fmt.Errorf("cannot assign the machines to rule %s: %w", name, err)
			}
			s.jobs.add(svc.UID, job, "assigning machines to rule "+name)
		}
		created++
	}
	if created > 0 {
		changes = append(changes, fmt.Sprintf("%d rule(s) being created", created))
	}
	opened, err := s.convergeOpenings(ctx, svc, spec, st, op, plan)
	if err != nil {
		return "", err
	}
	if opened > 0 {
		s.firewall.Invalidate()
		changes = append(changes, fmt.Sprintf("%d opening(s) for the sources being changed", opened))
	}
	for _, p := range spec.ports {
		r, ok := have[p.ruleName(spec.name)]
		if !ok {
			continue
		}
		changed, err := s.convergeRule(ctx, svc, spec, r)
		if err != nil {
			return "", err
		}
		if changed {
			changes = append(changes, "rule "+r.Name+" being updated")
		}
	}
	if len(changes) == 0 {
		return "", nil
	}
	if created == len(spec.ports) {
		s.created.set(svc.UID, spec.configFingerprint()+"."+spec.membersFingerprint())
	}
	return strings.Join(changes, ", "), nil
}

// convergeRule puts an existing rule's algorithm, machines and health check
// right; true when it started a change.
func (s steps) convergeRule(ctx context.Context, svc *v1.Service, spec lbSpec, r rule) (bool, error) {
	changed := false
	if r.Algorithm != spec.algorithm {
		job, err := s.gw.updateRule(ctx, r.ID, spec.algorithm)
		if err != nil {
			return false, fmt.Errorf("cannot update rule %s: %w", r.Name, err)
		}
		s.jobs.add(svc.UID, job, "updating rule "+r.Name)
		changed = true
	}
	members, err := s.convergeMembers(ctx, svc, spec, r)
	if err != nil {
		return false, err
	}
	checks, err := s.gw.healthChecks(ctx, r.ID)
	if err != nil {
		return false, fmt.Errorf("cannot list the health checks of rule %s: %w", r.Name, err)
	}
	var keep bool
	for _, h := range checks {
		if spec.check != nil && !keep && h.Path == spec.check.Path && h.Interval == spec.check.Interval {
			keep = true
			continue
		}
		job, err := s.gw.deleteHealthCheck(ctx, h.ID)
		if err != nil && !isNotFound(err) {
			return false, fmt.Errorf("cannot delete a health check of rule %s: %w", r.Name, err)
		}
		s.jobs.add(svc.UID, job, "deleting a health check of rule "+r.Name)
		changed = true
	}
	if spec.check != nil && !keep && len(checks) == 0 {
		job, err := s.gw.createHealthCheck(ctx, r.ID, *spec.check)
		if err != nil {
			return false, outcome.RefusedProblem(outcome.ReasonCloudRefused, fmt.Errorf("cannot create the health check of rule %s: %w", r.Name, err))
		}
		s.jobs.add(svc.UID, job, "creating the health check of rule "+r.Name)
		changed = true
	}
	return changed || members, nil
}

// convergeMembers assigns the machines a rule lacks and removes the ones it
// should not have; true when it started a change.
func (s steps) convergeMembers(ctx context.Context, svc *v1.Service, spec lbSpec, r rule) (bool, error) {
	current, err := s.gw.ruleMachines(ctx, r.ID)
	if err != nil {
		return false, fmt.Errorf("cannot list the machines of rule %s: %w", r.Name, err)
	}
	var add, remove []string
	defer func() {
		if len(add)+len(remove) > 0 {
			s.ruleMachines.Stale(r.ID) // the drift check reads what this leaves
		}
	}()
	for _, m := range spec.members {
		if !slices.Contains(current, m) {
			add = append(add, m)
		}
	}
	for _, m := range current {
		if !slices.Contains(spec.members, m) {
			remove = append(remove, m)
		}
	}
	if len(add) > 0 {
		job, err := s.gw.assign(ctx, r.ID, add)
		if err != nil {
			return false, fmt.Errorf("cannot assign machines to rule %s: %w", r.Name, err)
		}
		s.jobs.add(svc.UID, job, "assigning machines to rule "+r.Name)
	}
	if len(remove) > 0 {
		job, err := s.gw.unassign(ctx, r.ID, remove)
		if err != nil && !isNotFound(err) {
			return false, fmt.Errorf("cannot remove machines from rule %s: %w", r.Name, err)
		}
		s.jobs.add(svc.UID, job, "removing machines from rule "+r.Name)
	}
	return len(add)+len(remove) > 0, nil
}

// openingKey is a protocol and port.
func openingKey(proto string, port int) string { return fmt.Sprintf("%s/%d", l4(proto), port) }

// openings are the Service's current openings: the firewall rules on its
// address (an isolated network), or the ACL items of the tier's list tagged
// as the Service's (a VPC). enforced: the network lets only what they open
// in (false: no firewall, or the server's own default list, left alone).
type openings struct {
	firewall, enforced bool
	acl, list          string // the tier's ACL list, by id and name
	current            []opening
	// own: the address is the Service's own, so every firewall rule on it
	// is judged, not only those of the Service's ports.
	own bool
}

// readOpenings reads the Service's openings (none to read on an address
// this process has just associated).
func (s steps) readOpenings(ctx context.Context, svc *v1.Service, st lbState, n network) (openings, error) {
	fresh, _ := s.freshAddress(svc)
	if n.Firewall {
		op := openings{firewall: true, enforced: true, own: st.addrRead && s.owns(st.addr, svc)}
		if st.addr.ID == "" || fresh != st.addr.ID {
			var err error
			if op.current, err = s.gw.firewallRules(ctx, st.addr.ID); err != nil {
				return openings{}, err
			}
		}
		return op, nil
	}
	if n.ACL == "" {
		return openings{}, nil
	}
	list, err := s.gw.aclListName(ctx, n.ACL)
	if err != nil {
		return openings{}, err
	}
	op := openings{acl: n.ACL, list: list}
	if list == "default_allow" || list == "default_deny" {
		klog.FromContext(ctx).V(2).Info("The tier's ACL list is the server's own; it is left as it is", "service", klog.KObj(svc), "list", list)
		return op, nil
	}
	items, err := s.gw.aclItems(ctx, n.ACL)
	if err != nil {
		return openings{}, err
	}
	for _, it := range items {
		if it.Tags[tagService] == string(svc.UID) {
			op.current = append(op.current, it)
		}
	}
	op.enforced = true
	return op, nil
}

// openingPlan is which current openings stay, and what each port's opening
// lets in once the changes are made.
type openingPlan struct {
	// alone: the port's opening alone decides what else reaches it, so a
	// rule's cidrlist is judged with it: a firewall rule on the address. An
	// ACL list is not: another item (the peer's, untagged, to everyone) may
	// let in more, so there the cidrlist must hold the sources itself.
	alone bool
	keep  map[string]bool     // current openings kept, by id
	after map[string][]string // by openingKey
}

// plan judges the current openings by what they let in together with the
// rule of their port (current, by openingKey), not by their lists alone: the
// peer puts the source ranges in the firewall and everyone in the rule's
// cidrlist, or the source-cidrs annotation in the rule and everyone in the
// firewall; we put what is asked in both. Either lets in the same sources, so
// neither is rebuilt.
func (op openings) plan(spec lbSpec, current map[string]rule) openingPlan {
	pl := openingPlan{alone: op.firewall && op.enforced, keep: map[string]bool{}, after: map[string][]string{}}
	want := map[string]bool{}
	for _, p := range spec.ports {
		want[openingKey(p.proto, p.port)] = true
	}
	goal, simple := letIn(spec.ruleCIDRs, spec.sources)
	for _, o := range op.current {
		key := openingKey(o.Protocol, o.Start)
		if o.Start != o.End || !want[key] || pl.after[key] != nil {
			continue
		}
		r, ruled := current[key]
		together, one := letIn(r.CIDRs, o.CIDRs)
		if sameSet(o.CIDRs, spec.sources) ||
			(pl.alone && ruled && simple && one && sameSet(r.CIDRs, spec.ruleCIDRs) && sameSet(together, goal)) {
			pl.keep[o.ID], pl.after[key] = true, o.CIDRs
		}
	}
	for key := range want {
		if pl.after[key] == nil {
			pl.after[key] = spec.sources
			if pl.alone && op.own {
				// The peer's shape on an address of the Service's own:
				// with the rule's cidrlist, it lets in the same.
				pl.after[key] = spec.peerSources
			}
		}
	}
	return pl
}

// ruleServes says whether a rule's cidrlist, with what its port's opening
// will let in, lets in what the Service asks.
func (pl openingPlan) ruleServes(r rule, spec lbSpec) bool {
	if sameSet(r.CIDRs, spec.ruleCIDRs) {
		return true
	}
	if !pl.alone {
		return false // the cidrlist decides
	}
	goal, simple := letIn(spec.ruleCIDRs, spec.sources)
	together, one := letIn(r.CIDRs, pl.after[openingKey(r.Protocol, r.PublicPort)])
	return simple && one && sameSet(together, goal)
}

// letIn is what a rule's cidrlist and an opening let in together, when that
// is one of them: one lets everyone in, or both are the same set. one is
// false for two different lists (their intersection is not computed).
func letIn(rule, opening []string) (sources []string, one bool) {
	switch {
	case sameSet(rule, everyone):
		return opening, true
	case sameSet(opening, everyone), sameSet(rule, opening):
		return rule, true
	}
	return nil, false
}

// convergeOpenings lets the Service's sources in to its ports as planned:
// the openings not kept go (on an address not the Service's own, only those
// of its ports), the missing ones are made (ACL items tagged as the
// Service's). It starts the changes and says how many.
func (s steps) convergeOpenings(ctx context.Context, svc *v1.Service, spec lbSpec, st lbState, op openings, pl openingPlan) (int, error) {
	s.fresh.set(svc.UID, "")
	if !op.enforced {
		return 0, nil
	}
	changes := 0
	matched := map[string]bool{}
	for _, o := range op.current {
		key := openingKey(o.Protocol, o.Start)
		if pl.keep[o.ID] {
			matched[key] = true
			continue
		}
		if _, wanted := pl.after[key]; op.firewall && !wanted && !op.own {
			continue // not ours to judge: the address is not the Service's own
		}
		var job string
		var err error
		if op.firewall {
			job, err = s.gw.deleteFirewallRule(ctx, o.ID)
		} else {
			job, err = s.gw.deleteACLItem(ctx, o.ID)
		}
		if err != nil && !isNotFound(err) {
			return 0, fmt.Errorf("cannot delete opening %s: %w", o.ID, err)
		}
		s.jobs.add(svc.UID, job, "deleting opening "+o.ID)
		changes++
	}
	var created []string
	for _, p := range spec.ports {
		key := openingKey(p.proto, p.port)
		if matched[key] {
			continue
		}
		matched[key] = true
		o := opening{Protocol: l4(p.proto), Start: p.port, End: p.port, CIDRs: pl.after[key]}
		var id, job string
		var err error
		if op.firewall {
			job, err = s.gw.createFirewallRule(ctx, st.addr.ID, o)
		} else {
			id, job, err = s.gw.createACLItem(ctx, op.acl, o)
			created = append(created, id)
		}
		if err != nil {
			return 0, outcome.RefusedProblem(outcome.ReasonCloudRefused, fmt.Errorf("cannot open port %d/%s%s: %w", p.port, l4(p.proto), inList(op.list), err))
		}
		s.jobs.add(svc.UID, job, fmt.Sprintf("opening port %d/%s", p.port, l4(p.proto)))
		changes++
	}
	if len(created) > 0 {
		job, err := s.gw.tag(ctx, "NetworkACL", created, s.newTags(svc))
		if err != nil {
			return 0, fmt.Errorf("cannot tag ACL items %s: %w", strings.Join(created, ", "), err)
		}
		s.jobs.add(svc.UID, job, "tagging ACL items")
	}
	return changes, nil
}

// inList names an ACL list in a message ("" for a firewall).
func inList(list string) string {
	if list == "" {
		return ""
	}
	return " in ACL list " + list
}

// Publish says the status: the address, or the hostname annotation's name.
func (s steps) Publish(_ context.Context, _ *v1.Service, spec lbSpec, lb csLB) (*v1.LoadBalancerStatus, string, error) {
	if lb.Obj.addr.IP == "" {
		return nil, "", errors.New("the load balancer has no public address yet")
	}
	return statusFor(spec, lb.Obj.addr.IP), lb.Obj.addr.IP, nil
}

func statusFor(spec lbSpec, ip string) *v1.LoadBalancerStatus {
	if spec.hostname != "" {
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: spec.hostname}}}
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip}}}
}

// Published answers from the shared listing: every rule of the spec there,
// on the recorded address.
func (s steps) Published(_ context.Context, _ *v1.Service, spec lbSpec, rec lbcycle.Record, lb csLB) (*v1.LoadBalancerStatus, bool, error) {
	if rec.Address == "" || lb.Obj.addr.IP != rec.Address || !hasRules(lb.Obj, spec) {
		return nil, false, nil
	}
	return statusFor(spec, rec.Address), true, nil
}

// hasRules says whether the state has exactly the spec's rules, on its address.
func hasRules(st lbState, spec lbSpec) bool {
	if len(st.rules) != len(spec.ports) {
		return false
	}
	for _, p := range spec.ports {
		name := p.ruleName(spec.name)
		if !slices.ContainsFunc(st.rules, func(r rule) bool {
			return r.Name == name && r.AddressID == st.addr.ID && r.PublicPort == p.port && r.PrivatePort == p.nodePort
		}) {
			return false
		}
	}
	return true
}

// UpdateMembers puts the rules' machines right when only the Nodes changed.
//
// The machines a pass assigned and removed are not read again: once their
// jobs went well the rules have them.
func (s steps) UpdateMembers(ctx context.Context, svc *v1.Service, spec lbSpec, lb csLB) (string, bool, error) {
	if !hasRules(lb.Obj, spec) {
		return "", false, nil
	}
	progress, _, err := s.jobs.check(ctx, s.gw, svc.UID)
	if progress != "" {
		return "waiting: " + progress, true, nil
	}
	want := spec.membersFingerprint()
	changedTo := s.assigned.get(svc.UID)
	s.assigned.set(svc.UID, "")
	if err != nil {
		// Read below, and done again.
		klog.FromContext(ctx).V(2).Info("A change of the rules' machines failed; they are read and put right", "service", klog.KObj(svc), "err", err.Error())
	} else if changedTo == want {
		return "", true, nil
	}
	changed := 0
	for _, r := range lb.Obj.rules {
		c, err := s.convergeMembers(ctx, svc, spec, r)
		if err != nil {
			return "", true, err
		}
		if c {
			changed++
		}
	}
	if changed > 0 {
		s.assigned.set(svc.UID, want)
		return fmt.Sprintf("the machines of %d rule(s) are being changed", changed), true, nil
	}
	return "", true, nil
}

// Drift sees, in the shared listings, a rule missing or moved, or a port of
// the rules no firewall rule opens any more (an isolated network).
func (s steps) Drift(ctx context.Context, svc *v1.Service, rec lbcycle.Record, lb csLB) (string, error) {
	st := lb.Obj
	if rec.Address != "" && st.addr.IP != rec.Address {
		return fmt.Sprintf("the rules are on %s, not on %s", st.addr.IP, rec.Address), nil
	}
	if len(st.rules) < len(svc.Spec.Ports) {
		return fmt.Sprintf("%d rule(s) for %d port(s)", len(st.rules), len(svc.Spec.Ports)), nil
	}
	if len(st.rules) == 0 {
		return "", nil
	}
	open, what, err := s.openings(ctx, svc, st)
	if err != nil || what == "" {
		return "", err
	}
	for _, r := range st.rules {
		if !slices.ContainsFunc(open, func(o opening) bool { return o.opens(r) }) {
			return fmt.Sprintf("no %s opens port %d/%s of %s", what, r.PublicPort, l4(r.Protocol), st.addr.IP), nil
		}
	}
	return "", nil
}

func (s steps) Relist() {
	s.listing.Invalidate()
	s.firewall.Invalidate()
	s.acls.forget()
	s.ruleMachines.Pass()
}

// aclPass is each ACL list's items as one drift pass read them: one listing
// of a list (and one read of its name) for every Service of its tier.
type aclPass struct {
	turn provider.Turn // one read at a time, across its calls
	mu   sync.Mutex
	read map[string]aclRead
	gen  int // counts forget: a read begun before is not kept
}

type aclRead struct {
	items   []opening
	managed bool // not the server's own default_allow or default_deny
}

// items are list id's items, read once a pass; managed is false for the
// server's own lists, which the CCM leaves alone (and so has no item in).
func (a *aclPass) items(ctx context.Context, gw *gateway, id string) ([]opening, bool, error) {
	if r, ok := a.known(id); ok {
		return r.items, r.managed, nil
	}
	done, err := a.turn.Take(ctx, "another read of network ACL list "+id)
	if err != nil {
		return nil, false, err
	}
	defer done()
	if r, ok := a.known(id); ok {
		return r.items, r.managed, nil
	}
	a.mu.Lock()
	gen := a.gen
	a.mu.Unlock()
	name, err := gw.aclListName(ctx, id)
	if err != nil {
		return nil, false, err
	}
	r := aclRead{managed: name != "default_allow" && name != "default_deny"}
	if r.managed {
		if r.items, err = gw.aclItems(ctx, id); err != nil {
			return nil, false, err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gen == gen {
		if a.read == nil {
			a.read = map[string]aclRead{}
		}
		a.read[id] = r
	}
	return r.items, r.managed, nil
}

func (a *aclPass) known(id string) (aclRead, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.read[id]
	return r, ok
}

func (a *aclPass) forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.read = nil
	a.gen++
}

// addrOpenings are the firewall rules of one address.
type addrOpenings struct {
	addr     string
	openings []opening
}

// newFirewallListing is the shared listing of every firewall rule, by
// address: what the drift check reads.
func newFirewallListing(gw *gateway) *snapshot.Snapshot[addrOpenings] {
	return snapshot.New(ProviderName+"-firewall", listingMaxAge, listingMinMiss, func(ctx context.Context) ([]addrOpenings, error) {
		all, err := gw.firewallRules(ctx, "")
		if err != nil {
			return nil, err
		}
		byAddr := map[string]*addrOpenings{}
		var out []addrOpenings
		for _, o := range all {
			if byAddr[o.AddressID] == nil {
				byAddr[o.AddressID] = &addrOpenings{addr: o.AddressID}
			}
			g := byAddr[o.AddressID]
			g.openings = append(g.openings, o)
		}
		for _, g := range byAddr {
			out = append(out, *g)
		}
		return out, nil
	}, func(g addrOpenings) []string { return []string{"addr/" + g.addr} })
}

// RetryAfter is when the Service's jobs should be done.
func (s steps) RetryAfter(svc *v1.Service) time.Duration { return s.jobs.retryAfter(svc.UID) }

// Delete makes one step of deleting the Service's load balancer: its rules
// with their openings first, then the address if it was associated for the
// Service. Done when nothing of it is left.
func (s steps) Delete(ctx context.Context, _ string, svc *v1.Service) (string, error) {
	progress, _, err := s.jobs.check(ctx, s.gw, svc.UID)
	if err != nil {
		klog.FromContext(ctx).Info("A change of the deleted Service's load balancer had failed", "service", klog.KObj(svc), "err", err.Error())
	}
	if progress != "" {
		return progress, nil
	}
	st, found, err := s.read(ctx, svc)
	if err != nil {
		return "", err
	}
	if !found {
		s.created.set(svc.UID, "")
		s.fresh.set(svc.UID, "")
		s.assigned.set(svc.UID, "")
		s.forgetRecord(ctx, svc)
		return "", nil
	}
	if lb := asLB(st); lb.State == lbcycle.Busy {
		return "the load balancer is " + lb.Status, nil
	}
	if len(st.rules) > 0 {
		if !st.addrRead && strings.TrimSpace(svc.Spec.LoadBalancerIP) == "" {
			// The peer's address, never adopted (the Service goes before
			// Overcast converged it): tagged first, so that it is released
			// once its rules are gone, as the peer would.
			if _, err := s.adoptAddress(ctx, svc, st.addr); err != nil {
				return "", err
			}
		}
		if err := s.closeOpenings(ctx, svc, st); err != nil {
			return "", err
		}
		for _, r := range st.rules {
			job, err := s.gw.deleteRule(ctx, r.ID)
			if err != nil && !isNotFound(err) {
				return "", fmt.Errorf("cannot delete rule %s: %w", r.Name, err)
			}
			s.jobs.add(svc.UID, job, "deleting rule "+r.Name)
		}
		klog.FromContext(ctx).Info("Deleting the load balancer rules", "service", klog.KObj(svc), "rules", len(st.rules))
		return fmt.Sprintf("%d rule(s) are being deleted", len(st.rules)), nil
	}
	if !st.addrRead {
		s.forgetRecord(ctx, svc)
		return "", nil
	}
	progress, err = s.release(ctx, svc, st.addr, true)
	if err == nil && progress == "" {
		s.forgetRecord(ctx, svc)
	}
	return progress, err
}

// forgetRecord drops the converged record of a Service whose load balancer is
// gone (a Service made a LoadBalancer again starts afresh).
func (c *Cloud) forgetRecord(ctx context.Context, svc *v1.Service) {
	c.records.Forget(ctx, svc)
}

// closeOpenings deletes the openings of the Service's rules: on its address's
// firewall, the rules for their ports (all of them on an address of its own);
// in a VPC, the ACL items tagged as the Service's.
func (s steps) closeOpenings(ctx context.Context, svc *v1.Service, st lbState) error {
	n, err := s.network(ctx, st.rules[0].Network)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	if n.Firewall {
		addr := st.addr
		if a, found, err := s.gw.address(ctx, addr.ID); err != nil {
			return err
		} else if found {
			addr = a
		}
		own := addr.addrOwnedBy(s.Cloud, svc)
		ports := map[string]bool{}
		for _, r := range st.rules {
			ports[openingKey(r.Protocol, r.PublicPort)] = true
		}
		// Rules of other Services on the address (a shared loadBalancerIP)
		// keep the openings of their ports.
		var others []rule
		if own {
			on, err := s.gw.rulesOn(ctx, addr.ID)
			if err != nil {
				return err
			}
			for _, r := range on {
				if lbNameOf(r.Name) != lbName(svc) {
					others = append(others, r)
				}
			}
		}
		current, err := s.gw.firewallRules(ctx, addr.ID)
		if err != nil {
			return err
		}
		for _, f := range current {
			if !own && (f.Start != f.End || !ports[openingKey(f.Protocol, f.Start)]) {
				continue
			}
			if slices.ContainsFunc(others, func(r rule) bool {
				return l4(r.Protocol) == l4(f.Protocol) && f.Start <= r.PublicPort && r.PublicPort <= f.End
			}) {
				continue
			}
			job, err := s.gw.deleteFirewallRule(ctx, f.ID)
			if err != nil && !isNotFound(err) {
				return fmt.Errorf("cannot delete firewall rule %s: %w", f.ID, err)
			}
			s.jobs.add(svc.UID, job, "deleting firewall rule "+f.ID)
		}
		return nil
	}
	if n.ACL == "" {
		return nil
	}
	items, err := s.gw.aclItems(ctx, n.ACL)
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.Tags[tagService] != string(svc.UID) || it.Tags[tagCluster] != s.Cluster.Get() {
			continue
		}
		job, err := s.gw.deleteACLItem(ctx, it.ID)
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("cannot delete ACL item %s: %w", it.ID, err)
		}
		s.jobs.add(svc.UID, job, "deleting ACL item "+it.ID)
	}
	klog.FromContext(ctx).V(2).Info("Closed the openings of the Service's rules", "service", klog.KObj(svc))
	return nil
}

// sameSet says whether two lists of CIDRs are the same set (none is everyone,
// as the server takes it).
func sameSet(a, b []string) bool {
	if len(a) == 0 {
		a = everyone
	}
	if len(b) == 0 {
		b = everyone
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// memo is a note per Service kept by this process ("" is none).
type memo struct {
	mu sync.Mutex
	m  map[types.UID]string
}

func (m *memo) get(uid types.UID) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[uid]
}

// set notes v for the Service; "" forgets it.
func (m *memo) set(uid types.UID, v string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v == "" {
		delete(m.m, uid)
		return
	}
	if m.m == nil {
		m.m = map[types.UID]string{}
	}
	m.m[uid] = v
}

// markAssociated writes the peer's ip-associated-by-controller annotation:
// the Service's loadBalancerIP was associated for it, and goes with it (with
// either CCM).
func (c *Cloud) markAssociated(ctx context.Context, svc *v1.Service) {
	patch := map[string]any{string(annotation.CloudStackIPAssociatedByController): "true"}
	lbcycle.PatchAnnotations(ctx, c.Kube(), svc, patch)
}

// ruleGroup is the rules whose names begin with one load balancer name.
type ruleGroup struct {
	name  string
	rules []rule
}

// newRuleListing is the shared listing of every load balancer rule, grouped
// by the load balancer name their names begin with, at most listingMaxAge old.
func newRuleListing(gw *gateway) *snapshot.Snapshot[ruleGroup] {
	return snapshot.New(ProviderName, listingMaxAge, listingMinMiss, func(ctx context.Context) ([]ruleGroup, error) {
		all, err := gw.rules(ctx, "")
		if err != nil {
			return nil, err
		}
		byName := map[string]int{}
		var groups []ruleGroup
		for _, r := range all {
			n := lbNameOf(r.Name)
			if n == "" {
				continue
			}
			i, ok := byName[n]
			if !ok {
				i = len(groups)
				byName[n] = i
				groups = append(groups, ruleGroup{name: n})
			}
			groups[i].rules = append(groups[i].rules, r)
		}
		return groups, nil
	}, func(g ruleGroup) []string { return []string{"lb/" + g.name} })
}

// listedRules is the rules of load balancer name in the shared listing.
func (c *Cloud) listedRules(ctx context.Context, name string) ([]rule, error) {
	g, _, err := c.listing.Get(ctx, "lb/"+name)
	return g.rules, err
}

// GetLoadBalancer is the status of the Service's rules, from the shared
// listing.
func (c *Cloud) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	rules, err := c.listedRules(ctx, lbName(svc))
	if err != nil || len(rules) == 0 {
		return nil, false, err
	}
	hostname, _ := annotation.CloudStackHostname.String(svc)
	return statusFor(lbSpec{hostname: strings.TrimSpace(hostname)}, rules[0].IP), true, nil
}

// GetLoadBalancerName is the peer's name, which begins each rule's name.
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return lbName(svc)
}
