package local

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// InstanceExists is false only when the inventory certainly lacks the Node's
// instance or lists it as terminated; then the lifecycle controller deletes a
// NotReady Node. A foreign providerID is an error, never "gone".
func (c *Cloud) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	in, found, err := c.inv.lookup(node)
	if err != nil {
		return false, err
	}
	exists := found && in.State != StateTerminated
	if !exists {
		klog.FromContext(ctx).V(2).Info("Instance of Node is gone from the inventory", "node", klog.KObj(node), "providerID", node.Spec.ProviderID)
	}
	return exists, nil
}

// InstanceShutdown is true for an instance in state shutdown.
func (c *Cloud) InstanceShutdown(_ context.Context, node *v1.Node) (bool, error) {
	in, found, err := c.inv.lookup(node)
	if err != nil {
		return false, err
	}
	if !found {
		return false, cloudprovider.InstanceNotFound
	}
	return in.State == StateShutdown, nil
}

// InstanceMetadata returns the providerID, type, zone, region and addresses of the
// Node's instance. A Node that matches no instance gets a Warning Event and stays
// uninitialised until the inventory lists it.
func (c *Cloud) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	in, found, err := c.inv.lookup(node)
	if err != nil {
		c.event(node, v1.EventTypeWarning, "InstanceLookupFailed", "Cannot look up the instance of Node %s: %v", node.Name, err)
		return nil, err
	}
	if !found || in.State == StateTerminated {
		why := "matches no instance of the local inventory"
		if found {
			why = "belongs to a terminated instance"
		}
		c.event(node, v1.EventTypeWarning, "InstanceNotFound",
			"Node %s %s (looked up by providerID %q, else by name); add it to the inventory or set autoInventory: true", node.Name, why, node.Spec.ProviderID)
		return nil, fmt.Errorf("node %s: %w", node.Name, cloudprovider.InstanceNotFound)
	}
	md := metadataOf(in)
	klog.FromContext(ctx).V(4).Info("Instance metadata", "node", klog.KObj(node), "providerID", md.ProviderID, "type", md.InstanceType, "zone", md.Zone)
	return md, nil
}

// metadataOf is what the node controller is told of instance in.
func metadataOf(in Instance) *cloudprovider.InstanceMetadata {
	md := &cloudprovider.InstanceMetadata{
		ProviderID:   in.ProviderID,
		InstanceType: in.InstanceType,
		Zone:         in.Zone,
		Region:       in.Region,
	}
	for _, a := range in.Addresses {
		md.NodeAddresses = append(md.NodeAddresses, v1.NodeAddress{Type: a.Type, Address: a.Address})
	}
	return md
}
