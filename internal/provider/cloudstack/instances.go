package cloudstack

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
	"github.com/overcast-ccm/overcast/internal/providerid"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// VM states (VirtualMachine.State) that say a machine is gone, or shut down.
var (
	goneStates     = []string{"Destroyed", "Expunging"}
	shutdownStates = []string{"Stopped", "Shutdown", "Shutdowned"}
)

// machineKeys: the id, then the name without case (a name two machines share
// is left out of the index, so such a Node takes the direct lookup, which
// names the ambiguity).
func machineKeys(m csapi.Machine) []string {
	return []string{"id/" + m.ID, "name/" + strings.ToLower(m.Name)}
}

// shortName is a Node name as a machine is named: without its domain and case
// (CloudStack machine names are host names, which hold no dot).
func shortName(node string) string {
	name, _, _ := strings.Cut(node, ".")
	return strings.ToLower(name)
}

// find locates the Node's machine: in a listing at most maxAge old, else by a
// lookup of its own (by id, or by name). found is false only when the server
// itself answered that there is no such machine; any failure is an error,
// never "gone".
func (c *Cloud) find(ctx context.Context, node *v1.Node, maxAge time.Duration) (csapi.Machine, bool, error) {
	id, err := providerid.ParseCloudStack(node.Spec.ProviderID)
	if err != nil {
		return csapi.Machine{}, false, err
	}
	key := "name/" + shortName(node.Name)
	if id != "" {
		key = "id/" + id
	}
	m, found, err := c.machines.GetWithin(ctx, key, maxAge)
	if err != nil || found {
		return m, found, err
	}
	if id != "" {
		m, found, err := c.api.Machine(ctx, id)
		if err != nil {
			return csapi.Machine{}, false, fmt.Errorf("looking up virtual machine %s: %w", id, err)
		}
		if found {
			c.machines.Put(m)
		}
		return m, found, nil
	}
	list, err := c.api.MachinesNamed(ctx, shortName(node.Name))
	if err != nil {
		return csapi.Machine{}, false, fmt.Errorf("looking up the virtual machine named %s: %w", shortName(node.Name), err)
	}
	return provider.OneNamed(list, func(m csapi.Machine) string { return m.ID }, "virtual machines", shortName(node.Name), providerid.CloudStackPrefix)
}

// InstanceExists is false only when a lookup answers that the machine is gone
// (no such machine, or Destroyed or Expunging). An error is never taken for
// gone: the Node stays.
func (c *Cloud) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	m, found, err := c.find(ctx, node, c.lifecycleMaxAge())
	if err != nil {
		return false, err
	}
	if found && !oneOf(m.State, goneStates) {
		return true, nil
	}
	// Confirm by id what a listing suggests: only a direct lookup may say gone.
	if found {
		id := m.ID
		if m, found, err = c.api.Machine(ctx, id); err != nil {
			return false, fmt.Errorf("confirming virtual machine %s is gone: %w", id, err)
		}
		if found && !oneOf(m.State, goneStates) {
			c.machines.Put(m)
			return true, nil
		}
	}
	klog.FromContext(ctx).Info("Virtual machine of Node is gone", "node", klog.KObj(node), "providerID", node.Spec.ProviderID, "state", m.State)
	return false, nil
}

// InstanceShutdown is true for a Stopped machine.
func (c *Cloud) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	m, found, err := c.find(ctx, node, c.lifecycleMaxAge())
	return provider.InstanceShutdown(m, found, err, func(m csapi.Machine) bool { return oneOf(m.State, shutdownStates) })
}

// InstanceMetadata is the machine's providerID, service offering, zone,
// region and addresses. A Node that matches no machine, or several, gets a
// Warning Event.
func (c *Cloud) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	m, found, err := c.find(ctx, node, snapshot.MaxAge)
	if err := c.Looked(ctx, node, "virtual machine", found, err, "by the name "+shortName(node.Name)+" among those the CCM's keys see"); err != nil {
		return nil, err
	}
	return c.metadataOf(m), nil
}

// metadataOf is what the node controller is told of machine m.
func (c *Cloud) metadataOf(m csapi.Machine) *cloudprovider.InstanceMetadata {
	return &cloudprovider.InstanceMetadata{
		ProviderID:    providerid.CloudStack(m.ID),
		InstanceType:  labelValue(m.Offering),
		Zone:          m.Zone,
		Region:        c.cfg.RegionOf(m.Zone),
		NodeAddresses: addresses(m),
	}
}

// addresses are the machine's NIC addresses (the default NIC's first), the
// public address of its static NAT, and its name.
func addresses(m csapi.Machine) []v1.NodeAddress {
	var out []v1.NodeAddress
	add := func(t v1.NodeAddressType, a string) {
		if a == "" {
			return
		}
		for _, have := range out {
			if have.Type == t && have.Address == a {
				return
			}
		}
		out = append(out, v1.NodeAddress{Type: t, Address: a})
	}
	for _, first := range []bool{true, false} {
		for _, n := range m.NICs {
			if n.Default == first {
				add(v1.NodeInternalIP, n.IP)
				add(v1.NodeInternalIP, n.IP6)
			}
		}
	}
	add(v1.NodeExternalIP, m.PublicIP)
	add(v1.NodeHostName, m.Name)
	return out
}

var notLabelChars = regexp.MustCompile(`[^-A-Za-z0-9_.]`)

// labelValue is s as a label value (the instance-type label): characters a
// label cannot hold removed, as the peer does, at most 63 characters, ending
// with an alphanumeric.
func labelValue(s string) string {
	s = notLabelChars.ReplaceAllString(s, "")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-_.")
}

// lifecycleMaxAge is [Global] lifecycle-max-age (default 5m).
func (c *Cloud) lifecycleMaxAge() time.Duration {
	return snapshot.LifecycleAge(c.cfg.Global.LifecycleMaxAge.Duration)
}

func oneOf(s string, set []string) bool {
	for _, x := range set {
		if strings.EqualFold(s, x) {
			return true
		}
	}
	return false
}
