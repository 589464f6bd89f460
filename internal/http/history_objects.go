package http

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// historyAuditLimit bounds the audit rows /objects/{uid}/history shows;
// /audit?uid= pages through all of them.
const historyAuditLimit = 100

// objectHistory serves GET /objects/{uid}/history: the object's lifecycle
// and the decisions about it, also after it is gone.
func (s *server) objectHistory(w http.ResponseWriter, r *http.Request) {
	uid := chi.URLParam(r, "uid")
	entries, err := s.DB.HistoryOf(r.Context(), uid)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	audit, next, err := s.DB.ListAudit(r.Context(), db.AuditFilter{UID: uid, Limit: historyAuditLimit})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	if len(entries) == 0 && len(audit) == 0 {
		writeError(w, r, http.StatusNotFound, fmt.Sprintf("neither history nor audit knows uid %q", uid))
		return
	}
	out := objectHistoryOf(uid, entries, audit, next > 0)
	if out.RestoredFrom, _, err = s.restoredAround(r.Context(), uid); err != nil {
		s.internalError(w, r, err)
		return
	}
	if out.RestoredAs, err = s.restoredAs(r.Context(), uid); err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, out)
}

// objectHistoryOf is the answer of /objects/{uid}/history: the history of
// uid, oldest first, and the audit rows about it, newest first.
func objectHistoryOf(uid string, entries []db.HistoryEntry, audit []db.AuditEntry, auditTruncated bool) api.ObjectHistory {
	out := api.ObjectHistory{Items: make([]api.HistoryItem, len(entries)), Audit: auditEntriesOf(audit), AuditTruncated: auditTruncated}
	for i, e := range entries {
		out.Items[i] = historyItemOf(e)
	}
	if n := len(entries); n > 0 {
		last := entries[n-1]
		out.Target = &api.Target{APIVersion: last.APIVersion, Kind: last.Kind, Namespace: last.Namespace, Name: last.Name, UID: uid}
	}
	return out
}

// historyItemOf is a history row as /objects/{uid} and its history show
// it: lists empty rather than null.
func historyItemOf(e db.HistoryEntry) api.HistoryItem {
	item := api.HistoryItem{Time: e.Time, Event: e.Event, OwnerReferences: objectOwnerRefsOf(e.OwnerReferences), Finalizers: e.Finalizers,
		DeletionTimestamp: e.DeletionTimestamp, Holder: e.Holder, HolderSince: e.HolderSince, LapsedAt: e.LapsedAt,
		PreferredHolder: e.PreferredHolder}
	if item.Finalizers == nil {
		item.Finalizers = []string{}
	}
	return item
}

// graphAt is /graph?uid=…&at=TIME: the graph around the UIDs as history
// shows it at that time.
func (s *server) graphAt(ctx context.Context, f db.GraphFilter, at time.Time) (*db.Graph, error) {
	snap, err := s.DB.HistoryAt(ctx, f.UIDs, at, f.Limit)
	if err != nil {
		return nil, err
	}
	return diagnose.GraphAt(snap), nil
}
