// Package promutil holds what the packages share about Prometheus metrics.
package promutil

import "github.com/prometheus/client_golang/prometheus"

// Register registers every collector with reg; a nil reg (tests, tools)
// registers nothing.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
