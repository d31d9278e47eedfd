package oci

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// The Node labels and annotations of the peer's node-info controller.
const (
	// FaultDomainLabel is the fault domain of a Node's instance.
	FaultDomainLabel = "oci.oraclecloud.com/fault-domain"
	// CompartmentAnnotation is the compartment of a Node's instance.
	CompartmentAnnotation = "oci.oraclecloud.com/compartment-id"
)

// ProviderIDPrefix starts an OCI providerID: oci://<instance OCID>.
const ProviderIDPrefix = "oci://"

// Instance lifecycle states that say an instance is gone, or shut down.
var (
	goneStates     = []string{"TERMINATING", "TERMINATED"}
	shutdownStates = []string{"STOPPING", "STOPPED"}
)

// machine is an instance with the addresses of its primary VNIC.
type machine struct {
	ociapi.Instance
	PrivateIP, PublicIP, Hostname string
	// SubnetID is the primary VNIC's subnet.
	SubnetID string
	// IPv6 are the primary VNIC's IPv6 addresses (a dual-stack subnet's).
	IPv6 []string
}

// machineKeys: the OCID, then, for an instance not terminating, the ways the
// peer finds a Node's instance without a providerID: its displayName, its
// addresses, its hostname label (a key two instances share is left out of
// the index, so such a Node takes the direct lookup, which names the
// ambiguity).
func machineKeys(m machine) []string {
	keys := []string{"id/" + m.ID}
	if slices.Contains(goneStates, m.LifecycleState) {
		return keys
	}
	keys = append(keys, "name/"+strings.ToLower(m.DisplayName))
	for _, ip := range []string{m.PrivateIP, m.PublicIP} {
		if ip != "" {
			keys = append(keys, "ip/"+ip)
		}
	}
	if m.Hostname != "" {
		keys = append(keys, "host/"+strings.ToLower(m.Hostname))
	}
	return keys
}

// ParseProviderID is the instance OCID of an OCI providerID, in every form
// the peer accepts: oci://<OCID> or the bare OCID. "" is no providerID.
func ParseProviderID(providerID string) (string, error) {
	if providerID == "" {
		return "", nil
	}
	id := strings.TrimPrefix(providerID, ProviderIDPrefix)
	if !validOCID(id, "instance") {
		return "", fmt.Errorf("providerID %q is not an OCI instance's (%socid1.instance.…)", providerID, ProviderIDPrefix)
	}
	return id, nil
}

// listMachines lists every instance of the compartment with the addresses of
// its primary VNIC, in listings whose number does not grow with the
// instances': the instances, the VNIC attachments, each node subnet's private
// IPs, each availability domain's ephemeral public IPs and the reserved ones.
func (c *Cloud) listMachines(ctx context.Context) ([]machine, error) {
	comp := c.cfg.CompartmentID
	insts, err := c.api.Instances(ctx, ociapi.InCompartment(comp))
	if err != nil {
		return nil, fmt.Errorf("listing the instances of compartment %s: %w", comp, err)
	}
	atts, err := c.api.Attachments(ctx, ociapi.InCompartment(comp))
	if err != nil {
		return nil, fmt.Errorf("listing the VNIC attachments of compartment %s: %w", comp, err)
	}
	attached := map[string][]ociapi.VnicAttachment{}
	var subnets, ads []string
	adOf := map[string]string{}
	for _, in := range insts {
		adOf[in.ID] = in.AvailabilityDomain
	}
	for _, a := range atts {
		if a.LifecycleState != "ATTACHED" || a.VnicID == "" {
			continue
		}
		attached[a.InstanceID] = append(attached[a.InstanceID], a)
		if !slices.Contains(subnets, a.SubnetID) {
			subnets = append(subnets, a.SubnetID)
		}
		if ad := adOf[a.InstanceID]; ad != "" && !slices.Contains(ads, ad) {
			ads = append(ads, ad)
		}
	}
	private := map[string]ociapi.PrivateIP{} // by VNIC: its primary private IP
	ipv6 := map[string][]string{}            // by VNIC
	for _, s := range subnets {
		ips, err := c.api.PrivateIPs(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("listing the private IPs of subnet %s: %w", s, err)
		}
		for _, ip := range ips {
			if ip.IsPrimary {
				private[ip.VnicID] = ip
			}
		}
		if err := c.listIPv6s(ctx, s, ipv6); err != nil {
			return nil, err
		}
	}
	public := map[string]string{} // by private IP OCID
	for _, ad := range ads {
		ips, err := c.api.EphemeralPublicIPs(ctx, comp, ad)
		if err != nil {
			return nil, fmt.Errorf("listing the public IPs of %s: %w", ad, err)
		}
		addPublic(public, ips)
	}
	if len(ads) > 0 {
		ips, err := c.api.ReservedPublicIPs(ctx, comp)
		if err != nil {
			return nil, fmt.Errorf("listing the reserved public IPs of compartment %s: %w", comp, err)
		}
		addPublic(public, ips)
	}
	out := make([]machine, 0, len(insts))
	for _, in := range insts {
		m := machine{Instance: in}
		if a, ok := c.primaryAttachment(ctx, attached[in.ID]); ok {
			p := private[a.VnicID]
			m.PrivateIP, m.Hostname, m.PublicIP, m.SubnetID = p.IPAddress, p.HostnameLabel, public[p.ID], a.SubnetID
			m.IPv6 = ipv6[a.VnicID]
		}
		out = append(out, m)
	}
	c.mu.Lock()
	for _, in := range insts {
		c.compartmentOf[in.ID] = in.CompartmentID
	}
	c.mu.Unlock()
	return out, nil
}

// listIPv6s adds the IPv6 addresses of subnet, when it is dual-stack (its
// CIDRs looked up once an hour), to to by VNIC.
func (c *Cloud) listIPv6s(ctx context.Context, subnet string, to map[string][]string) error {
	sub, err := c.lb.subnet(ctx, subnet)
	if err != nil {
		return err
	}
	if len(sub.IPv6CIDRBlocks) == 0 && sub.IPv6CIDRBlock == "" {
		return nil
	}
	ips, err := c.api.IPv6s(ctx, subnet)
	if err != nil {
		return fmt.Errorf("listing the IPv6 addresses of subnet %s: %w", subnet, err)
	}
	for _, ip := range ips {
		if ip.VnicID != "" { // not a load balancer's, nor a reserved one
			to[ip.VnicID] = append(to[ip.VnicID], ip.IPAddress)
		}
	}
	return nil
}

func addPublic(to map[string]string, ips []ociapi.PublicIP) {
	for _, ip := range ips {
		if ip.PrivateIPID != "" {
			to[ip.PrivateIPID] = ip.IPAddress
		}
	}
}

// primaryAttachment is the attachment of atts of its instance's primary
// VNIC: the only one, or the one a lookup says is primary (looked up once
// per VNIC: it never changes). false when it cannot be told yet.
func (c *Cloud) primaryAttachment(ctx context.Context, atts []ociapi.VnicAttachment) (ociapi.VnicAttachment, bool) {
	if len(atts) == 1 {
		return atts[0], true
	}
	for _, a := range atts {
		c.mu.Lock()
		primary, known := c.primary[a.VnicID]
		c.mu.Unlock()
		if !known {
			v, err := c.api.Vnic(ctx, a.VnicID)
			if err != nil {
				klog.FromContext(ctx).V(2).Info("Cannot look up a VNIC yet", "vnic", a.VnicID, "err", err.Error())
				continue
			}
			primary = v.IsPrimary
			c.mu.Lock()
			c.primary[a.VnicID] = primary
			c.mu.Unlock()
		}
		if primary {
			return a, true
		}
	}
	return ociapi.VnicAttachment{}, false
}

// lookUp reads one instance and its primary VNIC directly (a Node the
// listings do not hold yet).
func (c *Cloud) lookUp(ctx context.Context, id string) (machine, error) {
	in, err := c.api.Instance(ctx, id)
	if err != nil {
		return machine{}, err
	}
	c.mu.Lock()
	c.compartmentOf[in.ID] = in.CompartmentID
	c.mu.Unlock()
	return c.withAddresses(ctx, in)
}

// withAddresses is in with the addresses of its primary VNIC.
func (c *Cloud) withAddresses(ctx context.Context, in ociapi.Instance) (machine, error) {
	m := machine{Instance: in}
	if slices.Contains(goneStates, in.LifecycleState) {
		return m, nil
	}
	atts, err := c.api.Attachments(ctx, ociapi.With(ociapi.InCompartment(in.CompartmentID), "instanceId", in.ID))
	if err != nil {
		return machine{}, fmt.Errorf("listing the VNIC attachments of instance %s: %w", in.ID, err)
	}
	for _, a := range atts {
		if a.LifecycleState != "ATTACHED" || a.VnicID == "" {
			continue
		}
		v, err := c.api.Vnic(ctx, a.VnicID)
		if err != nil {
			return machine{}, fmt.Errorf("looking up VNIC %s of instance %s: %w", a.VnicID, in.ID, err)
		}
		c.mu.Lock()
		c.primary[v.ID] = v.IsPrimary
		c.mu.Unlock()
		if v.IsPrimary {
			m.PrivateIP, m.PublicIP, m.Hostname, m.SubnetID, m.IPv6 = v.PrivateIP, v.PublicIP, v.HostnameLabel, v.SubnetID, v.IPv6Addresses
			break
		}
	}
	return m, nil
}

// find locates the Node's instance: in listings at most maxAge old, else by
// a lookup of its own (by OCID, or by displayName). found is false only when
// OCI itself answered that there is no such instance (which, for a lookup by
// OCID, may be a missing policy: InstanceExists confirms); any failure is an
// error, never "gone".
func (c *Cloud) find(ctx context.Context, node *v1.Node, maxAge time.Duration) (machine, bool, error) {
	id, err := ParseProviderID(node.Spec.ProviderID)
	if err != nil {
		return machine{}, false, err
	}
	if id != "" {
		m, found, err := c.machines.GetWithin(ctx, "id/"+id, maxAge)
		if err != nil || (found && m.PrivateIP != "") {
			return m, found, err
		}
		m, err = c.lookUp(ctx, id)
		switch {
		case errors.Is(err, outcome.ErrNotFound):
			return machine{}, false, nil
		case err != nil:
			return machine{}, false, fmt.Errorf("looking up instance %s: %w", id, err)
		}
		c.machines.Put(m)
		return m, true, nil
	}
	for _, key := range nameKeys(node.Name) {
		m, found, err := c.machines.GetWithin(ctx, key, maxAge)
		if err != nil || found {
			return m, found, err
		}
	}
	list, err := c.api.Instances(ctx, ociapi.With(ociapi.InCompartment(c.cfg.CompartmentID), "displayName", node.Name))
	if err != nil {
		return machine{}, false, fmt.Errorf("looking up the instance named %s: %w", node.Name, err)
	}
	list = slices.DeleteFunc(list, func(in ociapi.Instance) bool { return slices.Contains(goneStates, in.LifecycleState) })
	in, found, err := provider.OneNamed(list, func(in ociapi.Instance) string { return in.ID }, "instances", node.Name, ProviderIDPrefix)
	if !found {
		return machine{}, false, err
	}
	m, err := c.withAddresses(ctx, in)
	return m, err == nil, err
}

// nameKeys are the keys a Node without a providerID is looked up by, as the
// peer matches them: the instance's displayName, an address when the Node
// is named by one (IPv6 with dashes for colons), the hostname label the
// Node's name starts with.
func nameKeys(name string) []string {
	keys := []string{"name/" + strings.ToLower(name)}
	if ip, err := netip.ParseAddr(strings.ReplaceAll(name, "-", ":")); err == nil {
		keys = append(keys, "ip/"+ip.String())
	} else if ip, err := netip.ParseAddr(name); err == nil {
		keys = append(keys, "ip/"+ip.String())
	}
	host, _, _ := strings.Cut(name, ".")
	return append(keys, "host/"+strings.ToLower(host))
}

// InstanceExists is false only when OCI shows the instance is gone: it is
// TERMINATING or TERMINATED, or a lookup answers 404 and a listing of its
// compartment (known from the Node's annotation or from an earlier listing)
// does not hold it. OCI answers 404 to a missing policy too (peer issue
// #434), so a 404 alone, a 401, a 403, a 5xx or a timeout keeps the Node.
func (c *Cloud) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	id, err := ParseProviderID(node.Spec.ProviderID)
	if err != nil {
		return false, err
	}
	if id == "" {
		m, found, err := c.find(ctx, node, c.lifecycleMaxAge())
		if err != nil || !found {
			return false, errors.Join(err, fmt.Errorf("node %s has no providerID and matches no instance: it is kept (set its providerID to delete it when its instance is gone)", node.Name))
		}
		id = m.ID
	}
	if m, found, err := c.machines.GetWithin(ctx, "id/"+id, c.lifecycleMaxAge()); err == nil && found && !slices.Contains(goneStates, m.LifecycleState) {
		return true, nil
	}
	// What the listings suggest, a direct lookup decides.
	in, err := c.api.Instance(ctx, id)
	switch {
	case err == nil:
		if slices.Contains(goneStates, in.LifecycleState) {
			klog.FromContext(ctx).Info("Instance of Node is gone", "node", klog.KObj(node), "instance", id, "state", in.LifecycleState)
			return false, nil
		}
		return true, nil
	case !errors.Is(err, outcome.ErrNotFound):
		return false, fmt.Errorf("looking up instance %s: %w", id, err)
	}
	c.mu.Lock()
	at, confirmed := c.confirmedGone[id]
	c.mu.Unlock()
	if confirmed && time.Since(at) < confirmedGoneFor {
		return false, nil
	}
	return c.confirmGone(ctx, node, id)
}

// confirmGone decides a 404 for instance id: gone when a listing of its
// compartment does not hold it.
func (c *Cloud) confirmGone(ctx context.Context, node *v1.Node, id string) (bool, error) {
	comp := node.Annotations[CompartmentAnnotation]
	if comp == "" {
		c.mu.Lock()
		comp = c.compartmentOf[id]
		c.mu.Unlock()
	}
	if comp == "" {
		return false, outcome.Classify(outcome.ErrNotFound, fmt.Errorf("instance %s answers 404 NotAuthorizedOrNotFound and its compartment is unknown (no %s annotation on Node %s, not in compartment %s): the Node is kept, as the answer may be a missing policy",
			id, CompartmentAnnotation, node.Name, c.cfg.CompartmentID))
	}
	var listed []ociapi.Instance
	if comp == c.cfg.CompartmentID {
		m, found, err := c.machines.GetWithin(ctx, "id/"+id, 0)
		if err != nil {
			return false, fmt.Errorf("instance %s answers 404; listing compartment %s to confirm: %w", id, comp, err)
		}
		if found {
			listed = []ociapi.Instance{m.Instance}
		}
	} else {
		all, err := c.api.Instances(ctx, ociapi.InCompartment(comp))
		if err != nil {
			return false, fmt.Errorf("instance %s answers 404; listing compartment %s to confirm: %w", id, comp, err)
		}
		listed = slices.DeleteFunc(all, func(in ociapi.Instance) bool { return in.ID != id })
	}
	if len(listed) > 0 && !slices.Contains(goneStates, listed[0].LifecycleState) {
		return true, fmt.Errorf("instance %s answers 404 but is listed in compartment %s (%s): a policy lets the CCM list instances but not read them; the Node is kept",
			id, comp, listed[0].LifecycleState)
	}
	klog.FromContext(ctx).Info("Instance of Node is gone", "node", klog.KObj(node), "instance", id, "compartment", comp)
	c.mu.Lock()
	delete(c.compartmentOf, id)
	now := time.Now()
	for old, at := range c.confirmedGone {
		if now.Sub(at) > confirmedGoneFor {
			delete(c.confirmedGone, old)
		}
	}
	c.confirmedGone[id] = now
	c.mu.Unlock()
	return false, nil
}

// confirmedGoneFor is how long an instance confirmed gone stays so without
// asking OCI again (its Node is deleted within seconds of the answer).
const confirmedGoneFor = 10 * time.Minute

// InstanceShutdown is true for a STOPPING or STOPPED instance.
func (c *Cloud) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	m, found, err := c.find(ctx, node, c.lifecycleMaxAge())
	return provider.InstanceShutdown(m, found, err, func(m machine) bool { return slices.Contains(shutdownStates, m.LifecycleState) })
}

// InstanceMetadata is the instance's providerID, shape, availability domain,
// region, fault domain and the addresses of its primary VNIC. A Node that
// matches no instance, or several, gets a Warning Event.
func (c *Cloud) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	m, found, err := c.find(ctx, node, snapshot.MaxAge)
	if err := c.Looked(ctx, node, "instance", found && !slices.Contains(goneStates, m.LifecycleState), err,
		"by displayName, address or hostname label in compartment "+c.cfg.CompartmentID); err != nil {
		return nil, err
	}
	return metadataOf(m, node), nil
}

// metadataOf is what the node controller is told of node's instance m.
func metadataOf(m machine, node *v1.Node) *cloudprovider.InstanceMetadata {
	md := &cloudprovider.InstanceMetadata{
		ProviderID:    ProviderIDPrefix + m.ID,
		InstanceType:  m.Shape,
		Zone:          zoneOf(m.AvailabilityDomain),
		Region:        m.Region,
		NodeAddresses: addresses(m, node.Labels[IPv6FamilyLabel] != ""),
	}
	if m.FaultDomain != "" {
		md.AdditionalLabels = map[string]string{FaultDomainLabel: m.FaultDomain}
	}
	return md
}

// zoneOf is an availability domain's name without its tenancy prefix
// ("Uocm:PHX-AD-1" → "PHX-AD-1"), as the peer labels zones.
func zoneOf(ad string) string {
	_, zone, found := strings.Cut(ad, ":")
	if !found {
		return ad
	}
	return zone
}

// IPv6FamilyLabel on a Node asks for its IPv6 addresses too (the peer's
// label, set on the Nodes of dual-stack and IPv6 clusters).
const IPv6FamilyLabel = "oci.oraclecloud.com/ip-family-ipv6"

// addresses are the primary VNIC's private (InternalIP) and public
// (ExternalIP) addresses, and with ipv6 its IPv6 ones (InternalIP when
// unique local, else ExternalIP), as the peer gives them.
func addresses(m machine, ipv6 bool) []v1.NodeAddress {
	var out []v1.NodeAddress
	if m.PrivateIP != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: m.PrivateIP})
	}
	if m.PublicIP != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeExternalIP, Address: m.PublicIP})
	}
	if !ipv6 {
		return out
	}
	for _, a := range m.IPv6 {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			continue
		}
		t := v1.NodeExternalIP
		if ip.IsPrivate() {
			t = v1.NodeInternalIP
		}
		out = append(out, v1.NodeAddress{Type: t, Address: ip.String()})
	}
	return out
}

// lifecycleMaxAge is the config's lifecycleMaxAge (default 5m).
func (c *Cloud) lifecycleMaxAge() time.Duration {
	return snapshot.LifecycleAge(c.cfg.LifecycleMaxAge.Duration)
}
