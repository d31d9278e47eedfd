package openstack

import (
	"net/http"
)

// routeOctavia serves Octavia's version document and its v2 API under both
// of the prefixes clients use.
func (e *Emulator) routeOctavia() {
	e.handlePublic("GET /load-balancer/{$}", e.octaviaVersions)
	for _, pre := range []string{"/load-balancer/v2.0/lbaas", "/load-balancer/v2/lbaas"} {
		nf := func(noun string) func(http.ResponseWriter, string) {
			return func(w http.ResponseWriter, id string) { octaviaErr(w, octaviaNotFound(noun, id)) }
		}
		collection[loadBalancer, *loadBalancer]{path: "loadbalancers", key: "loadbalancer", st: e.lbs, view: e.lbView,
			notFound: nf("Load Balancer"), badRequest: octaviaBadRequest,
			create: writeOp(e, e.decodeLB, e.createLB, octaviaErr),
			update: octaviaWrite(e, "loadbalancer", e.updateLB), remove: octaviaWrite(e, "", e.deleteLB)}.route(e, pre)
		e.handle("GET "+pre+"/loadbalancers/{id}/status", e.lbStatusTree)
		collection[listener, *listener]{path: "listeners", key: "listener", st: e.listeners, view: e.listenerView,
			notFound: nf("Listener"), badRequest: octaviaBadRequest,
			create: octaviaWrite(e, "listener", e.createListener),
			update: octaviaWrite(e, "listener", e.updateListener), remove: octaviaWrite(e, "", e.deleteListener)}.route(e, pre)
		collection[lbPool, *lbPool]{path: "pools", key: "pool", st: e.pools, view: e.poolView,
			notFound: nf("Pool"), badRequest: octaviaBadRequest,
			create: octaviaWrite(e, "pool", e.createPool),
			update: octaviaWrite(e, "pool", e.updatePool), remove: octaviaWrite(e, "", e.deletePool)}.route(e, pre)

		e.handle("GET "+pre+"/pools/{pool_id}/members", e.listMembers)
		e.handle("GET "+pre+"/pools/{pool_id}/members/{id}", e.getMember)
		e.handle("POST "+pre+"/pools/{pool_id}/members", octaviaWrite(e, "member", e.createMember))
		e.handle("PUT "+pre+"/pools/{pool_id}/members", octaviaWrite(e, "members", e.batchMembers))
		e.handle("PUT "+pre+"/pools/{pool_id}/members/{id}", octaviaWrite(e, "member", e.updateMember))
		e.handle("DELETE "+pre+"/pools/{pool_id}/members/{id}", octaviaWrite(e, "", e.deleteMember))

		collection[healthMonitor, *healthMonitor]{path: "healthmonitors", key: "healthmonitor", st: e.monitors, view: e.monitorView,
			notFound: nf("Health Monitor"), badRequest: octaviaBadRequest,
			create: octaviaWrite(e, "healthmonitor", e.createMonitor),
			update: octaviaWrite(e, "healthmonitor", e.updateMonitor), remove: octaviaWrite(e, "", e.deleteMonitor)}.route(e, pre)
	}
}

// octaviaVersions is Octavia's version document: v2.0 and the current
// minor version (v2.26, or v2.25 under Options.OctaviaBefore226).
func (e *Emulator) octaviaVersions(w http.ResponseWriter, r *http.Request) {
	href := baseURL(r) + "/load-balancer/v2"
	last := map[string]any{"id": "v2.26", "status": "CURRENT", "updated": "2022-08-29T00:00:00Z", "links": []any{map[string]string{"rel": "self", "href": href}}}
	if e.opts.OctaviaBefore226 {
		last = map[string]any{"id": "v2.25", "status": "CURRENT", "updated": "2021-10-02T00:00:00Z", "links": []any{map[string]string{"rel": "self", "href": href}}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"versions": []any{
		map[string]any{"id": "v2.0", "status": "SUPPORTED", "updated": "2016-12-11T00:00:00Z", "links": []any{map[string]string{"rel": "self", "href": href}}},
		last,
	}})
}
