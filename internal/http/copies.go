package http

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// Copies is what the server reads of the deleted objects' copies and of
// the restores made from them; db.Copies reads them.
type Copies interface {
	ListDeletedCopies(ctx context.Context, f db.DeletedCopyFilter) ([]db.DeletedCopy, *db.DeletedCopyKey, error)
	DeletedCopy(ctx context.Context, uid string) (*db.DeletedCopy, error)
	RestoredFrom(ctx context.Context, uid string) (*db.DeletedCopy, error)
	SparedBy(ctx context.Context, uid string) ([]db.Spared, error)
	DeletedCopiesSize(ctx context.Context) (count int, bytes int64, err error)
}

// copiesCollector exports how many copies of deleted objects are kept for
// a restore, their compressed bytes, and the bound on those bytes. A
// scrape reads one row.
type copiesCollector struct {
	store                Copies
	maxBytes             int64
	copies, bytes, limit *prometheus.Desc
}

func newCopiesCollector(store Copies, maxBytes int64) *copiesCollector {
	return &copiesCollector{
		store: store, maxBytes: maxBytes,
		copies: prometheus.NewDesc("kubegcd_deleted_copies",
			"Copies of deleted objects kept for a restore (see GET /deleted-copies).", nil, nil),
		bytes: prometheus.NewDesc("kubegcd_deleted_copies_bytes",
			"Compressed bytes of the copies of deleted objects. A new copy that would pass "+
				"kubegcd_deleted_copies_max_bytes drops the oldest first.", nil, nil),
		limit: prometheus.NewDesc("kubegcd_deleted_copies_max_bytes",
			"The most the copies of deleted objects may take, compressed (--deleted-copies-max-bytes; 0: no bound).",
			nil, nil),
	}
}

func (c *copiesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.copies
	ch <- c.bytes
	ch <- c.limit
}

func (c *copiesCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(c.maxBytes))
	n, bytes, err := c.store.DeletedCopiesSize(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.copies, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.copies, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(bytes))
}

// The restore endpoint's answers besides success; a Restorer wraps one of
// these so that the endpoint picks its status code.
var (
	// ErrNoCopy: no copy of that uid is kept here (404).
	ErrNoCopy = errors.New("no copy")
	// ErrRestoreRefused: the restore is not made, for the reason the error
	// gives (409).
	ErrRestoreRefused = errors.New("restore refused")
)

// Restorer re-creates a deleted object from its copy.
type Restorer interface {
	// Restore re-creates the object deleted with UID uid, for the operator
	// by, and records it. A result with an error is a restore made whose
	// record failed.
	Restore(ctx context.Context, uid, by string, allowEmptySecret bool) (*api.RestoreResult, error)
}

// deletedCopyOf maps a stored copy to the API.
func deletedCopyOf(dc db.DeletedCopy) api.DeletedCopy {
	return api.DeletedCopy{Target: dc.Target, Resource: dc.Resource, Controller: dc.Controller, Rule: dc.RuleID,
		RuleHash: dc.RuleHash, TakenAt: dc.TakenAt.UTC(), Size: dc.Size, SecretDataDropped: dc.SecretDataDropped,
		RestoredUID: dc.RestoredUID, RestoredAt: utcOrNil(dc.RestoredAt), RestoredBy: dc.RestoredBy}
}

func utcOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// deletedCopies serves GET /deleted-copies.
func (s *server) deletedCopies(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	f := db.DeletedCopyFilter{Kind: q.resourceRef("kind"), Namespace: q.str("namespace"), Name: q.str("name"),
		Limit: q.limit()}
	if c := q.str("cursor"); c != "" {
		k, err := decodeCopyCursor(c)
		if err != nil {
			q.fail("invalid cursor %q: %v", c, err)
		}
		f.After = k
	}
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return
	}
	items, next, err := s.DB.ListDeletedCopies(r.Context(), f)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	out := api.DeletedCopyList{Items: make([]api.DeletedCopy, len(items))}
	for i, dc := range items {
		out.Items[i] = deletedCopyOf(dc)
	}
	if next != nil {
		out.Next = encodeCopyCursor(*next)
	}
	writeJSON(w, r, http.StatusOK, out)
}

// deletedCopy serves GET /deleted-copies/{uid}.
func (s *server) deletedCopy(w http.ResponseWriter, r *http.Request) {
	uid := chi.URLParam(r, "uid")
	dc, err := s.DB.DeletedCopy(r.Context(), uid)
	switch {
	case errors.Is(err, db.ErrNotFound):
		writeError(w, r, http.StatusNotFound, fmt.Sprintf("no copy of a deleted object with uid %q is kept here", uid))
		return
	case errors.Is(err, db.ErrCorruptCopy):
		writeError(w, r, http.StatusConflict, err.Error())
		return
	case err != nil:
		s.internalError(w, r, err)
		return
	}
	var obj json.RawMessage = dc.Object
	if !json.Valid(obj) {
		writeError(w, r, http.StatusConflict, fmt.Sprintf("the copy of %s %s is corrupt: not JSON", dc.Target.Kind, uid))
		return
	}
	writeJSON(w, r, http.StatusOK, api.DeletedCopyDetail{Copy: deletedCopyOf(*dc), Object: obj})
}

// restore serves POST /objects/{uid}/restore. It writes to the cluster on
// an operator's behalf, so it needs to know who asks, as POST
// /rules/evaluate does, and takes only a JSON body, as the release does:
// a page the operator visits cannot post one across origins.
func (s *server) restore(w http.ResponseWriter, r *http.Request) {
	if s.Restorer == nil {
		writeError(w, r, http.StatusNotFound, "no restores are made here")
		return
	}
	if s.Tokens == nil && !s.ClientCerts && !s.Loopback {
		writeError(w, r, http.StatusForbidden, "POST /objects/{uid}/restore needs the API's authentication: "+
			"this server has no --auth-token-file or --client-ca-file and does not listen on loopback")
		return
	}
	var req api.RestoreRequest
	if !readJSONBody(w, r, &req, "POST /objects/{uid}/restore", `{} or {"allowEmptySecret": true}`, "") {
		return
	}
	uid := chi.URLParam(r, "uid")
	res, err := s.Restorer.Restore(r.Context(), uid, who(r), req.AllowEmptySecret)
	switch {
	case err == nil:
		writeJSON(w, r, http.StatusCreated, res)
	case res != nil:
		// Made, but not recorded: the object exists, so the answer says so.
		s.Logger.Error("a restore was made but not recorded", "uid", uid, "restored_uid", res.Target.UID, "err", err)
		res.Warning = err.Error()
		writeJSON(w, r, http.StatusCreated, res)
	case errors.Is(err, ErrNoCopy):
		writeError(w, r, http.StatusNotFound, err.Error()+": only the instance that deleted an object keeps its copy")
	case errors.Is(err, ErrRestoreRefused):
		writeError(w, r, http.StatusConflict, err.Error())
	default:
		s.internalError(w, r, err)
	}
}

// who says who asked, for the audit history: the caller's name when it is
// authenticated, the address, and the User-Agent.
func who(r *http.Request) string {
	by := r.RemoteAddr
	if name := Caller(r.Context()); name != "" {
		by = clip(name, maxWhoLen) + " from " + by
	}
	if ua := r.UserAgent(); ua != "" {
		by += " (" + clip(ua, maxWhoLen) + ")"
	}
	return by
}

// restorationOf links a copy and the object restored from it.
func restorationOf(dc *db.DeletedCopy) *api.Restoration {
	if dc == nil || dc.RestoredUID == "" {
		return nil
	}
	return &api.Restoration{DeletedUID: dc.Target.UID, RestoredUID: dc.RestoredUID, DeletedBy: dc.Controller,
		Rule: dc.RuleID, TakenAt: dc.TakenAt.UTC(), RestoredAt: utcOrNil(dc.RestoredAt), RestoredBy: dc.RestoredBy}
}

// restoredAround reads what links uid to a restore: the copy it was
// restored from, and the rules that spare it.
func (s *server) restoredAround(ctx context.Context, uid string) (*api.Restoration, []api.SparedBy, error) {
	from, err := s.DB.RestoredFrom(ctx, uid)
	if err != nil {
		return nil, nil, err
	}
	spared, err := s.DB.SparedBy(ctx, uid)
	if err != nil {
		return nil, nil, err
	}
	var out []api.SparedBy
	for _, sp := range spared {
		out = append(out, api.SparedBy{Rule: sp.RuleID, RuleHash: sp.RuleHash, Since: sp.At.UTC()})
	}
	return restorationOf(from), out, nil
}

// restoredAs is the restore made from the copy of the deleted object uid;
// nil when none was.
func (s *server) restoredAs(ctx context.Context, uid string) (*api.Restoration, error) {
	dc, err := s.DB.DeletedCopy(ctx, uid)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, nil
	case errors.Is(err, db.ErrCorruptCopy):
		return nil, nil // its restore, if any, is not readable; nothing to link
	case err != nil:
		return nil, err
	}
	return restorationOf(dc), nil
}

// A /deleted-copies cursor is the last copy's place, as base64url JSON.
type copyCursor struct {
	TakenAt time.Time `json:"t"`
	UID     string    `json:"u"`
}

func encodeCopyCursor(k db.DeletedCopyKey) string {
	b, _ := json.Marshal(copyCursor{TakenAt: k.TakenAt, UID: k.UID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCopyCursor(s string) (*db.DeletedCopyKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not a cursor /deleted-copies gave")
	}
	var c copyCursor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.TakenAt.IsZero() || c.UID == "" {
		return nil, errors.New("not a cursor /deleted-copies gave")
	}
	return &db.DeletedCopyKey{TakenAt: c.TakenAt, UID: c.UID}, nil
}
