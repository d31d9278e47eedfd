package openstack

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
)

const (
	novaPrefix = "/compute/v2.1"
	// novaMaxLimit is Nova's default osapi max_limit: the largest page.
	novaMaxLimit = 1000
	// novaMaxMicroversion is the newest microversion of Nova in Zed.
	novaMaxMicroversion = 93
)

type flavor struct {
	ID          string
	Name        string
	VCPUs       int
	RAM         int // MiB
	Disk        int // GiB
	Ephemeral   int
	Swap        int
	Description *string
}

type serverFault struct {
	Code    int      `json:"code"`
	Message string   `json:"message"`
	Created novaTime `json:"created"`
}

type server struct {
	ID, Name, Status  string
	FlavorID, ImageID string
	AZ                string
	UserID, HostID    string
	KeyName           string
	Created, Updated  time.Time
	Metadata          map[string]string
	Tags              []string
	Fault             *serverFault
	// Deleted marks a deleted server: like Nova's soft-deleted rows, it is
	// listed (status DELETED) only by a list with changes-since, and is
	// otherwise gone (404).
	Deleted bool
}

func novaError(w http.ResponseWriter, code int, msg string) {
	kind := map[int]string{400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound",
		409: "conflictingRequest", 413: "overLimit", 429: "overLimit", 501: "notImplemented"}[code]
	if kind == "" {
		kind = "computeFault"
		if code == http.StatusServiceUnavailable {
			kind = "serviceUnavailable"
		}
	}
	writeJSON(w, code, map[string]any{kind: map[string]any{"code": code, "message": msg}})
}

// microversion returns the minor number of the requested compute
// microversion (2.x); 1 when none is requested.
func microversion(r *http.Request) int {
	v := r.Header.Get("X-OpenStack-Nova-API-Version")
	if v == "" {
		if h := r.Header.Get("OpenStack-API-Version"); strings.HasPrefix(h, "compute ") {
			v = strings.TrimSpace(strings.TrimPrefix(h, "compute "))
		}
	}
	if v == "" {
		return 1
	}
	if v == "latest" {
		return novaMaxMicroversion
	}
	if minor, ok := strings.CutPrefix(v, "2."); ok {
		if n, err := strconv.Atoi(minor); err == nil {
			return n
		}
	}
	return -1
}

// novaHandler wraps a compute handler: it checks and echoes the microversion.
func novaHandler(h func(w http.ResponseWriter, r *http.Request, mv int)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		mv := microversion(r)
		if mv < 1 || mv > novaMaxMicroversion {
			w.Header().Set("OpenStack-API-Version", "compute 2.1")
			w.Header().Set("X-OpenStack-Nova-API-Version", "2.1")
			writeJSON(w, http.StatusNotAcceptable, map[string]any{"computeFault": map[string]any{"code": 406,
				"message": "Version " + r.Header.Get("X-OpenStack-Nova-API-Version") + " is not supported by the API. Minimum is 2.1 and maximum is 2." + strconv.Itoa(novaMaxMicroversion) + "."}})
			return
		}
		w.Header().Set("OpenStack-API-Version", "compute 2."+strconv.Itoa(mv))
		w.Header().Set("X-OpenStack-Nova-API-Version", "2."+strconv.Itoa(mv))
		w.Header().Set("Vary", "OpenStack-API-Version, X-OpenStack-Nova-API-Version")
		h(w, r, mv)
	}
}

func (e *Emulator) routeNova() {
	np := novaPrefix
	version := func(base string) map[string]any {
		return map[string]any{"id": "v2.1", "status": "CURRENT", "version": "2." + strconv.Itoa(novaMaxMicroversion),
			"min_version": "2.1", "updated": "2013-07-23T11:33:21Z",
			"links": []any{map[string]string{"rel": "self", "href": base + np + "/"}}}
	}
	e.handlePublic("GET /compute/{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{version(baseURL(r))}})
	})
	e.handlePublic("GET "+np+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"version": version(baseURL(r))})
	})
	e.handle("GET "+np+"/servers", novaHandler(func(w http.ResponseWriter, r *http.Request, mv int) { e.listServers(w, r, mv, false) }))
	e.handle("GET "+np+"/servers/detail", novaHandler(func(w http.ResponseWriter, r *http.Request, mv int) { e.listServers(w, r, mv, true) }))
	e.handle("GET "+np+"/servers/{id}", novaHandler(e.getServer))
	create := writeOp(e, decodeServer, e.createServer, novaErr)
	e.handle("POST "+np+"/servers", novaHandler(func(w http.ResponseWriter, r *http.Request, _ int) { create(w, r) }))
	e.handle("DELETE "+np+"/servers/{id}", novaHandler(e.deleteServer))
	e.handle("POST "+np+"/servers/{id}/action", novaHandler(e.serverAction))
	e.handle("GET "+np+"/servers/{id}/os-interface", novaHandler(e.listInterfaces))
	e.handle("GET "+np+"/flavors", novaHandler(func(w http.ResponseWriter, r *http.Request, mv int) { e.listFlavors(w, r, false) }))
	e.handle("GET "+np+"/flavors/detail", novaHandler(func(w http.ResponseWriter, r *http.Request, mv int) { e.listFlavors(w, r, true) }))
	e.handle("GET "+np+"/flavors/{id}", novaHandler(e.getFlavor))
}

func (e *Emulator) novaLinks(base, kind, id string) []any {
	return []any{
		map[string]string{"rel": "self", "href": base + novaPrefix + "/" + kind + "/" + id},
		map[string]string{"rel": "bookmark", "href": base + "/compute/" + kind + "/" + id},
	}
}

// serverStates maps a status to vm_state and power_state.
func serverStates(status string) (string, int) {
	switch status {
	case "ACTIVE":
		return "active", 1
	case "SHUTOFF":
		return "stopped", 4
	case "BUILD":
		return "building", 0
	case "PAUSED":
		return "paused", 3
	case "SUSPENDED":
		return "suspended", 4
	case "ERROR":
		return "error", 0
	}
	return strings.ToLower(status), 0
}

// serverView renders a server in full (detail) or as a reference; call with
// mu held.
func (e *Emulator) serverView(s *server, base string, mv int, detail bool) map[string]any {
	v := map[string]any{"id": s.ID, "name": s.Name, "links": e.novaLinks(base, "servers", s.ID)}
	if detail {
		maps.Copy(v, e.serverDetail(s, base, mv))
	}
	return v
}

// serverDetail is what a server's detailed view adds to its reference
// (Compute API reference, "Show Server Details"); call with mu held.
func (e *Emulator) serverDetail(s *server, base string, mv int) map[string]any {
	var img any = ""
	if s.ImageID != "" {
		img = map[string]any{"id": s.ImageID, "links": e.novaLinks(base, "images", s.ImageID)[1:]}
	}
	vm, power := serverStates(s.Status)
	sgs := []map[string]string{}
	if s.Status != "ERROR" {
		sgs = append(sgs, map[string]string{"name": "default"})
	}
	var launched any
	if s.Status != "BUILD" && s.Status != "ERROR" {
		launched = s.Created.UTC().Format("2006-01-02T15:04:05.000000")
	}
	v := map[string]any{
		"status": s.Status, "tenant_id": e.fx.ProjectID, "user_id": s.UserID, "hostId": s.HostID,
		"created": novaTime(s.Created), "updated": novaTime(s.Updated),
		"addresses": e.serverAddresses(s), "accessIPv4": "", "accessIPv6": "",
		"flavor": e.serverFlavor(s, base, mv), "image": img,
		"metadata": s.Metadata, "tags": nonNil(s.Tags), "key_name": nullable(s.KeyName),
		"progress": 0, "config_drive": "", "locked": false, "description": nil,
		"security_groups": sgs, "os-extended-volumes:volumes_attached": []any{},
		"OS-DCF:diskConfig": "MANUAL", "OS-EXT-AZ:availability_zone": s.AZ,
		"OS-EXT-STS:vm_state": vm, "OS-EXT-STS:power_state": power, "OS-EXT-STS:task_state": nil,
		"OS-SRV-USG:launched_at": launched, "OS-SRV-USG:terminated_at": nil,
	}
	if s.Fault != nil {
		v["fault"] = *s.Fault
	}
	return v
}

// serverAddresses are a server's addresses by network name: each port's
// fixed addresses and the floating IP on it.
func (e *Emulator) serverAddresses(s *server) map[string][]map[string]any {
	addresses := map[string][]map[string]any{}
	for _, pid := range e.portsByDev[s.ID] {
		p, ok := e.ports.Get(pid)
		if !ok {
			continue
		}
		n, _ := e.networks.Get(p.NetworkID)
		name := p.NetworkID
		if n != nil {
			name = n.Name
		}
		for _, f := range p.FixedIPs {
			addresses[name] = append(addresses[name], map[string]any{"addr": f.IPAddress, "version": ipVersion(f.IPAddress),
				"OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": p.MACAddress})
		}
		if fid, ok := e.fipByPort[pid]; ok {
			if f, ok := e.fips.Get(fid); ok {
				addresses[name] = append(addresses[name], map[string]any{"addr": f.FloatingIPAddress, "version": 4,
					"OS-EXT-IPS:type": "floating", "OS-EXT-IPS-MAC:mac_addr": p.MACAddress})
			}
		}
	}
	return addresses
}

// serverFlavor is a server's flavor: a reference before microversion
// 2.47, its description from it on.
func (e *Emulator) serverFlavor(s *server, base string, mv int) any {
	if mv < 47 {
		return map[string]any{"id": s.FlavorID, "links": e.novaLinks(base, "flavors", s.FlavorID)[1:]}
	}
	f, _ := e.flavors.Get(s.FlavorID)
	if f == nil {
		f = &flavor{}
	}
	return map[string]any{"original_name": f.Name, "vcpus": f.VCPUs, "ram": f.RAM, "disk": f.Disk,
		"ephemeral": f.Ephemeral, "swap": f.Swap, "extra_specs": map[string]string{}}
}

// serverFilter builds the filter of a server list from Nova's query
// parameters; unknown parameters are ignored, as Nova does for a non-admin.
func (e *Emulator) serverFilter(q map[string][]string) (func(*server) bool, error) {
	get := func(k string) string {
		if vs := q[k]; len(vs) > 0 {
			return vs[len(vs)-1]
		}
		return ""
	}
	// name and ip are regular expressions; one that does not compile
	// matches itself.
	pattern := func(k string) *regexp.Regexp {
		v := get(k)
		if v == "" {
			return nil
		}
		re, err := regexp.Compile(v)
		if err != nil {
			re = regexp.MustCompile(regexp.QuoteMeta(v))
		}
		return re
	}
	nameRe, ipRe := pattern("name"), pattern("ip")
	var since time.Time
	if cs := get("changes-since"); cs != "" {
		t, err := time.Parse(time.RFC3339, cs)
		if err != nil {
			return nil, fmt.Errorf("Invalid input for field/attribute changes-since. Value: %s.", cs) //nolint:revive,staticcheck // Nova's own message
		}
		since = t
	}
	status := strings.ToUpper(get("status"))
	flavorID, imageID, az := get("flavor"), get("image"), get("availability_zone")
	split := func(k string) []string {
		if s := get(k); s != "" {
			return strings.Split(s, ",")
		}
		return nil
	}
	tagsAll, tagsAny, notAll, notAny := split("tags"), split("tags-any"), split("not-tags"), split("not-tags-any")
	return func(s *server) bool {
		if s.Deleted && since.IsZero() ||
			nameRe != nil && !nameRe.MatchString(s.Name) ||
			status != "" && s.Status != status ||
			flavorID != "" && s.FlavorID != flavorID ||
			imageID != "" && s.ImageID != imageID ||
			az != "" && s.AZ != az ||
			!since.IsZero() && s.Updated.Before(since) ||
			!matchTags(s.Tags, tagsAll, tagsAny, notAll, notAny) {
			return false
		}
		if ipRe != nil {
			for _, pid := range e.portsByDev[s.ID] {
				if p, ok := e.ports.Get(pid); ok {
					for _, f := range p.FixedIPs {
						if ipRe.MatchString(f.IPAddress) {
							return true
						}
					}
				}
			}
			return false
		}
		return true
	}, nil
}

func (e *Emulator) listServers(w http.ResponseWriter, r *http.Request, mv int, detail bool) {
	q := r.URL.Query()
	limit := novaMaxLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			novaError(w, 400, "Invalid input for query parameters limit. Value: "+s+". '"+s+"' does not match '^[0-9]*$'")
			return
		}
		limit = min(n, novaMaxLimit)
	}
	keep, err := e.serverFilter(q)
	if err != nil {
		novaError(w, 400, err.Error())
		return
	}
	base := baseURL(r)
	marker := q.Get("marker")
	e.lock()
	var items []*server
	if limit > 0 {
		items, _, err = e.servers.Page(marker, limit, true, keep)
	} else if marker != "" {
		_, _, err = e.servers.Page(marker, 1, true, keep)
	}
	if err != nil {
		e.mu.Unlock()
		novaError(w, 400, "marker ["+marker+"] not found")
		return
	}
	views := make([]map[string]any, len(items))
	for i, s := range items {
		views[i] = e.serverView(s, base, mv, detail)
	}
	e.mu.Unlock()
	body := map[string]any{"servers": views}
	// Like Nova: a next link whenever the page is full.
	if limit > 0 && len(items) == limit {
		body["servers_links"] = []map[string]string{{"rel": "next", "href": nextLink(r, items[len(items)-1].ID)}}
	}
	writeJSON(w, http.StatusOK, body)
}

func serverNotFound(w http.ResponseWriter, id string) {
	novaError(w, http.StatusNotFound, "Instance "+id+" could not be found.")
}

func (e *Emulator) getServer(w http.ResponseWriter, r *http.Request, mv int) {
	id := r.PathValue("id")
	e.lock()
	s, ok := e.server(id)
	var v map[string]any
	if ok {
		v = e.serverView(s, baseURL(r), mv, true)
	}
	e.mu.Unlock()
	if !ok {
		serverNotFound(w, id)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"server": v})
}

// addServer creates a server with one port on each network; call with mu
// held. When overflow is set a full network gets an extra subnet; otherwise
// the server goes to ERROR, as Nova's would.
func (e *Emulator) addServer(s *server, networkIDs []string, overflow bool, now time.Time) *apiErr {
	for _, nid := range networkIDs {
		if _, ok := e.networks.Get(nid); !ok {
			return errf(400, "", "Network %s could not be found.", nid)
		}
	}
	e.servers.Add(s.ID, s)
	for _, nid := range networkIDs {
		_, aerr := e.createPort(portSpec{NetworkID: nid, DeviceID: s.ID, DeviceOwner: ownerCompute, AdminStateUp: true}, now)
		if aerr != nil && aerr.typ == "IpAddressGenerationFailure" && overflow {
			e.addOverflowSubnet(nid, now)
			_, aerr = e.createPort(portSpec{NetworkID: nid, DeviceID: s.ID, DeviceOwner: ownerCompute, AdminStateUp: true}, now)
		}
		if aerr != nil {
			s.Status = "ERROR"
			s.Fault = &serverFault{Code: 500, Message: "Build of instance " + s.ID + " aborted: " + aerr.msg, Created: novaTime(now)}
			for _, pid := range e.portsByDev[s.ID] {
				e.deletePort(pid, now)
			}
			return nil
		}
	}
	return nil
}

func hostID(projectID string) string {
	return fmt.Sprintf("%056x", len(projectID))[:56]
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// removeServer deletes a server and its ports; call with mu held.
func (e *Emulator) removeServer(id string, now time.Time) bool {
	s, ok := e.server(id)
	if !ok {
		return false
	}
	for _, pid := range e.portsByDev[id] {
		if p, ok := e.ports.Get(pid); ok && p.DeviceOwner == ownerCompute {
			e.deletePort(pid, now)
		}
	}
	s.Status, s.Deleted, s.Updated = "DELETED", true, now
	return true
}

// server is the live (not deleted) server with this ID; call with mu held.
func (e *Emulator) server(id string) (*server, bool) {
	s, ok := e.servers.Get(id)
	if !ok || s.Deleted {
		return nil, false
	}
	return s, true
}

func (e *Emulator) deleteServer(w http.ResponseWriter, r *http.Request, mv int) {
	id := r.PathValue("id")
	now := e.lock()
	ok := e.removeServer(id, now)
	e.mu.Unlock()
	if !ok {
		serverNotFound(w, id)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (e *Emulator) serverAction(w http.ResponseWriter, r *http.Request, mv int) {
	var b map[string]json.RawMessage
	if err := decodeJSON(r, &b); err != nil || len(b) != 1 {
		novaError(w, 400, "Malformed request body: want exactly one action.")
		return
	}
	id := r.PathValue("id")
	now := e.lock()
	defer e.mu.Unlock()
	s, ok := e.server(id)
	if !ok {
		serverNotFound(w, id)
		return
	}
	conflict := func(action string) {
		vm, _ := serverStates(s.Status)
		novaError(w, 409, fmt.Sprintf("Cannot '%s' instance %s while it is in vm_state %s", action, id, vm))
	}
	for action := range b {
		switch action {
		case "os-stop":
			if s.Status != "ACTIVE" && s.Status != "ERROR" {
				conflict("stop")
				return
			}
			s.Status = "SHUTOFF"
		case "os-start":
			if s.Status != "SHUTOFF" {
				conflict("start")
				return
			}
			s.Status = "ACTIVE"
		case "reboot":
			if s.Status != "ACTIVE" && s.Status != "SHUTOFF" && s.Status != "ERROR" {
				conflict("reboot")
				return
			}
			s.Status = "ACTIVE"
		default:
			novaError(w, 400, "There is no such action: "+action)
			return
		}
	}
	s.Updated = now
	w.WriteHeader(http.StatusAccepted)
}

func (e *Emulator) listInterfaces(w http.ResponseWriter, r *http.Request, mv int) {
	id := r.PathValue("id")
	e.lock()
	defer e.mu.Unlock()
	if _, ok := e.server(id); !ok {
		serverNotFound(w, id)
		return
	}
	out := []map[string]any{}
	for _, pid := range e.portsByDev[id] {
		if p, ok := e.ports.Get(pid); ok {
			out = append(out, map[string]any{"port_id": p.ID, "net_id": p.NetworkID, "mac_addr": p.MACAddress,
				"port_state": p.Status, "fixed_ips": p.FixedIPs})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"interfaceAttachments": out})
}

func (e *Emulator) flavorView(f *flavor, base string, detail bool) map[string]any {
	v := map[string]any{"id": f.ID, "name": f.Name, "links": e.novaLinks(base, "flavors", f.ID), "description": f.Description}
	if detail {
		v["vcpus"], v["ram"], v["disk"] = f.VCPUs, f.RAM, f.Disk
		v["OS-FLV-EXT-DATA:ephemeral"] = f.Ephemeral
		v["OS-FLV-DISABLED:disabled"] = false
		v["os-flavor-access:is_public"] = true
		v["rxtx_factor"] = 1.0
		v["extra_specs"] = map[string]string{}
		v["swap"] = ""
		if f.Swap > 0 {
			v["swap"] = f.Swap
		}
	}
	return v
}

func (e *Emulator) listFlavors(w http.ResponseWriter, r *http.Request, detail bool) {
	q := r.URL.Query()
	limit := novaMaxLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			novaError(w, 400, "Invalid input for query parameters limit. Value: "+s+".")
			return
		}
		limit = min(n, novaMaxLimit)
	}
	base := baseURL(r)
	e.lock()
	items, _, err := e.flavors.Page(q.Get("marker"), limit, false, nil)
	views := make([]map[string]any, len(items))
	for i, f := range items {
		views[i] = e.flavorView(f, base, detail)
	}
	e.mu.Unlock()
	if err != nil {
		novaError(w, 400, "marker ["+q.Get("marker")+"] not found")
		return
	}
	body := map[string]any{"flavors": views}
	if limit > 0 && len(items) == limit {
		body["flavors_links"] = []map[string]string{{"rel": "next", "href": nextLink(r, items[len(items)-1].ID)}}
	}
	writeJSON(w, http.StatusOK, body)
}

func (e *Emulator) getFlavor(w http.ResponseWriter, r *http.Request, mv int) {
	id := r.PathValue("id")
	e.lock()
	f, ok := e.flavors.Get(id)
	var v map[string]any
	if ok {
		v = e.flavorView(f, baseURL(r), true)
	}
	e.mu.Unlock()
	if !ok {
		novaError(w, 404, "Flavor "+id+" could not be found.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"flavor": v})
}

// ipVersion is 4 or 6, as Nova's addresses say.
func ipVersion(addr string) int {
	if a, err := netip.ParseAddr(addr); err == nil && a.Is6() {
		return 6
	}
	return 4
}
