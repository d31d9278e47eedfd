package cloudstack

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// What the peer builds and what we build are judged by what they let in
// together: a rule's cidrlist and its port's firewall rule.
func TestRulesAndOpeningsAreJudgedByWhatTheyLetInTogether(t *testing.T) {
	ranges, annotated, other := []string{"10.0.0.0/8"}, []string{"192.0.2.0/24"}, []string{"198.51.100.0/24"}
	spec := func(rule, sources []string) lbSpec {
		return lbSpec{ports: []portSpec{{proto: "tcp", port: 80, nodePort: 30080}}, ruleCIDRs: rule, sources: sources}
	}
	for _, c := range []struct {
		name                  string
		spec                  lbSpec
		rule, opening         []string
		enforced              bool
		keepRule, keepOpening bool
	}{
		{"ours", spec(ranges, ranges), ranges, ranges, true, true, true},
		{"the peer's source ranges: everyone in the rule", spec(ranges, ranges), everyone, ranges, true, true, true},
		{"the peer's annotation: everyone in the firewall", spec(annotated, annotated), annotated, everyone, true, true, true},
		{"the peer's both", spec(annotated, ranges), annotated, ranges, true, true, true},
		{"everyone in both while ranges are asked: the opening is made anew", spec(ranges, ranges), everyone, everyone, true, true, false},
		{"changed ranges under the peer's rule: only the opening changes", spec(other, other), everyone, ranges, true, true, false},
		{"changed annotation: both change", spec(other, other), annotated, annotated, true, false, false},
		{"no firewall: the cidrlist alone decides", spec(ranges, ranges), everyone, nil, false, false, false},
		{"two different lists asked: judged exactly", spec(annotated, ranges), everyone, ranges, true, false, true},
		{"an ACL list (another item may let everyone in): the cidrlist must hold them", spec(ranges, ranges), everyone, ranges, true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := openings{firewall: !strings.HasPrefix(c.name, "an ACL"), enforced: c.enforced}
			if c.opening != nil {
				op.current = []csapi.Opening{{ID: "fw", Protocol: "tcp", Start: 80, End: 80, CIDRs: c.opening}}
			}
			r := csapi.Rule{Name: "a-tcp-80", Protocol: "tcp", PublicPort: 80, PrivatePort: 30080, CIDRs: c.rule}
			pl := op.plan(c.spec, map[string]csapi.Rule{openingKey("tcp", 80): r})
			if c.opening != nil {
				assert.Equal(t, c.keepOpening, pl.keep["fw"], "opening kept")
			}
			assert.Equal(t, c.keepRule, pl.ruleServes(r, c.spec), "rule kept")
		})
	}
}
