package openstack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Converging an existing load balancer: its listeners, pools, members and
// monitors walked, one change a pass (Octavia takes one at a time per load
// balancer); then its security group and the certificates no listener uses.

// Converge walks the load balancer's listeners, pools, members and monitors and
// makes the first change it needs. One this process created fully populated
// from the very spec is not walked: only its status tree is read, to catch
// children Octavia never finished.
func (st *steps) Converge(ctx context.Context, svc *v1.Service, spec lbSpec, lb octaviaLB) (string, error) {
	if !lb.Shared && st.createdAs(lb.ID) == spec.fingerprint() {
		if progress, err := st.rebuildIfStranded(ctx, svc, &lb.Obj); err != nil || progress != "" {
			return progress, err
		}
		st.setCreated(lb.ID, "")
		return st.converged(ctx, svc, spec)
	}
	if err := st.api.Session(ctx, osapi.Octavia); err != nil {
		return "", err
	}
	if err := st.prepareTLS(ctx, svc, &spec); err != nil {
		return "", err
	}
	if lb.Shared {
		if progress, err := st.share(ctx, svc, spec, &lb.Obj); err != nil || progress != "" {
			return progress, err
		}
	} else {
		st.warnImmutable(svc, &lb.Obj, spec)
	}
	reads := &treeReads{api: st.api, memo: st.memo}
	changed, err := st.converge(ctx, reads, svc, &lb.Obj, spec, lb.Shared)
	if err == nil && !changed && reads.used {
		// Nothing to change is said from fresh reads only (treereads.go).
		changed, err = st.converge(ctx, reads.again(), svc, &lb.Obj, spec, lb.Shared)
	}
	if refused := st.tlsRefusal(err, spec); refused != nil {
		return "", refused
	}
	if err != nil {
		if errors.Is(err, outcome.ErrBusy) && !lb.Shared {
			// Busy children of an ACTIVE load balancer may never finish.
			if progress, serr := st.rebuildIfStranded(ctx, svc, &lb.Obj); serr != nil || progress != "" {
				return progress, serr
			}
		}
		return "", fmt.Errorf("cannot update load balancer %s: %w", lb.ID, err)
	}
	if changed {
		return fmt.Sprintf("load balancer %s is being updated", lb.ID), nil
	}
	return st.converged(ctx, svc, spec)
}

// converged finishes a load balancer that is as spec asks: its security
// group, then the certificates in Barbican no listener uses any more (those
// of a rotated Secret, or all of them once the Service stops naming one).
func (st *steps) converged(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	if err := st.convergedSG(ctx, svc, spec); err != nil {
		return "", err
	}
	keep := ""
	if spec.tls != nil && spec.tls.secret != nil {
		keep = spec.tls.secret.hash
	}
	if err := st.sweepCerts(ctx, svc, keep); err != nil {
		return "", fmt.Errorf("certificates of %s/%s in Barbican: %w", svc.Namespace, svc.Name, err)
	}
	return "", nil
}

// convergedSG makes the Service's security group as spec asks once its load
// balancer is: all its writes in one pass (they are Neutron's, not Octavia's
// one at a time), so it never makes a pass of its own. The one started with
// the load balancer's creation is waited for, not repeated.
func (st *steps) convergedSG(ctx context.Context, svc *v1.Service, spec lbSpec) error {
	if spec.sg == nil {
		return st.convergeSG(ctx, svc, spec) // a group left from before goes
	}
	if err := st.sgs.converged(ctx, svc.UID, spec.sgFingerprint(), func(ctx context.Context) error {
		return st.convergeSG(ctx, svc, spec)
	}); err != nil {
		return fmt.Errorf("security group of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// UpdateMembers handles a change of Nodes alone: its pools from one listing,
// and one declarative batch update of each pool whose members differ, counted
// as done once Octavia accepts it. Octavia takes one update at a time, so a
// second pool to update waits for the next pass. Any doubt (a pool missing or
// named twice) is not ok: the full cycle repairs it.
func (st *steps) UpdateMembers(ctx context.Context, svc *v1.Service, spec lbSpec, lb octaviaLB) (string, bool, error) {
	if err := st.api.Session(ctx, osapi.Octavia); err != nil {
		return "", false, err
	}
	all, err := st.api.ListPools(ctx, lb.ID)
	if err != nil {
		return "", false, fmt.Errorf("listing the pools of load balancer %s: %w", lb.ID, err)
	}
	byName := map[string]osapi.Pool{}
	for _, p := range all {
		if _, dup := byName[p.Name]; dup {
			return "", false, nil
		}
		byName[p.Name] = p
	}
	mine := make([]osapi.Pool, len(spec.ports))
	for i, p := range spec.ports {
		pool, ok := byName[objectName(spec, p)]
		if !ok || pool.Protocol != spec.poolProtocol(p) {
			return "", false, nil
		}
		mine[i] = pool
	}
	reads := &treeReads{api: st.api, memo: st.memo}
	last := st.memberSets.Last(st.cycle, svc)
	wrote, more, err := st.updatePools(ctx, reads, mine, spec, last)
	if err == nil && !wrote && reads.used {
		// Nothing to change is said from fresh reads only (treereads.go).
		wrote, more, err = st.updatePools(ctx, reads.again(), mine, spec, last)
	}
	if err != nil {
		return "", true, fmt.Errorf("cannot update the members of load balancer %s: %w", lb.ID, err)
	}
	if more || (wrote && reads.used) {
		// Another pool may need its update, or one was passed over from
		// memory: the next pass, once Octavia is done with this one.
		return fmt.Sprintf("members of load balancer %s are being updated", lb.ID), true, nil
	}
	klog.FromContext(ctx).V(2).Info("Updated the members of load balancer", "service", klog.KObj(svc), "id", lb.ID, "members", len(spec.members))
	if spec.sg != nil {
		if done, err := st.sgMembersChanged(ctx, svc, spec); err != nil {
			return "", true, fmt.Errorf("security group of %s/%s: %w", svc.Namespace, svc.Name, err)
		} else if !done {
			if err := st.convergedSG(ctx, svc, spec); err != nil {
				return "", true, err
			}
		}
	}
	return "", true, nil
}

// updatePools updates the members of the first of the Service's pools
// whose members differ, and says whether it did, and whether pools follow
// it (which may need an update too: Octavia takes one at a time). An update
// Octavia accepted counts as done.
func (st *steps) updatePools(ctx context.Context, reads *treeReads, mine []osapi.Pool, spec lbSpec, last *[]string) (wrote, more bool, err error) {
	for i, p := range spec.ports {
		if wrote, err = st.convergeMembers(ctx, reads, mine[i], spec, p, last); err != nil || wrote {
			return wrote, i < len(spec.ports)-1, err
		}
	}
	return false, false, nil
}

// converge makes at most one change (Octavia allows one at a time per load
// balancer) and says whether it made one. Only the Service's own listeners
// (mineListener) are ever changed: a port another Service holds refuses the
// Service before anything is written, and a Service sharing a load balancer is
// recorded on it before its first listener. Removals come first, so that a
// port whose listener must change protocol is free when its new listener is
// created.
func (st *steps) converge(ctx context.Context, reads *treeReads, svc *v1.Service, lb *osapi.LoadBalancer, s lbSpec, shared bool) (bool, error) {
	have, err := st.api.ListListeners(ctx, lb.ID)
	if err != nil {
		return false, fmt.Errorf("listing listeners: %w", err)
	}
	mine, err := ownListeners(have, svc, s, lb.ID, shared)
	if err != nil {
		return false, err
	}
	if shared && len(s.ports) > 0 && !slices.Contains(lb.Tags, s.name) {
		// Recorded first: a Service's listeners are never on a load
		// balancer that does not name it.
		if err := st.updateTags(ctx, lb.ID, append(slices.Clone(lb.Tags), s.name)); err != nil {
			return false, err
		}
		st.events.Eventf(svc, v1.EventTypeNormal, reasonAdoptedLoadBalancer, "Sharing load balancer %s", lb.ID)
		return true, nil
	}
	// Pools are listed once: protocol, method and health monitor of each. The
	// load balancer names its pools: a new one has none to list.
	var allPools []osapi.Pool
	if len(lb.Pools) > 0 {
		if allPools, err = st.api.ListPools(ctx, lb.ID); err != nil {
			return false, fmt.Errorf("listing pools: %w", err)
		}
	}
	if changed, err := st.deleteUnwantedListener(ctx, mine, s); err != nil || changed {
		return changed, err
	}
	if changed, err := st.deleteStrayPools(ctx, allPools, s); err != nil || changed {
		return changed, err
	}
	poolByID := map[string]osapi.Pool{}
	for _, p := range allPools {
		poolByID[p.ID] = p
	}
	for _, p := range s.ports {
		l, ok := mine[s.listenerKey(p)]
		if !ok {
			if err := st.createListener(ctx, svc, lb.ID, allPools, s, p); err != nil {
				return false, err
			}
			return true, nil
		}
		if changed, err := st.convergePort(ctx, reads, svc, l, poolByID, s, p); err != nil || changed {
			return changed, err
		}
	}
	return false, nil
}

// ownListeners are the Service's listeners on the load balancer, by
// protocol/port; a port of the spec another Service's listener holds refuses
// the Service.
func ownListeners(have []osapi.Listener, svc *v1.Service, s lbSpec, lbID string, shared bool) (map[string]osapi.Listener, error) {
	byKey := map[string]osapi.Listener{}
	taken := map[string]osapi.Listener{} // other Services' listeners
	for _, l := range have {
		k := fmt.Sprintf("%s/%05d", l.Protocol, l.ProtocolPort)
		if !mineListener(l, svc, s.name, !shared) {
			taken[k] = l
			continue
		}
		byKey[k] = l
	}
	var clashes []string
	for _, p := range s.ports {
		if l, ok := taken[s.listenerKey(p)]; ok {
			clashes = append(clashes, fmt.Sprintf("%s/%d (Service %s)", l.Protocol, l.ProtocolPort, serviceNamed(l, s.cluster)))
		}
	}
	if len(clashes) > 0 {
		return nil, outcome.Refuse(reasonPortTaken, "Load balancer %s already listens on %s; nothing was changed", lbID, strings.Join(clashes, ", "))
	}
	return byKey, nil
}

// deleteUnwantedListener deletes, of the Service's listeners no port wants
// (in the order of their keys), the first one's pool, else the listener.
func (st *steps) deleteUnwantedListener(ctx context.Context, mine map[string]osapi.Listener, s lbSpec) (bool, error) {
	unwanted := unwantedListeners(mine, s)
	if len(unwanted) == 0 {
		return false, nil
	}
	k := unwanted[0]
	l := mine[k]
	if l.DefaultPoolID != "" {
		if err := st.api.DeletePool(ctx, l.DefaultPoolID); err != nil {
			return false, fmt.Errorf("deleting pool of listener %s: %w", k, err)
		}
		return true, nil
	}
	if err := st.api.DeleteListener(ctx, l.ID); err != nil {
		return false, fmt.Errorf("deleting listener %s: %w", k, err)
	}
	return true, nil
}

// unwantedListeners are the keys of the Service's listeners no port wants,
// in order.
func unwantedListeners(mine map[string]osapi.Listener, s lbSpec) []string {
	want := map[string]bool{}
	for _, p := range s.ports {
		want[s.listenerKey(p)] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(mine)) {
		if !want[k] {
			out = append(out, k)
		}
	}
	return out
}

// createListener creates the listener of p. The pool a listener deleted
// behind our back left serves the new one: nothing is left over, and its
// members are kept.
func (st *steps) createListener(ctx context.Context, svc *v1.Service, lbID string, allPools []osapi.Pool, s lbSpec, p v1.ServicePort) error {
	opts := listenerOpts(svc, s, p)
	opts.LoadBalancerID = lbID
	if i := slices.IndexFunc(allPools, func(pool osapi.Pool) bool {
		return len(pool.Listeners) == 0 && pool.Name == objectName(s, p) && pool.Protocol == s.poolProtocol(p)
	}); i >= 0 {
		opts.DefaultPoolID = allPools[i].ID
	}
	if err := st.api.CreateListener(ctx, opts); err != nil {
		return fmt.Errorf("creating listener %s: %w", s.listenerKey(p), err)
	}
	return nil
}

// convergePort makes the first change the listener of p and its pool need.
func (st *steps) convergePort(ctx context.Context, reads *treeReads, svc *v1.Service, l osapi.Listener, poolByID map[string]osapi.Pool, s lbSpec, p v1.ServicePort) (bool, error) {
	k := s.listenerKey(p)
	if changed, err := st.convergeListener(ctx, l, s, p); err != nil || changed {
		return changed, err
	}
	pool, ok := poolByID[l.DefaultPoolID]
	if !ok {
		opts := poolOpts(s, p)
		opts.ListenerID = l.ID
		if err := st.api.CreatePool(ctx, opts); err != nil {
			return false, fmt.Errorf("creating the pool of listener %s: %w", k, err)
		}
		return true, nil
	}
	if pool.Protocol != s.poolProtocol(p) {
		// Octavia cannot change a pool's protocol (PROXY on or off): replace it.
		st.events.Eventf(svc, v1.EventTypeNormal, reasonRecreatingPool, "Recreating the pool of %s to speak %s instead of %s", k, s.poolProtocol(p), pool.Protocol)
		if err := st.api.DeletePool(ctx, pool.ID); err != nil {
			return false, fmt.Errorf("deleting pool %s to change its protocol: %w", pool.ID, err)
		}
		return true, nil
	}
	if u, diffs := poolChanges(pool, s); len(diffs) > 0 {
		if err := st.api.UpdatePool(ctx, pool.ID, u); err != nil {
			return false, fmt.Errorf("updating pool %s (%s): %w", pool.ID, strings.Join(diffs, "; "), err)
		}
		return true, nil
	}
	if changed, err := st.convergeMembers(ctx, reads, pool, s, p, nil); err != nil || changed {
		return changed, err
	}
	return st.convergeMonitor(ctx, reads, pool, s, p)
}

// deleteStrayPools deletes a pool of the Service's that no listener uses and
// none of its ports wants (its listener deleted with the port, or behind our
// back with a pool of another protocol); one a pass.
func (st *steps) deleteStrayPools(ctx context.Context, all []osapi.Pool, s lbSpec) (bool, error) {
	stray := st.strayPools(all, s)
	if len(stray) == 0 {
		return false, nil
	}
	if err := st.api.DeletePool(ctx, stray[0].ID); err != nil {
		return false, fmt.Errorf("deleting pool %s, which no listener uses: %w", stray[0].ID, err)
	}
	return true, nil
}

// strayPools are the Service's pools no listener uses and none of its
// ports wants.
func (st *steps) strayPools(all []osapi.Pool, s lbSpec) []osapi.Pool {
	wanted := map[string]string{} // name → protocol
	for _, p := range s.ports {
		wanted[objectName(s, p)] = s.poolProtocol(p)
	}
	var out []osapi.Pool
	for _, pool := range all {
		if len(pool.Listeners) > 0 || !strings.HasPrefix(pool.Name, s.name+"_") || wanted[pool.Name] == pool.Protocol {
			continue
		}
		out = append(out, pool)
	}
	return out
}

// poolChanges is the update of what differs of a pool that Octavia can
// change in place (its method), and what differs, for a person. Its name is
// not compared: the peer's pools have names of their own, kept when adopted.
func poolChanges(pool osapi.Pool, s lbSpec) (osapi.PoolUpdate, []string) {
	var u osapi.PoolUpdate
	var diffs []string
	if pool.LBMethod != s.method {
		u.LBMethod = s.method
		diffs = append(diffs, fmt.Sprintf("pool lb_algorithm %s, the Service asks %s", pool.LBMethod, s.method))
	}
	return u, diffs
}

// convergeListener updates what Octavia can change in place.
func (st *steps) convergeListener(ctx context.Context, l osapi.Listener, s lbSpec, p v1.ServicePort) (bool, error) {
	u, diffs := listenerChanges(l, s, p)
	if len(diffs) == 0 {
		return false, nil
	}
	if err := st.api.UpdateListener(ctx, l.ID, u); err != nil {
		return false, fmt.Errorf("updating listener %s/%d: %w", l.Protocol, l.ProtocolPort, err)
	}
	return true, nil
}

// listenerChanges is the update of what differs of the listener of p that
// Octavia can change in place, and what differs, for a person.
func listenerChanges(l osapi.Listener, s lbSpec, p v1.ServicePort) (osapi.ListenerUpdate, []string) {
	var u osapi.ListenerUpdate
	var diffs []string
	cidrs := slices.Clone(l.AllowedCIDRs)
	sort.Strings(cidrs)
	if !slices.Equal(cidrs, s.allowedCIDRs) && (!openToAll(cidrs) || !openToAll(s.allowedCIDRs)) {
		update := s.listenerCIDRs()
		u.AllowedCIDRs = &update
		diffs = append(diffs, fmt.Sprintf("allowed_cidrs %s, the Service asks %s", cidrList(cidrs), cidrList(update)))
	}
	if want := s.insertHeaders(p); !maps.Equal(l.InsertHeaders, want) {
		h := want
		if h == nil {
			h = map[string]string{} // none: sent as {}
		}
		u.InsertHeaders = &h
		diffs = append(diffs, fmt.Sprintf("insert_headers %v, the Service asks %v", l.InsertHeaders, want))
	}
	if l.ConnLimit != s.connLimit {
		limit := s.connLimit
		u.ConnLimit = &limit
		diffs = append(diffs, fmt.Sprintf("connection_limit %d, the Service asks %d", l.ConnLimit, limit))
	}
	if s.isTLS(p) && l.DefaultTLSContainerRef != s.tls.ref {
		// A new certificate (a rotated Secret, another reference).
		ref := s.tls.ref
		u.DefaultTLSContainerRef = &ref
		diffs = append(diffs, fmt.Sprintf("default_tls_container_ref %s, the Service asks %s", cmp.Or(l.DefaultTLSContainerRef, "none"), cmp.Or(ref, "one not stored yet")))
	}
	if p.Protocol == v1.ProtocolTCP {
		for _, t := range []struct {
			name string
			want *int
			have int
			into **int
		}{
			{"timeout_client_data", s.timeouts.clientData, l.TimeoutClientData, &u.TimeoutClientData},
			{"timeout_member_connect", s.timeouts.memberConnect, l.TimeoutMemberConnect, &u.TimeoutMemberConnect},
			{"timeout_member_data", s.timeouts.memberData, l.TimeoutMemberData, &u.TimeoutMemberData},
			{"timeout_tcp_inspect", s.timeouts.tcpInspect, l.TimeoutTCPInspect, &u.TimeoutTCPInspect},
		} {
			if t.want != nil && *t.want != t.have {
				*t.into = t.want
				diffs = append(diffs, fmt.Sprintf("%s %d ms, the Service asks %d", t.name, t.have, *t.want))
			}
		}
	}
	return u, diffs
}

// cidrList is CIDRs for a person ("everyone" for none).
func cidrList(cidrs []string) string {
	if len(cidrs) == 0 {
		return "none (everyone)"
	}
	return strings.Join(cidrs, ",")
}

// convergeMonitor creates, updates or deletes the pool's health monitor. Its type
// cannot change in place, so a new type replaces it.
func (st *steps) convergeMonitor(ctx context.Context, reads *treeReads, pool osapi.Pool, s lbSpec, p v1.ServicePort) (bool, error) {
	if s.monitor == nil {
		if pool.MonitorID == "" {
			return false, nil
		}
		if err := st.api.DeleteMonitor(ctx, pool.MonitorID); err != nil {
			return false, fmt.Errorf("deleting health monitor %s: %w", pool.MonitorID, err)
		}
		return true, nil
	}
	want := monitorOpts(s, p)
	if pool.MonitorID == "" {
		want.PoolID = pool.ID
		if err := st.api.CreateMonitor(ctx, want); err != nil {
			return false, fmt.Errorf("creating the health monitor of pool %s: %w", pool.ID, err)
		}
		return true, nil
	}
	have, err := reads.monitor(ctx, pool.MonitorID)
	if err != nil {
		return false, fmt.Errorf("reading health monitor %s: %w", pool.MonitorID, err)
	}
	if have.Type != want.Type {
		reads.wrote("", have.ID)
		if err := st.api.DeleteMonitor(ctx, have.ID); err != nil {
			return false, fmt.Errorf("deleting health monitor %s to change its type: %w", have.ID, err)
		}
		return true, nil
	}
	u, diffs := monitorChanges(have, want)
	if len(diffs) == 0 {
		return false, nil
	}
	reads.wrote("", have.ID)
	if err := st.api.UpdateMonitor(ctx, have.ID, u); err != nil {
		return false, fmt.Errorf("updating health monitor %s: %w", have.ID, err)
	}
	return true, nil
}

// monitorChanges is the update that makes a health monitor of want's type
// check as want asks (every field the create sends), and what differs, for
// a person.
func monitorChanges(have osapi.Monitor, want osapi.MonitorCreate) (osapi.MonitorUpdate, []string) {
	u := osapi.MonitorUpdate{Delay: want.Delay, Timeout: want.Timeout, MaxRetries: want.MaxRetries, MaxRetriesDown: want.MaxRetriesDown, URLPath: want.URLPath}
	var diffs []string
	differs := func(field string, have, want any) {
		if have != want {
			diffs = append(diffs, fmt.Sprintf("health monitor %s %v, the Service asks %v", field, have, want))
		}
	}
	differs("delay", have.Delay, want.Delay)
	differs("timeout", have.Timeout, want.Timeout)
	differs("max_retries", have.MaxRetries, want.MaxRetries)
	differs("max_retries_down", have.MaxRetriesDown, want.MaxRetriesDown)
	if want.Type == "HTTP" || want.Type == "HTTPS" {
		differs("url_path", have.URLPath, want.URLPath)
		differs("http_method", have.HTTPMethod, want.HTTPMethod)
		differs("expected_codes", have.ExpectedCodes, want.ExpectedCodes)
		if have.HTTPMethod != want.HTTPMethod {
			u.HTTPMethod = want.HTTPMethod
		}
		if have.ExpectedCodes != want.ExpectedCodes {
			u.ExpectedCodes = want.ExpectedCodes
		}
	}
	return u, diffs
}

// convergeMembers replaces the pool's members in one batch call when they differ.
func (st *steps) convergeMembers(ctx context.Context, reads *treeReads, pool osapi.Pool, s lbSpec, p v1.ServicePort, last *[]string) (bool, error) {
	poolID := pool.ID
	same, err := reads.membersAre(ctx, pool, s.memberKeys(p))
	if err != nil {
		return false, fmt.Errorf("listing members: %w", err)
	}
	if same {
		return false, nil
	}
	reads.wrote(poolID, "")
	if added, ok := st.oneJoined(pool, s, last); ok {
		err := st.api.AddMember(ctx, poolID, memberOpt(s, p, added))
		if err == nil {
			return true, nil
		}
		if !osapi.MemberTaken(err) {
			return false, fmt.Errorf("adding member %s to pool %s: %w", added, poolID, err)
		}
		// It is there already (an answer lost, or added behind our back):
		// the batch update says every member.
	}
	if err := st.api.PutMembers(ctx, poolID, memberOpts(s, p)); err != nil {
		return false, fmt.Errorf("updating members of pool %s: %w", poolID, err)
	}
	return true, nil
}

// oneJoined is the one member the pool lacks when last, the members it was
// converged to, are s's but one, and the pool holds as many as last: a Node
// joining. A member changed behind our back since is the drift check's to
// find (it reads every pool's members within the hour).
func (st *steps) oneJoined(pool osapi.Pool, s lbSpec, last *[]string) (string, bool) {
	if last == nil || len(pool.Members) != len(*last) {
		return "", false
	}
	return provider.OneAdded(*last, s.members)
}

// memberKeys are a pool's members as address:port/monitor port, sorted.
func memberKeys(members []osapi.Member) []string {
	have := make([]string, 0, len(members))
	for _, m := range members {
		monitor := 0
		if m.MonitorPort != nil {
			monitor = *m.MonitorPort
		}
		have = append(have, m.Address+":"+strconv.Itoa(m.ProtocolPort)+"/"+strconv.Itoa(monitor))
	}
	sort.Strings(have)
	return have
}

// memberKeys are the members the pool of p is to have, as memberKeys says
// them.
func (s lbSpec) memberKeys(p v1.ServicePort) []string {
	monitorPort := 0
	if s.monitor != nil {
		monitorPort = s.monitor.httpPort
	}
	want := make([]string, 0, len(s.members))
	for _, m := range s.members {
		want = append(want, m+":"+strconv.Itoa(int(p.NodePort))+"/"+strconv.Itoa(monitorPort))
	}
	sort.Strings(want)
	return want
}
