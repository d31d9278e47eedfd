package oci

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// Security list rules for a load balancer, in the peer's modes: All opens
// the load balancer's subnet to the Service's sources on its ports, lets it
// reach the nodes' subnets on the node ports and the health check port, and
// opens the nodes' subnets to it there; Frontend does the first alone; None
// nothing. Unlike the peer, every rule added carries a mark in its
// description (the cluster's UID and the Service's), and only rules with
// this cluster's mark for the Service are ever removed: two clusters on one
// security list never remove each other's rules (peer issues #150, #118). A
// rule without a mark (the peer's, an operator's) that already does what one
// of ours would (same direction, peer, protocol and ports) stands for ours
// only on the peer's own load balancer of the Service (one without this
// cluster's tag: a migration, where the rule is that peer's and writing
// nothing is the promise). Beside a load balancer Overcast built, such a rule
// may be another cluster's peer's, which removes it when its Service goes:
// a marked one is added beside it (a security list is a list: OCI keeps two
// rules that differ only in their description). A rule another Service
// marked never counts, as it may go without this one.
// Lists are updated with If-Match: a list changed meanwhile (412) is read
// again and the change made anew (peer issues #92, #104).

// securityRetries bounds the read-and-update attempts of one list in a step.
const securityRetries = 8

// markPrefix starts a rule's mark: "overcast:<cluster UID>/<Service UID>".
const markPrefix = "overcast:"

// tcpRule is a stateful TCP rule to (ingress: from) cidr on port.
func tcpRule(ingress bool, cidr string, port int, mark string) ociapi.SecurityRule {
	r := ociapi.SecurityRule{Protocol: "6", IsStateless: false, Description: mark}
	if ingress {
		r.Source, r.SourceType = cidr, "CIDR_BLOCK"
	} else {
		r.Destination, r.DestinationType = cidr, "CIDR_BLOCK"
	}
	r.TCPOptions = &ociapi.TCPOptions{DestinationPortRange: &ociapi.PortRange{Min: port, Max: port}}
	return r
}

// does says whether r does what want does (its mark aside).
func does(r ociapi.SecurityRule, want ociapi.SecurityRule) bool {
	if r.Protocol != want.Protocol || r.Source != want.Source || r.Destination != want.Destination || r.IsStateless || r.TCPOptions == nil {
		return false
	}
	d, s := r.TCPOptions.DestinationPortRange, r.TCPOptions.SourcePortRange
	w := want.TCPOptions.DestinationPortRange
	return s == nil && d != nil && *d == *w
}

// listRules are the rules a Service wants in one security list.
type listRules struct{ ingress, egress []ociapi.SecurityRule }

// mark is the mark of the Service's rules in this cluster; a rule's
// description is the mark and the Service's name.
func (st *steps) mark(svc *v1.Service) string {
	return markPrefix + st.cluster.Get() + "/" + string(svc.UID)
}

func (st *steps) describe(svc *v1.Service) string {
	return st.mark(svc) + " " + svc.Namespace + "/" + svc.Name
}

// sources are the addresses the Service admits.
func sources(svc *v1.Service) ([]string, error) {
	set, err := servicehelpers.GetLoadBalancerSourceRanges(svc)
	if err != nil {
		return nil, err
	}
	out := set.StringSlice()
	slices.Sort(out)
	return out, nil
}

// subnetCache keeps the subnets looked up (their CIDRs and security lists),
// for subnetTTL.
type subnetCache struct {
	mu   sync.Mutex
	byID map[string]cachedSubnet
}

type cachedSubnet struct {
	ociapi.Subnet
	at time.Time
	// list is the security list its rules go in, once chosen (subnetList).
	list string
}

const subnetTTL = time.Hour

func (st *steps) subnet(ctx context.Context, id string) (ociapi.Subnet, error) {
	st.subnetCache.mu.Lock()
	s, ok := st.subnetCache.byID[id]
	st.subnetCache.mu.Unlock()
	if ok && time.Since(s.at) < subnetTTL {
		return s.Subnet, nil
	}
	sub, err := st.api.Subnet(ctx, id)
	if err != nil {
		return ociapi.Subnet{}, fmt.Errorf("looking up subnet %s: %w", id, err)
	}
	st.subnetCache.mu.Lock()
	st.subnetCache.byID[id] = cachedSubnet{Subnet: sub, at: time.Now()}
	st.subnetCache.mu.Unlock()
	return sub, nil
}

// subnetList is subnet id and the security list its rules go in, both
// looked up once per subnetTTL.
func (st *steps) subnetList(ctx context.Context, id string) (ociapi.Subnet, string, error) {
	sub, err := st.subnet(ctx, id)
	if err != nil {
		return ociapi.Subnet{}, "", err
	}
	st.subnetCache.mu.Lock()
	list := st.subnetCache.byID[id].list
	st.subnetCache.mu.Unlock()
	if list != "" {
		return sub, list, nil
	}
	if list, err = st.securityListOf(ctx, sub); err != nil {
		return ociapi.Subnet{}, "", err
	}
	st.subnetCache.mu.Lock()
	if e, ok := st.subnetCache.byID[id]; ok {
		e.list = list
		st.subnetCache.byID[id] = e
	}
	st.subnetCache.mu.Unlock()
	return sub, list, nil
}

// securityListOf is the security list of subnet the rules go in: the
// config's loadBalancer.securityLists, else the subnet's oldest (as the
// peer picks it).
func (st *steps) securityListOf(ctx context.Context, sub ociapi.Subnet) (string, error) {
	if lb := st.cfg.LoadBalancer; lb != nil {
		if id := lb.SecurityLists[sub.ID]; id != "" {
			return id, nil
		}
	}
	switch len(sub.SecurityListIDs) {
	case 0:
		return "", fmt.Errorf("subnet %s has no security list", sub.ID)
	case 1:
		return sub.SecurityListIDs[0], nil
	}
	oldest, at := "", time.Time{}
	for _, id := range sub.SecurityListIDs {
		sl, err := st.api.SecurityList(ctx, id)
		if err != nil {
			return "", err
		}
		if oldest == "" || sl.TimeCreated.Before(at) {
			oldest, at = id, sl.TimeCreated
		}
	}
	return oldest, nil
}

// wantedRules are the rules the Service's load balancer needs, by security
// list, in its mode; and every list where the Service may have rules.
func (st *steps) wantedRules(ctx context.Context, svc *v1.Service, spec lbSpec) (map[string]listRules, []string, error) {
	want := map[string]listRules{}
	var lists []string
	note := func(id string) {
		if !slices.Contains(lists, id) {
			lists = append(lists, id)
		}
	}
	mark := st.describe(svc)
	var lbLists, lbCIDRs []string
	for _, id := range spec.subnets {
		sub, sl, err := st.subnetList(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		note(sl)
		lbLists, lbCIDRs = append(lbLists, sl), append(lbCIDRs, spec.ipv.subnetCIDRs(sub)...)
		if spec.mode == ModeNone {
			continue
		}
		w := want[sl]
		for _, src := range spec.sources {
			for _, p := range spec.listenerPorts {
				w.ingress = append(w.ingress, tcpRule(true, src, p, mark))
			}
		}
		want[sl] = w
	}
	nodeSubnets, err := st.nodeSubnets(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range nodeSubnets {
		sub, sl, err := st.subnetList(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		note(sl)
		if spec.mode != ModeAll {
			continue
		}
		for _, lbList := range lbLists {
			w := want[lbList]
			for _, cidr := range spec.ipv.subnetCIDRs(sub) {
				for _, p := range spec.backendPorts {
					w.egress = append(w.egress, tcpRule(false, cidr, p, mark))
				}
			}
			want[lbList] = w
		}
		w := want[sl]
		for _, cidr := range append(slices.Clone(lbCIDRs), clientSources(spec)...) {
			for _, p := range nodePortsFrom(svc, spec, cidr, lbCIDRs) {
				w.ingress = append(w.ingress, tcpRule(true, cidr, p, mark))
			}
		}
		want[sl] = w
	}
	return want, lists, nil
}

// clientSources are the sources the nodes see themselves, beside the load
// balancer's subnets: those of a network load balancer that preserves the
// client's address (as the peer opens them: getNodeIngressRules).
func clientSources(spec lbSpec) []string {
	if !spec.preserveSource {
		return nil
	}
	return spec.sources
}

// nodePortsFrom are the ports the nodes open to cidr: the node ports and the
// health check's to the load balancer's subnets, the node ports alone to
// the clients of a load balancer that preserves their address.
func nodePortsFrom(svc *v1.Service, spec lbSpec, cidr string, lbCIDRs []string) []int {
	if slices.Contains(lbCIDRs, cidr) {
		return spec.backendPorts
	}
	var out []int
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			out = append(out, int(p.NodePort))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// nodeSubnets are the subnets of the backends' instances.
func (st *steps) nodeSubnets(ctx context.Context, spec lbSpec) ([]string, error) {
	var ids []string
	for _, bs := range spec.backendSets {
		for _, b := range bs.Backends {
			m, found, err := st.machines.Get(ctx, "ip/"+b.IPAddress)
			if err != nil {
				return nil, err
			}
			if found && m.SubnetID != "" && !slices.Contains(ids, m.SubnetID) {
				ids = append(ids, m.SubnetID)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// applyRules makes each list of lists hold exactly the Service's wanted
// rules among those with its mark, leaving every other rule as it is.
// adopt says an unmarked rule doing what one of them would stands for it
// (the Service's load balancer is the peer's: adopting).
func (st *steps) applyRules(ctx context.Context, svc *v1.Service, want map[string]listRules, lists []string, adopt bool) error {
	if st.cluster.Get() == "" {
		return errors.New("the cluster UID (the kube-system namespace's), which marks the security rules, is not known yet")
	}
	mark := st.mark(svc) + " "
	relied := st.reliedByPeer(ctx, svc)
	for _, id := range lists {
		ch := listChange{mark: mark, want: want[id], adopt: adopt, handOver: func(r ociapi.SecurityRule) (string, bool, error) { return relied(id, r) }}
		if err := st.updateList(ctx, id, ch); err != nil {
			return fmt.Errorf("security list %s: %w", id, err)
		}
	}
	return nil
}

// listChange is one Service's rules for a list, waiting to be written.
type listChange struct {
	mark  string
	want  listRules
	adopt bool
	// drop are the ports whose peer's rules go (peerrules.go).
	drop map[int]bool
	// handOver is, for a rule with the mark that goes, the description it
	// is kept with if a peer's load balancer relies on it (handover.go).
	handOver func(ociapi.SecurityRule) (string, bool, error)
	done     chan error
}

// listWriter writes each security list's changes in batches: while one
// batch is written, the changes that arrive wait, then go in one read and
// one write together. 100 Services at once cost a few writes of their list,
// not 100 and their 412s.
type listWriter struct {
	mu     sync.Mutex
	queued map[string][]listChange // by list
	busy   map[string]bool
	// last is each list as this CCM last read or wrote it: the next batch
	// within listReuse writes on it with its etag instead of reading it
	// first (a 412 says another writer came between, and it is read).
	last map[string]knownList
}

// knownList is a security list and when it was known so.
type knownList struct {
	sl ociapi.SecurityList
	at time.Time
}

// listReuse is how long a list this CCM read or wrote is written on without
// reading it again: long enough for a burst of Services, short enough that a
// rule removed by hand is seen soon by a Service's next pass.
const listReuse = 10 * time.Second

// updateList makes list id hold exactly ch.want among the rules marked
// ch.mark, in the next batch of its changes.
func (st *steps) updateList(ctx context.Context, id string, ch listChange) error {
	ch.done = make(chan error, 1)
	w := &st.lists
	w.mu.Lock()
	if w.queued == nil {
		w.queued, w.busy = map[string][]listChange{}, map[string]bool{}
	}
	w.queued[id] = append(w.queued[id], ch)
	if !w.busy[id] {
		w.busy[id] = true
		go st.writeLists(id)
	}
	w.mu.Unlock()
	select {
	case err := <-ch.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listWriteTimeout bounds one batch's reads and writes.
const listWriteTimeout = time.Minute

// listPace is the least time between the starts of two batches of one list
// while creations wait for the client-side write limit (every place of
// Cloud.asks taken): the changes arriving meanwhile wait to go in one write,
// which spares the limit the creations need. Otherwise a batch goes at once.
const listPace = 500 * time.Millisecond

// writeLists writes list id's batches until none is queued.
func (st *steps) writeLists(id string) {
	w := &st.lists
	var last time.Time
	for {
		if wait := listPace - time.Since(last); !last.IsZero() && wait > 0 && len(st.asks) == cap(st.asks) {
			time.Sleep(wait)
		}
		last = time.Now()
		w.mu.Lock()
		batch := w.queued[id]
		delete(w.queued, id)
		if len(batch) == 0 {
			w.busy[id] = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), listWriteTimeout)
		failed := make([]error, len(batch))
		err := st.writeBatch(ctx, id, batch, failed)
		cancel()
		for i, ch := range batch {
			ch.done <- cmp.Or(failed[i], err)
		}
	}
}

// writeBatch reads the list (or takes it as this CCM last knew it, within
// listReuse), works out its rules with every change of the batch, and writes
// them if they changed, with If-Match; a 412 (another writer: another
// cluster, or the peer) reads it again. A change that cannot be worked out
// (failed, by its index) is left out: the others are written.
func (st *steps) writeBatch(ctx context.Context, id string, batch []listChange, failed []error) error {
	var err error
	for attempt := range securityRetries {
		if attempt > 0 {
			d := time.Duration(50+rand.IntN(100*attempt)) * time.Millisecond
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		sl, known := st.lists.known(id)
		if !known || attempt > 0 {
			if sl, err = st.api.SecurityList(ctx, id); err != nil {
				st.lists.forget(id)
				return err
			}
			st.lists.remember(id, sl)
		}
		changed := false
		for i, ch := range batch {
			if failed[i] != nil {
				continue
			}
			in, inChanged, e1 := merge(sl.Ingress, ch.want.ingress, ch)
			out, outChanged, e2 := merge(sl.Egress, ch.want.egress, ch)
			if failed[i] = errors.Join(e1, e2); failed[i] != nil {
				continue
			}
			sl.Ingress, sl.Egress = in, out
			changed = changed || inChanged || outChanged
		}
		if !changed {
			return nil
		}
		var now ociapi.SecurityList
		if now, err = st.api.UpdateSecurityList(ctx, sl); err == nil {
			st.lists.remember(id, now)
			return nil
		}
		st.lists.forget(id)
		if !errors.Is(err, outcome.ErrBusy) {
			return err
		}
	}
	return err
}

// known is list id as last read or written, if that was within listReuse
// and OCI gave its etag; a copy, for the caller to change.
func (w *listWriter) known(id string) (ociapi.SecurityList, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.last[id]
	if !ok || k.sl.ETag() == "" || time.Since(k.at) > listReuse {
		return ociapi.SecurityList{}, false
	}
	sl := k.sl
	sl.Ingress, sl.Egress = slices.Clone(sl.Ingress), slices.Clone(sl.Egress)
	return sl, true
}

func (w *listWriter) remember(id string, sl ociapi.SecurityList) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]knownList{}
	}
	sl.ID = id
	w.last[id] = knownList{sl: sl, at: time.Now()}
}

func (w *listWriter) forget(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, id)
}

// forgetAll makes the next batch of every list read it first.
func (w *listWriter) forgetAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.last)
}

// merge is have with the rules marked ch.mark that want no longer asks for
// removed, or handed over (ch.handOver), and the peer's rules of the ports
// ch.drop removed, and those want asks for that nothing does yet added
// (with ch.adopt, an unmarked rule does).
func merge(have []json.RawMessage, want []ociapi.SecurityRule, ch listChange) ([]json.RawMessage, bool, error) {
	mark, adopt := ch.mark, ch.adopt
	out := make([]json.RawMessage, 0, len(have)+len(want))
	var kept []ociapi.SecurityRule
	var going []json.RawMessage
	changed := false
	for _, raw := range have {
		var r ociapi.SecurityRule
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, false, fmt.Errorf("a rule OCI answered cannot be read: %w", err)
		}
		switch {
		case peerRuleOn(r, ch.drop):
			changed = true
		case strings.HasPrefix(r.Description, mark) && !slices.ContainsFunc(want, func(w ociapi.SecurityRule) bool { return does(r, w) }):
			going, changed = append(going, raw), true
		default:
			out, kept = append(out, raw), append(kept, r)
		}
	}
	out, kept, err := handOver(out, kept, going, ch)
	if err != nil {
		return nil, false, err
	}
	for _, w := range want {
		// Done already by a rule of the Service's, or, adopting, by one no
		// CCM of ours marked (the peer's): never by another Service's or
		// another cluster's, which may go without this Service.
		if slices.ContainsFunc(kept, func(r ociapi.SecurityRule) bool { return does(r, w) && stands(r, mark, adopt) }) {
			continue
		}
		raw, err := json.Marshal(w)
		if err != nil {
			return nil, false, err
		}
		out = append(out, raw)
		kept = append(kept, w)
		changed = true
	}
	return out, changed, nil
}

// builtHere says whether this cluster's Overcast built the load balancer
// (its tag), rather than adopted the peer's.
func (st *steps) builtHere(lb ociapi.LB) bool {
	return lb.FreeformTags[tagCluster] != "" && lb.FreeformTags[tagCluster] == st.cluster.Get()
}

// stands says whether rule r stands for one of the Service's: its mark, or,
// adopting, no mark of any CCM of ours.
func stands(r ociapi.SecurityRule, mark string, adopt bool) bool {
	return strings.HasPrefix(r.Description, mark) || (adopt && !strings.HasPrefix(r.Description, markPrefix))
}

// reliesOn: r is the Service's (its mark), or, adopting the peer's load
// balancer, unmarked and opens one of its ports (the peer's).
func reliesOn(r ociapi.SecurityRule, mark string, ports map[int]bool, adopt bool) bool {
	if !stands(r, mark, adopt) {
		return false
	}
	return strings.HasPrefix(r.Description, mark) || opensAny(r, ports)
}

// opensAny says whether r opens one of ports.
func opensAny(r ociapi.SecurityRule, ports map[int]bool) bool {
	if r.TCPOptions == nil || r.TCPOptions.DestinationPortRange == nil {
		return false
	}
	pr := r.TCPOptions.DestinationPortRange
	for p := range ports {
		if pr.Min <= p && p <= pr.Max {
			return true
		}
	}
	return false
}

// removeRules removes the Service's rules from every security list they may
// be in: its load balancer's subnets' and the nodes' subnets'.
func (st *steps) removeRules(ctx context.Context, svc *v1.Service, lbSubnets []string) error {
	lists, err := st.lbLists(ctx, lbSubnets)
	if err != nil {
		return err
	}
	return st.applyRules(ctx, svc, nil, lists, false)
}

// allNodeSubnets are the subnets of every instance of the compartment.
func (st *steps) allNodeSubnets(ctx context.Context) ([]string, error) {
	list, err := st.machines.All(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, m := range list {
		if m.SubnetID != "" && !slices.Contains(ids, m.SubnetID) {
			ids = append(ids, m.SubnetID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
