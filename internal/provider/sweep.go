package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Live is every Service of the cluster, as `overcast sweep` read it from the
// apiserver: a cloud object made for one of them is never a leftover,
// whatever its type is now (turning a Service's load balancer off is the
// service controller's work, not the sweep's).
type Live struct {
	uids  map[types.UID]bool
	names map[string]bool // namespace/name
}

// NewLive is the set of svcs.
func NewLive(svcs []v1.Service) Live {
	l := Live{uids: map[types.UID]bool{}, names: map[string]bool{}}
	for i := range svcs {
		l.uids[svcs[i].UID] = true
		l.names[svcs[i].Namespace+"/"+svcs[i].Name] = true
	}
	return l
}

// HasUID says whether a Service with this UID exists.
func (l Live) HasUID(uid types.UID) bool { return l.uids[uid] }

// UIDs are the Services' UIDs, in no order.
func (l Live) UIDs() []types.UID {
	out := make([]types.UID, 0, len(l.uids))
	for u := range l.uids {
		out = append(out, u)
	}
	return out
}

// Has says whether a Service namespace/name exists.
func (l Live) Has(namespacedName string) bool { return l.names[namespacedName] }

// Leftover is a cloud object made for a Service of this cluster that no
// longer exists, or one our crash windows can leave. Removable ones are this
// cluster's beyond doubt (its tags say so) and `overcast sweep --delete`
// removes them with their Service's own delete path (Owner); the others are
// only listed, with Note saying why they are not removed.
type Leftover struct {
	Kind string // "load balancer", "floating IP", "security group", …
	ID   string
	Name string
	// Owner is the Service it was made for, as far as the cloud's names and
	// tags tell it (UID always; namespace and name when known), with the
	// annotations its delete path needs to find the object.
	Owner     *v1.Service
	Removable bool
	Note      string
}

// Service names the owner for a person.
func (l Leftover) Service() string {
	if l.Owner == nil {
		return "-"
	}
	if l.Owner.Name != "" {
		return l.Owner.Namespace + "/" + l.Owner.Name
	}
	return "uid " + string(l.Owner.UID)
}

// Sweeper is a cloud that can list its leftovers. Leftovers lists, in no
// order, from fresh listings of the cloud, what this cluster (its UID; the cloud's ClusterUID
// must be set) made for Services not in live, and the untagged leftovers
// its crash windows can leave. It changes nothing.
type Sweeper interface {
	Leftovers(ctx context.Context, clusterName string, live Live) ([]Leftover, error)
}

// GoneService is the owner of a leftover: a Service that no longer exists,
// as its cloud objects name it, for its delete path.
func GoneService(uid types.UID, namespace, name string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{UID: uid, Namespace: namespace, Name: name, Annotations: map[string]string{}},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
	}
}

// Owners gathers leftovers' owners by UID, so that one gone Service's
// objects are removed by one delete path: the names and annotations any of
// its leftovers knows are merged into one Service.
type Owners struct {
	byUID map[types.UID]*v1.Service
}

// Of is the owner of UID uid, made with what is known (namespace and name may
// be empty, and are filled in when a later leftover knows them).
func (o *Owners) Of(uid types.UID, namespace, name string) *v1.Service {
	if o.byUID == nil {
		o.byUID = map[types.UID]*v1.Service{}
	}
	svc, ok := o.byUID[uid]
	if !ok {
		svc = GoneService(uid, namespace, name)
		o.byUID[uid] = svc
	}
	if svc.Name == "" && name != "" {
		svc.Namespace, svc.Name = namespace, name
	}
	return svc
}

// Adopt makes svc the owner of UID uid too (a Service first known by its
// name, whose UID another of its objects tells).
func (o *Owners) Adopt(uid types.UID, svc *v1.Service) {
	if o.byUID == nil {
		o.byUID = map[types.UID]*v1.Service{}
	}
	if _, ok := o.byUID[uid]; !ok {
		o.byUID[uid] = svc
	}
	svc.UID = uid
}

// Known says whether uid is an owner already.
func (o *Owners) Known(uid types.UID) bool { _, ok := o.byUID[uid]; return ok }

// SortLeftovers orders leftovers by owner, then kind and name, for a table.
func SortLeftovers(ls []Leftover) {
	slices.SortStableFunc(ls, func(a, b Leftover) int {
		if c := strings.Compare(a.Service(), b.Service()); c != 0 {
			return c
		}
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Name+a.ID, b.Name+b.ID)
	})
}

// CountByKind is "2 load balancers, 1 floating IP"-style counts, in the
// order kinds first appear.
func CountByKind(ls []Leftover) string {
	var kinds []string
	n := map[string]int{}
	for _, l := range ls {
		if n[l.Kind] == 0 {
			kinds = append(kinds, l.Kind)
		}
		n[l.Kind]++
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", n[k], k)
		if n[k] != 1 {
			parts[i] += "s"
		}
	}
	return strings.Join(parts, ", ")
}
