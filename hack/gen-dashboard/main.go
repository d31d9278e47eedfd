// Command gen-dashboard writes overcast-ccm's Grafana dashboard
// (internal/dashboard) into the chart, which ships it as a ConfigMap.
//
//	go run ./hack/gen-dashboard -out deploy/chart/overcast-ccm/dashboards/overcast-ccm.json
package main

import (
	"errors"
	"flag"
	"io"

	"github.com/overcast-ccm/overcast/hack/internal/gendoc"
	"github.com/overcast-ccm/overcast/internal/dashboard"
)

func main() { gendoc.Main("gen-dashboard", run) }

func run(args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen-dashboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "the dashboard's JSON file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		return errors.New("usage: gen-dashboard -out FILE")
	}
	page, err := dashboard.JSON()
	if err != nil {
		return err
	}
	return gendoc.WriteFile(*out, page)
}
