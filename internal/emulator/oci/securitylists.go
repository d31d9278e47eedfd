package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Security lists, as the Virtual Network API answers them (oci-go-sdk's
// core.SecurityList, IngressSecurityRule, EgressSecurityRule): a list is
// replaced whole by UpdateSecurityList; every answer carries the list's etag,
// and an update with If-Match of another etag is refused with 412
// NoEtagMatch, in the message shape OCI gives (peer issues #92, #104: "Entity
// security list with ID … has a computed tag of …, but is passed a tag of
// …"). Rules are kept as they were sent, fields the emulator does not read
// included.

type securityList struct {
	resource
	DisplayName          string            `json:"displayName"`
	VCNID                string            `json:"vcnId"`
	IngressSecurityRules []json.RawMessage `json:"ingressSecurityRules"`
	EgressSecurityRules  []json.RawMessage `json:"egressSecurityRules"`
	FreeformTags         map[string]string `json:"freeformTags"`
	version              int
}

// etag is the list's current etag.
func (s *securityList) etag() string {
	sum := sha256.Sum256([]byte(s.ID + "/" + strconv.Itoa(s.version)))
	return hex.EncodeToString(sum[:4])
}

// bump moves the list to its next version, as each update does.
func (s *securityList) bump() { s.version++ }

// ruleKeys are the fields every rule must have, by direction.
var ruleKeys = map[string]string{"ingress": "source", "egress": "destination"}

func checkRules(direction string, rules []json.RawMessage) error {
	for i, raw := range rules {
		var r map[string]any
		if err := json.Unmarshal(raw, &r); err != nil {
			return invalid("%sSecurityRules[%d] is not an object.", direction, i)
		}
		for _, k := range []string{"protocol", ruleKeys[direction]} {
			if s, _ := r[k].(string); s == "" {
				return &apiErr{http.StatusBadRequest, "MissingParameter", fmt.Sprintf("%sSecurityRules[%d].%s is required.", direction, i, k)}
			}
		}
	}
	return nil
}

func (e *Emulator) routeSecurityLists() {
	p := corePath + "/securityLists/{id}"
	e.handle("GET "+p, func(w http.ResponseWriter, r *http.Request) {
		getOne(e, w, r, e.securityLists, viewCopy[securityList])
	})
	e.handle("PUT "+p, ociWrite(e, decodeSecurityListUpdate, ifMatch(e.securityLists, "security list", viewCopy[securityList], updateSecurityList)))
}

// securityListUpdate is UpdateSecurityListDetails, the parts kept: each
// given replaces the list's.
type securityListUpdate struct {
	DisplayName          *string            `json:"displayName"`
	IngressSecurityRules *[]json.RawMessage `json:"ingressSecurityRules"`
	EgressSecurityRules  *[]json.RawMessage `json:"egressSecurityRules"`
}

// decodeSecurityListUpdate reads an update and checks its rules before the
// list is looked up, as OCI validates the body first.
func decodeSecurityListUpdate(r *http.Request, d *securityListUpdate) error {
	if err := readBody(r, d); err != nil {
		return err
	}
	for dir, rules := range map[string]*[]json.RawMessage{"ingress": d.IngressSecurityRules, "egress": d.EgressSecurityRules} {
		if rules == nil {
			continue
		}
		if err := checkRules(dir, *rules); err != nil {
			return err
		}
	}
	return nil
}

// updateSecurityList answers UpdateSecurityList, with If-Match.
func updateSecurityList(sl *securityList, d *securityListUpdate) {
	replaceIf(&sl.DisplayName, d.DisplayName)
	replaceIf(&sl.IngressSecurityRules, d.IngressSecurityRules)
	replaceIf(&sl.EgressSecurityRules, d.EgressSecurityRules)
}

// SecurityListRules are a security list's rules, each as JSON (tests).
func (e *Emulator) SecurityListRules(id string) (ingress, egress []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sl, ok := e.securityLists.Get(id)
	if !ok {
		return nil, nil
	}
	for _, r := range sl.IngressSecurityRules {
		ingress = append(ingress, string(r))
	}
	for _, r := range sl.EgressSecurityRules {
		egress = append(egress, string(r))
	}
	return ingress, egress
}

// etagMismatch is nil when the request's If-Match (if any) is the entity's
// etag, else 412 NoEtagMatch in the message shape OCI gives ("Entity
// security list with ID … has a computed tag of …, but is passed a tag of
// …", peer issues #92, #104).
func etagMismatch(r *http.Request, entity, id, etag string) error {
	m := r.Header.Get("if-match")
	if m == "" || m == etag {
		return nil
	}
	return &apiErr{http.StatusPreconditionFailed, "NoEtagMatch",
		fmt.Sprintf("Entity %s with ID %s has a computed tag of %s, but is passed a tag of %s", entity, id, etag, m)}
}
