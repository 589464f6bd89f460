package testutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric returns the value of the counter or gauge called name in reg
// whose labels are labels (name, value, name, value…), or 0 when no such
// series exists yet.
func Metric(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel())*2 != len(labels) {
				continue
			}
			for i, l := range m.GetLabel() {
				if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
					continue series
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}
