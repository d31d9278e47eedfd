package oci

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Rule sets of a load balancer (loadbalancer.RuleSet, RuleSetDetails,
// CreateRuleSetDetails): named lists of rules a listener applies (its
// ruleSetNames). A rule is an object whose "action" is one of the API's
// (RuleActionEnum); the rest of it is kept as given. Not emulated: the rules'
// effect on traffic.

type ruleSet struct {
	Name  string            `json:"name"`
	Items []json.RawMessage `json:"items"`
}

// ruleActions are loadbalancer.RuleActionEnum.
var ruleActions = []string{"ADD_HTTP_REQUEST_HEADER", "EXTEND_HTTP_REQUEST_HEADER_VALUE", "REMOVE_HTTP_REQUEST_HEADER",
	"ADD_HTTP_RESPONSE_HEADER", "EXTEND_HTTP_RESPONSE_HEADER_VALUE", "REMOVE_HTTP_RESPONSE_HEADER", "ALLOW",
	"CONTROL_ACCESS_USING_HTTP_METHODS", "REDIRECT", "HTTP_HEADER", "IP_BASED_MAX_CONNECTIONS"}

func checkRuleSet(rs *ruleSet) error {
	if rs.Name == "" {
		return invalid("A rule set needs a name.")
	}
	if rs.Items == nil {
		return invalid("Rule set %s: items is required.", rs.Name)
	}
	for i, raw := range rs.Items {
		var r struct {
			Action string `json:"action"`
		}
		if err := json.Unmarshal(raw, &r); err != nil || !slices.Contains(ruleActions, r.Action) {
			return invalid("Rule set %s: rule %d has no action of %v.", rs.Name, i, ruleActions)
		}
	}
	return nil
}

// checkRuleSetNames checks that a listener's rule sets exist.
func checkRuleSetNames(l *listener, sets map[string]*ruleSet) error {
	for _, n := range l.RuleSetNames {
		if sets[n] == nil {
			return invalid("Listener %s: rule set %q does not exist.", l.Name, n)
		}
	}
	return nil
}

func (e *Emulator) routeRuleSets(p string) {
	routeChildren(e, p, children[*loadBalancer, ruleSet]{
		change: e.change, path: "ruleSets", op: "RuleSet", noun: "Rule set",
		of:   func(lb *loadBalancer) map[string]*ruleSet { return lb.RuleSets },
		name: func(rs *ruleSet) *string { return &rs.Name },
		check: func(_ *loadBalancer, rs *ruleSet, _ map[string]*ruleSet) error {
			return checkRuleSet(rs)
		},
		inUse: func(lb *loadBalancer, name string) error {
			return usedBy(lb.Listeners, "Rule set "+name, func(l *listener) (string, bool) { return l.Name, slices.Contains(l.RuleSetNames, name) })
		},
	})
	e.handle("GET "+p+"/{id}/ruleSets", func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		lb, ok := e.lbs.Get(r.PathValue("id"))
		out := []*ruleSet{}
		if ok {
			for _, n := range slices.Sorted(maps.Keys(lb.RuleSets)) {
				out = append(out, lb.RuleSets[n])
			}
		}
		e.mu.Unlock()
		if !ok {
			writeNotFound(w)
			return
		}
		core.WriteJSON(w, http.StatusOK, out)
	})
}
