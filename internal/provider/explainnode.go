package provider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	nodehelpers "k8s.io/cloud-provider/node/helpers"

	"github.com/overcast-ccm/overcast/internal/deletionguard"
)

// ActionKeep is a Node's difference from what the node controller would
// set at its initialisation that is left as it is (labels are set once).
const ActionKeep = "keep"

// k8sNamespace are labels the node controller never takes from a cloud's
// additional labels (as k8s.io/cloud-provider's node controller).
var k8sNamespace = regexp.MustCompile(`(^|\.)(kubernetes|k8s)\.io/`)

// nodeWants is what k8s.io/cloud-provider's node controller (v0.37) would
// set of md on node, and what of it node lacks: the providerID (only when
// it has none), the addresses (kept in step with the machine: the
// kubelet's hostname when the cloud gives none, the kubelet's --node-ip
// first), and the labels of the type, zone and region (beta and stable)
// and the cloud's others (set when the Node is initialised).
func nodeWants(node *v1.Node, md *cloudprovider.InstanceMetadata) (*NodeWants, []Difference) {
	w := &NodeWants{ProviderID: md.ProviderID, Labels: map[string]string{}}
	diffs := []Difference{}
	switch {
	case node.Spec.ProviderID == "":
		diffs = append(diffs, Difference{Action: ActionCreate, Object: "providerID", Detail: "the Node has none; the node controller sets " + md.ProviderID})
	case node.Spec.ProviderID != md.ProviderID:
		diffs = append(diffs, Difference{Action: ActionKeep, Object: "providerID",
			Detail: fmt.Sprintf("the Node has %s, the machine is %s (a providerID is never changed)", node.Spec.ProviderID, md.ProviderID)})
	}
	addrs, err := wantedAddresses(node, md.NodeAddresses)
	w.Addresses = NodeAddresses(addrs)
	switch {
	case err != nil:
		diffs = append(diffs, Difference{Action: ActionKeep, Object: "addresses", Detail: err.Error()})
	case len(addrs) > 0 && addressesDiffer(node.Status.Addresses, addrs):
		diffs = append(diffs, Difference{Action: ActionChange, Object: "addresses",
			Detail: fmt.Sprintf("the Node has %s, the machine %s", addressList(node.Status.Addresses), addressList(addrs))})
	}
	for _, pair := range [][3]string{
		{md.InstanceType, v1.LabelInstanceType, v1.LabelInstanceTypeStable},
		{md.Zone, v1.LabelFailureDomainBetaZone, v1.LabelTopologyZone},
		{md.Region, v1.LabelFailureDomainBetaRegion, v1.LabelTopologyRegion},
	} {
		if pair[0] != "" {
			w.Labels[pair[1]], w.Labels[pair[2]] = pair[0], pair[0]
		}
	}
	for k, v := range md.AdditionalLabels {
		if !k8sNamespace.MatchString(k) {
			w.Labels[k] = v
		}
	}
	return w, append(diffs, labelDiffs(node, w.Labels)...)
}

// labelDiffs are the labels of want node has otherwise: set when it is
// initialised, else left as they are (those it lacks in one difference).
func labelDiffs(node *v1.Node, want map[string]string) []Difference {
	var diffs []Difference
	var lacking []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		have, ok := node.Labels[k]
		switch {
		case ok && have == want[k]:
		case uninitialised(node):
			diffs = append(diffs, Difference{Action: ActionCreate, Object: "label " + k, Detail: "set to " + want[k] + " when the Node is initialised"})
		case ok:
			diffs = append(diffs, Difference{Action: ActionKeep, Object: "label " + k,
				Detail: fmt.Sprintf("the Node has %s, the machine says %s (labels are set when a Node is initialised)", have, want[k])})
		default:
			lacking = append(lacking, k+"="+want[k])
		}
	}
	if len(lacking) > 0 {
		diffs = append(diffs, Difference{Action: ActionKeep, Object: fmt.Sprintf("%d label(s)", len(lacking)),
			Detail: "the Node lacks " + strings.Join(lacking, ", ") + " (labels are set when a Node is initialised, not after)"})
	}
	return diffs
}

// uninitialised says whether the Node still has the cloud's taint: the node
// controller has not initialised it yet.
func uninitialised(node *v1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
}

// wantedAddresses are the addresses the node controller would write: the
// cloud's, with the Node's hostname when the cloud gives none, filtered by
// the kubelet's --node-ip.
func wantedAddresses(node *v1.Node, cloud []v1.NodeAddress) ([]v1.NodeAddress, error) {
	if len(cloud) == 0 {
		return nil, nil
	}
	addrs := slices.Clone(cloud)
	if !slices.ContainsFunc(addrs, func(a v1.NodeAddress) bool { return a.Type == v1.NodeHostName }) {
		for _, a := range node.Status.Addresses {
			if a.Type == v1.NodeHostName {
				addrs = append(addrs, a)
			}
		}
	}
	if ip, ok := node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr]; ok {
		return nodehelpers.GetNodeAddressesFromNodeIP(ip, addrs)
	}
	return addrs, nil
}

// addressesDiffer is the node controller's test of a change of addresses.
func addressesDiffer(a, b []v1.NodeAddress) bool {
	if len(a) != len(b) {
		return true
	}
	byType := map[v1.NodeAddressType]string{}
	for _, x := range a {
		byType[x.Type] = x.Address
	}
	for _, y := range b {
		if byType[y.Type] != y.Address {
			return true
		}
	}
	return false
}

func addressList(addrs []v1.NodeAddress) string {
	if len(addrs) == 0 {
		return "none"
	}
	out := ""
	for i, a := range addrs {
		if i > 0 {
			out += ", "
		}
		out += string(a.Type) + " " + a.Address
	}
	return out
}

// guardOf is what the deletion guard (guard.go) would answer were the
// lifecycle controller to ask about node now: nothing when its machine
// exists; else whether more of the machines of the Nodes of its scheme are
// gone than o lets go at once (all of them counted, not only up to the
// limit), and whether node is allowed to go anyway. The hold's window is
// the running CCM's: not known here.
func guardOf(ctx context.Context, o deletionguard.Options, node *v1.Node, nodes []*v1.Node,
	exists func(context.Context, *v1.Node) (bool, error)) (Guard, error) {
	var g Guard
	here, err := exists(ctx, node)
	if err != nil {
		return g, fmt.Errorf("asking whether the machine of Node %s exists: %w", node.Name, err)
	}
	if here {
		g.Says = "the machine exists: the Node is not deleted"
		return g, nil
	}
	g.MachineGone = true
	scheme := schemeOf(node.Spec.ProviderID)
	for _, n := range nodes {
		if schemeOf(n.Spec.ProviderID) != scheme {
			continue
		}
		g.Total++
		if n.Name == node.Name {
			g.Gone++
			continue
		}
		if ok, err := exists(ctx, n); err == nil && !ok {
			g.Gone++
		}
	}
	g.Gone, g.Total = max(g.Gone, 1), max(g.Total, 1)
	g.Limit = o.Limit(g.Total)
	g.Allowed = node.Annotations[deletionguard.AllowAnnotation] == "true"
	g.Holds = o.Holds(g.Gone, g.Total) && !g.Allowed
	switch {
	case !o.Holds(g.Gone, g.Total):
		g.Says = fmt.Sprintf("the machine is gone: once the Node is NotReady it is deleted (%d of %d machines gone, the guard holds above %d)", g.Gone, g.Total, g.Limit)
	case g.Allowed:
		g.Says = fmt.Sprintf("the guard holds (%d of %d machines gone, more than %d) but the Node is annotated %s=true: it is deleted once NotReady",
			g.Gone, g.Total, g.Limit, deletionguard.AllowAnnotation)
	default:
		until := "until a person annotates it"
		if o.Window > 0 {
			until = fmt.Sprintf("for %s after the hold began, or until a person annotates it", o.Window)
		}
		g.Says = fmt.Sprintf("the guard holds: %d of %d machines are gone at once, more than %d; the Node is not deleted %s %s=true (Warning %s)",
			g.Gone, g.Total, g.Limit, until, deletionguard.AllowAnnotation, deletionguard.ReasonHeld)
	}
	return g, nil
}
