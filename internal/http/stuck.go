package http

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// Discovery tells which API group/versions failed the last discovery,
// each with its error: a namespace cannot finish Terminating while one of
// its resource types cannot be listed.
type Discovery interface {
	DiscoveryFailures() map[string]string
}

type stuckJSON struct {
	Items []diagnose.StuckItem `json:"items"`
	// Truncated: more deletions matched than ?limit= allowed.
	Truncated bool `json:"truncated"`
}

func (s *server) stuck(w http.ResponseWriter, r *http.Request) {
	q := &query{v: r.URL.Query()}
	q.only("namespace", "kind", "minAge", "limit")
	minAge := s.StuckAfter
	if v := q.str("minAge"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			q.fail("invalid minAge %q: want a duration such as 30s, 5m or 1h, or 0 for every deletion", v)
		}
		minAge = d
	}
	f := db.StuckFilter{Namespace: q.str("namespace"), Kind: q.str("kind"), Limit: q.limit(500, 10000)}
	if q.err != nil {
		writeError(w, http.StatusBadRequest, q.err.Error())
		return
	}
	now := time.Now()
	if minAge > 0 {
		f.RequestedBefore = now.Add(-minAge)
	}
	data, err := s.DB.Stuck(r.Context(), f)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	opts := diagnose.StuckOptions{Now: now, GC: s.GC}
	if s.Discovery != nil {
		opts.DiscoveryFailures = s.Discovery.DiscoveryFailures()
	}
	writeJSON(w, http.StatusOK, stuckJSON{Items: diagnose.Stuck(data, opts), Truncated: data.Truncated})
}

// stuckCacheTTL is how long the stuck metrics' query result serves
// scrapes: the query reads only objects being deleted, but several
// Prometheus servers scraping every few seconds need not run it each time.
const stuckCacheTTL = 30 * time.Second

// stuckCollector exports the deletions that take longer than --stuck-after,
// by group and kind, and the namespaces Terminating.
type stuckCollector struct {
	db    *db.DB
	after time.Duration

	stuck, oldest, namespaces *prometheus.Desc

	mu          sync.Mutex
	readAt      time.Time
	counts      []db.StuckCount
	terminating int
}

func newStuckCollector(store *db.DB, after time.Duration) *stuckCollector {
	return &stuckCollector{
		db: store, after: after,
		stuck: prometheus.NewDesc("kubegcd_deletions_stuck",
			fmt.Sprintf("Objects whose deletion was requested more than --stuck-after (%s) ago and that still exist, by API group and kind.", after),
			[]string{"group", "kind"}, nil),
		oldest: prometheus.NewDesc("kubegcd_deletion_stuck_oldest_seconds",
			"Seconds since the deletion of the oldest of kubegcd_deletions_stuck was requested, by API group and kind.",
			[]string{"group", "kind"}, nil),
		namespaces: prometheus.NewDesc("kubegcd_namespaces_terminating",
			"Namespaces being deleted (Terminating), however recently.", nil, nil),
	}
}

func (c *stuckCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.stuck
	ch <- c.oldest
	ch <- c.namespaces
}

func (c *stuckCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.readAt.IsZero() || now.Sub(c.readAt) >= stuckCacheTTL {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		counts, terminating, err := c.db.StuckCounts(ctx, now.Add(-c.after))
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.stuck, err)
			return
		}
		c.readAt, c.counts, c.terminating = now, counts, terminating
	}
	for _, sc := range c.counts {
		ch <- prometheus.MustNewConstMetric(c.stuck, prometheus.GaugeValue, float64(sc.Count), sc.Group, sc.Kind)
		// Age from now, not from the read: a cached oldest keeps ageing.
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, now.Sub(sc.Oldest).Seconds(), sc.Group, sc.Kind)
	}
	ch <- prometheus.MustNewConstMetric(c.namespaces, prometheus.GaugeValue, float64(c.terminating))
}
