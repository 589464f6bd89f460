package app

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// registerRuntimeMetrics registers what every Prometheus exporter shows
// beside its own metrics: the Go runtime's and the process's collectors,
// and kubegcd_build_info, which (as kube components' own build_info does)
// says which build runs, for dashboards to join on and upgrades to be seen.
func registerRuntimeMetrics(reg prometheus.Registerer) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo())
}

func buildInfo() prometheus.Collector {
	revision := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kubegcd_build_info",
		Help: "Always 1; its labels say which kubegcd build runs: version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{
			"version":   version(),
			"revision":  revision,
			"goversion": runtime.Version(),
		},
	}, func() float64 { return 1 })
}
