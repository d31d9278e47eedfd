package oci

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

func TestNewServicesShareOneListingAndTwoOfANameAreNeverMadeThree(t *testing.T) {
	e := startEmulator(t)
	c := cloudOn(t, e.CloudConfig())
	s := c.lb
	f := e.Fixture()
	lists := func() (n int) {
		for _, c := range e.Calls() {
			if c.Method == http.MethodGet && strings.HasSuffix(c.Route, "/loadBalancers") {
				n += c.Count
			}
		}
		return n
	}
	before := lists()
	for i, uid := range []string{"uid-1", "uid-2", "uid-3"} {
		_, found, err := s.Find(t.Context(), lbSvc("web", uid, int32(30080+i)))
		require.NoError(t, err)
		assert.False(t, found)
	}
	assert.Equal(t, 1, lists()-before, "three new Services looked for with one listing")

	// Two load balancers of one Service's name (made by hand): the next
	// look asks by name and refuses, rather than read the name's absence
	// from the listing, which cannot index it, as leave to make a third.
	svc := lbSvc("web", "uid-twin", 30090)
	for range 2 {
		_, err := c.api.CreateLoadBalancer(t.Context(), ociapi.CreateLoadBalancer{CompartmentID: f.CompartmentID, DisplayName: nameOf(svc, ociapi.KindLB),
			ShapeName: "flexible", ShapeDetails: &ociapi.ShapeDetails{MinimumBandwidthInMbps: 10, MaximumBandwidthInMbps: 10},
			SubnetIDs: []string{f.SubnetID}}, newToken())
		require.NoError(t, err)
	}
	c.lb.listings[ociapi.KindLB].Invalidate()
	_, _, err := s.Find(t.Context(), svc)
	require.Error(t, err)
	_, refused := outcome.AsProblem(err)
	assert.True(t, refused, "%v", err)
	assert.Contains(t, err.Error(), "2 load balancers are named")
}

func startEmulator(t *testing.T) *emulator.Emulator {
	t.Helper()
	e, err := emulator.New(emulator.Options{})
	return coretest.Serve(t, e, err)
}
