package ociapi

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

// InCompartment is the query of a listing of compartment.
func InCompartment(compartment string) url.Values { return url.Values{"compartmentId": {compartment}} }

// With is q and the query parameters of kv (name, value, …).
func With(q url.Values, kv ...string) url.Values {
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q
}

// Instances lists the instances a query names (its compartment, and
// displayName, availabilityDomain …).
func (g *Client) Instances(ctx context.Context, q url.Values) ([]Instance, error) {
	return list[Instance](ctx, g, "compute", g.ep.Core, coreAPI+"/instances", q)
}

// Instance reads one instance.
func (g *Client) Instance(ctx context.Context, id string) (Instance, error) {
	return get[Instance](ctx, g, "compute", g.ep.Core, coreAPI+"/instances/"+url.PathEscape(id))
}

// Attachments lists the VNIC attachments a query names (its compartment,
// and instanceId …).
func (g *Client) Attachments(ctx context.Context, q url.Values) ([]VnicAttachment, error) {
	return list[VnicAttachment](ctx, g, "compute", g.ep.Core, coreAPI+"/vnicAttachments", q)
}

// Vnic reads one VNIC.
func (g *Client) Vnic(ctx context.Context, id string) (Vnic, error) {
	return get[Vnic](ctx, g, "network", g.ep.Core, coreAPI+"/vnics/"+url.PathEscape(id))
}

// Subnet reads one subnet.
func (g *Client) Subnet(ctx context.Context, id string) (Subnet, error) {
	return get[Subnet](ctx, g, "network", g.ep.Core, coreAPI+"/subnets/"+url.PathEscape(id))
}

// FirstInstance is the first page of one of the compartment's instances:
// the doctor's harmless read of the Compute API.
func (g *Client) FirstInstance(ctx context.Context, compartment string) ([]Instance, error) {
	var page []Instance
	_, err := g.read(ctx, "compute", g.ep.Core, coreAPI+"/instances", onePage(compartment), &page)
	return page, err
}

// FirstLoadBalancer reads the first page of one of the compartment's load
// balancers: the doctor's harmless read of the Load Balancing API.
func (g *Client) FirstLoadBalancer(ctx context.Context, compartment string) error {
	var page []LB
	_, err := g.read(ctx, "loadbalancer", g.ep.LoadBalancer, lbAPI+"/loadBalancers", onePage(compartment), &page)
	return err
}

// Vcn reads VCN id, to see that it is there and readable.
func (g *Client) Vcn(ctx context.Context, id string) error {
	_, err := g.read(ctx, "network", g.ep.Core, coreAPI+"/vcns/"+url.PathEscape(id), nil, nil)
	return err
}

// onePage is the query of a listing's first page of one object.
func onePage(compartment string) url.Values {
	q := InCompartment(compartment)
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

// IPv6s lists the IPv6 addresses of subnet.
func (g *Client) IPv6s(ctx context.Context, subnet string) ([]IPv6, error) {
	return list[IPv6](ctx, g, "network", g.ep.Core, coreAPI+"/ipv6", url.Values{"subnetId": {subnet}})
}

// IPv6sAt lists the IPv6 addresses of subnet that are ip (none: nothing
// holds it).
func (g *Client) IPv6sAt(ctx context.Context, subnet, ip string) ([]IPv6, error) {
	return list[IPv6](ctx, g, "network", g.ep.Core, coreAPI+"/ipv6", url.Values{"subnetId": {subnet}, "ipAddress": {ip}})
}

// PrivateIPsAt lists the private IPs of subnet that are ip (none: nothing
// holds it).
func (g *Client) PrivateIPsAt(ctx context.Context, subnet, ip string) ([]PrivateIP, error) {
	return list[PrivateIP](ctx, g, "network", g.ep.Core, coreAPI+"/privateIps", url.Values{"subnetId": {subnet}, "ipAddress": {ip}})
}

// PublicIPByAddress reads the public IP of address ip.
func (g *Client) PublicIPByAddress(ctx context.Context, ip string) (PublicIP, error) {
	var p PublicIP
	ctx = context.WithValue(ctx, workloadTooKey{}, true) // the peer's Networking(ociConfig): as a Service's workload
	_, err := g.do(ctx, "network", http.MethodPost, g.ep.Core, coreAPI+"/publicIps/actions/getByIpAddress", nil, map[string]string{"ipAddress": ip}, &p, nil)
	return p, err
}

// PrivateIPs lists the private IPs of subnet.
func (g *Client) PrivateIPs(ctx context.Context, subnet string) ([]PrivateIP, error) {
	return list[PrivateIP](ctx, g, "network", g.ep.Core, coreAPI+"/privateIps", url.Values{"subnetId": {subnet}})
}

// EphemeralPublicIPs lists the ephemeral public IPs of availability domain
// ad (those of instances' VNICs) in compartment.
func (g *Client) EphemeralPublicIPs(ctx context.Context, compartment, ad string) ([]PublicIP, error) {
	q := InCompartment(compartment)
	q.Set("scope", "AVAILABILITY_DOMAIN")
	q.Set("availabilityDomain", ad)
	q.Set("lifetime", "EPHEMERAL")
	return list[PublicIP](ctx, g, "network", g.ep.Core, coreAPI+"/publicIps", q)
}

// ReservedPublicIPs lists the regional (reserved) public IPs of compartment.
func (g *Client) ReservedPublicIPs(ctx context.Context, compartment string) ([]PublicIP, error) {
	q := InCompartment(compartment)
	q.Set("scope", "REGION")
	q.Set("lifetime", "RESERVED")
	return list[PublicIP](ctx, g, "network", g.ep.Core, coreAPI+"/publicIps", q)
}

// AvailabilityDomains lists the availability domains' names.
func (g *Client) AvailabilityDomains(ctx context.Context, compartment string) ([]string, error) {
	var ads []struct {
		Name string `json:"name"`
	}
	// Not paged: the API takes no limit or page.
	_, err := g.read(ctx, "identity", g.ep.Identity, identityAPI+"/availabilityDomains", InCompartment(compartment), &ads)
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

// ETag is the version of the list read, for If-Match ("" for a list not
// read from OCI).
func (sl SecurityList) ETag() string { return sl.etag }

// SecurityList reads a security list and its etag.
func (g *Client) SecurityList(ctx context.Context, id string) (SecurityList, error) {
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

// UpdateSecurityList replaces the rules of the security list read as sl,
// if it has not changed since (If-Match: a 412 NoEtagMatch is ErrBusy), and
// returns the list as OCI then holds it, with its new etag ("" if OCI gave
// none: read it again before the next change).
func (g *Client) UpdateSecurityList(ctx context.Context, sl SecurityList) (SecurityList, error) {
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

// NSGs NSG calls (Virtual Network API).
func (g *Client) NSGs(ctx context.Context, q url.Values) ([]NSG, error) {
	return list[NSG](ctx, g, "network", g.ep.Core, coreAPI+"/networkSecurityGroups", q)
}

// CreateNSG makes an NSG; token ("": none) is its opc-retry-token
// (lostanswers.go).
func (g *Client) CreateNSG(ctx context.Context, compartment, vcn, name string, tags map[string]string, token string) (NSG, error) {
	var out NSG
	var h http.Header
	if token != "" {
		h = http.Header{"Opc-Retry-Token": {token}}
	}
	_, err := g.do(ctx, "network", http.MethodPost, g.ep.Core, coreAPI+"/networkSecurityGroups", nil,
		map[string]any{"compartmentId": compartment, "vcnId": vcn, "displayName": name, "freeformTags": tags}, &out, h)
	return out, err
}

// NSG reads network security group id.
func (g *Client) NSG(ctx context.Context, id string) (NSG, error) {
	return get[NSG](ctx, g, "network", g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id))
}

// NSGRead is NSG id with its etag.
func (g *Client) NSGRead(ctx context.Context, id string) (NSG, string, error) {
	var out NSG
	h, err := g.read(ctx, "network", g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id), nil, &out)
	if err != nil {
		return NSG{}, "", err
	}
	return out, h.Get("etag"), nil
}

// TagNSG replaces NSG id's freeform tags, if it has not changed since its
// etag was read (a 412 is ErrBusy).
func (g *Client) TagNSG(ctx context.Context, id, etag string, tags map[string]string) error {
	_, err := g.do(ctx, "network", http.MethodPut, g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id), nil,
		map[string]any{"freeformTags": tags}, nil, http.Header{"If-Match": {etag}})
	return err
}

// DeleteNSG deletes network security group id.
func (g *Client) DeleteNSG(ctx context.Context, id string) error {
	_, err := g.callWith(ctx, "network", http.MethodDelete, g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id), nil, nil)
	return err
}

// NSGRules lists the security rules of network security group id.
func (g *Client) NSGRules(ctx context.Context, id string) ([]NSGRule, error) {
	return list[NSGRule](ctx, g, "network", g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id)+"/securityRules", nil)
}

// AddNSGRules adds rules to NSG id, 25 a call (the API's limit).
func (g *Client) AddNSGRules(ctx context.Context, id string, rules []NSGRule) error {
	return nsgAction(ctx, g, id, "addSecurityRules", "securityRules", rules)
}

// RemoveNSGRules removes the rules ids from NSG id, 25 a call.
func (g *Client) RemoveNSGRules(ctx context.Context, id string, ids []string) error {
	return nsgAction(ctx, g, id, "removeSecurityRules", "securityRuleIds", ids)
}

// nsgAction posts action of NSG id with items under key, 25 a call.
func nsgAction[T any](ctx context.Context, g *Client, id, action, key string, items []T) error {
	for batch := range slices.Chunk(items, 25) {
		if _, err := g.callWith(ctx, "network", http.MethodPost, g.ep.Core, coreAPI+"/networkSecurityGroups/"+url.PathEscape(id)+"/actions/"+action,
			map[string]any{key: batch}, nil); err != nil {
			return err
		}
	}
	return nil
}
