package oci

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// Network security groups, in the peer's NSG mode
// (oci.oraclecloud.com/security-rule-management-mode: NSG): each Service's
// load balancer is in a frontend NSG of its own, named and tagged as the
// peer names and tags it (<namespace>/<name>/<UID>/nsg, CreatedBy: CCM,
// ServiceUid: <UID>), so the peer's are adopted. The frontend NSG admits the
// Service's sources on its ports and reaches the backend NSGs
// (oci.oraclecloud.com/oci-backend-network-security-group) on the node
// ports and the health check port; each backend NSG admits the frontend NSG
// there. Every rule added carries the peer's mark, service-uid-<UID> in its
// description (the Service's UID is unique to it in any cluster), and the
// frontend NSG exactly the peer's tags: the peer, which adopts a group only
// with exactly its tags and a rule only with exactly its description
// (load_balancer.go getFrontendNsg, load_balancer_network_security_group.go
// findSecurityRule), takes over with no write, as Overcast takes over its.
// A rule an earlier Overcast marked (overcast:<cluster UID>/<UID>) is the
// Service's too. A backend NSG is tagged ManagedBy: CCM, as the peer tags
// it, its other tags kept. Only the Service's rules are removed; the frontend NSG goes
// with the load balancer, after it. NSGs the Service names
// (oci-network-security-groups) are joined and never changed.

// nsgRuleKey is what a rule does: direction, peer and port.
func nsgRuleKey(r ociapi.NSGRule) string {
	port := ""
	if r.TCPOptions != nil && r.TCPOptions.DestinationPortRange != nil {
		port = fmt.Sprintf("%d-%d", r.TCPOptions.DestinationPortRange.Min, r.TCPOptions.DestinationPortRange.Max)
	}
	return strings.Join([]string{r.Direction, r.Protocol, r.Source, r.SourceType, r.Destination, r.DestinationType, port, statefulness(r.IsStateless)}, "|")
}

// nsgRule is a stateful TCP rule toward (ingress: from) peer, a CIDR or an
// NSG, on port.
func nsgRule(ingress bool, peer string, port int, mark string) ociapi.NSGRule {
	r := ociapi.NSGRule{Direction: "EGRESS", SecurityRule: tcpRule(ingress, peer, port, mark)}
	if ingress {
		r.Direction = "INGRESS"
	}
	if strings.HasPrefix(peer, "ocid1.networksecuritygroup.") {
		if ingress {
			r.SourceType = "NETWORK_SECURITY_GROUP"
		} else {
			r.DestinationType = "NETWORK_SECURITY_GROUP"
		}
	}
	return r
}

// frontendNSGName is the peer's name of a Service's frontend NSG.
func frontendNSGName(svc *v1.Service) string {
	name := svc.Namespace + "/" + svc.Name + "/" + string(svc.UID) + "/nsg"
	if len(name) > 255 {
		name = name[:255]
	}
	return name
}

// frontendNSG is the Service's frontend NSG ("" when there is none): the
// oldest of its name tagged with its UID (a second one is a create whose
// answer was lost: ensureFrontendNSG deletes it).
func (st *steps) frontendNSG(ctx context.Context, svc *v1.Service) (string, error) {
	front, _, err := st.frontendNSGs(ctx, svc)
	return front, err
}

// frontendNSGs are frontendNSG and the Service's other NSGs of its name
// and tags.
func (st *steps) frontendNSGs(ctx context.Context, svc *v1.Service) (string, []string, error) {
	list, err := st.api.NSGs(ctx, ociapi.With(ociapi.InCompartment(st.cfg.CompartmentID), "displayName", frontendNSGName(svc)))
	if err != nil {
		return "", nil, fmt.Errorf("looking up the network security group of the Service: %w", err)
	}
	list = slices.DeleteFunc(list, func(g ociapi.NSG) bool {
		return g.FreeformTags["ServiceUid"] != string(svc.UID) || g.LifecycleState == "TERMINATED" || g.LifecycleState == "TERMINATING"
	})
	if len(list) == 0 {
		return "", nil, nil
	}
	slices.SortFunc(list, func(a, b ociapi.NSG) int { return a.TimeCreated.Compare(b.TimeCreated) })
	var others []string
	for _, g := range list[1:] {
		others = append(others, g.ID)
	}
	return list[0].ID, others, nil
}

// createFrontendNSG makes the Service's frontend NSG in the VCN of the load
// balancer's subnet.
func (st *steps) createFrontendNSG(ctx context.Context, svc *v1.Service, spec lbSpec) (string, error) {
	sub, err := st.subnet(ctx, spec.subnets[0])
	if err != nil {
		return "", err
	}
	token := retryToken(svc.UID, "nsg", st.salts.get(svc.UID, "nsg"), []string{st.cfg.CompartmentID, sub.VCNID, frontendNSGName(svc)})
	g, err := st.api.CreateNSG(ctx, st.cfg.CompartmentID, sub.VCNID, frontendNSGName(svc), nsgTags(svc), token)
	st.createAnswered(svc, "nsg", err)
	if err != nil {
		return "", fmt.Errorf("creating the network security group of the Service: %w", err)
	}
	return g.ID, nil
}

// ensureFrontendNSG is the Service's frontend NSG in NSG mode ("" in the
// others), made when there is none yet: then made says so, and the step
// ends there.
func (st *steps) ensureFrontendNSG(ctx context.Context, svc *v1.Service, spec lbSpec) (front, made string, err error) {
	if spec.mode != ModeNSG {
		return "", "", nil
	}
	front, others, err := st.frontendNSGs(ctx, svc)
	if err != nil || front != "" {
		st.unanswered.Found(lostKey(svc, "nsg"))
		return front, "", errors.Join(err, st.deleteNSGDuplicates(ctx, svc, front, others))
	}
	if msg := st.awaitingLostCreate(svc, "nsg", "the network security group "+frontendNSGName(svc)); msg != "" {
		return "", msg, nil
	}
	id, err := st.createFrontendNSG(ctx, svc, spec)
	if err != nil {
		return "", "", err
	}
	return "", fmt.Sprintf("network security group %s made for the %s", id, noun(spec.kind)), nil
}

// wantedNSGs are the NSGs the load balancer is to be in: the Service's own,
// and its frontend NSG in NSG mode.
func wantedNSGs(spec lbSpec, frontend string) []string {
	out := slices.Clone(spec.nsgs)
	if frontend != "" {
		out = append(out, frontend)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// nsgTags are the peer's tags of a Service's frontend NSG, exactly: the
// peer adopts no group with another tag.
func nsgTags(svc *v1.Service) map[string]string {
	return map[string]string{"CreatedBy": "CCM", "ServiceUid": string(svc.UID)}
}

// nsgMark is the description of the Service's NSG rules, the peer's.
func nsgMark(svc *v1.Service) string { return "service-uid-" + string(svc.UID) }

// isOurs says whether an NSG rule is the Service's: the peer's mark, its
// UID alone, or an earlier Overcast's mark in this cluster.
func (st *steps) isOurs(r ociapi.NSGRule, svc *v1.Service) bool {
	return r.Description == nsgMark(svc) || r.Description == string(svc.UID) || r.Description == st.mark(svc) ||
		strings.HasPrefix(r.Description, st.mark(svc)+" ")
}

// applyNSGRules makes the Service's rules in NSG id what want says: the
// missing added, those of the Service's no longer wanted removed, others
// left.
func (st *steps) applyNSGRules(ctx context.Context, svc *v1.Service, id string, want []ociapi.NSGRule) error {
	defer st.nsgPass.Stale(id) // the drift check reads what this leaves
	have, err := st.api.NSGRules(ctx, id)
	if err != nil {
		return fmt.Errorf("reading the rules of network security group %s: %w", id, err)
	}
	add, stale := st.nsgChanges(svc, have, want)
	if err := st.api.AddNSGRules(ctx, id, add); err != nil {
		return fmt.Errorf("adding rules to network security group %s: %w", id, err)
	}
	if err := st.api.RemoveNSGRules(ctx, id, stale); err != nil {
		return fmt.Errorf("removing rules from network security group %s: %w", id, err)
	}
	return nil
}

// nsgChanges are the rules of want an NSG's rules (have) lack, and the
// ids of the Service's rules in it that want has not (or has twice).
func (st *steps) nsgChanges(svc *v1.Service, have, want []ociapi.NSGRule) (add []ociapi.NSGRule, stale []string) {
	wanted := map[string]bool{}
	for _, r := range want {
		wanted[nsgRuleKey(r)] = true
	}
	present := map[string]bool{}
	for _, r := range have {
		if !st.isOurs(r, svc) {
			continue
		}
		if wanted[nsgRuleKey(r)] && !present[nsgRuleKey(r)] {
			present[nsgRuleKey(r)] = true
			continue
		}
		stale = append(stale, r.ID)
	}
	for _, r := range want {
		if !present[nsgRuleKey(r)] {
			present[nsgRuleKey(r)] = true
			add = append(add, r)
		}
	}
	return add, stale
}

// nsgRules opens the frontend NSG to the Service's sources on its ports and
// toward the backend NSGs, and the backend NSGs to it.
func (st *steps) publishNSGRules(ctx context.Context, svc *v1.Service, spec lbSpec, frontend string) error {
	front, back := nsgRulesWanted(svc, spec, frontend)
	if err := st.applyNSGRules(ctx, svc, frontend, front); err != nil {
		return err
	}
	for _, b := range spec.backendNSGs {
		if err := st.markManaged(ctx, b); err != nil {
			return err
		}
		if err := st.applyNSGRules(ctx, svc, b, back[b]); err != nil {
			return err
		}
	}
	return nil
}

// nsgRulesWanted are the Service's rules in its frontend NSG, and in each
// backend NSG.
func nsgRulesWanted(svc *v1.Service, spec lbSpec, frontend string) (front []ociapi.NSGRule, back map[string][]ociapi.NSGRule) {
	mark := nsgMark(svc)
	for _, src := range spec.sources {
		for _, p := range spec.listenerPorts {
			front = append(front, nsgRule(true, src, p, mark))
		}
	}
	back = map[string][]ociapi.NSGRule{}
	for _, b := range spec.backendNSGs {
		for _, p := range spec.backendPorts {
			front = append(front, nsgRule(false, b, p, mark))
			back[b] = append(back[b], nsgRule(true, frontend, p, mark))
		}
		for _, src := range clientSources(spec) {
			for _, p := range nodePortsFrom(svc, spec, src, nil) {
				back[b] = append(back[b], nsgRule(true, src, p, mark))
			}
		}
	}
	return front, back
}

// markManaged tags a backend NSG the Service's rules go in ManagedBy: CCM,
// once, as the peer tags it (load_balancer.go): the peer, taking over,
// then has nothing to write. Its other tags are kept.
func (st *steps) markManaged(ctx context.Context, id string) error {
	if _, done := st.managedNSGs.Load(id); done {
		return nil
	}
	g, etag, err := st.api.NSGRead(ctx, id)
	if err != nil {
		return fmt.Errorf("reading network security group %s: %w", id, err)
	}
	if _, ok := g.FreeformTags["ManagedBy"]; !ok {
		tags := maps.Clone(g.FreeformTags)
		if tags == nil {
			tags = map[string]string{}
		}
		tags["ManagedBy"] = "CCM"
		if err := st.api.TagNSG(ctx, id, etag, tags); err != nil {
			return fmt.Errorf("tagging network security group %s as the peer does: %w", id, err)
		}
	}
	st.managedNSGs.Store(id, true)
	return nil
}

// removeBackendNSGRules removes the Service's rules from the backend NSGs
// its annotation names.
func (st *steps) removeBackendNSGRules(ctx context.Context, svc *v1.Service, backends []string) error {
	for _, b := range backends {
		if err := st.applyNSGRules(ctx, svc, b, nil); err != nil {
			return err
		}
	}
	return nil
}

// uidLists are lists of OCIDs by Service.
type uidLists struct {
	mu sync.Mutex
	m  map[types.UID][]string
}

func (u *uidLists) put(uid types.UID, ids []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[types.UID][]string{}
	}
	if len(ids) > 0 {
		u.m[uid] = append(u.m[uid], ids...)
	}
}

func (u *uidLists) take(uid types.UID) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	ids := u.m[uid]
	delete(u.m, uid)
	return ids
}
