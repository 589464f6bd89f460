package http

import (
	"net/http"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// overview serves GET /overview.
func (s *server) overview(w http.ResponseWriter, r *http.Request) {
	pending, err := s.DB.PendingByController(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	// Every controller is listed, so that none with nothing pending looks
	// unknown.
	for _, c := range api.DecidingControllers {
		if _, ok := pending[c]; !ok {
			pending[c] = 0
		}
	}
	now := time.Now().UTC()
	hour := buckets(now.Truncate(time.Minute), time.Minute, 60)
	day := buckets(now.Truncate(time.Hour), time.Hour, 24)
	minutes, err := s.DB.DeletionsPerMinute(r.Context(), day[0].Start)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	for _, m := range minutes {
		countIn(hour, m, time.Minute)
		countIn(day, m, time.Hour)
	}
	writeJSON(w, r, http.StatusOK, overviewOf(pending, hour, day))
}

// overviewOf is /overview's answer: the pending decisions by controller,
// and the deletions counted in the last hour's and the last day's buckets.
func overviewOf(pending map[api.Controller]int, hour, day []api.DeletionBucket) api.Overview {
	return api.Overview{PendingByController: pending, Deletions: api.Deletions{LastHour: hour, LastDay: day}}
}

// buckets returns n buckets of width d, the last starting at last.
func buckets(last time.Time, d time.Duration, n int) []api.DeletionBucket {
	out := make([]api.DeletionBucket, n)
	for i := range out {
		out[i].Start = last.Add(-time.Duration(n-1-i) * d)
	}
	return out
}

// countIn counts m in the bucket of width d that holds its minute, if any.
func countIn(bs []api.DeletionBucket, m db.DeletionMinute, d time.Duration) {
	i := int(m.Minute.Sub(bs[0].Start) / d)
	if m.Minute.Before(bs[0].Start) || i >= len(bs) {
		return
	}
	bs[i].Applied += m.Applied
	bs[i].DryRun += m.DryRun
}
