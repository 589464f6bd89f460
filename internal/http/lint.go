package http

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/diagnose"
)

const (
	lintDefaultLimit = 1000
	lintMaxLimit     = 100000
	// lintMetricTTL spares the database a full lint at every scrape.
	lintMetricTTL = 30 * time.Second
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
		writeError(w, http.StatusBadRequest, q.err.Error())
		return
	}
	rep, err := diagnose.Lint(r.Context(), s.DB, f, time.Now())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// lintCollector exports the number of lint findings by rule, one series per
// rule (0 when none). A lint reads every ownerReference, so the counts are
// kept for ttl rather than recomputed at every scrape.
type lintCollector struct {
	src  diagnose.LintSource
	ttl  time.Duration
	now  func() time.Time
	desc *prometheus.Desc

	mu     sync.Mutex
	at     time.Time
	counts map[string]int
}

func newLintCollector(src diagnose.LintSource, ttl time.Duration, now func() time.Time) *lintCollector {
	return &lintCollector{
		src: src, ttl: ttl, now: now,
		desc: prometheus.NewDesc("kubegcd_ownerref_findings",
			"ownerReference lint findings in the mirror by rule id (see GET /lint), computed at most every 30s.",
			[]string{"rule"}, nil),
	}
}

func (c *lintCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *lintCollector) Collect(ch chan<- prometheus.Metric) {
	counts, err := c.lintCounts()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, r := range diagnose.Rules {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[r.ID]), r.ID)
	}
}

// lintCounts returns the cached counts, or lints anew once they are older
// than ttl. Concurrent scrapes wait for one lint rather than run several.
func (c *lintCollector) lintCounts() (map[string]int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.counts != nil && now.Sub(c.at) < c.ttl {
		return c.counts, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	counts, err := diagnose.LintCounts(ctx, c.src, now)
	if err != nil {
		return nil, err
	}
	c.counts, c.at = counts, now
	return counts, nil
}
