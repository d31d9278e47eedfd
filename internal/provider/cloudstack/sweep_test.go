package cloudstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/provider"
)

func leftoverRows(ls []provider.Leftover, who map[string]string) []string {
	var out []string
	for _, l := range ls {
		name := "-"
		if l.Owner != nil {
			var ok bool
			if name, ok = who[string(l.Owner.UID)]; !ok {
				name = "unexpected " + string(l.Owner.UID)
			}
		}
		out = append(out, fmt.Sprintf("%s of %s removable=%v", l.Kind, name, l.Removable))
	}
	slices.Sort(out)
	return out
}

// The sweep lists the address and rules of a gone Service, the rules a gone
// Service put on a live one's address, and an untagged address with no rule
// on the cluster's network (never removable); another cluster's never. The
// gone Services' delete paths remove what is listed removable, and only that.
func TestSweepListsWhatGoneServicesLeftAndRemovesOnlyThat(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1")
	cfg, err := Read(strings.NewReader(f.emu.CloudConfig()))
	require.NoError(t, err)
	other, err := New(cfg, ProviderName)
	require.NoError(t, err)
	other.Cluster.Set("another-cluster")
	other.lb.jobs.took, other.lb.jobs.margin = 0, 0

	port := func(p int32) v1.ServicePort {
		return v1.ServicePort{Name: "p", Protocol: v1.ProtocolTCP, Port: p, NodePort: 30000 + p}
	}
	kept, gone, theirs := service("kept", port(80)), service("gone-svc", port(80)), service("theirs-svc-x", port(80))
	st := f.ensured(kept, nodes)
	f.ensured(gone, nodes)
	sharer := service("sharer-of-kept", port(8080))
	sharer.Spec.LoadBalancerIP = st.Ingress[0].IP
	f.ensured(sharer, nodes)
	for range 30 {
		_, err = other.EnsureLoadBalancer(context.Background(), "kubernetes", theirs, nodes)
		if !errors.As(err, new(*api.RetryError)) {
			break
		}
	}
	require.NoError(t, err)
	untagged := f.associateUntagged()
	rulesBefore, addressesBefore := len(f.rules()), len(f.addresses())

	live := provider.NewLive([]v1.Service{*kept})
	who := map[string]string{string(gone.UID): "gone", strings.TrimPrefix(lbName(sharer), "a"): "sharer"}
	ls, err := f.c.Leftovers(context.Background(), "kubernetes", live)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"load balancer rule of gone removable=true",
		"load balancer rule of sharer removable=true",
		"public address of - removable=false",
		"public address of gone removable=true",
	}, leftoverRows(ls, who))
	assert.Equal(t, rulesBefore, len(f.rules()), "listing changes nothing")
	assert.Equal(t, addressesBefore, len(f.addresses()))

	seen := map[*v1.Service]bool{}
	for _, l := range ls {
		if l.Removable && !seen[l.Owner] {
			seen[l.Owner] = true
			f.remove(l.Owner)
		}
	}
	ls, err = f.c.Leftovers(context.Background(), "kubernetes", live)
	require.NoError(t, err)
	assert.Equal(t, []string{"public address of - removable=false"}, leftoverRows(ls, who))
	var names, ips []string
	for _, r := range f.rules() {
		names = append(names, r.Name)
	}
	for _, a := range f.addresses() {
		ips = append(ips, a.Ipaddress)
	}
	assert.ElementsMatch(t, []string{lbName(kept) + "-tcp-80", lbName(theirs) + "-tcp-80"}, names, "the live Service's rule and the other cluster's stay")
	assert.Contains(t, ips, st.Ingress[0].IP, "the live Service's address stays")
	assert.Contains(t, ips, untagged.Ipaddress, "the untagged address stays")
	assert.Len(t, ips, 3, "and the other cluster's")
}

// The crash case's finding: the address of a gone Service that a live one
// shares (its loadBalancerIP) was listed removable, and a sweep --delete
// would have taken the live Service's address. It is the live one's now:
// not listed, and released with it.
func TestSweepLeavesAGoneServicesAddressThatALiveOneShares(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	nodes := f.nodes("worker-1")
	owner := service("owner", v1.ServicePort{Name: "p", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080})
	st := f.ensured(owner, nodes)
	sharer := service("sharer-of-owner", v1.ServicePort{Name: "p", Protocol: v1.ProtocolTCP, Port: 8080, NodePort: 30081})
	sharer.Spec.LoadBalancerIP = st.Ingress[0].IP
	f.ensured(sharer, nodes)

	ls, err := f.c.Leftovers(context.Background(), "kubernetes", provider.NewLive([]v1.Service{*sharer}))
	require.NoError(t, err)
	who := map[string]string{string(owner.UID): "owner"}
	assert.Equal(t, []string{"load balancer rule of owner removable=true"}, leftoverRows(ls, who),
		"the owner gone (its finalizer removed by hand): its rule is left, its address is the sharer's")

	f.remove(sharer)
	f.remove(owner)
	assert.Empty(t, f.addresses())
}
