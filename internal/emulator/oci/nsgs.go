package oci

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Network security groups, as the Virtual Network API answers them
// (core.NetworkSecurityGroup, SecurityRule, AddSecurityRuleDetails,
// AddNetworkSecurityGroupSecurityRulesDetails,
// RemoveNetworkSecurityGroupSecurityRulesDetails): an NSG of a VCN holds
// rules, added (at most 25 a call, each given an id) and removed by id at
// once, no work request; a rule's source or destination is a CIDR or another
// NSG. Load balancers join NSGs (networkSecurityGroupIds at creation, or
// PUT …/networkSecurityGroups, a work request); an NSG a load balancer is in
// cannot be deleted (409). Not emulated: the rules gating traffic.

// nsgRulesPerCall is the most rules one addSecurityRules takes (the API
// reference's limit, which the peer batches by).
const nsgRulesPerCall = 25

type nsg struct {
	resource
	VCNID        string                    `json:"vcnId"`
	DisplayName  string                    `json:"displayName"`
	FreeformTags map[string]string         `json:"freeformTags"`
	DefinedTags  map[string]map[string]any `json:"definedTags"`
	rules        []*nsgRule
	revision     int
}

type nsgRule struct {
	ID              string          `json:"id"`
	Direction       string          `json:"direction"`
	Protocol        string          `json:"protocol"`
	Description     string          `json:"description,omitempty"`
	Source          string          `json:"source,omitempty"`
	SourceType      string          `json:"sourceType,omitempty"`
	Destination     string          `json:"destination,omitempty"`
	DestinationType string          `json:"destinationType,omitempty"`
	IsStateless     bool            `json:"isStateless"`
	IsValid         bool            `json:"isValid"`
	TCPOptions      json.RawMessage `json:"tcpOptions,omitempty"`
	UDPOptions      json.RawMessage `json:"udpOptions,omitempty"`
	ICMPOptions     json.RawMessage `json:"icmpOptions,omitempty"`
	TimeCreated     time.Time       `json:"timeCreated"`
}

// check fills a rule's defaults and checks its peer (a CIDR, or an NSG of
// the emulator). Call with mu held.
func (e *Emulator) checkNSGRule(r *nsgRule) error {
	peer, kind := r.Source, &r.SourceType
	switch r.Direction {
	case "INGRESS":
	case "EGRESS":
		peer, kind = r.Destination, &r.DestinationType
	default:
		return invalid("A security rule's direction is INGRESS or EGRESS, not %q.", r.Direction)
	}
	if r.Protocol == "" {
		return invalid("A security rule needs a protocol.")
	}
	if *kind == "" {
		*kind = "CIDR_BLOCK"
	}
	switch *kind {
	case "CIDR_BLOCK":
		if _, err := netip.ParsePrefix(peer); err != nil {
			return invalid("%q is not a CIDR block.", peer)
		}
	case "NETWORK_SECURITY_GROUP":
		if _, ok := e.nsgs.Get(peer); !ok {
			return &apiErr{http.StatusBadRequest, "RelatedResourceNotAuthorizedOrNotFound", fmt.Sprintf("Network security group %s not found.", peer)}
		}
	case "SERVICE_CIDR_BLOCK":
	default:
		return invalid("Source or destination type %q is not CIDR_BLOCK, SERVICE_CIDR_BLOCK or NETWORK_SECURITY_GROUP.", *kind)
	}
	r.IsValid = true
	return nil
}

func (g *nsg) etag() string { return strconv.Itoa(g.revision) }

// bump moves the NSG to its next revision, as each update does.
func (g *nsg) bump() { g.revision++ }

func (e *Emulator) routeNSGs() {
	p := corePath + "/networkSecurityGroups"
	view := viewCopy[nsg]
	resourceRoutes[*nsg]{path: p, create: ociWrite(e, jsonBody[nsgCreate], e.createNSG), remove: ociWrite(e, nil, e.deleteNSG),
		list: filtered[*nsg]{st: e.nsgs, view: view, fields: func(g *nsg) (string, map[string]string) {
			return g.CompartmentID, map[string]string{"vcnId": g.VCNID, "displayName": g.DisplayName}
		}}}.route(e)
	e.handle("PUT "+p+"/{id}", ociWrite(e, jsonBody[nsgUpdate], ifMatch(e.nsgs, "network security group", view, updateNSG)))
	e.handle("GET "+p+"/{id}/securityRules", e.listNSGRules)
	e.handle("POST "+p+"/{id}/actions/addSecurityRules", ociWrite(e, jsonBody[nsgRulesAdded], e.addNSGRules))
	e.handle("POST "+p+"/{id}/actions/removeSecurityRules", ociWrite(e, jsonBody[nsgRulesRemoved], e.removeNSGRules))
}

// nsgCreate is CreateNetworkSecurityGroupDetails.
type nsgCreate struct {
	CompartmentID string                    `json:"compartmentId"`
	VCNID         string                    `json:"vcnId"`
	DisplayName   string                    `json:"displayName"`
	FreeformTags  map[string]string         `json:"freeformTags"`
	DefinedTags   map[string]map[string]any `json:"definedTags"`
}

// createNSG answers CreateNetworkSecurityGroup: an AVAILABLE NSG of a VCN,
// with no rules, at once.
// createNSG answers CreateNetworkSecurityGroup; its opc-retry-token makes
// it idempotent for 24 hours, as a load balancer's create (loadbalancer.go):
// the same token and body are answered with the NSG first made, while it
// is there; another body is 409 InvalidatedRetryToken
// (core.CreateNetworkSecurityGroupRequest.OpcRetryToken).
func (e *Emulator) createNSG(r *http.Request, d *nsgCreate, now time.Time) (core.Reply, error) {
	if _, ok := e.vcns.Get(d.VCNID); !ok || d.CompartmentID == "" {
		return core.Reply{}, invalid("compartmentId and the vcnId of an existing VCN are required.")
	}
	token := r.Header.Get("opc-retry-token")
	body, _ := json.Marshal(d)
	sum := sha256.Sum256(body)
	if prev, ok := e.retryTokens["nsg/"+token]; token != "" && ok && now.Before(prev.expiresAt) {
		if prev.body != sum {
			return core.Reply{}, &apiErr{http.StatusConflict, "InvalidatedRetryToken", "The retry token was used for a request with another body."}
		}
		if g, ok := e.nsgs.Get(prev.created); ok {
			return tagged(g, g.etag()), nil
		}
	}
	g := &nsg{resource: e.newResource("networksecuritygroup", d.CompartmentID, "AVAILABLE", now), VCNID: d.VCNID, DisplayName: d.DisplayName, revision: 1}
	g.FreeformTags, g.DefinedTags = tagsOrEmpty(d.FreeformTags, d.DefinedTags)
	e.nsgs.Add(g.ID, g)
	if token != "" {
		e.retryTokens["nsg/"+token] = retried{body: sum, created: g.ID, expiresAt: now.Add(24 * time.Hour)}
	}
	return tagged(g, g.etag()), nil
}

// nsgUpdate is core.UpdateNetworkSecurityGroupDetails: displayName,
// freeformTags, definedTags, each replaced when given.
type nsgUpdate struct {
	DisplayName  *string                    `json:"displayName"`
	FreeformTags *map[string]string         `json:"freeformTags"`
	DefinedTags  *map[string]map[string]any `json:"definedTags"`
}

// updateNSG answers UpdateNetworkSecurityGroup, with If-Match: the peer
// tags a backend NSG it manages rules in so.
func updateNSG(g *nsg, d *nsgUpdate) {
	replaceIf(&g.DisplayName, d.DisplayName)
	replaceIf(&g.FreeformTags, d.FreeformTags)
	replaceIf(&g.DefinedTags, d.DefinedTags)
}

// deleteNSG answers DeleteNetworkSecurityGroup: refused (409) while a load
// balancer is in the NSG.
func (e *Emulator) deleteNSG(r *http.Request, _ *struct{}, _ time.Time) (core.Reply, error) {
	id := r.PathValue("id")
	if _, err := find(e.nsgs, id); err != nil {
		return core.Reply{}, err
	}
	if by := e.nsgUser(id); by != "" {
		return core.Reply{}, conflict("Network security group %s has resources in it (%s).", id, by)
	}
	e.nsgs.Remove(id)
	return core.NoContent(), nil
}

// listNSGRules answers ListNetworkSecurityGroupSecurityRules, of a direction
// when the request names one (a bare array, not paged here).
func (e *Emulator) listNSGRules(w http.ResponseWriter, r *http.Request) {
	dir := r.URL.Query().Get("direction")
	v, ok := core.View(&e.mu, e.nsgs, r.PathValue("id"), func(g *nsg) any {
		out := []nsgRule{}
		for _, rule := range g.rules {
			if dir == "" || rule.Direction == dir {
				out = append(out, *rule)
			}
		}
		return out
	})
	if !ok {
		writeNotFound(w)
		return
	}
	core.WriteJSON(w, http.StatusOK, v)
}

// nsgRulesAdded is AddNetworkSecurityGroupSecurityRulesDetails.
type nsgRulesAdded struct {
	SecurityRules []*nsgRule `json:"securityRules"`
}

// addNSGRules answers AddNetworkSecurityGroupSecurityRules: at most
// nsgRulesPerCall rules, all checked before any is added, each given an id.
func (e *Emulator) addNSGRules(r *http.Request, d *nsgRulesAdded, now time.Time) (core.Reply, error) {
	g, err := find(e.nsgs, r.PathValue("id"))
	if err != nil {
		return core.Reply{}, err
	}
	if len(d.SecurityRules) > nsgRulesPerCall {
		return core.Reply{}, invalid("At most %d security rules may be added at once.", nsgRulesPerCall)
	}
	for _, rule := range d.SecurityRules {
		if err := e.checkNSGRule(rule); err != nil {
			return core.Reply{}, err
		}
	}
	added := []nsgRule{}
	for _, rule := range d.SecurityRules {
		e.seq++
		rule.ID, rule.TimeCreated = fmt.Sprintf("%06X", e.seq), now
		g.rules = append(g.rules, rule)
		added = append(added, *rule)
	}
	g.revision++
	return core.OK(map[string]any{"securityRules": added}), nil
}

// nsgRulesRemoved is RemoveNetworkSecurityGroupSecurityRulesDetails.
type nsgRulesRemoved struct {
	SecurityRuleIDs []string `json:"securityRuleIds"`
}

// removeNSGRules answers RemoveNetworkSecurityGroupSecurityRules: 200 with
// no body.
func (e *Emulator) removeNSGRules(r *http.Request, d *nsgRulesRemoved, _ time.Time) (core.Reply, error) {
	g, err := find(e.nsgs, r.PathValue("id"))
	if err != nil {
		return core.Reply{}, err
	}
	g.rules = slices.DeleteFunc(g.rules, func(rule *nsgRule) bool { return slices.Contains(d.SecurityRuleIDs, rule.ID) })
	g.revision++
	return core.Reply{Status: http.StatusOK}, nil
}

// nsgUser names a load balancer in NSG id ("" for none). Call with mu held.
func (e *Emulator) nsgUser(id string) string {
	for _, lb := range e.lbs.All() {
		if slices.Contains(lb.NetworkSecurityGroupIDs, id) {
			return "load balancer " + lb.ID
		}
	}
	for _, n := range e.nlbs.All() {
		if slices.Contains(n.NetworkSecurityGroupIDs, id) {
			return "network load balancer " + n.ID
		}
	}
	return ""
}

// routeNSGMembership serves PUT …/{id}/networkSecurityGroups of a kind of
// load balancer P: the NSGs it is in (of) replaced, by a work request of
// operation op (change is the kind's).
func routeNSGMembership[P any](e *Emulator, p string, change func(http.ResponseWriter, *http.Request, string, func(P) (func(), error)),
	op string, of func(P) *[]string) {
	e.handle("PUT "+p+"/{id}/networkSecurityGroups", func(w http.ResponseWriter, r *http.Request) {
		var d struct {
			IDs []string `json:"networkSecurityGroupIds"`
		}
		if !decodeBody(w, r, &d) {
			return
		}
		change(w, r, op, func(lb P) (func(), error) {
			if err := e.checkNSGs(d.IDs); err != nil {
				return nil, err
			}
			return func() { *of(lb) = nonNil(d.IDs) }, nil
		})
	})
}

// checkNSGs checks that a load balancer's NSGs exist, at most five as the
// API allows. Call with mu held.
func (e *Emulator) checkNSGs(ids []string) error {
	if len(ids) > 5 {
		return invalid("A load balancer is in at most 5 network security groups.")
	}
	for _, id := range ids {
		if _, ok := e.nsgs.Get(id); !ok {
			return &apiErr{http.StatusBadRequest, "RelatedResourceNotAuthorizedOrNotFound", fmt.Sprintf("Network security group %s not found.", id)}
		}
	}
	return nil
}

// nsgRuleCount is how many rules the NSGs hold. Call with mu held.
func (e *Emulator) nsgRuleCount() int {
	n := 0
	for _, g := range e.nsgs.All() {
		n += len(g.rules)
	}
	return n
}
