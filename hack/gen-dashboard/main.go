// Command gen-dashboard writes overcast-ccm's Grafana dashboard
// (internal/dashboard) into the chart, which ships it as a ConfigMap.
//
//	go run ./hack/gen-dashboard -out deploy/chart/overcast-ccm/dashboards/overcast-ccm.json
package main

import (
	"github.com/overcast-ccm/overcast/hack/internal/gendoc"
	"github.com/overcast-ccm/overcast/internal/dashboard"
)

func main() {
	gendoc.Main("gen-dashboard", gendoc.Out("gen-dashboard", "the dashboard's JSON file", func(out string) error {
		page, err := dashboard.JSON()
		if err != nil {
			return err
		}
		return gendoc.WriteFile(out, page)
	}))
}
