package oci

import (
	"fmt"
	"net/http"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Instances and their networking, as the Compute and Virtual Network APIs
// answer them (field names and mandatory fields: oci-go-sdk's core.Instance,
// core.VnicAttachment, core.Vnic, core.Subnet, core.Vcn; identity's
// AvailabilityDomain).

// Instance lifecycle states (core.InstanceLifecycleStateEnum).
const (
	StateRunning     = "RUNNING"
	StateStopping    = "STOPPING"
	StateStopped     = "STOPPED"
	StateTerminating = "TERMINATING"
	StateTerminated  = "TERMINATED"
)

// resource is what every OCI resource has.
type resource struct {
	ID             string    `json:"id"`
	CompartmentID  string    `json:"compartmentId"`
	LifecycleState string    `json:"lifecycleState"`
	TimeCreated    time.Time `json:"timeCreated"`
}

func (r *resource) ocid() string { return r.ID }

// newResource is the common part of a new object of kind (its OCID's kind),
// in state from now. Call with mu held.
func (e *Emulator) newResource(kind, compartment, state string, now time.Time) resource {
	return resource{ID: e.newID(kind), CompartmentID: compartment, LifecycleState: state, TimeCreated: now}
}

type instance struct {
	resource
	AvailabilityDomain string `json:"availabilityDomain"`
	FaultDomain        string `json:"faultDomain"`
	DisplayName        string `json:"displayName"`
	Region             string `json:"region"`
	Shape              string `json:"shape"`
}

type vnicAttachment struct {
	resource
	AvailabilityDomain string `json:"availabilityDomain"`
	InstanceID         string `json:"instanceId"`
	VnicID             string `json:"vnicId"`
	SubnetID           string `json:"subnetId"`
	NicIndex           int    `json:"nicIndex"`
}

type vnic struct {
	resource
	AvailabilityDomain string   `json:"availabilityDomain"`
	DisplayName        string   `json:"displayName"`
	HostnameLabel      string   `json:"hostnameLabel"`
	IsPrimary          bool     `json:"isPrimary"`
	MacAddress         string   `json:"macAddress"`
	PrivateIP          string   `json:"privateIp"`
	PublicIP           string   `json:"publicIp,omitempty"`
	IPv6Addresses      []string `json:"ipv6Addresses"`
	SubnetID           string   `json:"subnetId"`
	// privateIPID and publicIPID are the OCIDs of its primary private IP
	// and of the ephemeral public IP on it ("" for none); ipv6ID of its
	// IPv6 address's object.
	privateIPID, publicIPID, ipv6ID string
}

type subnet struct {
	resource
	VCNID       string `json:"vcnId"`
	DisplayName string `json:"displayName"`
	CIDRBlock   string `json:"cidrBlock"`
	// IPv6CIDRBlocks and IPv6CIDRBlock are absent for an IPv4-only subnet,
	// as OCI answers it: oci-cloud-controller-manager v1.35.0 takes a
	// present ipv6CidrBlocks to mean ipv6CidrBlock is present too
	// (load_balancer.go checkSubnetIpFamilyCompatibility).
	IPv6CIDRBlocks   []string `json:"ipv6CidrBlocks,omitempty"`
	IPv6CIDRBlock    string   `json:"ipv6CidrBlock,omitempty"`
	RouteTableID     string   `json:"routeTableId"`
	SecurityListIDs  []string `json:"securityListIds"`
	VirtualRouterIP  string   `json:"virtualRouterIp"`
	VirtualRouterMac string   `json:"virtualRouterMac"`
	// AvailabilityDomain is nil for a regional subnet.
	AvailabilityDomain *string `json:"availabilityDomain"`
}

type vcn struct {
	resource
	DisplayName    string   `json:"displayName"`
	CIDRBlock      string   `json:"cidrBlock"`
	CIDRBlocks     []string `json:"cidrBlocks"`
	IPv6CIDRBlocks []string `json:"ipv6CidrBlocks,omitempty"`
}

// viewOf is a copy of an object to encode outside the lock.
func viewOf[T any](o *T) any { c := *o; return &c }

// routeGet serves GET path/{id}: the object of st, as it is.
func routeGet[T any](e *Emulator, path string, st *core.Store[*T]) {
	e.handle("GET "+path+"/{id}", func(w http.ResponseWriter, r *http.Request) { getOne(e, w, r, st, viewOf[T]) })
}

func (e *Emulator) routeCompute() {
	e.handle("GET "+corePath+"/instances", filtered[*instance]{st: e.instances, view: viewOf[instance], fields: func(i *instance) (string, map[string]string) {
		return i.CompartmentID, map[string]string{"availabilityDomain": i.AvailabilityDomain, "displayName": i.DisplayName}
	}}.serve(e))
	routeGet(e, corePath+"/instances", e.instances)
	e.handle("GET "+corePath+"/vnicAttachments", filtered[*vnicAttachment]{st: e.attachments, view: viewOf[vnicAttachment],
		fields: func(a *vnicAttachment) (string, map[string]string) {
			return a.CompartmentID, map[string]string{"instanceId": a.InstanceID}
		}}.serve(e))
	routeGet(e, corePath+"/vnics", e.vnics)
	e.handle("GET "+corePath+"/privateIps", e.listPrivateIPs)
	e.handle("GET "+corePath+"/publicIps", e.listPublicIPs)
	e.handle("GET "+corePath+"/ipv6", e.listIPv6s)
	routeGet(e, corePath+"/subnets", e.subnets)
	routeGet(e, corePath+"/vcns", e.vcns)
	e.handle("GET "+corePath+"/availabilityDomains", func(w http.ResponseWriter, r *http.Request) {
		comp, ok := requireCompartment(w, r)
		if !ok {
			return
		}
		ads := make([]map[string]string, len(e.fx.AvailabilityDomains))
		for i, name := range e.fx.AvailabilityDomains {
			ads[i] = map[string]string{"id": fmt.Sprintf("ocid1.availabilitydomain.oc1..ad%d", i+1), "name": name, "compartmentId": comp}
		}
		core.WriteJSON(w, http.StatusOK, ads)
	})
	e.handle("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", "Not Found")
	})
}

// AddMachine adds a RUNNING instance named name (a Node's name) in the
// fixture's compartment, with a primary VNIC on the node subnet that has a
// private and a public address, and returns its OCID and private address.
// The availability and fault domains go round.
func (e *Emulator) AddMachine(name string) (id, ip string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.instances.Len()
	ad := e.fx.AvailabilityDomains[n%len(e.fx.AvailabilityDomains)]
	now := e.opts.Clock()
	inst := &instance{resource: e.newResource("instance", e.fx.CompartmentID, StateRunning, now),
		AvailabilityDomain: ad, FaultDomain: fmt.Sprintf("FAULT-DOMAIN-%d", n%3+1), DisplayName: name,
		Region: regionField(e.opts.Region), Shape: "VM.Standard.E4.Flex"}
	private, public := e.free(&e.machineNext), e.publicNext
	e.publicNext = e.publicNext.Next()
	v := &vnic{resource: e.newResource("vnic", inst.CompartmentID, "AVAILABLE", now),
		AvailabilityDomain: ad, DisplayName: name, HostnameLabel: name, IsPrimary: true,
		MacAddress: fmt.Sprintf("02:00:17:00:%02x:%02x", n/256%256, n%256),
		PrivateIP:  private.String(), PublicIP: public.String(), IPv6Addresses: []string{}, SubnetID: e.fx.SubnetID,
		privateIPID: e.newID("privateip"), publicIPID: e.newID("publicip")}
	if e.ipv6Next.IsValid() {
		v.IPv6Addresses, v.ipv6ID = []string{e.free(&e.ipv6Next).String()}, e.newID("ipv6")
	}
	att := &vnicAttachment{resource: e.newResource("vnicattachment", inst.CompartmentID, "ATTACHED", now),
		AvailabilityDomain: ad, InstanceID: inst.ID, VnicID: v.ID, SubnetID: v.SubnetID}
	e.instances.Add(inst.ID, inst)
	e.vnics.Add(v.ID, v)
	e.holdVNIC(v)
	e.attachments.Add(att.ID, att)
	return inst.ID, private.String()
}

// SetInstanceState moves an instance to a lifecycle state (STOPPED,
// TERMINATED, …). A TERMINATED instance's VNICs are detached, as OCI does.
func (e *Emulator) SetInstanceState(id, state string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	inst, ok := e.instances.Get(id)
	if !ok {
		return fmt.Errorf("no instance %s", id)
	}
	inst.LifecycleState = state
	if state == StateTerminated {
		for _, a := range e.attachments.All() {
			if a.InstanceID == id {
				a.LifecycleState = "DETACHED"
			}
		}
	}
	return nil
}

// PurgeInstance removes an instance and its VNICs, as OCI does some time
// after it is terminated: reading it then answers 404.
func (e *Emulator) PurgeInstance(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.instances.Remove(id)
	for _, a := range e.attachments.All() {
		if a.InstanceID == id {
			e.attachments.Remove(a.ID)
			if v, ok := e.vnics.Get(a.VnicID); ok {
				e.releaseVNIC(v)
			}
			e.vnics.Remove(a.VnicID)
		}
	}
}

// regionField is instance.region as OCI answers it: the short code for the
// oldest regions (iad, phx), the name for the others (facts §2).
func regionField(region string) string {
	switch region {
	case "us-ashburn-1":
		return "iad"
	case "us-phoenix-1":
		return "phx"
	}
	return region
}

// Objects counts what a CCM may create, by kind.
func (e *Emulator) Objects() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.jobs.Settle(e.opts.Clock())
	rules := 0
	for _, sl := range e.securityLists.All() {
		rules += len(sl.IngressSecurityRules) + len(sl.EgressSecurityRules)
	}
	return map[string]int{"loadBalancer": e.lbs.Len(), "networkLoadBalancer": e.nlbs.Len(), "networkSecurityGroup": e.nsgs.Len(),
		"securityRule": rules + e.nsgRuleCount()}
}

// listPublicIPs answers ListPublicIps: scope AVAILABILITY_DOMAIN lists the
// ephemeral public IPs of the VNICs of one availability domain, scope REGION
// the reserved ones.
func (e *Emulator) listPublicIPs(w http.ResponseWriter, r *http.Request) {
	comp, ok := requireCompartment(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	scope, ad := q.Get("scope"), q.Get("availabilityDomain")
	switch {
	case scope != "REGION" && scope != "AVAILABILITY_DOMAIN":
		writeError(w, http.StatusBadRequest, "InvalidParameter", "scope must be REGION or AVAILABILITY_DOMAIN.")
		return
	case scope == "AVAILABILITY_DOMAIN" && ad == "":
		writeError(w, http.StatusBadRequest, "MissingParameter", "availabilityDomain is required for scope AVAILABILITY_DOMAIN.")
		return
	}
	lifetime := q.Get("lifetime")
	if scope == "REGION" {
		listPage(e, w, r, e.publicIPs, func(p *publicIP) bool {
			return p.CompartmentID == comp && (lifetime == "" || p.Lifetime == lifetime)
		}, viewOf[publicIP])
		return
	}
	listPage(e, w, r, e.vnics, func(v *vnic) bool {
		return v.publicIPID != "" && v.CompartmentID == comp && v.AvailabilityDomain == ad &&
			(lifetime == "" || lifetime == "EPHEMERAL")
	}, func(v *vnic) any {
		return map[string]any{"id": v.publicIPID, "assignedEntityId": v.privateIPID, "assignedEntityType": "PRIVATE_IP",
			"availabilityDomain": v.AvailabilityDomain, "compartmentId": v.CompartmentID, "ipAddress": v.PublicIP,
			"lifecycleState": "ASSIGNED", "lifetime": "EPHEMERAL", "privateIpId": v.privateIPID,
			"scope": "AVAILABILITY_DOMAIN", "timeCreated": v.TimeCreated}
	})
}
