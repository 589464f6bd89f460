package http

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// pendingOf maps a pending decision to the API, without TimeLeft.
func pendingOf(p db.Pending) api.Pending {
	return api.Pending{Controller: p.Controller, Rule: p.Rule, Action: p.Action, Reason: p.Reason,
		Since: p.Since, NotBefore: p.NotBefore, Target: p.Target}
}

// pendingListOf maps a page of /pending to the API. One that waits (a
// quarantine, a back-off) says until when and how long that is from now.
func pendingListOf(items []db.Pending, next string, now time.Time) api.PendingList {
	out := api.PendingList{Items: make([]api.Pending, len(items)), Next: next}
	for i, p := range items {
		out.Items[i] = pendingItemOf(p, now)
	}
	return out
}

// pendingItemOf maps one decision of /pending to the API.
func pendingItemOf(p db.Pending, now time.Time) api.Pending {
	out := pendingOf(p)
	if p.NotBefore != nil {
		out.TimeLeft = max(p.NotBefore.Sub(now), 0).Round(time.Second).String()
	}
	return out
}

func (s *server) pending(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	f := db.PendingFilter{
		Controller: api.Controller(q.enum("controller")),
		Namespace:  q.str("namespace"),
		Kind:       q.token("kind"),
		Newest:     q.enum("order") == api.PendingNewest,
		Limit:      q.limit(),
	}
	if c := q.str("cursor"); c != "" {
		k, err := decodePendingCursor(c, f.Newest)
		if err != nil {
			q.fail("invalid cursor %q: %v", c, err)
		}
		f.After = k
	}
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return
	}
	var items []db.Pending
	var next *db.PendingKey
	err := s.wideRead(r.Context(), func() (err error) {
		items, next, err = s.DB.ListPending(r.Context(), f)
		return err
	})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	var cursor string
	if next != nil {
		cursor = encodePendingCursor(*next, f.Newest)
	}
	now := time.Now()
	a := s.streamAnswer(w, r, "application/json", "answer")
	streamJSONList(a, pendingListOf(items[:0:0], cursor, now), "items", items,
		func(p *db.Pending) any { return pendingItemOf(*p, now) })
}

// A /pending cursor is the last decision's place and the order it was
// listed in, as base64url JSON: opaque to clients, and a cursor of one
// order given with the other is refused rather than read backwards.
type pendingCursor struct {
	Newest     bool           `json:"n,omitempty"`
	Since      time.Time      `json:"s"`
	Controller api.Controller `json:"c"`
	UID        string         `json:"u"`
	Action     api.Action     `json:"a"`
}

func encodePendingCursor(k db.PendingKey, newest bool) string {
	b, _ := json.Marshal(pendingCursor{Newest: newest, Since: k.Since, Controller: k.Controller, UID: k.UID,
		Action: k.Action})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePendingCursor(s string, newest bool) (*db.PendingKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not a cursor /pending gave")
	}
	var c pendingCursor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.Since.IsZero() || c.Controller == "" || c.UID == "" {
		return nil, errors.New("not a cursor /pending gave")
	}
	if c.Newest != newest {
		return nil, errors.New("it continues the other order")
	}
	return &db.PendingKey{Since: c.Since, Controller: c.Controller, UID: c.UID, Action: c.Action}, nil
}

// auditEntryOf maps an audit row to the API.
// auditListOf maps a page of /audit to the API; next is the id to list
// before, 0 at the end.
func auditListOf(items []db.AuditEntry, next int64) api.AuditList {
	out := api.AuditList{Items: auditEntriesOf(items)}
	if next > 0 {
		out.Next = strconv.FormatInt(next, 10)
	}
	return out
}

func (s *server) audit(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	f := db.AuditFilter{
		Controller: api.Controller(q.enum("controller")),
		Namespace:  q.str("namespace"),
		UID:        q.str("uid"),
		Kind:       q.token("kind"),
		Rule:       q.token("rule"),
		Outcome:    api.Outcome(q.enum("outcome")),
		Since:      q.time("since"),
		Until:      q.time("until"),
		Limit:      q.limit(),
	}
	if c := q.str("cursor"); c != "" {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n < 1 {
			q.fail("invalid cursor %q", c)
		}
		f.Before = n
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		q.fail("until must be after since")
	}
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return
	}
	var items []db.AuditEntry
	var next int64
	err := s.wideRead(r.Context(), func() (err error) {
		items, next, err = s.DB.ListAudit(r.Context(), f)
		return err
	})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	list := auditListOf(items[:0:0], next)
	if list.Gaps, err = s.auditGaps(r.Context()); err != nil {
		s.internalError(w, r, err)
		return
	}
	a := s.streamAnswer(w, r, "application/json", "answer")
	streamJSONList(a, list, "items", items,
		func(e *db.AuditEntry) any { return e.API() })
}
