// Package dashboard makes overcast-ccm's Grafana dashboard from code (the
// panels below, built with grafana-foundation-sdk), so that it is reviewed,
// tested and regenerated like the rest: every query parses with
// Prometheus's parser, and returns data from a real overcast-ccm scraped by
// a real Prometheus (test/e2e). The chart ships it as a ConfigMap Grafana's
// sidecar loads.
package dashboard

//go:generate go run ../../hack/gen-dashboard -out ../../deploy/chart/overcast-ccm/dashboards/overcast-ccm.json

import (
	"encoding/json"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// UID is the dashboard's.
const UID = "overcast-ccm"

// Query is one query of a panel: a PromQL expression over $job (the
// scrape job of the CCM) and $__rate_interval, and the legend of its
// series.
type Query struct{ Expr, Legend string }

// Panel is one panel: a time series unless Stat.
type Panel struct {
	Row, Title, Description, Unit string
	Stat                          bool
	Queries                       []Query
}

// Panels are the dashboard's, by row, in order.
func Panels() []Panel { return panels }

// Queries are every query of every panel.
func Queries() []Query {
	var out []Query
	for _, p := range panels {
		out = append(out, p.Queries...)
	}
	return out
}

var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// JSON is the dashboard as Grafana imports it.
func JSON() ([]byte, error) {
	// The classic dashboard model (schema v1), which Grafana's sidecar and
	// file provisioning load on every version; the SDK prefers v2, which
	// only Grafana 12's new API takes.
	//nolint:staticcheck // schema v1 on purpose, see above
	b := dashboard.NewDashboardBuilder("Overcast CCM").Uid(UID).
		Description("overcast-ccm: its cloud's API, the load balancers of Services, Nodes held by the deletion guard, the leader.").
		Tags([]string{"overcast", "kubernetes", "cloud-controller-manager"}).
		Refresh("30s").Time("now-6h", "now").Timezone("browser").Readonly().
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("job").Label("Job").Datasource(datasource).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(overcast_build_info, job)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Multi(true).IncludeAll(true).AllValue(".*"))
	row := ""
	for _, p := range panels {
		if p.Row != row {
			row = p.Row
			b.WithRow(dashboard.NewRowBuilder(row))
		}
		b.WithPanel(panel(p))
	}
	d, err := b.Build()
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(d, "", "  ")
	return append(out, '\n'), err
}

// panel builds one panel.
func panel(p Panel) cog.Builder[dashboard.Panel] {
	targets := make([]cog.Builder[variants.Dataquery], len(p.Queries))
	for i, q := range p.Queries {
		targets[i] = prometheus.NewDataqueryBuilder().Expr(q.Expr).LegendFormat(q.Legend).RefId(string(rune('A' + i)))
	}
	if p.Stat {
		s := stat.NewPanelBuilder().Title(p.Title).Description(p.Description).Unit(p.Unit).Datasource(datasource).Height(6).Span(6)
		for _, t := range targets {
			s.WithTarget(t)
		}
		return s
	}
	ts := timeseries.NewPanelBuilder().Title(p.Title).Description(p.Description).Unit(p.Unit).Datasource(datasource).Height(8).Span(12)
	for _, t := range targets {
		ts.WithTarget(t)
	}
	return ts
}

// Expand is expr with the dashboard's variables given values, as Grafana
// sends it: job a regular expression, the rate interval a duration.
func Expand(expr, job, rateInterval string) string {
	return strings.NewReplacer("$job", job, "$__rate_interval", rateInterval).Replace(expr)
}
