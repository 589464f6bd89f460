package cleanup

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
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
	// Of the rules that delete.
	capped  *prometheus.GaugeVec
	skipped *prometheus.CounterVec
	notices *prometheus.CounterVec
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
			"Passes of a cleanup rule that failed, by reason: time-limit, row-cap, denied, invalid, store, panic or other; "+
				"act when a rule that deletes could not act on every match. A failed pass keeps the matches stored before it.", "rule", "reason"),
		refused: f.Gauge("refused",
			"Rule files and rules refused at the last load of --rules-dir, each with its file:line in GET /rules "+
				"and the log; the others run."),
		capped: f.GaugeVec("capped",
			"1 while the last pass of a cleanup rule that deletes was over its cap (limits.max_count or "+
				"limits.max_percent) and so deleted nothing; 0 otherwise.", "rule"),
		skipped: f.CounterVec("skipped_total",
			"Matches due to be deleted that a cleanup rule left alone for a pass, by reason: changed, referenced, "+
				"excluded, spared or gone.", "rule", "reason"),
		notices: f.CounterVec("notices_total",
			"Notice Events a cleanup rule sent to objects it deletes after notify_before.", "rule"),
	}
}

// observeActed counts what a pass of a rule that deletes did.
func (m *metrics) observeActed(id string, acted *api.RuleActed) {
	for reason, n := range acted.Skipped {
		m.skipped.WithLabelValues(id, reason).Add(float64(n))
	}
	if acted.Notified > 0 {
		m.notices.WithLabelValues(id).Add(float64(acted.Notified))
	}
}

// forget drops the series of a rule no longer loaded.
func (m *metrics) forget(id string) {
	m.matches.DeleteLabelValues(id)
	m.findings.DeleteLabelValues(id)
	m.passDuration.DeleteLabelValues(id)
	m.errors.DeletePartialMatch(prometheus.Labels{"rule": id})
	m.capped.DeleteLabelValues(id)
	m.skipped.DeletePartialMatch(prometheus.Labels{"rule": id})
	m.notices.DeleteLabelValues(id)
}
