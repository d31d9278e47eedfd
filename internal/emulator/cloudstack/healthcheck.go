package cloudstack

import (
	"net/url"
	"slices"
	"strconv"
	"time"
)

// Health-check policies of load balancer rules (createLBHealthCheckPolicy,
// listLBHealthCheckPolicies, deleteLBHealthCheckPolicy; ../shared/facts/
// cloudstack-api.md §4, CreateLBHealthCheckPolicyCmd): one per rule, an HTTP
// GET of pingpath on the members' private port, with the server's defaults
// (pingpath "/", response time 2 s, interval 5 s, 2 healthy, 1 unhealthy) and
// its ranges (response time 2–60 s, interval 1–20940 s, and longer than the
// response time). The data plane probes members with it; a rule without one
// probes by TCP connect.

type healthCheck struct {
	id, ruleID, pingPath, description string
	responseTime, interval            int
	healthy, unhealthy                int
}

func (e *Emulator) healthCheckView(h *healthCheck) map[string]any {
	return map[string]any{
		"lbruleid": h.ruleID, "account": e.fx.AccountName, "domain": "ROOT", "domainid": e.fx.DomainID, "zoneid": e.fx.ZoneID,
		"healthcheckpolicy": []any{map[string]any{
			"id": h.id, "pingpath": h.pingPath, "description": h.description, "responsetime": h.responseTime,
			"healthcheckinterval": h.interval, "healthcheckthresshold": h.healthy, "unhealthcheckthresshold": h.unhealthy,
			"state": "Active", "fordisplay": true,
		}},
	}
}

// intParam reads an optional integer parameter within [lo, hi].
func intParam(p url.Values, name string, def, lo, hi int) (int, *apiError) {
	v := p.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, &apiError{code: 430, cs: csInvalidValue, text: "Invalid value for " + name + ": " + v + " (want " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi) + ")"}
	}
	return n, nil
}

func (e *Emulator) createLBHealthCheckPolicy(a *account, p url.Values, now time.Time) (any, *apiError) {
	r, ok := e.rules.Get(p.Get("lbruleid"))
	if !ok {
		return nil, invalidID("createLBHealthCheckPolicy", p.Get("lbruleid"))
	}
	for _, h := range e.healthChecks {
		if h.ruleID == r.id {
			return nil, &apiError{code: codeParamError, cs: csInvalidValue, text: "HealthCheck policy already exists on LB rule id " + r.id}
		}
	}
	h := &healthCheck{id: e.newID(), ruleID: r.id, pingPath: p.Get("pingpath"), description: p.Get("description")}
	if h.pingPath == "" {
		h.pingPath = "/"
	}
	var aerr *apiError
	if h.responseTime, aerr = intParam(p, "responsetimeout", 2, 2, 60); aerr != nil {
		return nil, aerr
	}
	if h.interval, aerr = intParam(p, "intervaltime", 5, 1, 20940); aerr != nil {
		return nil, aerr
	}
	if h.interval <= h.responseTime {
		return nil, &apiError{code: 430, cs: csInvalidValue, text: "Interval time must be greater than the response timeout"}
	}
	if h.healthy, aerr = intParam(p, "healthythreshold", 2, 1, 10); aerr != nil {
		return nil, aerr
	}
	if h.unhealthy, aerr = intParam(p, "unhealthythreshold", 1, 1, 10); aerr != nil {
		return nil, aerr
	}
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.loadbalancer.CreateLBHealthCheckPolicyCmd", "LoadBalancer", r.id, now, func() (any, error) {
		e.healthChecks = append(e.healthChecks, h)
		return map[string]any{"healthcheckpolicies": e.healthCheckView(h)}, nil
	})
	return map[string]any{"id": h.id, "jobid": job}, nil
}

func (e *Emulator) listLBHealthCheckPolicies(_ *account, p url.Values, _ time.Time) (any, *apiError) {
	page, size, aerr := e.paging(p)
	if aerr != nil {
		return nil, aerr
	}
	ruleID := p.Get("lbruleid")
	if ruleID != "" {
		if _, ok := e.rules.Get(ruleID); !ok {
			return nil, invalidID("listLBHealthCheckPolicies", ruleID)
		}
	}
	var items []any
	for _, h := range e.healthChecks {
		if (ruleID != "" && h.ruleID != ruleID) || (p.Get("id") != "" && h.id != p.Get("id")) {
			continue
		}
		items = append(items, e.healthCheckView(h))
	}
	return pageOf("lbhealthcheckpolicy", items, page, size), nil
}

func (e *Emulator) deleteLBHealthCheckPolicy(a *account, p url.Values, now time.Time) (any, *apiError) {
	id := p.Get("id")
	i := slices.IndexFunc(e.healthChecks, func(h *healthCheck) bool { return h.id == id })
	if i < 0 {
		return nil, invalidID("deleteLBHealthCheckPolicy", id)
	}
	found := e.healthChecks[i]
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.loadbalancer.DeleteLBHealthCheckPolicyCmd", "LoadBalancer", found.ruleID, now, func() (any, error) {
		e.healthChecks = slices.DeleteFunc(e.healthChecks, func(h *healthCheck) bool { return h == found })
		return map[string]any{"success": true}, nil
	})
	return map[string]any{"jobid": job}, nil
}

// healthCheckOf is the rule's policy, nil if it has none.
func (e *Emulator) healthCheckOf(ruleID string) *healthCheck {
	if i := slices.IndexFunc(e.healthChecks, func(h *healthCheck) bool { return h.ruleID == ruleID }); i >= 0 {
		return e.healthChecks[i]
	}
	return nil
}
