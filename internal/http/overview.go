package http

import (
	"net/http"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
)

// overviewJSON is what the UI's overview needs beside /status that no other
// endpoint gives cheaply: counts, not rows.
type overviewJSON struct {
	// PendingByController counts /pending's rows of each controller.
	PendingByController map[string]int `json:"pendingByController"`
	Deletions           deletionsJSON  `json:"deletions"`
}

// deletionsJSON is the controllers' deletions over the last hour, per
// minute, and the last day, per hour, oldest bucket first; the newest
// bucket is the current, unfinished one.
type deletionsJSON struct {
	LastHour []deletionBucketJSON `json:"lastHour"`
	LastDay  []deletionBucketJSON `json:"lastDay"`
}

// deletionBucketJSON counts deletions sent to the cluster (applied) and
// decided in dry-run (dryRun) from start on.
type deletionBucketJSON struct {
	Start   time.Time `json:"start"`
	Applied int       `json:"applied"`
	DryRun  int       `json:"dryRun"`
}

// overview serves GET /overview.
func (s *server) overview(w http.ResponseWriter, r *http.Request) {
	pending, err := s.DB.PendingByController(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	// Every controller is listed, so that none with nothing pending looks
	// unknown.
	for c := range knownControllers {
		if _, ok := pending[c]; !ok && c != db.ControllerKubegcd && c != db.ControllerOperator {
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
	writeJSON(w, r, http.StatusOK, overviewJSON{PendingByController: pending, Deletions: deletionsJSON{LastHour: hour, LastDay: day}})
}

// buckets returns n buckets of width d, the last starting at last.
func buckets(last time.Time, d time.Duration, n int) []deletionBucketJSON {
	out := make([]deletionBucketJSON, n)
	for i := range out {
		out[i].Start = last.Add(-time.Duration(n-1-i) * d)
	}
	return out
}

// countIn counts m in the bucket of width d that holds its minute, if any.
func countIn(bs []deletionBucketJSON, m db.DeletionMinute, d time.Duration) {
	i := int(m.Minute.Sub(bs[0].Start) / d)
	if m.Minute.Before(bs[0].Start) || i >= len(bs) {
		return
	}
	bs[i].Applied += m.Applied
	bs[i].DryRun += m.DryRun
}
