package http

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/diagnose"
)

const (
	lintDefaultLimit = 1000
	lintMaxLimit     = 100000
)

var lintSeverities = map[string]bool{
	diagnose.SeverityError: true, diagnose.SeverityWarning: true, diagnose.SeverityInfo: true,
}

// lint serves GET /lint: ownerReference findings with complete counts.
func (s *server) lint(w http.ResponseWriter, r *http.Request) {
	q := &query{v: r.URL.Query()}
	q.only("rule", "namespace", "severity", "limit")
	f := diagnose.LintFilter{
		Namespace: q.str("namespace"),
		Rule:      q.str("rule"),
		Severity:  q.str("severity"),
		Limit:     q.limit(lintDefaultLimit, lintMaxLimit),
	}
	if _, ok := diagnose.RuleByName(f.Rule); f.Rule != "" && !ok {
		var ids []string
		for _, r := range diagnose.Rules {
			ids = append(ids, r.ID+" ("+r.Name+")")
		}
		q.fail("invalid rule %q: want one of %s", f.Rule, strings.Join(ids, ", "))
	}
	if f.Severity != "" && !lintSeverities[f.Severity] {
		q.fail("invalid severity %q: want error, warning or info", f.Severity)
	}
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return
	}
	rep, err := diagnose.Lint(r.Context(), s.DB, f, time.Now())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	if s.Discovery != nil {
		diagnose.NoteDiscoveryFailures(rep.Items, s.Discovery.DiscoveryFailures())
	}
	writeJSON(w, r, http.StatusOK, rep)
}

// lintCollector exports the number of lint findings by rule, one series per
// rule (0 when none). A lint reads every ownerReference, so the counts are
// kept for a while rather than recomputed at every scrape.
type lintCollector struct {
	desc   *prometheus.Desc
	counts scrapeCache[map[string]int]
}

func newLintCollector(src diagnose.LintSource, ttl time.Duration, now func() time.Time) *lintCollector {
	return &lintCollector{
		desc: prometheus.NewDesc("kubegcd_ownerref_findings",
			"ownerReference lint findings in the mirror by rule id (see GET /lint), computed at most every 30s.",
			[]string{"rule"}, nil),
		counts: scrapeCache[map[string]int]{ttl: ttl, now: now, load: func(ctx context.Context, now time.Time) (map[string]int, error) {
			return diagnose.LintCounts(ctx, src, now)
		}},
	}
}

func (c *lintCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *lintCollector) Collect(ch chan<- prometheus.Metric) {
	counts, _, err := c.counts.get()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, r := range diagnose.Rules {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[r.ID]), r.ID)
	}
}
