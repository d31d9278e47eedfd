package main

import (
	"encoding/xml"
	"os"
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

func TestWriteReportKeepsTheProseAroundTheMarkers(t *testing.T) {
	path := t.TempDir() + "/benchmarks.md"
	doc := "# Benchmarks\n\nprose\n\n" + beginMark + "\nold table\n" + endMark + "\n\nmore prose\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReport(path, "| new | table |\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# Benchmarks\n\nprose\n\n" + beginMark + "\n| new | table |\n" + endMark + "\n\nmore prose\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if err := os.WriteFile(path, []byte(beginMark+" without an end"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReport(path, "x"); err == nil {
		t.Error("a file with a begin marker and no end was overwritten")
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 0.009: "0.009", 36: "36.0", 1.25: "1.2", 0.4444: "0.444"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %s, want %s", v, got, want)
		}
	}
}
