package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/providerid"
)

// Explainer is a cloud that says what it holds for a Service or a Node
// (`overcast explain`), read-only: through its gateway's reads and its own
// spec and compare functions, never a write, never a step of the cycle.
//
// ExplainService reads the Service's load balancer, its listeners, pools
// and members, its addresses and the security rules it relies on, and says
// what differs from what the Service asks now with the Nodes given (the
// eligible ones): the changes the cycle's next walk would make, computed by
// the same comparisons, not made. ExplainNode reads the Node's machine and
// says what the node controller would set, and what the deletion guard
// would do were the machine gone. Both leave Kubernetes' side (conditions,
// Events) to the caller; an error is the cloud's (it could not be read).
type Explainer interface {
	ExplainService(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (ServiceExplanation, error)
	ExplainNode(ctx context.Context, node *v1.Node, nodes []*v1.Node) (NodeExplanation, error)
}

// Marks: whose a security rule (or the object holding it) says it is.
const (
	// MarkThisCluster: marked with this cluster's UID, for this Service.
	MarkThisCluster = "this cluster"
	// MarkOtherService: this cluster's mark, for another Service.
	MarkOtherService = "this cluster, another Service"
	// MarkOtherCluster: another cluster's Overcast mark.
	MarkOtherCluster = "another cluster"
	// MarkPeer: the peer CCM's own mark or name (a migration's).
	MarkPeer = "the peer"
	// MarkNone: no mark (a person's, or the peer's unmarked rule).
	MarkNone = "none"
)

// Actions of a Difference: what the next walk does about it.
const (
	ActionCreate = "create"
	ActionChange = "change"
	ActionDelete = "delete"
	// ActionRefuse: the cloud cannot change it in place; the Service is
	// refused with a Warning until a person acts.
	ActionRefuse = "refuse"
)

// ServiceExplanation is what a cloud holds for a Service, in one shape for
// every cloud (`overcast explain service -o json`); what only one cloud has
// is in the Details maps.
type ServiceExplanation struct {
	Cloud   string `json:"cloud"`
	Service string `json:"service"` // namespace/name
	UID     string `json:"uid"`
	// Found: the cloud holds a load balancer, or an address, for it.
	Found        bool          `json:"found"`
	LoadBalancer *LoadBalancer `json:"loadBalancer,omitempty"`
	Addresses    []Address     `json:"addresses"`
	Listeners    []Listener    `json:"listeners"`
	Pools        []Pool        `json:"pools"`
	// SecurityRules are those the load balancer relies on (or that carry
	// the Service's mark), with whose mark each carries.
	SecurityRules []SecurityRule `json:"securityRules"`
	// SpecProblem is why the Service as it asks now cannot be served (an
	// invalid annotation, a port taken): the next pass changes nothing.
	SpecProblem string `json:"specProblem,omitempty"`
	// Drift is what differs from what the Service asks now: what the next
	// walk changes (none when it is as asked).
	Drift []Difference `json:"drift"`
	// DriftChecked says whether Drift was worked out (a Service that can
	// be served, whose load balancer was found).
	DriftChecked bool `json:"driftChecked"`
	// Record is the cycle's record of the last convergence.
	Record *Record `json:"record,omitempty"`
	// Conditions and Events are Kubernetes': the Service's last outcome.
	Conditions []Condition `json:"conditions"`
	Events     []Event     `json:"events"`
	Notes      []string    `json:"notes,omitempty"`
	Details    Details     `json:"details,omitempty"`
}

// Details are what one cloud says of an object beyond the common fields.
type Details map[string]string

// MarshalJSON leaves out what is empty.
func (d Details) MarshalJSON() ([]byte, error) {
	out := make(map[string]string, len(d))
	for k, v := range d {
		if v != "" {
			out[k] = v
		}
	}
	return json.Marshal(out)
}

// LoadBalancer is the load balancer itself.
type LoadBalancer struct {
	ID      string  `json:"id"`
	Name    string  `json:"name"`
	State   string  `json:"state"`
	Details Details `json:"details,omitempty"`
}

// Address is one of the load balancer's addresses.
type Address struct {
	IP string `json:"ip"`
	// Kind: "public", "private", "floating IP", "VIP", …
	Kind string `json:"kind"`
	ID   string `json:"id,omitempty"`
}

// Listener is a port the load balancer listens on (a CloudStack rule).
type Listener struct {
	ID       string  `json:"id,omitempty"`
	Name     string  `json:"name"`
	Protocol string  `json:"protocol"`
	Port     int     `json:"port"`
	Pool     string  `json:"pool,omitempty"` // the pool or backend set it sends to
	Details  Details `json:"details,omitempty"`
}

// Pool is a pool, a backend set, or a CloudStack rule's machines.
type Pool struct {
	ID       string   `json:"id,omitempty"`
	Name     string   `json:"name"`
	Protocol string   `json:"protocol,omitempty"`
	Policy   string   `json:"policy,omitempty"`
	Health   string   `json:"health,omitempty"` // its health check
	Members  []Member `json:"members"`
	Details  Details  `json:"details,omitempty"`
}

// Member is a pool's member: a Node's address and port, or its machine.
type Member struct {
	ID      string `json:"id,omitempty"`
	Address string `json:"address"`
	Port    int    `json:"port,omitempty"`
	// Node is the Node whose address or machine it is ("" for none known).
	Node string `json:"node,omitempty"`
}

// SecurityRule is a rule that lets traffic to or from the load balancer.
type SecurityRule struct {
	// Kind: "security group rule", "allowed CIDRs", "security list rule",
	// "NSG rule", "firewall rule", "ACL item".
	Kind string `json:"kind"`
	// In is what holds it: a group, a list, an address, a listener.
	In        string `json:"in"`
	ID        string `json:"id,omitempty"`
	Direction string `json:"direction"`
	Protocol  string `json:"protocol"`
	Ports     string `json:"ports"`
	// Peer is its source (ingress) or destination (egress).
	Peer string `json:"peer"`
	// Mark is whose it says it is (Mark* constants).
	Mark string `json:"mark"`
}

// Difference is one thing the next walk changes.
type Difference struct {
	Action string `json:"action"` // Action* constants
	Object string `json:"object"` // "listener TCP/80", "member 10.0.0.5:30080 of pool p"
	Detail string `json:"detail"` // what is, and what the Service asks
}

// Record is the cycle's record of a Service's last convergence.
type Record struct {
	// Annotation holds it on the Service ("" for a cloud that keeps it in
	// memory), Value as written.
	Annotation   string `json:"annotation,omitempty"`
	Value        string `json:"value,omitempty"`
	LoadBalancer string `json:"loadBalancer,omitempty"`
	Address      string `json:"address,omitempty"`
	// AsAsked: recorded for what the Service asks now (its fingerprint):
	// the next pass answers from the shared listing, else it walks.
	AsAsked bool `json:"asAsked"`
}

// Condition is one of the Service's conditions.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	Since   string `json:"since,omitempty"` // RFC 3339
}

// Event is one of the object's recent Events.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Count   int32  `json:"count"`
	Last    string `json:"last,omitempty"` // RFC 3339
}

// NewServiceExplanation is an explanation of svc on cloud, with nothing
// found yet.
func NewServiceExplanation(cloud string, svc *v1.Service) ServiceExplanation {
	return ServiceExplanation{Cloud: cloud, Service: svc.Namespace + "/" + svc.Name, UID: string(svc.UID),
		Addresses: []Address{}, Listeners: []Listener{}, Pools: []Pool{}, SecurityRules: []SecurityRule{},
		Drift: []Difference{}, Conditions: []Condition{}, Events: []Event{}}
}

// Asked sets what Spec said of the Service: a refusal (outcome.Problem:
// an invalid annotation, Nodes the cloud cannot reach) is its SpecProblem,
// and the drift is not worked out; another error (the cloud could not be
// read) is returned.
func (e *ServiceExplanation) Asked(err error) error {
	if p, ok := outcome.AsProblem(err); ok {
		e.SpecProblem = p.Message
		return nil
	}
	return err
}

// Change adds a difference.
func (e *ServiceExplanation) Change(action, object, format string, args ...any) {
	e.Drift = append(e.Drift, Difference{Action: action, Object: object, Detail: fmt.Sprintf(format, args...)})
}

// Note adds a note.
func (e *ServiceExplanation) Note(format string, args ...any) {
	e.Notes = append(e.Notes, fmt.Sprintf(format, args...))
}

// SetRecord sets the record the cycle keeps of svc in annotation name
// ("" for one kept in memory): asAsked when it was converged to fp.
func (e *ServiceExplanation) SetRecord(svc *v1.Service, name string, rec lbcycle.Record, has bool, fp lbcycle.Fingerprint) {
	if !has {
		return
	}
	e.Record = &Record{Annotation: name, LoadBalancer: rec.ID, Address: rec.Address,
		AsAsked: fp != (lbcycle.Fingerprint{}) && rec.Fingerprint == fp}
	if name != "" {
		e.Record.Value = svc.Annotations[name]
	}
}

// SortRules orders the rules by where they are, direction, peer and ports.
func (e *ServiceExplanation) SortRules() {
	slices.SortStableFunc(e.SecurityRules, func(a, b SecurityRule) int {
		return strings.Compare(a.In+"|"+a.Direction+"|"+a.Peer+"|"+a.Ports+"|"+a.ID, b.In+"|"+b.Direction+"|"+b.Peer+"|"+b.Ports+"|"+b.ID)
	})
}

// NodeExplanation is what a cloud holds for a Node (`overcast explain
// node`).
type NodeExplanation struct {
	Cloud      string `json:"cloud"`
	Node       string `json:"node"`
	ProviderID string `json:"providerID"`
	// Found: the cloud has a machine for it (one not gone).
	Found   bool     `json:"found"`
	Machine *Machine `json:"machine,omitempty"`
	// Wants is what the node controller would set from the machine.
	Wants *NodeWants `json:"wants,omitempty"`
	// Differences are what of Wants the Node does not have.
	Differences []Difference `json:"differences"`
	// Guard is what the Node deletion guard would do.
	Guard      Guard       `json:"guard"`
	Conditions []Condition `json:"conditions"`
	Events     []Event     `json:"events"`
	Notes      []string    `json:"notes,omitempty"`
	// LookupError is why the machine could not be looked up (an ambiguous
	// name, a foreign providerID).
	LookupError string `json:"lookupError,omitempty"`
}

// Machine is a Node's machine as the cloud has it.
type Machine struct {
	ID        string        `json:"id"`
	Name      string        `json:"name"`
	State     string        `json:"state"`
	Type      string        `json:"type"`
	Zone      string        `json:"zone"`
	Region    string        `json:"region,omitempty"`
	Addresses []NodeAddress `json:"addresses"`
	Details   Details       `json:"details,omitempty"`
}

// NodeAddress is an address of a Node or its machine.
type NodeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// NodeWants is what the node controller sets from the machine.
type NodeWants struct {
	ProviderID string            `json:"providerID"`
	Addresses  []NodeAddress     `json:"addresses"`
	Labels     map[string]string `json:"labels"`
}

// Guard is what the Node deletion guard would do if the lifecycle
// controller asked about the Node now.
type Guard struct {
	// MachineGone: the cloud says the machine is gone (else nothing is to
	// be deleted, and the rest is not worked out).
	MachineGone bool `json:"machineGone"`
	// Gone of Total Nodes of the cloud have no machine; more than Limit
	// at once hold the deletions.
	Gone  int `json:"gone"`
	Total int `json:"total"`
	Limit int `json:"limit"`
	// Holds: the deletion of this Node would be held.
	Holds bool `json:"holds"`
	// Allowed: the Node is annotated to go while the guard holds.
	Allowed bool   `json:"allowed"`
	Says    string `json:"says"`
}

// NodeAddresses are addrs as NodeAddress.
func NodeAddresses(addrs []v1.NodeAddress) []NodeAddress {
	out := make([]NodeAddress, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, NodeAddress{Type: string(a.Type), Address: a.Address})
	}
	return out
}

// Metadata is the lookup of a Node's machine, as every cloud's
// ExplainNode ends with: the machine (nil when none), what InstanceMetadata
// would answer of it, and the lookup's error.
type Metadata struct {
	Machine  *Machine
	Metadata *cloudprovider.InstanceMetadata
	Err      error
}

// LookedUp is the Metadata of a lookup of a Node's machine that found m
// (found) or not, or failed (err): describe says the machine and what
// InstanceMetadata would answer of it (nil when its state answers nothing).
func LookedUp[M any](m M, found bool, err error, describe func(M) (*Machine, *cloudprovider.InstanceMetadata)) Metadata {
	md := Metadata{Err: err}
	if err == nil && !found {
		md.Err = cloudprovider.InstanceNotFound
	}
	if found {
		md.Machine, md.Metadata = describe(m)
	}
	return md
}

// ExplainedNode is how every cloud's ExplainNode ends: the Node's machine
// as looked up, what the node controller would set compared with what the
// Node has, and the deletion guard's answer, from the cloud's own
// InstanceExists (its shared listing) over the Nodes of its providerID
// scheme.
func ExplainedNode(ctx context.Context, cloud string, node *v1.Node, nodes []*v1.Node, m Metadata,
	exists func(context.Context, *v1.Node) (bool, error)) (NodeExplanation, error) {
	e := NodeExplanation{Cloud: cloud, Node: node.Name, ProviderID: node.Spec.ProviderID, Differences: []Difference{},
		Conditions: []Condition{}, Events: []Event{}}
	switch _, ambiguous := errors.AsType[*AmbiguousError](m.Err); {
	case m.Err == nil, errors.Is(m.Err, cloudprovider.InstanceNotFound):
	case ambiguous, errors.Is(m.Err, providerid.ErrForeign), errors.Is(m.Err, providerid.ErrMalformed):
		e.LookupError = m.Err.Error()
	default:
		return e, m.Err
	}
	e.Machine = m.Machine
	if m.Metadata != nil {
		e.Found = true
		e.Wants, e.Differences = nodeWants(node, m.Metadata)
	}
	if e.LookupError != "" {
		return e, nil
	}
	g, err := guardOf(ctx, deletionGuardOptions(), node, nodes, exists)
	if err != nil {
		return e, err
	}
	e.Guard = g
	return e, nil
}

// BeginExplanation is the explanation of svc's load balancer begun as every
// cloud begins it: what the Service asks, by the cloud's own Spec (a
// refusal is the explanation's SpecProblem, and the spec is then the zero
// S), and the cycle's record of what it was last converged to, kept in the
// annotation converged ("" where the cloud keeps none). An error is the
// cloud's that could not be read.
func BeginExplanation[S, L any](ctx context.Context, cloud string, converged annotation.Name, cycle *lbcycle.Cycle[S, L],
	steps lbcycle.Cloud[S, L], clusterName string, svc *v1.Service, nodes []*v1.Node) (ServiceExplanation, S, error) {
	e := NewServiceExplanation(cloud, svc)
	spec, fp, err := steps.Spec(ctx, clusterName, svc, nodes)
	if err := e.Asked(err); err != nil {
		return e, spec, err
	}
	rec, has := cycle.RecordOf(svc)
	e.SetRecord(svc, string(converged), rec, has, fp)
	return e, spec, nil
}
