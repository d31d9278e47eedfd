package oci

import (
	"fmt"
	"net/http"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Reserved public IPs (core.PublicIp, scope REGION, lifetime RESERVED): a
// user reserves one, a load balancer created with it in reservedIps takes it
// (ASSIGNED) and gives it back when deleted (AVAILABLE). GetPublicIpByIpAddress
// finds one by its address (POST /publicIps/actions/getByIpAddress).

type publicIP struct {
	resource
	DisplayName        string `json:"displayName"`
	IPAddress          string `json:"ipAddress"`
	Lifetime           string `json:"lifetime"`
	Scope              string `json:"scope"`
	AssignedEntityID   string `json:"assignedEntityId,omitempty"`
	AssignedEntityType string `json:"assignedEntityType,omitempty"`
}

// Public IP lifecycle states (core.PublicIpLifecycleStateEnum).
const (
	ipAvailable = "AVAILABLE"
	ipAssigned  = "ASSIGNED"
)

// ReservePublicIP reserves a public IP in the fixture's compartment, as a
// user does before asking for it in spec.loadBalancerIP, and returns its
// OCID and address.
func (e *Emulator) ReservePublicIP() (id, ip string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.publicNext
	e.publicNext = a.Next()
	p := &publicIP{resource: e.newResource("publicip", e.fx.CompartmentID, ipAvailable, e.opts.Clock()),
		DisplayName: "reserved", IPAddress: a.String(), Lifetime: "RESERVED", Scope: "REGION"}
	e.publicIPs.Add(p.ID, p)
	return p.ID, p.IPAddress
}

func (e *Emulator) routePublicIPs() {
	e.handle("POST "+corePath+"/publicIps/actions/getByIpAddress", func(w http.ResponseWriter, r *http.Request) {
		var d struct {
			IPAddress string `json:"ipAddress"`
		}
		if !decodeBody(w, r, &d) {
			return
		}
		e.mu.Lock()
		var found any
		for _, p := range e.publicIPs.All() {
			if p.IPAddress == d.IPAddress {
				found = viewOf(p)
			}
		}
		e.mu.Unlock()
		if found == nil {
			writeError(w, http.StatusNotFound, "NotAuthorizedOrNotFound", fmt.Sprintf("Public IP %s not found.", d.IPAddress))
			return
		}
		core.WriteJSON(w, http.StatusOK, found)
	})
	routeGet(e, corePath+"/publicIps", e.publicIPs)
}

// reservedRef names a reserved public IP in a create (ReservedIP).
type reservedRef struct {
	ID string `json:"id"`
}

// reservedFor takes the reserved public IPs a create of a load balancer
// (noun) names for it, owner; a private one takes none (400). Call with mu
// held.
func (e *Emulator) reservedFor(refs []reservedRef, private bool, owner, noun string) ([]*publicIP, error) {
	if len(refs) > 0 && private {
		return nil, invalid("A private %s takes no reserved public IP.", noun)
	}
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	return e.takeReserved(ids, owner)
}

// tagsOrEmpty are the tags of a create, empty rather than absent, as OCI
// answers them.
func tagsOrEmpty(freeform map[string]string, defined map[string]map[string]any) (map[string]string, map[string]map[string]any) {
	if freeform == nil {
		freeform = map[string]string{}
	}
	if defined == nil {
		defined = map[string]map[string]any{}
	}
	return freeform, defined
}

// takeReserved assigns the reserved IPs ids to load balancer lb, all or
// none. Call with mu held.
func (e *Emulator) takeReserved(ids []string, lb string) ([]*publicIP, error) {
	var out []*publicIP
	for _, id := range ids {
		p, ok := e.publicIPs.Get(id)
		switch {
		case !ok:
			return nil, &apiErr{http.StatusBadRequest, "RelatedResourceNotAuthorizedOrNotFound", fmt.Sprintf("Public IP %s not found.", id)}
		case p.LifecycleState != ipAvailable:
			return nil, &apiErr{http.StatusConflict, "Conflict", fmt.Sprintf("Public IP %s is %s, not AVAILABLE.", id, p.LifecycleState)}
		}
		out = append(out, p)
	}
	for _, p := range out {
		p.LifecycleState, p.AssignedEntityID, p.AssignedEntityType = ipAssigned, lb, "LOAD_BALANCER"
	}
	return out, nil
}

// releaseReserved gives back the reserved IPs of load balancer lb. Call
// with mu held.
func (e *Emulator) releaseReserved(lb string) {
	for _, p := range e.publicIPs.All() {
		if p.AssignedEntityID == lb {
			p.LifecycleState, p.AssignedEntityID, p.AssignedEntityType = ipAvailable, "", ""
		}
	}
}
