package http

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

var lintSeverities = func() map[api.Severity]bool {
	m := map[api.Severity]bool{}
	for _, s := range api.Severities {
		m[s] = true
	}
	return m
}()

// lint serves GET /lint: ownerReference findings read now, and the counts
// of every rule from the latest count of the whole mirror (s.lintCounts),
// with its time.
func (s *server) lint(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	f := diagnose.LintFilter{
		Namespace: q.str("namespace"),
		Rule:      q.str("rule"),
		Severity:  api.Severity(q.str("severity")),
		Limit:     q.limit(),
	}
	if _, ok := diagnose.RuleByName(f.Rule); f.Rule != "" && !ok {
		var ids []string
		for _, r := range api.LintRules {
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
	counts, err := s.lintCounts.Wait(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	var rep *api.LintReport
	err = s.wideRead(r.Context(), func() (err error) {
		rep, err = diagnose.Lint(r.Context(), s.DB, f, time.Now())
		return err
	})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	rep.Counts, rep.CountsAt = counts.Of(f.Namespace), counts.At.UTC()
	if s.Discovery != nil {
		diagnose.NoteDiscoveryFailures(rep.Items, s.Discovery.DiscoveryFailures())
	}
	// A report of lintMaxLimit findings runs to tens of MB: it is written
	// as it is encoded.
	rest := *rep
	rest.Items = rep.Items[:0:0]
	streamJSONList(s.streamAnswer(w, r, "application/json", "answer"), rest, "items", rep.Items,
		func(f *api.LintFinding) any { return f })
}

// lintCollector exports the number of lint findings by rule, one series per
// rule (0 when none), from the count GET /lint shows: a scrape never
// counts, and a count older than its bound is answered while it is made
// anew.
type lintCollector struct {
	desc   *prometheus.Desc
	counts *LintCounter
}

func newLintCollector(counts *LintCounter) *lintCollector {
	return &lintCollector{
		desc: prometheus.NewDesc("kubegcd_ownerref_findings",
			"ownerReference lint findings in the mirror by rule id (see GET /lint, whose countsAt says when "+
				"they were counted), counted for each scrape where a count takes under 50ms, else in the background "+
				"when a scrape or GET /lint finds the count older than --lint-counts-max-age.",
			[]string{"rule"}, nil),
		counts: counts,
	}
}

func (c *lintCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *lintCollector) Collect(ch chan<- prometheus.Metric) {
	// Only the first count is waited for, within Prometheus's default
	// scrape timeout.
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	counts, err := c.counts.Wait(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	all := counts.Of("")
	for _, r := range api.LintRules {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(all[r.ID]), r.ID)
	}
}
