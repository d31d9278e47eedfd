package openstack

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// leftoverRows are leftovers as "kind of owner removable=…" rows, each
// owner named by who from its UID (or namespace/name when it has none).
func leftoverRows(ls []provider.Leftover, who map[string]string) []string {
	var out []string
	for _, l := range ls {
		key := string(l.Owner.UID)
		if key == "" {
			key = l.Owner.Namespace + "/" + l.Owner.Name
		}
		name, ok := who[key]
		if !ok {
			name = "unexpected " + key
		}
		out = append(out, fmt.Sprintf("%s of %s removable=%v", l.Kind, name, l.Removable))
	}
	slices.Sort(out)
	return out
}

// The sweep lists what Services gone from the cluster left: a load
// balancer with its security group, floating IP and Barbican certificate, and
// a gone Service's share of a load balancer a live one still uses. What
// another cluster in the project made, and a floating IP of an overcast-ccm
// for a Service no cluster here knows, are never removable. Each gone
// Service's own delete path removes what is listed, and nothing else.
func TestContractSweepListsWhatGoneServicesLeftAndRemovesOnlyThat(t *testing.T) {
	tg := newContractTarget(t)
	c := tg.cloudFrom(t, tg.passwordConf+manageSGs)
	other := tg.cloudFrom(t, tg.passwordConf+manageSGs)
	server := tg.server(t, contractName("sweep-node"))
	nodes := []*v1.Node{contractNode(server.name, "openstack:///"+server.id, server.fixedIP)}
	ctx := t.Context()

	kept := contractService(contractName("kept"), nil)
	gone := tlsService(contractName("gone"), map[string]string{
		string(annotation.OpenStackTLSSecret): "web-tls", string(annotation.OpenStackTLSPorts): "443"})
	theirs := contractService(contractName("theirs"), nil)
	cert, key := selfSigned(t, "gone.example")
	c.SetKube(fake.NewClientset(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: gone.Namespace, Name: "web-tls"}, Type: v1.SecretTypeTLS,
		Data: map[string][]byte{v1.TLSCertKey: cert, v1.TLSPrivateKeyKey: key}}))
	for _, s := range []struct {
		c   *Cloud
		svc *v1.Service
	}{{c, kept}, {c, gone}, {other, theirs}} {
		ensure(t, s.c, s.svc, nodes)
		t.Cleanup(func() { cleanupLB(s.c, s.svc) })
	}
	keptLB, err := c.lb.findLB(ctx, kept)
	require.NoError(t, err)
	require.NotNil(t, keptLB)
	sharer := contractService(contractName("sharer"), map[string]string{string(annotation.OpenStackLoadBalancerID): keptLB.ID})
	sharer.Spec.Ports = []v1.ServicePort{{Name: "alt", Protocol: v1.ProtocolTCP, Port: 8080, NodePort: 30808}}
	ensure(t, c, sharer, nodes)
	t.Cleanup(func() { cleanupLB(c, sharer) })

	strayFIP := strayFloatingIP(t, c)

	live := provider.NewLive([]v1.Service{*kept})
	who := map[string]string{string(gone.UID): "gone", string(sharer.UID): "sharer",
		string(theirs.UID): "theirs", "uid-of-nobody-here": "nobody"}
	ls, err := c.Leftovers(ctx, "contract", live)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"Barbican container of gone removable=true",
		"Barbican secret of gone removable=true",
		"Barbican secret of gone removable=true",
		"floating IP of gone removable=true",
		"floating IP of nobody removable=false",
		"floating IP of theirs removable=false",
		"load balancer of gone removable=true",
		"security group of gone removable=true",
		"security group of sharer removable=true",
		"share of a load balancer of sharer removable=true",
	}, leftoverRows(ls, who))

	sweep(t, c, ls)
	ls, err = c.Leftovers(ctx, "contract", live)
	require.NoError(t, err)
	assert.Equal(t, []string{"floating IP of nobody removable=false", "floating IP of theirs removable=false"}, leftoverRows(ls, who),
		"what no Service of this cluster made is still there")

	keptLB, err = c.lb.findLB(ctx, kept)
	require.NoError(t, err)
	require.NotNil(t, keptLB, "the live Service's load balancer stays")
	assert.Equal(t, []string{"TCP/80", "UDP/53"}, listenersOf(t, tg.octavia(t, c), keptLB.ID), "without the gone sharer's listener")
	assert.NotContains(t, keptLB.Tags, lbName("contract", sharer))
	theirLB, err := other.lb.findLB(ctx, theirs)
	require.NoError(t, err)
	require.NotNil(t, theirLB, "the other cluster's load balancer stays")
	assert.Equal(t, "ACTIVE", theirLB.ProvisioningStatus)
	assert.NotNil(t, sgOf(t, tg, theirs), "and its security group")
	assert.NoError(t, strayFIP(), "the stray floating IP stays")
	liveServicesAreLeftoversToo(t, c, kept, theirs)
}

// strayFloatingIP allocates a floating IP an overcast-ccm made for a Service
// no cluster here knows; the function reads it again.
func strayFloatingIP(t *testing.T, c *Cloud) func() error {
	t.Helper()
	ctx := t.Context()
	network, err := clientOf(c).NetworkClient(ctx)
	require.NoError(t, err)
	ext, err := c.lb.onlyExternalNetwork(ctx)
	require.NoError(t, err)
	stray, err := floatingips.Create(ctx, network, floatingips.CreateOpts{FloatingNetworkID: ext, Description: fipDescription + "uid-of-nobody-here"}).Extract()
	require.NoError(t, err)
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), network, stray.ID).ExtractErr() })
	return func() error {
		_, err := floatingips.Get(ctx, network, stray.ID).Extract()
		return err
	}
}

// sweep runs each gone Service's delete path, as `overcast sweep --delete`
// does.
func sweep(t *testing.T, c *Cloud, ls []provider.Leftover) {
	t.Helper()
	seen := map[*v1.Service]bool{}
	for _, l := range ls {
		if !l.Removable || seen[l.Owner] {
			continue
		}
		seen[l.Owner] = true
		require.NoError(t, poll(3*time.Minute, func() error { return c.EnsureLoadBalancerDeleted(t.Context(), "contract", l.Owner) }), "removing %s", l.Service())
	}
}

// liveServicesAreLeftoversToo: with no live Service at all, this cluster's
// live ones are listed too, and the other cluster's never; a Service made
// again under its name (a new UID, as the chaos suite's churn does) leaves
// its old load balancer a leftover, its name notwithstanding.
func liveServicesAreLeftoversToo(t *testing.T, c *Cloud, kept, theirs *v1.Service) {
	t.Helper()
	ctx := t.Context()
	ls, err := c.Leftovers(ctx, "contract", provider.NewLive(nil))
	require.NoError(t, err)
	for _, l := range ls {
		if l.Owner.UID == theirs.UID {
			assert.False(t, l.Removable, "the other cluster's %s", l.Kind)
		}
	}
	who := map[string]string{string(kept.UID): "kept", string(theirs.UID): "theirs", "uid-of-nobody-here": "nobody"}
	assert.Contains(t, leftoverRows(ls, who), "load balancer of kept removable=true")

	again := kept.DeepCopy()
	again.UID = "uid-of-kept-made-again"
	ls, err = c.Leftovers(ctx, "contract", provider.NewLive([]v1.Service{*again}))
	require.NoError(t, err)
	assert.Contains(t, leftoverRows(ls, who), "load balancer of kept removable=true")
}
