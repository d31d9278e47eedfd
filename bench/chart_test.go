package main

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestChartIsWellFormedSVGWithOurPoints(t *testing.T) {
	svg := chart([]*figure{
		{nodes: 500, values: []float64{36, 36, 42}},
		{nodes: 2000, values: []float64{36}},
		{name: "not a steady figure", values: []float64{1}},
	})
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v", err)
			}
			break
		}
	}
	if got := strings.Count(svg, "<circle"); got != 2 {
		t.Errorf("%d points, want 2 (one per N)", got)
	}
	if !strings.Contains(svg, ">36/h<") {
		t.Errorf("the median is not labelled:\n%s", svg)
	}
	if thousands(48000) != "48,000" || thousands(500) != "500" {
		t.Errorf("thousands: %s %s", thousands(48000), thousands(500))
	}
}
