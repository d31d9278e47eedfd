package oci

import (
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

func (e *Emulator) routeNSGs() {
	p := corePath + "/networkSecurityGroups"
	e.handle("POST "+p, func(w http.ResponseWriter, r *http.Request) {
		var d struct {
			CompartmentID string                    `json:"compartmentId"`
			VCNID         string                    `json:"vcnId"`
			DisplayName   string                    `json:"displayName"`
			FreeformTags  map[string]string         `json:"freeformTags"`
			DefinedTags   map[string]map[string]any `json:"definedTags"`
		}
		if !decodeBody(w, r, &d) {
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if _, ok := e.vcns.Get(d.VCNID); !ok || d.CompartmentID == "" {
			writeError(w, http.StatusBadRequest, "InvalidParameter", "compartmentId and the vcnId of an existing VCN are required.")
			return
		}
		g := &nsg{resource: resource{ID: e.newID("networksecuritygroup"), CompartmentID: d.CompartmentID, LifecycleState: "AVAILABLE",
			TimeCreated: e.opts.Clock()}, VCNID: d.VCNID, DisplayName: d.DisplayName, revision: 1}
		g.FreeformTags, g.DefinedTags = tagsOrEmpty(d.FreeformTags, d.DefinedTags)
		e.nsgs.Add(g.ID, g)
		w.Header().Set("etag", g.etag())
		core.WriteJSON(w, http.StatusOK, g)
	})
	e.handle("GET "+p, filtered[*nsg]{st: e.nsgs, view: func(g *nsg) any { c := *g; return &c }, fields: func(g *nsg) (string, map[string]string) {
		return g.CompartmentID, map[string]string{"vcnId": g.VCNID, "displayName": g.DisplayName}
	}}.serve(e))
	e.handle("GET "+p+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		getOne(e, w, r, e.nsgs, func(g *nsg) any { c := *g; return &c })
	})
	// UpdateNetworkSecurityGroup (oci-go-sdk core.UpdateNetworkSecurityGroupDetails:
	// displayName, freeformTags, definedTags, each replaced when given), with
	// If-Match: the peer tags a backend NSG it manages rules in so.
	e.handle("PUT "+p+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		var d struct {
			DisplayName  *string                   `json:"displayName"`
			FreeformTags map[string]string         `json:"freeformTags"`
			DefinedTags  map[string]map[string]any `json:"definedTags"`
		}
		e.withNSG(w, r, &d, func(g *nsg) {
			if !etagMatches(w, r, "network security group", g.ID, g.etag()) {
				return
			}
			if d.DisplayName != nil {
				g.DisplayName = *d.DisplayName
			}
			if d.FreeformTags != nil {
				g.FreeformTags = d.FreeformTags
			}
			if d.DefinedTags != nil {
				g.DefinedTags = d.DefinedTags
			}
			g.revision++
			view := *g
			w.Header().Set("etag", view.etag())
			core.WriteJSON(w, http.StatusOK, &view)
		})
	})
	e.handle("DELETE "+p+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		id := r.PathValue("id")
		if _, ok := lookup(w, e.nsgs, id); !ok {
			return
		}
		if by := e.nsgUser(id); by != "" {
			writeError(w, http.StatusConflict, "Conflict", fmt.Sprintf("Network security group %s has resources in it (%s).", id, by))
			return
		}
		e.nsgs.Remove(id)
		w.WriteHeader(http.StatusNoContent)
	})
	e.handle("GET "+p+"/{id}/securityRules", func(w http.ResponseWriter, r *http.Request) {
		dir := r.URL.Query().Get("direction")
		e.mu.Lock()
		g, ok := e.nsgs.Get(r.PathValue("id"))
		out := []nsgRule{}
		if ok {
			for _, rule := range g.rules {
				if dir == "" || rule.Direction == dir {
					out = append(out, *rule)
				}
			}
		}
		e.mu.Unlock()
		if !ok {
			writeNotFound(w)
			return
		}
		core.WriteJSON(w, http.StatusOK, out)
	})
	e.handle("POST "+p+"/{id}/actions/addSecurityRules", func(w http.ResponseWriter, r *http.Request) {
		var d struct {
			SecurityRules []*nsgRule `json:"securityRules"`
		}
		e.withNSG(w, r, &d, func(g *nsg) {
			if len(d.SecurityRules) > nsgRulesPerCall {
				writeError(w, http.StatusBadRequest, "InvalidParameter", fmt.Sprintf("At most %d security rules may be added at once.", nsgRulesPerCall))
				return
			}
			for _, rule := range d.SecurityRules {
				if err := e.checkNSGRule(rule); err != nil {
					writeAPIErr(w, err)
					return
				}
			}
			now := e.opts.Clock()
			added := []nsgRule{}
			for _, rule := range d.SecurityRules {
				e.seq++
				rule.ID, rule.TimeCreated = fmt.Sprintf("%06X", e.seq), now
				g.rules = append(g.rules, rule)
				added = append(added, *rule)
			}
			g.revision++
			core.WriteJSON(w, http.StatusOK, map[string]any{"securityRules": added})
		})
	})
	e.handle("POST "+p+"/{id}/actions/removeSecurityRules", func(w http.ResponseWriter, r *http.Request) {
		var d struct {
			SecurityRuleIDs []string `json:"securityRuleIds"`
		}
		e.withNSG(w, r, &d, func(g *nsg) {
			g.rules = slices.DeleteFunc(g.rules, func(rule *nsgRule) bool { return slices.Contains(d.SecurityRuleIDs, rule.ID) })
			g.revision++
			w.WriteHeader(http.StatusOK)
		})
	})
}

// withNSG decodes the request's body into body, then calls f with the NSG
// {id} and mu held; 404 NotAuthorizedOrNotFound when there is none.
func (e *Emulator) withNSG(w http.ResponseWriter, r *http.Request, body any, f func(*nsg)) {
	if !decodeBody(w, r, body) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if g, ok := lookup(w, e.nsgs, r.PathValue("id")); ok {
		f(g)
	}
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
