package cloudstack

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// updateNetworkACLItem changes an ACL item in place, as the real API does
// (UpdateNetworkACLItemCmd): each parameter given replaces the item's
// (protocol, startport, endport, cidrlist, action, traffictype, reason),
// those not given stay; the item keeps its id, number and tags. The change
// is made by its job.
func (e *Emulator) updateNetworkACLItem(a *account, p url.Values, now time.Time) (any, *apiError) {
	var r *aclItem
	for _, it := range e.acl {
		if it.id == p.Get("id") {
			r = it
		}
	}
	if r == nil {
		return nil, invalidID("updateNetworkACLItem", p.Get("id"))
	}
	next, aerr := updatedItem(*r, p)
	if aerr != nil {
		return nil, aerr
	}
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.network.UpdateNetworkACLItemCmd", "NetworkAcl", r.id, now, func() (any, error) {
		*r = next
		return map[string]any{"networkacl": e.aclView(r)}, nil
	})
	return map[string]any{"jobid": job}, nil
}

// updatedItem is item r with the parameters p gives, checked as a new
// item's are.
func updatedItem(r aclItem, p url.Values) (aclItem, *apiError) {
	q := url.Values{"protocol": {r.protocol}, "startport": {strconv.Itoa(r.start)}, "endport": {strconv.Itoa(r.end)}, "cidrlist": {strings.Join(r.cidrs, ",")}}
	for _, k := range []string{"protocol", "startport", "endport", "cidrlist"} {
		if v, ok := p[k]; ok {
			q[k] = v
		}
	}
	m, aerr := parseMatch("updateNetworkACLItem", q, "Invalid protocol: ")
	if aerr != nil {
		return r, aerr
	}
	r.protocol, r.start, r.end, r.cidrs = m.proto, m.start, m.end, m.cidrs
	if v := p.Get("action"); v != "" {
		if v != "Allow" && v != "Deny" {
			return r, paramError("Invalid action. Allowed actions are Allow and Deny")
		}
		r.action = v
	}
	if v := p.Get("traffictype"); v != "" {
		if v != "Ingress" && v != "Egress" {
			return r, paramError("Invalid traffic type %s", v)
		}
		r.trafficType = v
	}
	if v, ok := p["reason"]; ok {
		r.reason = v[0]
	}
	return r, nil
}
