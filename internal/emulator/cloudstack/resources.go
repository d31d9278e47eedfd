package cloudstack

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// VM states (VirtualMachine.State) the emulator uses.
const (
	StateRunning   = "Running"
	StateStopped   = "Stopped"
	StateDestroyed = "Destroyed"
	StateExpunging = "Expunging"
)

type vm struct {
	seq                    int
	id, name, state        string
	nicID, ip, mac         string
	projectID, created     string
	expunged               bool // gone from lists, still resolved by id
	offeringID, offeringNm string
}

// AddMachine adds a Running virtual machine named name with a NIC on the
// guest network, and returns its id and address.
func (e *Emulator) AddMachine(name string) (string, string) {
	now := e.lock()
	defer e.mu.Unlock()
	e.seq++
	v := &vm{seq: e.seq, id: e.newID(), name: name, state: StateRunning, nicID: e.newID(),
		ip: e.machineNext.String(), mac: fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", byte(e.seq>>24), byte(e.seq>>16), byte(e.seq>>8), byte(e.seq)),
		created: csDate(now), offeringID: e.fx.OfferingID, offeringNm: e.fx.OfferingName}
	if e.opts.InProject {
		v.projectID = e.fx.ProjectID
	}
	e.machineNext = e.machineNext.Next()
	e.vms.Add(v.id, v)
	return v.id, v.ip
}

// SetMachineState sets a machine's state (Running, Stopped, Destroyed,
// Expunging); "Expunged" removes it from every list while its id still
// resolves, as the server's lookups include removed rows.
func (e *Emulator) SetMachineState(id, state string) error {
	e.lock()
	defer e.mu.Unlock()
	v, ok := e.vms.Get(id)
	if !ok {
		return core.ErrNotFound
	}
	if state == "Expunged" {
		v.expunged = true
		return nil
	}
	v.state = state
	return nil
}

func (e *Emulator) vmView(a *account, v *vm) map[string]any {
	m := map[string]any{
		"id": v.id, "name": v.name, "displayname": v.name, "state": v.state,
		"account": e.fx.AccountName, "domain": "ROOT", "domainid": e.fx.DomainID, "userid": e.fx.UserID, "username": e.fx.AccountName,
		"zoneid": e.fx.ZoneID, "zonename": e.fx.ZoneName,
		"serviceofferingid": v.offeringID, "serviceofferingname": v.offeringNm,
		"cpunumber": 2, "cpuspeed": 2000, "memory": 4096, "created": v.created,
		"hypervisor": "Simulator", "haenable": false, "isdynamicallyscalable": false, "passwordenabled": false,
		"displayvm": true, "rootdeviceid": 0, "rootdevicetype": "ROOT",
		"templateid": e.fx.OfferingID, "templatename": "ubuntu-22.04-kube", "templatedisplaytext": "Ubuntu 22.04 (Kubernetes)",
		"guestosid": e.fx.OfferingID, "ostypeid": e.fx.OfferingID, "osdisplayname": "Ubuntu 22.04 LTS",
		"affinitygroup": []any{}, "securitygroup": []any{}, "tags": []any{}, "details": map[string]any{},
		"nic": []any{map[string]any{
			"id": v.nicID, "ipaddress": v.ip, "networkid": e.fx.NetworkID, "networkname": e.fx.NetworkName,
			"isdefault": true, "macaddress": v.mac, "netmask": netmask(e.machineNet.Bits()),
			"gateway": e.machineNet.Addr().Next().String(), "traffictype": "Guest", "type": "Isolated",
			"broadcasturi": "vlan://1994", "isolationuri": "vlan://1994", "secondaryip": []any{}, "extradhcpoption": []any{},
		}},
	}
	if a.admin {
		// The hypervisor host and the instance name are a root admin's to see.
		m["hostname"] = "SimulatedAgent.1"
		m["hostid"] = e.fx.ZoneID
		m["instancename"] = fmt.Sprintf("i-2-%d-VM", v.seq)
	}
	if v.projectID != "" {
		m["projectid"], m["project"] = v.projectID, e.fx.ProjectName
	}
	return m
}

func netmask(bits int) string {
	m := uint32(0xffffffff) << (32 - bits)
	return fmt.Sprintf("%d.%d.%d.%d", byte(m>>24), byte(m>>16), byte(m>>8), byte(m))
}

// listVirtualMachines: by id, name (exact, case-insensitive: newer servers
// match the name with "="), state, project; paged. A user never sees
// Destroyed or Expunging machines; an expunged one is in no list, but its id
// still resolves (an empty answer, not an error).
func (e *Emulator) listVirtualMachines(a *account, p url.Values, _ time.Time) (any, *apiError) {
	has := func(id string) bool { _, ok := e.vms.Get(id); return ok }
	return e.listed("listVirtualMachines", "virtualmachine", p, has, func() []any {
		id := p.Get("id")
		return views(e.vms.All(), func(v *vm) bool {
			return !v.expunged &&
				(id == "" || v.id == id) &&
				(p.Get("name") == "" || strings.EqualFold(p.Get("name"), v.name)) &&
				(p.Get("state") == "" || strings.EqualFold(p.Get("state"), v.state)) &&
				(a.admin || v.state != StateDestroyed && v.state != StateExpunging) &&
				e.inScope(p, v.projectID)
		}, func(v *vm) any { return e.vmView(a, v) })
	})
}

type publicIP struct {
	seq                int
	id, address, state string
	allocated          string
	networkID          string
	projectID          string
}

func (e *Emulator) ipView(ip *publicIP) map[string]any {
	m := map[string]any{
		"id": ip.id, "ipaddress": ip.address, "allocated": ip.allocated, "state": ip.state,
		"zoneid": e.fx.ZoneID, "zonename": e.fx.ZoneName, "account": e.fx.AccountName, "domainid": e.fx.DomainID, "domain": "ROOT",
		"issourcenat": false, "isstaticnat": false, "issystem": false, "isportable": false, "forvirtualnetwork": true, "fordisplay": true,
		"vlanid": e.fx.ZoneID, "vlanname": "vlan://untagged", "networkid": e.fx.ZoneID, "physicalnetworkid": e.fx.ZoneID,
		"tags": e.tagsOf(ip.id),
	}
	if ip.state == "Free" {
		delete(m, "allocated")
		delete(m, "account")
	}
	if ip.networkID != "" {
		m["associatednetworkid"], m["associatednetworkname"] = ip.networkID, e.fx.NetworkName
	}
	if ip.projectID != "" {
		m["projectid"], m["project"] = ip.projectID, e.fx.ProjectName
	}
	return m
}

// listPublicIpAddresses lists the allocated addresses; with
// allocatedonly=false and an ipaddress, a free address of the zone's range is
// listed too (state Free, no allocated date), as the peer expects when it
// looks up a requested loadBalancerIP.
func (e *Emulator) listPublicIPAddresses(_ *account, p url.Values, _ time.Time) (any, *apiError) {
	has := func(id string) bool { _, ok := e.ips.Get(id); return ok }
	return e.listed("listPublicIpAddresses", "publicipaddress", p, has, func() []any {
		id, addr, tagged := p.Get("id"), p.Get("ipaddress"), tagsParam(p)
		items := views(e.ips.All(), func(ip *publicIP) bool {
			return (id == "" || ip.id == id) &&
				(addr == "" || addr == ip.address) &&
				(p.Get("associatednetworkid") == "" || p.Get("associatednetworkid") == ip.networkID) &&
				e.tagged(ip.id, tagged) &&
				(id != "" || e.inScope(p, ip.projectID))
		}, e.ipView)
		if len(items) == 0 && id == "" && p.Get("allocatedonly") == "false" && e.freeAddress(addr) {
			items = append(items, e.ipView(&publicIP{id: e.freeID(addr), address: addr, state: "Free"}))
		}
		return items
	})
}

// freeAddress says whether addr is in the public range and not allocated.
func (e *Emulator) freeAddress(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil || !e.publicNet.Contains(a) || a.Compare(e.publicNet.Addr().Next()) < 0 {
		return false
	}
	return !slices.ContainsFunc(e.ips.All(), func(ip *publicIP) bool { return ip.address == addr })
}

// nextFreeAddress is the first free address from publicNext on, round the
// range once.
func (e *Emulator) nextFreeAddress() (netip.Addr, bool) {
	a := e.publicNext
	for range 1 << min(e.publicNet.Addr().BitLen()-e.publicNet.Bits(), 20) {
		if !e.publicNet.Contains(a) {
			a = e.publicNet.Addr()
		}
		if e.freeAddress(a.String()) {
			return a, true
		}
		a = a.Next()
	}
	return netip.Addr{}, false
}

// freeID is the stable id of a free address (the server has a row for every
// address of its public ranges).
func (e *Emulator) freeID(addr string) string {
	if id, ok := e.freeIPs[addr]; ok {
		return id
	}
	id := e.newID()
	e.freeIPs[addr] = id
	return id
}

// associateIpAddress acquires a public address for the guest network (the
// next free one, or the one asked for): asynchronous, Allocating until its
// job is done, then Allocated.
func (e *Emulator) associateIPAddress(a *account, p url.Values, now time.Time) (any, *apiError) {
	if err := e.checkProject("associateIpAddress", p); err != nil {
		return nil, err
	}
	if net := p.Get("networkid"); net != e.fx.NetworkID && (!e.opts.VPC || p.Get("vpcid") != e.fx.VPCID) {
		if net == "" && p.Get("vpcid") == "" {
			return nil, paramError("Unable to figure out zone to assign IP to. Please specify either zoneId, or networkId, or vpcId in the call")
		}
		return nil, invalidID("associateIpAddress", net+p.Get("vpcid"))
	}
	addr := p.Get("ipaddress")
	switch {
	case addr != "" && !e.freeAddress(addr):
		return nil, &apiError{code: codeParamError, cs: csInvalidValue, text: "Unable to find a free public IP address " + addr + " in the zone"}
	case addr == "":
		// Any Free address of the range (IpAddressManagerImpl.fetchNewPublicIp
		// selects by state Free): the next after the last one given, round
		// the range, so that a released address is not given again at once
		// but the range is used up only when every address is taken.
		next, ok := e.nextFreeAddress()
		if !ok {
			return nil, &apiError{code: 533, cs: 4370, text: "Insufficient address capacity"}
		}
		addr = next.String()
		e.publicNext = next.Next()
	}
	e.seq++
	id := e.freeID(addr)
	delete(e.freeIPs, addr)
	ip := &publicIP{seq: e.seq, id: id, address: addr, state: "Allocating", allocated: csDate(now), networkID: e.fx.NetworkID, projectID: p.Get("projectid")}
	e.ips.Add(ip.id, ip)
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.address.AssociateIPAddrCmd", "IpAddress", ip.id, now, func() (any, error) {
		ip.state = "Allocated"
		return map[string]any{"ipaddress": e.ipView(ip)}, nil
	})
	return map[string]any{"id": ip.id, "jobid": job}, nil
}

// disassociateIpAddress releases an address: asynchronous.
func (e *Emulator) disassociateIPAddress(a *account, p url.Values, now time.Time) (any, *apiError) {
	id := p.Get("id")
	ip, ok := e.ips.Get(id)
	if !ok {
		return nil, invalidID("disassociateIpAddress", id)
	}
	ip.state = "Releasing"
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.address.DisassociateIPAddrCmd", "IpAddress", id, now, func() (any, error) {
		// Releasing an address revokes every rule on it (IpAddressManager).
		e.firewall = slices.DeleteFunc(e.firewall, func(f *firewallRule) bool {
			if f.ipID == id {
				e.forget(f.id)
			}
			return f.ipID == id
		})
		for _, r := range e.rules.All() {
			if r.publicIPID == id {
				e.rules.Remove(r.id)
				e.forget(r.id)
			}
		}
		e.ips.Remove(id)
		e.forget(id)
		return map[string]any{"success": true}, nil
	})
	return map[string]any{"jobid": job}, nil
}

type jobMeta struct {
	accountID, userID, cmd, instanceType, instanceID, created string
}

// startJob starts an asynchronous job done after the job delay. Call with
// mu held; run is called with mu held too (jobs settle in lock).
func (e *Emulator) startJob(a *account, cmd, instanceType, instanceID string, now time.Time, run func() (any, error)) string {
	id := e.newID()
	e.jobMeta[id] = jobMeta{accountID: a.id, userID: a.userID, cmd: cmd, instanceType: instanceType, instanceID: instanceID, created: csDate(now)}
	e.jobs.Start(id, now, e.jobDelay.Get(), run)
	return id
}

// queryAsyncJobResult answers a job as the server does: jobstatus 0 while it
// runs, 1 with its result object, 2 with jobresultcode 530 and an error object.
func (e *Emulator) queryAsyncJobResult(_ *account, p url.Values, _ time.Time) (any, *apiError) {
	id := p.Get("jobid")
	view, ok := e.jobView(id)
	if !ok {
		return nil, invalidID("queryAsyncJobResult", id)
	}
	return view, nil
}

// jobView is a job as queryAsyncJobResult and listAsyncJobs answer it.
func (e *Emulator) jobView(id string) (map[string]any, bool) {
	job, ok := e.jobs.Get(id)
	if !ok {
		return nil, false
	}
	meta := e.jobMeta[id]
	out := map[string]any{
		"accountid": meta.accountID, "userid": meta.userID, "cmd": meta.cmd, "jobstatus": int(job.Status),
		"jobprocstatus": 0, "jobresultcode": 0, "jobinstancetype": meta.instanceType, "jobinstanceid": meta.instanceID,
		"created": meta.created, "jobid": id,
	}
	switch job.Status {
	case core.JobSucceeded:
		out["jobresulttype"], out["jobresult"], out["completed"] = "object", job.Result, csDate(job.Due)
	case core.JobFailed:
		out["jobresultcode"], out["jobresulttype"], out["completed"] = codeInternal, "object", csDate(job.Due)
		out["jobresult"] = map[string]any{"errorcode": codeInternal, "errortext": job.Err.Error()}
	}
	return out, true
}

// listAsyncJobs lists the caller's own jobs (ListAsyncJobsCmd), those
// created at startdate or later when it is given, oldest first; paged.
func (e *Emulator) listAsyncJobs(a *account, p url.Values, _ time.Time) (any, *apiError) {
	page, size, aerr := e.paging(p)
	if aerr != nil {
		return nil, aerr
	}
	var since time.Time
	if v := p.Get("startdate"); v != "" {
		t, ok := parseDate(v)
		if !ok {
			return nil, paramError("Unable to parse date %s for command listAsyncJobs, please pass dates in the format mentioned in the api documentation", v)
		}
		since = t
	}
	type entry struct {
		id      string
		created time.Time
	}
	var found []entry
	for id, meta := range e.jobMeta {
		created, _ := parseDate(meta.created)
		if meta.accountID != a.id || created.Before(since) {
			continue
		}
		found = append(found, entry{id, created})
	}
	slices.SortFunc(found, func(x, y entry) int {
		if c := x.created.Compare(y.created); c != 0 {
			return c
		}
		return strings.Compare(x.id, y.id)
	})
	var items []any
	for _, en := range found {
		if v, ok := e.jobView(en.id); ok {
			items = append(items, v)
		}
	}
	return pageOf("asyncjobs", items, page, size), nil
}
