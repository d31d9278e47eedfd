package dashboard

import (
	"encoding/json"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every query parses with Prometheus's own parser, once Grafana has given
// the variables their values.
func TestEveryQueryParses(t *testing.T) {
	require.NotEmpty(t, Queries())
	for _, q := range Queries() {
		_, err := parser.ParseExpr(Expand(q.Expr, ".*", "5m"))
		assert.NoError(t, err, "%s", q.Expr)
	}
}

// The dashboard has every panel, each with its queries, and the variables
// its queries use.
func TestTheDashboardHasEveryPanel(t *testing.T) {
	data, err := JSON()
	require.NoError(t, err)
	var d struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &d))
	assert.Equal(t, UID, d.UID)
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	assert.ElementsMatch(t, []string{"datasource", "job"}, vars)
	byTitle := map[string]int{}
	for _, p := range d.Panels {
		if p.Type != "row" {
			byTitle[p.Title] = len(p.Targets)
		}
	}
	for _, p := range Panels() {
		assert.Equal(t, len(p.Queries), byTitle[p.Title], "panel %q and its queries", p.Title)
	}
}
