package cleanup

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/promutil"
)

// metrics are kubegcd_rule_…, by rule id: as many series as rules are
// loaded, and a rule's go when it is no longer loaded.
type metrics struct {
	matches      *prometheus.GaugeVec
	findings     *prometheus.GaugeVec
	passDuration *prometheus.HistogramVec
	errors       *prometheus.CounterVec
	refused      prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promutil.With(reg, "rule")
	return &metrics{
		matches: f.GaugeVec("matches",
			"Objects each cleanup rule matches now, findings left out, as its last pass that succeeded stored them.",
			"rule"),
		findings: f.GaugeVec("findings",
			"Findings each cleanup rule holds now: rows shown with its matches and never acted on, "+
				"such as a TTL that does not parse.", "rule"),
		passDuration: f.HistogramVec("pass_duration_seconds",
			"Time a pass of a cleanup rule takes: its query, and the store of its matches.",
			prometheus.ExponentialBuckets(0.001, 4, 10), "rule"),
		errors: f.CounterVec("errors_total",
			"Passes of a cleanup rule that failed, by reason: time-limit, row-cap, denied, invalid, store, panic or other. "+
				"A failed pass keeps the matches stored before it.", "rule", "reason"),
		refused: f.Gauge("refused",
			"Rule files and rules refused at the last load of --rules-dir, each with its file:line in GET /rules "+
				"and the log; the others run."),
	}
}

// forget drops the series of a rule no longer loaded.
func (m *metrics) forget(id string) {
	m.matches.DeleteLabelValues(id)
	m.findings.DeleteLabelValues(id)
	m.passDuration.DeleteLabelValues(id)
	m.errors.DeletePartialMatch(prometheus.Labels{"rule": id})
}
