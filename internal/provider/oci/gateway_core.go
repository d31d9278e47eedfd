package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// OCI's Core Services API (/20160918): instances and their VNICs, subnets,
// addresses, availability domains, security lists and network security
// groups.

// Instance is an instance as the CCM uses it.
type Instance struct {
	ID                 string `json:"id"`
	CompartmentID      string `json:"compartmentId"`
	AvailabilityDomain string `json:"availabilityDomain"`
	FaultDomain        string `json:"faultDomain"`
	DisplayName        string `json:"displayName"`
	LifecycleState     string `json:"lifecycleState"`
	Region             string `json:"region"`
	Shape              string `json:"shape"`
}

// VnicAttachment is a VNIC attachment as the CCM uses it.
type VnicAttachment struct {
	InstanceID     string `json:"instanceId"`
	VnicID         string `json:"vnicId"`
	SubnetID       string `json:"subnetId"`
	LifecycleState string `json:"lifecycleState"`
}

// Vnic is a VNIC as the CCM uses it.
type Vnic struct {
	ID            string   `json:"id"`
	IsPrimary     bool     `json:"isPrimary"`
	PrivateIP     string   `json:"privateIp"`
	PublicIP      string   `json:"publicIp"`
	IPv6Addresses []string `json:"ipv6Addresses"`
	HostnameLabel string   `json:"hostnameLabel"`
	SubnetID      string   `json:"subnetId"`
}

// Subnet is a subnet as the CCM uses it.
type Subnet struct {
	ID                 string   `json:"id"`
	VCNID              string   `json:"vcnId"`
	CIDRBlock          string   `json:"cidrBlock"`
	IPv6CIDRBlocks     []string `json:"ipv6CidrBlocks"`
	IPv6CIDRBlock      string   `json:"ipv6CidrBlock"`
	SecurityListIDs    []string `json:"securityListIds"`
	AvailabilityDomain *string  `json:"availabilityDomain"`
}

// inCompartment is the query of a listing of compartment.
func inCompartment(compartment string) url.Values { return url.Values{"compartmentId": {compartment}} }

// with is q and the query parameters of kv (name, value, …).
func with(q url.Values, kv ...string) url.Values {
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q
}

// instances lists the instances a query names (its compartment, and
// displayName, availabilityDomain …).
func (g *gateway) instances(ctx context.Context, q url.Values) ([]Instance, error) {
	return list[Instance](ctx, g, "compute", g.ep.Core, coreAPI+"/instances", q)
}

// instance reads one instance.
func (g *gateway) instance(ctx context.Context, id string) (Instance, error) {
	return get[Instance](ctx, g, "compute", g.ep.Core, coreAPI+"/instances/"+url.PathEscape(id))
}

// attachments lists the VNIC attachments a query names (its compartment,
// and instanceId …).
func (g *gateway) attachments(ctx context.Context, q url.Values) ([]VnicAttachment, error) {
	return list[VnicAttachment](ctx, g, "compute", g.ep.Core, coreAPI+"/vnicAttachments", q)
}

// vnic reads one VNIC.
func (g *gateway) vnic(ctx context.Context, id string) (Vnic, error) {
	return get[Vnic](ctx, g, "network", g.ep.Core, coreAPI+"/vnics/"+url.PathEscape(id))
}

// subnet reads one subnet.
func (g *gateway) subnet(ctx context.Context, id string) (Subnet, error) {
	return get[Subnet](ctx, g, "network", g.ep.Core, coreAPI+"/subnets/"+url.PathEscape(id))
}

// firstInstance is the first page of one of the compartment's instances:
// the doctor's harmless read of the Compute API.
func (g *gateway) firstInstance(ctx context.Context, compartment string) ([]Instance, error) {
	var page []Instance
	_, err := g.read(ctx, "compute", g.ep.Core, coreAPI+"/instances", onePage(compartment), &page)
	return page, err
}

// firstLoadBalancer reads the first page of one of the compartment's load
// balancers: the doctor's harmless read of the Load Balancing API.
func (g *gateway) firstLoadBalancer(ctx context.Context, compartment string) error {
	var page []LB
	_, err := g.read(ctx, "loadbalancer", g.ep.LoadBalancer, lbAPI+"/loadBalancers", onePage(compartment), &page)
	return err
}

// vcn reads VCN id, to see that it is there and readable.
func (g *gateway) vcn(ctx context.Context, id string) error {
	_, err := g.read(ctx, "network", g.ep.Core, coreAPI+"/vcns/"+url.PathEscape(id), nil, nil)
	return err
}

// onePage is the query of a listing's first page of one object.
func onePage(compartment string) url.Values {
	q := inCompartment(compartment)
	q.Set("limit", "1")
	return q
}

// PrivateIP is a private IP as the CCM uses it.
type PrivateIP struct {
	ID            string `json:"id"`
	IPAddress     string `json:"ipAddress"`
	IsPrimary     bool   `json:"isPrimary"`
	VnicID        string `json:"vnicId"`
	HostnameLabel string `json:"hostnameLabel"`
}

// PublicIP is a public IP as the CCM uses it.
type PublicIP struct {
	ID               string `json:"id"`
	IPAddress        string `json:"ipAddress"`
	PrivateIPID      string `json:"privateIpId"`
	Lifetime         string `json:"lifetime"`
	LifecycleState   string `json:"lifecycleState"`
	AssignedEntityID string `json:"assignedEntityId"`
}

// IPv6 is an IPv6 address of a subnet, of a VNIC (VnicID) or not.
type IPv6 struct {
	ID        string `json:"id"`
	IPAddress string `json:"ipAddress"`
	VnicID    string `json:"vnicId"`
}

// ipv6s lists the IPv6 addresses of subnet.
func (g *gateway) ipv6s(ctx context.Context, subnet string) ([]IPv6, error) {
	return list[IPv6](ctx, g, "network", g.ep.Core, coreAPI+"/ipv6", url.Values{"subnetId": {subnet}})
}

// ipv6sAt lists the IPv6 addresses of subnet that are ip (none: nothing
// holds it).
func (g *gateway) ipv6sAt(ctx context.Context, subnet, ip string) ([]IPv6, error) {
	return list[IPv6](ctx, g, "network", g.ep.Core, coreAPI+"/ipv6", url.Values{"subnetId": {subnet}, "ipAddress": {ip}})
}

// privateIPsAt lists the private IPs of subnet that are ip (none: nothing
// holds it).
func (g *gateway) privateIPsAt(ctx context.Context, subnet, ip string) ([]PrivateIP, error) {
	return list[PrivateIP](ctx, g, "network", g.ep.Core, coreAPI+"/privateIps", url.Values{"subnetId": {subnet}, "ipAddress": {ip}})
}

// publicIPByAddress reads the public IP of address ip.
func (g *gateway) publicIPByAddress(ctx context.Context, ip string) (PublicIP, error) {
	var p PublicIP
	ctx = context.WithValue(ctx, workloadTooKey{}, true) // the peer's Networking(ociConfig): as a Service's workload
	_, err := g.do(ctx, "network", http.MethodPost, g.ep.Core, coreAPI+"/publicIps/actions/getByIpAddress", nil, map[string]string{"ipAddress": ip}, &p, nil)
	return p, err
}

// privateIPs lists the private IPs of subnet.
func (g *gateway) privateIPs(ctx context.Context, subnet string) ([]PrivateIP, error) {
	return list[PrivateIP](ctx, g, "network", g.ep.Core, coreAPI+"/privateIps", url.Values{"subnetId": {subnet}})
}

// ephemeralPublicIPs lists the ephemeral public IPs of availability domain
// ad (those of instances' VNICs) in compartment.
func (g *gateway) ephemeralPublicIPs(ctx context.Context, compartment, ad string) ([]PublicIP, error) {
	q := inCompartment(compartment)
	q.Set("scope", "AVAILABILITY_DOMAIN")
	q.Set("availabilityDomain", ad)
	q.Set("lifetime", "EPHEMERAL")
	return list[PublicIP](ctx, g, "network", g.ep.Core, coreAPI+"/publicIps", q)
}

// reservedPublicIPs lists the regional (reserved) public IPs of compartment.
func (g *gateway) reservedPublicIPs(ctx context.Context, compartment string) ([]PublicIP, error) {
	q := inCompartment(compartment)
	q.Set("scope", "REGION")
	q.Set("lifetime", "RESERVED")
	return list[PublicIP](ctx, g, "network", g.ep.Core, coreAPI+"/publicIps", q)
}

// availabilityDomains lists the availability domains' names.
func (g *gateway) availabilityDomains(ctx context.Context, compartment string) ([]string, error) {
	var ads []struct {
		Name string `json:"name"`
	}
	// Not paged: the API takes no limit or page.
	_, err := g.read(ctx, "identity", g.ep.Identity, identityAPI+"/availabilityDomains", inCompartment(compartment), &ads)
	names := make([]string, len(ads))
	for i, a := range ads {
		names[i] = a.Name
	}
	return names, err
}

// The Load Balancing API and the Network Load Balancer API.
const (
	lbAPI  = "/20170115"
	nlbAPI = "/20200501"
)

// SecurityList is a security list; its rules are kept as OCI sent them, so
// that an update gives back every field of the rules it does not change.
type SecurityList struct {
	ID          string            `json:"id"`
	TimeCreated time.Time         `json:"timeCreated"`
	Ingress     []json.RawMessage `json:"ingressSecurityRules"`
	Egress      []json.RawMessage `json:"egressSecurityRules"`
	// etag is the version read, for If-Match.
	etag string
}

// securityList reads a security list and its etag.
func (g *gateway) securityList(ctx context.Context, id string) (SecurityList, error) {
	var sl SecurityList
	h, err := g.read(ctx, "network", g.ep.Core, coreAPI+"/securityLists/"+url.PathEscape(id), nil, &sl)
	if err != nil {
		return SecurityList{}, err
	}
	sl.etag = h.Get("etag")
	if sl.etag == "" {
		return SecurityList{}, fmt.Errorf("OCI answered GET /securityLists/{id} without an etag")
	}
	return sl, nil
}

// updateSecurityList replaces the rules of the security list read as sl,
// if it has not changed since (If-Match: a 412 NoEtagMatch is ErrBusy), and
// returns the list as OCI then holds it, with its new etag ("" if OCI gave
// none: read it again before the next change).
func (g *gateway) updateSecurityList(ctx context.Context, sl SecurityList) (SecurityList, error) {
	body := map[string][]json.RawMessage{"ingressSecurityRules": sl.Ingress, "egressSecurityRules": sl.Egress}
	var now SecurityList
	h, err := g.do(ctx, "network", http.MethodPut, g.ep.Core, coreAPI+"/securityLists/"+url.PathEscape(sl.ID), nil, body, &now,
		http.Header{"If-Match": {sl.etag}})
	if err != nil {
		return SecurityList{}, err
	}
	now.etag = h.Get("etag")
	return now, nil
}

// The gateway's NSG calls (Virtual Network API).
func (g *gateway) nsgs(ctx context.Context, q url.Values) ([]NSG, error) {
	return list[NSG](ctx, g, "network", g.ep.Core, coreAPI+"/networkSecurityGroups", q)
}

// createNSG makes an NSG; token ("": none) is its opc-retry-token
// (lostanswers.go).
func (g *gateway) createNSG(ctx context.Context, compartment, vcn, name string, tags map[string]string, token string) (NSG, error) {
	var out NSG
	var h http.Header
	if token != "" {
		h = http.Header{"Opc-Retry-Token": {token}}
	}
	_, err := g.do(ctx, "network", http.MethodPost, g.ep.Core, coreAPI+"/networkSecurityGroups", nil,
		map[string]any{"compartmentId": compartment, "vcnId": vcn, "displayName": name, "freeformTags": tags}, &out, h)
	return out, err
}

func (g *gateway) nsg(ctx context.Context, id string) (NSG, error) {
	return get[NSG](ctx, g, "network", g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id))
}

// nsgRead is NSG id with its etag.
func (g *gateway) nsgRead(ctx context.Context, id string) (NSG, string, error) {
	var out NSG
	h, err := g.read(ctx, "network", g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id), nil, &out)
	if err != nil {
		return NSG{}, "", err
	}
	return out, h.Get("etag"), nil
}

// tagNSG replaces NSG id's freeform tags, if it has not changed since its
// etag was read (a 412 is ErrBusy).
func (g *gateway) tagNSG(ctx context.Context, id, etag string, tags map[string]string) error {
	_, err := g.do(ctx, "network", http.MethodPut, g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id), nil,
		map[string]any{"freeformTags": tags}, nil, http.Header{"If-Match": {etag}})
	return err
}

func (g *gateway) deleteNSG(ctx context.Context, id string) error {
	_, err := g.callWith(ctx, "network", http.MethodDelete, g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id), nil, nil)
	return err
}

func (g *gateway) nsgRules(ctx context.Context, id string) ([]NSGRule, error) {
	return list[NSGRule](ctx, g, "network", g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id)+"/securityRules", nil)
}

// addNSGRules adds rules to NSG id, 25 a call (the API's limit).
func (g *gateway) addNSGRules(ctx context.Context, id string, rules []NSGRule) error {
	return nsgAction(ctx, g, id, "addSecurityRules", "securityRules", rules)
}

// removeNSGRules removes the rules ids from NSG id, 25 a call.
func (g *gateway) removeNSGRules(ctx context.Context, id string, ids []string) error {
	return nsgAction(ctx, g, id, "removeSecurityRules", "securityRuleIds", ids)
}

// nsgAction posts action of NSG id with items under key, 25 a call.
func nsgAction[T any](ctx context.Context, g *gateway, id, action, key string, items []T) error {
	for batch := range slices.Chunk(items, 25) {
		if _, err := g.callWith(ctx, "network", http.MethodPost, g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id)+"/actions/"+action,
			map[string]any{key: batch}, nil); err != nil {
			return err
		}
	}
	return nil
}
