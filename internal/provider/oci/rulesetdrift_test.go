package oci

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// A rule set's rules (the items the CCM sends, compared whole: OCI adds
// its defaults to an item) changed behind the CCM's back are seen by the
// next drift pass (its key has a digest of them), named by explain, and
// put back by the walk, which leaves nothing drifted.
func TestARuleSetChangedBehindOurBackIsSeenExplainedAndPutBack(t *testing.T) {
	f := newFieldDrift(t)
	before := f.listed(t, "lb")
	name := "allow"
	require.Contains(t, before.RuleSets, name)
	changed := ociapi.RuleSet{Items: []json.RawMessage{json.RawMessage(`{"action":"ADD_HTTP_REQUEST_HEADER","header":"X-A","value":"2"}`)}}
	_, err := f.c.api.UpdateChild(t.Context(), ociapi.KindLB, before.ID, "ruleSets", name, changed)
	require.NoError(t, err)
	why := ""
	for range 100 {
		if why = f.drifted(t, "lb"); why != "" && !lbcycle.IsReverifying(why) {
			break
		}
	}
	require.Contains(t, why, "ruleset/"+name, "(a) the drift check sees the rule set changed")
	x, err := f.c.ExplainService(t.Context(), "kubernetes", f.fresh(t, "lb"), f.nodes)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(x.Drift, func(d provider.Difference) bool {
		return strings.Contains(d.Object, "rule set "+name) && strings.Contains(d.Detail, "its rules differ")
	}), "(b) explain names it: %+v", x.Drift)
	f.ensure(t, "lb")
	require.Empty(t, f.settled(t, "lb"), "(c) drifted after the walk")
	require.Equal(t, asJSONMap(t, before.RuleSets[name]), asJSONMap(t, f.listed(t, "lb").RuleSets[name]), "(c) the walk put it back")
}
