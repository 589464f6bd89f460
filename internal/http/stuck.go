package http

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// Discovery tells which API group/versions failed the last discovery,
// each with its error: a namespace cannot finish Terminating while one of
// its resource types cannot be listed.
type Discovery interface {
	DiscoveryFailures() map[string]string
}

func (s *server) stuck(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	minAge := s.StuckAfter
	if v := q.str("minAge"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			q.fail("invalid minAge %q: want a duration such as 30s, 5m or 1h, or 0 for every deletion", v)
		}
		minAge = d
	}
	f := db.StuckFilter{Namespace: q.str("namespace"), Kind: q.token("kind"), Limit: q.limit()}
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
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
	writeJSON(w, r, http.StatusOK, api.StuckList{Items: diagnose.Stuck(data, opts), Truncated: data.Truncated, MinAge: minAge.String()})
}

// stuckCounts is what one query of the stuck metrics returns.
type stuckCounts struct {
	counts      []db.StuckCount
	terminating int
}

// stuckCollector exports the deletions that take longer than --stuck-after,
// by group and kind, and the namespaces Terminating.
type stuckCollector struct {
	stuck, oldest, namespaces *prometheus.Desc
	// The query reads only objects being deleted, but is kept all the same.
	read scrapeCache[stuckCounts]
}

// stuckCounter is what stuckCollector reads.
type stuckCounter interface {
	StuckCounts(ctx context.Context, requestedBefore time.Time) (counts []db.StuckCount, terminatingNamespaces int, err error)
}

func newStuckCollector(store stuckCounter, after time.Duration) *stuckCollector {
	return &stuckCollector{
		stuck: prometheus.NewDesc("kubegcd_deletions_stuck",
			fmt.Sprintf("Objects whose deletion was requested more than --stuck-after (%s) ago and that still exist, by API group and kind.", after),
			[]string{"group", "kind"}, nil),
		oldest: prometheus.NewDesc("kubegcd_deletion_stuck_oldest_seconds",
			"Seconds since the deletion of the oldest of kubegcd_deletions_stuck was requested, by API group and kind.",
			[]string{"group", "kind"}, nil),
		namespaces: prometheus.NewDesc("kubegcd_namespaces_terminating",
			"Namespaces being deleted (Terminating), however recently.", nil, nil),
		read: scrapeCache[stuckCounts]{ttl: scrapeCacheTTL, now: time.Now, load: func(ctx context.Context, now time.Time) (stuckCounts, error) {
			counts, terminating, err := store.StuckCounts(ctx, now.Add(-after))
			return stuckCounts{counts, terminating}, err
		}},
	}
}

func (c *stuckCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.stuck
	ch <- c.oldest
	ch <- c.namespaces
}

func (c *stuckCollector) Collect(ch chan<- prometheus.Metric) {
	sc, now, err := c.read.get()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.stuck, err)
		return
	}
	for _, k := range sc.counts {
		ch <- prometheus.MustNewConstMetric(c.stuck, prometheus.GaugeValue, float64(k.Count), k.Group, k.Kind)
		// Age from now, not from the read: a cached oldest keeps ageing.
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, now.Sub(k.Oldest).Seconds(), k.Group, k.Kind)
	}
	ch <- prometheus.MustNewConstMetric(c.namespaces, prometheus.GaugeValue, float64(sc.terminating))
}
