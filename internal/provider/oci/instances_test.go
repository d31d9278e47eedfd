package oci

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/emulator/oci/ocitest"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// cloudOn is the OCI cloud built from conf as overcast-ccm builds it.
func cloudOn(t *testing.T, conf string) *Cloud {
	t.Helper()
	cfg, err := Read(strings.NewReader(conf))
	require.NoError(t, err)
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

// unlimited turns a cloud config's client-side rate limit off: a test's
// bursts wait for nothing.
const unlimited = "rateLimiter:\n  disableRateLimiter: true\n"

// clusterCloud is the cloud of cluster uid on the emulator, unlimited.
func clusterCloud(t *testing.T, e *emulator.Emulator, uid string) *Cloud {
	t.Helper()
	c := cloudOn(t, e.CloudConfig()+unlimited)
	c.SetClusterUID(uid)
	return c
}

// machineNode is a Node on a new instance of the emulator, by its
// providerID, with its internal address.
func machineNode(e *emulator.Emulator, name string) *v1.Node {
	id, ip := e.AddMachine(name)
	return nodeAt(name, "oci://"+id, ip)
}

// nodeAt is a Node with internal address ip (providerID "": one the CCM
// finds by its name).
func nodeAt(name, providerID, ip string) *v1.Node {
	n := nodeNamed(name, providerID)
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}
	return n
}

func nodeNamed(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func TestNodesAreDescribedAsThePeerDescribesThem(t *testing.T) {
	e := startEmulator(t)
	c := cloudOn(t, e.CloudConfig())
	ctx := t.Context()
	id, ip := e.AddMachine("node-a")
	byName, err := c.InstanceMetadata(ctx, nodeNamed("node-a", ""))
	require.NoError(t, err)
	byID, err := c.InstanceMetadata(ctx, nodeNamed("whatever", id)) // the peer's bare-OCID form
	require.NoError(t, err)
	assert.Equal(t, byName, byID)
	assert.Equal(t, "oci://"+id, byName.ProviderID)
	assert.Equal(t, "VM.Standard.E4.Flex", byName.InstanceType)
	assert.Equal(t, "US-ASHBURN-AD-1", byName.Zone)
	assert.Equal(t, "iad", byName.Region, "the region as OCI answers it, as the peer labels it")
	assert.Equal(t, map[string]string{FaultDomainLabel: "FAULT-DOMAIN-1"}, byName.AdditionalLabels)
	require.Len(t, byName.NodeAddresses, 2)
	assert.Equal(t, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip}, byName.NodeAddresses[0])
	assert.Equal(t, v1.NodeExternalIP, byName.NodeAddresses[1].Type)

	// The peer's other ways to a Node's instance: its address, its hostname label.
	for _, name := range []string{ip, "node-a.nodes.cluster.oraclevcn.com"} {
		md, err := c.InstanceMetadata(ctx, nodeNamed(name, ""))
		require.NoError(t, err, name)
		assert.Equal(t, "oci://"+id, md.ProviderID, name)
	}
	_, err = c.InstanceMetadata(ctx, nodeNamed("nobody", ""))
	require.ErrorIs(t, err, cloudprovider.InstanceNotFound)
	_, err = c.InstanceMetadata(ctx, nodeNamed("x", "aws:///i-123"))
	require.ErrorContains(t, err, "not an OCI instance's")
}

func TestNodeLookupsCostTheSameListingsForAnyNumberOfNodes(t *testing.T) {
	calls := func(n int) int {
		e := startEmulator(t)
		c := cloudOn(t, e.CloudConfig())
		var nodes []*v1.Node
		for i := range n {
			name := fmt.Sprintf("node-%d", i)
			id, _ := e.AddMachine(name)
			nodes = append(nodes, nodeNamed(name, "oci://"+id))
		}
		e.ResetCalls()
		for _, node := range nodes {
			md, err := c.InstanceMetadata(t.Context(), node)
			require.NoError(t, err)
			require.Len(t, md.NodeAddresses, 2)
			exists, err := c.InstanceExists(t.Context(), node)
			require.NoError(t, err)
			require.True(t, exists)
		}
		reads, _ := ocitest.ReadsAndWrites(e)
		return reads
	}
	few, many := calls(3), calls(60)
	assert.Equal(t, few, many, "calls for 3 Nodes and for 60")
	// instances, attachments, the subnet's private IPs, 3 ADs' ephemeral and
	// the reserved public IPs; and the subnet itself, once an hour (whether
	// it is dual-stack)
	assert.Equal(t, 8, many)
}

func TestAStoppedInstanceIsShutDownAndOnlyATerminatedOneIsGone(t *testing.T) {
	e := startEmulator(t)
	c := cloudOn(t, e.CloudConfig())
	ctx := t.Context()
	id, _ := e.AddMachine("node-a")
	node := nodeNamed("node-a", "oci://"+id)
	for _, state := range []string{emulator.StateStopping, emulator.StateStopped, emulator.StateRunning, emulator.StateTerminating, emulator.StateTerminated} {
		require.NoError(t, e.SetInstanceState(id, state))
		c.machines.Invalidate()
		down, err := c.InstanceShutdown(ctx, node)
		require.NoError(t, err, state)
		assert.Equal(t, state == emulator.StateStopping || state == emulator.StateStopped, down, state)
		exists, err := c.InstanceExists(ctx, node)
		require.NoError(t, err, state)
		assert.Equal(t, state != emulator.StateTerminating && state != emulator.StateTerminated, exists, state)
	}
}

func TestA404IsGoneOnlyWhenAListingOfTheInstancesCompartmentConfirmsIt(t *testing.T) {
	e := startEmulator(t)
	ctx := t.Context()
	id, _ := e.AddMachine("node-a")
	node := nodeNamed("node-a", "oci://"+id)

	// A CCM that saw the instance listed in its compartment: purged, it is gone.
	c := cloudOn(t, e.CloudConfig())
	_, err := c.InstanceMetadata(ctx, node)
	require.NoError(t, err)
	e.PurgeInstance(id)
	c.machines.Invalidate()
	exists, err := c.InstanceExists(ctx, node)
	require.NoError(t, err)
	assert.False(t, exists)
	// Asked again (the controller's next pass, the deletion guard's survey):
	// still gone, not doubt for want of the compartment now forgotten.
	exists, err = c.InstanceExists(ctx, node)
	require.NoError(t, err)
	assert.False(t, exists)

	// A CCM that never saw it, and no compartment on the Node: a 404 may be
	// a missing policy on another compartment, so the Node is kept.
	fresh := cloudOn(t, e.CloudConfig())
	exists, err = fresh.InstanceExists(ctx, node)
	require.ErrorContains(t, err, "compartment is unknown")
	assert.False(t, exists)
	// With the peer's annotation naming the compartment, the listing decides.
	node.Annotations = map[string]string{CompartmentAnnotation: e.Fixture().CompartmentID}
	exists, err = fresh.InstanceExists(ctx, node)
	require.NoError(t, err)
	assert.False(t, exists)
}

func TestAUserWithoutComputeRightsNeverDeletesANode(t *testing.T) {
	e := startEmulator(t)
	ctx := t.Context()
	id, _ := e.AddMachine("node-a")
	c := cloudOn(t, configOfUser(t, e, "network", "identity")) // no policy for instances
	node := nodeNamed("node-a", "oci://"+id)
	node.Annotations = map[string]string{CompartmentAnnotation: e.Fixture().CompartmentID}
	for range 3 {
		exists, err := c.InstanceExists(ctx, node)
		require.ErrorContains(t, err, "NotAuthorizedOrNotFound")
		assert.False(t, exists)
	}
}

// configOfUser is the emulator's config for a new user with rights.
func configOfUser(t *testing.T, e *emulator.Emulator, rights ...string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	user, fp := e.AddUser(&key.PublicKey, rights...)
	conf := strings.Replace(e.CloudConfig(), e.Fixture().UserID, user, 1)
	conf = strings.Replace(conf, e.Fixture().Fingerprint, fp, 1)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	return strings.Replace(conf, strings.ReplaceAll(strings.TrimSpace(e.Fixture().PrivateKeyPEM), "\n", "\n    "),
		strings.ReplaceAll(strings.TrimSpace(keyPEM), "\n", "\n    "), 1)
}

func TestARotatedAPIKeySignsTheNextCallWithoutARestart(t *testing.T) {
	e := startEmulator(t)
	id, _ := e.AddMachine("node-a")
	path := filepath.Join(t.TempDir(), "cloud-provider.yaml")
	require.NoError(t, os.WriteFile(path, []byte(configOfUser(t, e, "network")), 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	cfg, err := Read(f)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	c, err := New(cfg)
	require.NoError(t, err)
	node := nodeNamed("node-a", "oci://"+id)
	_, err = c.InstanceMetadata(t.Context(), node)
	require.ErrorContains(t, err, "NotAuthorizedOrNotFound", "the first user may not read instances")

	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go provider.WatchConfig(stop, 20*time.Millisecond, ProviderName, c.cfg.path, &c.cfg, c.setKey)
	require.NoError(t, os.WriteFile(path, []byte("not: [valid"), 0o600))
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, os.WriteFile(path, []byte(e.CloudConfig()), 0o600)) // the fixture's user: every right
	require.Eventually(t, func() bool {
		c.machines.Invalidate()
		_, err := c.InstanceMetadata(t.Context(), node)
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "the new key signs the calls")
}

func TestADualStackNodeGetsItsIPv6AddressWhenItsLabelAsksForIt(t *testing.T) {
	e, err := emulator.New(emulator.Options{IPv6CIDR: "fd00:10:0:1::/64"})
	e = coretest.Serve(t, e, err)
	c := cloudOn(t, e.CloudConfig())
	id, ip := e.AddMachine("node-a")
	dual := nodeNamed("node-a", "oci://"+id)
	dual.Labels = map[string]string{IPv6FamilyLabel: "true"}
	want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}
	for _, lookup := range []string{"listings", "a direct read"} {
		if lookup == "a direct read" {
			c = cloudOn(t, e.CloudConfig())
			_, err := c.machines.All(t.Context())
			require.NoError(t, err)
			c.machines.Put(machine{Instance: ociapi.Instance{ID: id}}) // listed without addresses: read directly
			e.ResetCalls()
		}
		md, err := c.InstanceMetadata(t.Context(), dual)
		require.NoError(t, err, lookup)
		require.Len(t, md.NodeAddresses, 3, lookup)
		assert.Equal(t, want[0], md.NodeAddresses[0], lookup)
		assert.Equal(t, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "fd00:10:0:1::10"}, md.NodeAddresses[2], lookup)
		if lookup == "a direct read" {
			var vnicReads int
			for _, call := range e.Calls() {
				if call.Route == "GET /20160918/vnics/{id}" {
					vnicReads += call.Count
				}
			}
			assert.Equal(t, 1, vnicReads, "the VNIC was read directly")
		}
		md, err = c.InstanceMetadata(t.Context(), nodeNamed("node-a", "oci://"+id))
		require.NoError(t, err, lookup)
		assert.Len(t, md.NodeAddresses, 2, "%s: without the label, IPv4 alone, as the peer", lookup)
	}
}
