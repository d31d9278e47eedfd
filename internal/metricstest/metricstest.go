// Package metricstest reads the metrics of the components running in a test's
// process, as a scrape would show them.
package metricstest

import (
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
)

// Counter is the sum of the counter name's series in this process whose
// labels have every value of labels (0 when there are none).
func Counter(t testing.TB, name string, labels map[string]string) (n float64) {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			has := map[string]string{}
			for _, l := range m.GetLabel() {
				has[l.GetName()] = l.GetValue()
			}
			if matches(has, labels) {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

func matches(has, want map[string]string) bool {
	for k, v := range want {
		if has[k] != v {
			return false
		}
	}
	return true
}
