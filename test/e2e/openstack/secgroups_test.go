package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/test/framework"
)

// groupOf is the Service's security group, found by the CCM's tag; nil when
// there is none.
func groupOf(t *testing.T, network *gophercloud.ServiceClient, uid string) *groups.SecGroup {
	t.Helper()
	pages, err := groups.List(network, groups.ListOpts{Tags: "overcast-service-uid=" + uid}).AllPages(context.Background())
	require.NoError(t, err)
	gs, err := groups.ExtractGroups(pages)
	require.NoError(t, err)
	require.LessOrEqual(t, len(gs), 1)
	if len(gs) == 0 {
		return nil
	}
	return &gs[0]
}

// ingressOf is a group's ingress rules, "proto port from prefix", sorted.
func ingressOf(g *groups.SecGroup) []string {
	var out []string
	for _, r := range g.Rules {
		if r.Direction == "ingress" {
			out = append(out, fmt.Sprintf("%s %d from %s", r.Protocol, r.PortRangeMin, r.RemoteIPPrefix))
		}
	}
	sort.Strings(out)
	return out
}

// groupsOnServer is the security groups of the server's port.
func groupsOnServer(t *testing.T, network *gophercloud.ServiceClient, serverID string) []string {
	t.Helper()
	pages, err := ports.List(network, ports.ListOpts{DeviceID: serverID}).AllPages(context.Background())
	require.NoError(t, err)
	ps, err := ports.ExtractPorts(pages)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	return ps[0].SecurityGroups
}

// TestSecurityGroupsFollowTheServiceAndItsNodes: with manage-security-groups,
// the rules and port attachments Neutron lists follow the Service through
// create, a port change, a source range change, Nodes joining and leaving,
// and delete, which leaves nothing.
func TestSecurityGroupsFollowTheServiceAndItsNodes(t *testing.T) {
	network := networkClient(t)
	a, b := createServer(t, "os-sg-a-"+suffix()), createServer(t, "os-sg-b-"+suffix())
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF") + "\n[LoadBalancer]\nmanage-security-groups = true\n")
	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle", "service"}
	env.StartCCM(t, opts)
	env.NewKubelet(t, a.Name, a.fixedIP())
	kb := env.NewKubelet(t, b.Name, b.fixedIP())
	waitInitialised(t, a.Name)
	waitInitialised(t, b.Name)
	ownA := groupsOnServer(t, network, a.ID)

	ns := lbNamespace(t)
	svc := createService(t, ns, "web", []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}}, nil)
	waitIngress(t, ns, "web")
	cidr := subnetCIDROf(t, network, a.fixedIP())
	rules := func(svc *v1.Service) []string { return nodePortRules(svc, cidr) }
	var g *groups.SecGroup
	until(t, "the group, its rules and its ports", func() error {
		if g = groupOf(t, network, string(svc.UID)); g == nil {
			return fmt.Errorf("no group yet")
		}
		if got := ingressOf(g); !slices.Equal(got, rules(svc)) {
			return fmt.Errorf("rules %v", got)
		}
		for _, s := range []novaServer{a, b} {
			if !slices.Contains(groupsOnServer(t, network, s.ID), g.ID) {
				return fmt.Errorf("not on %s's port yet", s.Name)
			}
		}
		return nil
	})

	// A port added, and source ranges (the listener enforces them with the
	// amphora provider: the rules stay from the member subnet).
	svc, err := env.Client.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53})
	svc.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	svc, err = env.Client.CoreV1().Services(ns).Update(t.Context(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	until(t, "a rule for the new port", func() error {
		if got := ingressOf(groupOf(t, network, string(svc.UID))); !slices.Equal(got, rules(svc)) {
			return fmt.Errorf("rules %v, want %v", got, rules(svc))
		}
		return nil
	})

	// A Node joins, one leaves.
	c := createServer(t, "os-sg-c-"+suffix())
	env.NewKubelet(t, c.Name, c.fixedIP())
	waitInitialised(t, c.Name)
	until(t, "on the new Node's port", func() error {
		if !slices.Contains(groupsOnServer(t, network, c.ID), g.ID) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	require.NoError(t, kb.Remove(t.Context()))
	until(t, "off the port of the Node that left", func() error {
		if slices.Contains(groupsOnServer(t, network, b.ID), g.ID) {
			return fmt.Errorf("still there")
		}
		return nil
	})

	deleteSvcAndWait(t, ns, "web")
	require.Nil(t, groupOf(t, network, string(svc.UID)), "the group went with the Service")
	for _, s := range []novaServer{a, b, c} {
		require.NotContains(t, groupsOnServer(t, network, s.ID), g.ID)
	}
	require.ElementsMatch(t, ownA, groupsOnServer(t, network, a.ID), "the Node's own groups are as they were")
}

// nodePortRules are the ingress rules the Service's node ports need from
// cidr, sorted, as ingressOf writes them.
func nodePortRules(svc *v1.Service, cidr string) []string {
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("%s %d from %s", map[v1.Protocol]string{v1.ProtocolTCP: "tcp", v1.ProtocolUDP: "udp"}[p.Protocol], p.NodePort, cidr))
	}
	sort.Strings(out)
	return out
}

// subnetCIDROf is the CIDR of the tenant network's subnet that holds ip.
func subnetCIDROf(t *testing.T, network *gophercloud.ServiceClient, ip string) string {
	t.Helper()
	pages, err := subnets.List(network, subnets.ListOpts{NetworkID: osEnv["OVERCAST_OS_NETWORK_ID"]}).AllPages(context.Background())
	require.NoError(t, err)
	sns, err := subnets.ExtractSubnets(pages)
	require.NoError(t, err)
	for _, sn := range sns {
		if netip.MustParsePrefix(sn.CIDR).Contains(netip.MustParseAddr(ip)) {
			return sn.CIDR
		}
	}
	t.Fatalf("no subnet holds %s", ip)
	return ""
}

// TestTwoClustersWithSecurityGroupsOnOneNetwork: two clusters of the same
// name, each with its own control plane, overcast-ccm and Node, on one
// network, both managing security groups. Each Service's group is tagged with
// its own cluster and sits on its own Node's port only; deleting the second
// cluster's Service takes its group away and leaves the first's as it was.
func TestTwoClustersWithSecurityGroupsOnOneNetwork(t *testing.T) {
	network := networkClient(t)
	other, err := framework.Start()
	require.NoError(t, err)
	t.Cleanup(other.Stop)
	a, b := createServer(t, "os-sg2-a-"+suffix()), createServer(t, "os-sg2-b-"+suffix())
	opts := ccmOptions(cloudConf(t, "OVERCAST_OS_CLOUD_CONF") + "\n[LoadBalancer]\nmanage-security-groups = true\n")
	opts.Controllers = []string{"cloud-node", "service"}
	env.StartCCM(t, opts)
	other.StartCCMProcess(t, "other-cluster", opts)
	env.NewKubelet(t, a.Name, a.fixedIP())
	other.NewKubelet(t, b.Name, b.fixedIP())

	ns := "os-sg2-" + suffix()
	twin := twins(t, ns, env, other)
	uids := map[*framework.Env]string{env: string(twin[0]), other: string(twin[1])}
	groupOn := func(e *framework.Env, server novaServer) error {
		g := groupOf(t, network, uids[e])
		if g == nil {
			return fmt.Errorf("no group yet")
		}
		if !slices.Contains(groupsOnServer(t, network, server.ID), g.ID) {
			return fmt.Errorf("group %s not on %s yet", g.ID, server.Name)
		}
		return nil
	}
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error { return groupOn(env, a) }))
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error { return groupOn(other, b) }))
	mine, theirs := groupOf(t, network, uids[env]), groupOf(t, network, uids[other])
	require.NotEqual(t, mine.ID, theirs.ID)
	require.NotContains(t, groupsOnServer(t, network, a.ID), theirs.ID, "the other cluster's group is not on this cluster's Node")
	require.NotContains(t, groupsOnServer(t, network, b.ID), mine.ID)
	var clusterTags []string
	for _, g := range []*groups.SecGroup{mine, theirs} {
		for _, tag := range g.Tags {
			if strings.HasPrefix(tag, "overcast-cluster-uid=") {
				clusterTags = append(clusterTags, tag)
			}
		}
	}
	require.Len(t, clusterTags, 2)
	require.NotEqual(t, clusterTags[0], clusterTags[1], "each group carries its own cluster's tag")

	require.NoError(t, other.Client.CoreV1().Services(ns).Delete(t.Context(), "twin", metav1.DeleteOptions{}))
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error {
		if groupOf(t, network, uids[other]) != nil {
			return fmt.Errorf("the second cluster's group is still there")
		}
		return nil
	}))
	still := groupOf(t, network, uids[env])
	require.NotNil(t, still, "the first cluster's group stays")
	require.Equal(t, ingressOf(mine), ingressOf(still))
	require.Contains(t, groupsOnServer(t, network, a.ID), still.ID)
	deleteSvcAndWait(t, ns, "twin")
	require.Nil(t, groupOf(t, network, uids[env]))
}
