package servicecontroller

import (
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// ToBeDeletedTaint is the Cluster Autoscaler's taint on a Node it is about to
// remove; such a Node leaves load balancers first.
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// Node eligibility is exactly k8s.io/cloud-provider v0.37's (controllers/service:
// stableNodeSetPredicates): a Node backs load balancers unless it is being
// deleted, carries node.kubernetes.io/exclude-from-external-load-balancers with a
// value that is not a false boolean, or has the Cluster Autoscaler's
// ToBeDeleted taint. Readiness does not count: a NotReady Node stays a member
// and the load balancer's health check takes it out, so that a flapping kubelet
// does not rewrite every load balancer. externalTrafficPolicy: Local does not
// change the set either: the health check node port finds the Nodes with
// endpoints.

// included: not labelled for exclusion. A label whose value is not a boolean
// excludes, as the framework does.
func included(n *v1.Node) bool {
	v, ok := n.Labels[v1.LabelNodeExcludeBalancers]
	if !ok {
		return true
	}
	b, err := strconv.ParseBool(v)
	return err == nil && !b
}

// untainted: not about to be removed by the Cluster Autoscaler.
func untainted(n *v1.Node) bool {
	return !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == ToBeDeletedTaint })
}

func notDeleted(n *v1.Node) bool { return n.DeletionTimestamp.IsZero() }

// Eligible says whether n backs load balancers.
func Eligible(n *v1.Node) bool { return notDeleted(n) && included(n) && untainted(n) }

// eligibleNodes lists the Nodes that back load balancers, from the shared cache:
// the pointers are the cache's own, not copies, and are never written.
func eligibleNodes(lister corelisters.NodeLister) ([]*v1.Node, error) {
	all, err := lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, n := range all {
		if Eligible(n) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *v1.Node) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out, nil
}

// nodeSet is the eligible Nodes, sorted, and their hash, listed once for each
// change of what a load balancer reads of a Node (sameForLoadBalancers) and
// shared by every pass until the next: at 5,000 Nodes a listing and its sort
// cost a pass more than the rest of it. A cloud may key its work on the slice
// (provider.NodeSetMemo): one slice is one set, and it is never written.
type nodeSet struct {
	gen   atomic.Uint64 // moved by every Node event a load balancer may see
	mu    sync.Mutex
	valid bool
	built uint64 // gen when listed
	nodes []*v1.Node
	hash  nodeHashes
}

// nodeHashes identify a Node set: view by everything that may move a load
// balancer's members (nodeViewHash), ident by the Nodes alone (nodeSetHash).
type nodeHashes struct{ view, ident uint64 }

// changed says a Node was added, deleted, or changed where a load balancer reads it.
func (s *nodeSet) changed() { s.gen.Add(1) }

// eligible is the eligible Nodes and their hash, listed again only after a change.
func (s *nodeSet) eligible(lister corelisters.NodeLister) ([]*v1.Node, nodeHashes, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.gen.Load()
	if s.valid && s.built == gen {
		return s.nodes, s.hash, nil
	}
	nodes, err := eligibleNodes(lister)
	if err != nil {
		return nil, nodeHashes{}, err
	}
	s.valid, s.built, s.nodes = true, gen, nodes
	s.hash = nodeHashes{view: nodeViewHash(nodes), ident: nodeSetHash(nodes)}
	return nodes, s.hash, nil
}

// sameForLoadBalancers says whether two versions of a Node are one to a
// load balancer: the same metadata but for its version, the same spec and
// the same addresses. Its conditions, capacity and the rest of its status
// are not compared: a cloud given the Node set may see them as they were
// at the last change that was.
func sameForLoadBalancers(a, b *v1.Node) bool {
	return a.Name == b.Name && a.UID == b.UID && a.DeletionTimestamp.Equal(b.DeletionTimestamp) &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.Equal(a.Status.Addresses, b.Status.Addresses) && equality.Semantic.DeepEqual(a.Spec, b.Spec)
}

// nodeSetHash identifies a set of Nodes by what makes a load balancer change:
// their names and provider IDs (as the framework's nodesSufficientlyEqual).
// nodes are sorted by name.
func nodeSetHash(nodes []*v1.Node) uint64 {
	h := fnv.New64a()
	for _, n := range nodes {
		writeIdentity(h, n)
	}
	return h.Sum64()
}

// writeIdentity writes what identifies n to a load balancer: its name and
// provider ID.
func writeIdentity(h io.Writer, n *v1.Node) {
	for _, part := range []string{n.Name, n.Spec.ProviderID} {
		_, _ = h.Write([]byte(part + "\x00"))
	}
}

// nodeViewHash identifies a set of Nodes by what may move a load balancer's
// members: beyond the framework's names and provider IDs, each Node's
// addresses (the member, where members are addresses) and labels (what a
// Service's node selector picks). nodes are sorted by name.
func nodeViewHash(nodes []*v1.Node) uint64 {
	h := fnv.New64a()
	for _, n := range nodes {
		writeIdentity(h, n)
		for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
			h.Write([]byte(k + "\x01" + n.Labels[k] + "\x02"))
		}
		for _, a := range n.Status.Addresses {
			h.Write([]byte(string(a.Type) + "\x01" + a.Address + "\x03"))
		}
		h.Write([]byte{3})
	}
	return h.Sum64()
}

// membersMayMove says whether an update of a Node may move a load
// balancer's members where the framework makes no sync: its addresses or
// its labels changed. The framework's controller leaves such a member at
// its old address, or a node selector's choice as it was, until another
// sync; the drift check would repair it within its period, as if someone
// had changed the load balancer.
func membersMayMove(old, cur *v1.Node) bool {
	return !slices.Equal(old.Status.Addresses, cur.Status.Addresses) || !maps.Equal(old.Labels, cur.Labels)
}

// nodeChangeMatters says whether an update of a Node makes load balancers sync,
// as the framework's shouldSyncUpdatedNode: a change of its exclusion label's
// verdict or of its provider ID. Heartbeats, readiness, taints and other labels
// cost nothing; a Node tainted by the Cluster Autoscaler leaves at the next
// sync, so that its connections drain meanwhile.
func nodeChangeMatters(old, cur *v1.Node) bool {
	return included(old) != included(cur) || old.Spec.ProviderID != cur.Spec.ProviderID
}
