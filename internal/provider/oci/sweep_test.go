package oci

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// untilDone runs a step of the cycle again while it says the cloud works.
func untilDone(t *testing.T, step func() error) {
	t.Helper()
	for range 200 {
		err := step()
		if !errors.As(err, new(*api.RetryError)) {
			require.NoError(t, err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("not done after 200 passes")
}

func leftoverRows(ls []provider.Leftover, who map[string]string) []string {
	count := map[string]int{}
	for _, l := range ls {
		name, ok := who[string(l.Owner.UID)]
		if !ok {
			name = "unexpected " + string(l.Owner.UID)
		}
		count[fmt.Sprintf("%s of %s removable=%v", l.Kind, name, l.Removable)]++
	}
	var out []string
	for k, n := range count {
		out = append(out, fmt.Sprintf("%d %s", n, k))
	}
	slices.Sort(out)
	return out
}

// The sweep lists a gone Service's load balancer, network load balancer,
// frontend NSG and security list rules by this cluster's tags and marks;
// another cluster's, in the same compartment and lists, never. The gone
// Services' delete paths remove what is listed, and nothing else.
func TestSweepListsWhatGoneServicesLeftAndRemovesOnlyThat(t *testing.T) {
	e := startEmulator(t)
	c, other := clusterCloud(t, e, "cluster-a"), clusterCloud(t, e, "cluster-b")
	_, ip := e.AddMachine("node-a")
	nodes := []*v1.Node{nodeAt("node-a", "", ip)}

	kept, gone, goneNLB, goneSL, theirs := lbSvc("kept", "uid-kept", 30001), lbSvc("gone", "uid-gone", 30002),
		lbSvc("gone-nlb", "uid-gone-nlb", 30003), lbSvc("gone-sl", "uid-gone-sl", 30005), lbSvc("theirs", "uid-theirs", 30004)
	gone.Annotations = map[string]string{string(annotation.OCISecurityRuleManagementMode): "NSG"}
	goneNLB.Annotations = map[string]string{string(annotation.OCILoadBalancerType): "nlb"}
	ctx := t.Context()
	for _, s := range []struct {
		c   *Cloud
		svc *v1.Service
	}{{c, kept}, {c, gone}, {c, goneNLB}, {c, goneSL}, {other, theirs}} {
		untilDone(t, func() error { _, err := s.c.EnsureLoadBalancer(ctx, "kubernetes", s.svc, nodes); return err })
	}
	before := e.Objects()

	live := provider.NewLive([]v1.Service{*kept})
	who := map[string]string{"uid-gone": "gone", "uid-gone-nlb": "gone-nlb", "uid-gone-sl": "gone-sl"}
	ls, err := c.Leftovers(ctx, "kubernetes", live)
	require.NoError(t, err)
	rows := leftoverRows(ls, who)
	assert.Contains(t, rows, "1 load balancer of gone removable=true")
	assert.Contains(t, rows, "1 network load balancer of gone-nlb removable=true")
	assert.Contains(t, rows, "1 network security group of gone removable=true")
	assert.Contains(t, rows, "1 load balancer of gone-sl removable=true")
	assert.Contains(t, rows, "5 security list rule of gone-sl removable=true", "3 in, 2 out")
	for _, r := range rows {
		assert.NotContains(t, r, "unexpected", "nothing of the live Service or the other cluster")
	}
	assert.Equal(t, before, e.Objects(), "listing changes nothing")

	seen := map[*v1.Service]bool{}
	for _, l := range ls {
		if l.Removable && !seen[l.Owner] {
			seen[l.Owner] = true
			untilDone(t, func() error { return c.EnsureLoadBalancerDeleted(context.Background(), "kubernetes", l.Owner) })
		}
	}
	ls, err = c.Leftovers(ctx, "kubernetes", live)
	require.NoError(t, err)
	assert.Empty(t, ls, "nothing is left")
	after := e.Objects()
	assert.Equal(t, 2, after["loadBalancer"], "the live Service's and the other cluster's stay")
	ing, eg := e.SecurityListRules(e.Fixture().SecurityListID)
	marks := map[string]int{}
	for _, r := range append(ing, eg...) {
		for _, uid := range []string{"uid-kept", "uid-theirs", "uid-gone-sl"} {
			if strings.Contains(r, "/"+uid+" ") {
				marks[uid]++
			}
		}
	}
	assert.Equal(t, map[string]int{"uid-kept": 5, "uid-theirs": 5}, marks, "the gone Service's rules went, the others' stay")
	assert.Zero(t, after["networkLoadBalancer"])
	assert.Zero(t, after["networkSecurityGroup"])
	all, err := other.Leftovers(ctx, "kubernetes", provider.NewLive(nil))
	require.NoError(t, err)
	assert.Contains(t, leftoverRows(all, map[string]string{"uid-theirs": "theirs"}), "1 load balancer of theirs removable=true",
		"the other cluster's load balancer stays")
	mine, err := c.Leftovers(ctx, "kubernetes", provider.NewLive(nil))
	require.NoError(t, err)
	assert.Contains(t, leftoverRows(mine, map[string]string{"uid-kept": "kept"}), "1 load balancer of kept removable=true",
		"and the live Service's")
}
