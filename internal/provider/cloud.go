package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// Cloud is what every Overcast cloud serves: Nodes (InstancesV2) and load
// balancers, beyond the interface itself. A cloud states it once:
// var _ provider.Cloud = (*Cloud)(nil).
type Cloud interface {
	cloudprovider.Interface
	cloudprovider.InstancesV2
	cloudprovider.LoadBalancer
}

// Validator is a cloud's config: Validate names every problem at once.
type Validator interface{ Validate() error }

// Warner is a config with keys that work but should change (deprecated
// ones), each warning naming its replacement.
type Warner interface{ Warnings() []string }

// Prepare is how every cloud's New begins: cfg validated (every problem in
// the error) and, when it is valid, each warning of cfg logged once.
func Prepare(cfg Validator, cloud string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if w, ok := cfg.(Warner); ok {
		for _, s := range w.Warnings() {
			klog.Background().Info("Warning: "+s, "cloud", cloud)
		}
	}
	return nil
}

// InstanceShutdown answers cloudprovider.InstancesV2.InstanceShutdown from a
// cloud's lookup of a Node's machine: an error stays one, a machine not found
// is cloudprovider.InstanceNotFound, else whether its state is shut down.
func InstanceShutdown[M any](m M, found bool, err error, shutdown func(M) bool) (bool, error) {
	if err != nil {
		return false, err
	}
	if !found {
		return false, cloudprovider.InstanceNotFound
	}
	return shutdown(m), nil
}

// AmbiguousError is a Node without a providerID that names several machines.
type AmbiguousError struct{ msg string }

func (e *AmbiguousError) Error() string { return e.msg }

// OneNamed is the machine of list, the machines named name: none is not
// found, several an *AmbiguousError naming them (by id) and the providerID
// (prefix + id) that ends the doubt. kind names the machines ("servers").
func OneNamed[M any](list []M, id func(M) string, kind, name, prefix string) (M, bool, error) {
	var zero M
	switch len(list) {
	case 0:
		return zero, false, nil
	case 1:
		return list[0], true, nil
	}
	ids := make([]string, len(list))
	for i, m := range list {
		ids[i] = id(m)
	}
	return zero, false, &AmbiguousError{fmt.Sprintf("%d %s are named %s (%s): set the Node's providerID to %s<id>",
		len(list), kind, name, strings.Join(ids, ", "), prefix)}
}

// Looked is how every cloud's InstanceMetadata begins, from the lookup of
// the Node's machine (machine names its kind, e.g. "instance"): a failed
// lookup is the error, with a Warning Event (InstanceAmbiguous) when several
// machines match, else reported as the lifecycle's lookups are: one Warning
// an hour for the cloud whatever the number of Nodes (lookups.go); a machine not found
// gets an InstanceNotFound Warning saying how it was looked for after the
// providerID (how) and is cloudprovider.InstanceNotFound.
func (b *Base) Looked(ctx context.Context, node *v1.Node, machine string, found bool, err error, how string) error {
	if err != nil {
		if _, ok := errors.AsType[*AmbiguousError](err); ok {
			b.Events.Eventf(node, v1.EventTypeWarning, "InstanceAmbiguous", "Node %s: %v", node.Name, err)
		} else {
			b.lookupDoubt().failed(ctx, b, node, "InstanceMetadata", err)
		}
		return err
	}
	if !found {
		b.Events.Eventf(node, v1.EventTypeWarning, "InstanceNotFound", "Node %s matches no %s (looked up by providerID %q, else %s)",
			node.Name, machine, node.Spec.ProviderID, how)
		return fmt.Errorf("node %s: %w", node.Name, cloudprovider.InstanceNotFound)
	}
	b.lookupDoubt().answered(ctx, node)
	return nil
}
