package http

import (
	"context"
	"net/url"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// objectHistoryLimit is how many history entries /objects/{uid} shows, the
// latest; its history link lists them all.
const objectHistoryLimit = 20

// objectExplanation is what /objects/{uid} shows of the other diagnoses,
// so that one answer says why the object is, or is not, gone.
type objectExplanation struct {
	Stuck   *api.StuckItem
	Lint    []api.LintFinding
	History api.RecentHistory
	Links   api.ObjectLinks
}

// explainObject reads what /stuck, /lint and /objects/{uid}/history know of
// o: each an indexed lookup by its UID.
func (s *server) explainObject(ctx context.Context, o *db.Object) (objectExplanation, error) {
	path := "/objects/" + url.PathEscape(o.UID)
	out := objectExplanation{
		Lint: []api.LintFinding{},
		Links: api.ObjectLinks{History: path + "/history", Cascade: path + "/cascade",
			Graph: "/graph?uid=" + url.QueryEscape(o.UID)},
	}
	now := time.Now()
	if o.DeletionTimestamp != nil {
		data, err := s.DB.Stuck(ctx, db.StuckFilter{UID: o.UID, Limit: 1})
		if err != nil {
			return out, err
		}
		opts := diagnose.StuckOptions{Now: now, GC: s.GC}
		if s.Discovery != nil {
			opts.DiscoveryFailures = s.Discovery.DiscoveryFailures()
		}
		// Empty when the object went between the two reads.
		if items := diagnose.Stuck(data, opts); len(items) > 0 {
			out.Stuck = &items[0]
		}
	}
	err := s.DB.LintRefsOf(ctx, o.UID, func(l *db.LintRef) error {
		out.Lint = append(out.Lint, diagnose.CheckRef(l, now)...)
		return nil
	})
	if err != nil {
		return out, err
	}
	if s.Discovery != nil {
		diagnose.NoteDiscoveryFailures(out.Lint, s.Discovery.DiscoveryFailures())
	}
	entries, truncated, err := s.DB.RecentHistoryOf(ctx, o.UID, objectHistoryLimit)
	if err != nil {
		return out, err
	}
	out.History = api.RecentHistory{Items: make([]api.HistoryItem, len(entries)), Truncated: truncated}
	for i, e := range entries {
		out.History.Items[i] = historyItemOf(e)
	}
	return out, nil
}
