package http

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// knownControllers are the values ?controller= accepts.
var knownControllers = func() map[string]bool {
	m := map[string]bool{api.ControllerKubegcd: true, api.ControllerOperator: true}
	for _, c := range api.Controllers {
		m[c] = true
	}
	return m
}()

// knownOutcomes are the values ?outcome= accepts.
var knownOutcomes = func() map[string]bool {
	m := map[string]bool{}
	for _, o := range api.Outcomes {
		m[o] = true
	}
	return m
}()

// query reads and validates query parameters; the first problem wins.
type query struct {
	v   url.Values
	err error
}

// newQuery parses r's query string. r.URL.Query() drops the pairs it
// cannot parse ("limit=5;drop", "%zz") and keeps the rest, which would
// turn a filter the client sent into none; here they are the request's
// error.
func newQuery(r *http.Request) *query {
	v, err := url.ParseQuery(r.URL.RawQuery)
	q := &query{v: v}
	if err != nil {
		q.fail("malformed query string: %v", err)
	}
	return q
}

func (q *query) fail(format string, args ...any) {
	if q.err == nil {
		q.err = fmt.Errorf(format, args...)
	}
}

// only rejects parameters the endpoint does not know, so a typo is an error
// rather than a silently ignored filter.
func (q *query) only(names ...string) {
	allowed := map[string]bool{}
	for _, n := range names {
		allowed[n] = true
	}
	for k := range q.v {
		if !allowed[k] {
			q.fail("unknown query parameter %q", k)
		}
	}
}

func (q *query) str(name string) string {
	if len(q.v[name]) > 1 {
		q.fail("query parameter %q given more than once", name)
	}
	return q.v.Get(name)
}

func (q *query) oneOf(name string, allowed map[string]bool) string {
	s := q.str(name)
	if s != "" && !allowed[s] {
		q.fail("invalid %s %q", name, s)
	}
	return s
}

// token reads a kind or a rule id: letters, digits, '-' and '.', at most
// 100 characters. Anything else cannot name one, and is an error rather
// than an empty answer.
func (q *query) token(name string) string {
	s := q.str(name)
	if s != "" && !tokenRE.MatchString(s) {
		q.fail("invalid %s %q: want letters, digits, '-' and '.'", name, s)
	}
	return s
}

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,99}$`)

// resourceRef reads a kind as kubectl takes it (a kind, a resource or a
// short name, alone or followed by "." and its group) in token's
// characters; a group is a DNS subdomain of up to 253, so it may be longer
// than a token.
func (q *query) resourceRef(name string) string {
	s := q.str(name)
	if s != "" && !resourceRefRE.MatchString(s) {
		q.fail("invalid %s %q: want a kind, a resource or a short name, alone or followed by . and its group", name, s)
	}
	return s
}

var resourceRefRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,99}(\.[A-Za-z0-9][A-Za-z0-9.-]{0,252})?$`)

// apiVersion reads an apiVersion and returns its group: group/version, or
// v1 alone for the core group, as Kubernetes could serve them (a group is
// a DNS subdomain, a version a DNS label; the core group has only v1).
// Anything else names nothing, and is an error rather than an empty or,
// worse, unfiltered answer.
func (q *query) apiVersion(name string) (group string, ok bool) {
	s := q.str(name)
	if s == "" {
		return "", false
	}
	group, version, grouped := strings.Cut(s, "/")
	if !grouped {
		group, version = "", s
	}
	switch {
	case !grouped && version != "v1":
		q.fail("invalid %s %q: the core group has only v1; want group/version, such as apps/v1, or v1", name, s)
	case grouped && len(validation.IsDNS1123Subdomain(group)) > 0, grouped && len(validation.IsDNS1035Label(version)) > 0:
		q.fail("invalid %s %q: want group/version, such as apps/v1, or v1 for the core group", name, s)
	}
	return group, true
}

func (q *query) limit(def, max int) int {
	s := q.str("limit")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		q.fail("invalid limit %q: want a number from 1 to %d", s, max)
	}
	return n
}

func (q *query) time(name string) time.Time {
	s := q.str(name)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		q.fail("invalid %s %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", name, s)
	}
	return t
}

var pendingOrders = map[string]bool{api.PendingOldest: true, api.PendingNewest: true}

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
		out.Items[i] = pendingOf(p)
		if p.NotBefore != nil {
			out.Items[i].TimeLeft = max(p.NotBefore.Sub(now), 0).Round(time.Second).String()
		}
	}
	return out
}

func (s *server) pending(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	q.only("controller", "namespace", "kind", "order", "limit", "cursor")
	f := db.PendingFilter{
		Controller: q.oneOf("controller", knownControllers),
		Namespace:  q.str("namespace"),
		Kind:       q.token("kind"),
		Newest:     q.oneOf("order", pendingOrders) == api.PendingNewest,
		Limit:      q.limit(1000, 10000),
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
	items, next, err := s.DB.ListPending(r.Context(), f)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	var cursor string
	if next != nil {
		cursor = encodePendingCursor(*next, f.Newest)
	}
	writeJSON(w, r, http.StatusOK, pendingListOf(items, cursor, time.Now()))
}

// A /pending cursor is the last decision's place and the order it was
// listed in, as base64url JSON: opaque to clients, and a cursor of one
// order given with the other is refused rather than read backwards.
type pendingCursor struct {
	Newest     bool      `json:"n,omitempty"`
	Since      time.Time `json:"s"`
	Controller string    `json:"c"`
	UID        string    `json:"u"`
	Action     string    `json:"a"`
}

func encodePendingCursor(k db.PendingKey, newest bool) string {
	b, _ := json.Marshal(pendingCursor{Newest: newest, Since: k.Since, Controller: k.Controller, UID: k.UID, Action: k.Action})
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
func auditEntryOf(e db.AuditEntry) api.AuditEntry {
	return api.AuditEntry{ID: e.ID, Time: e.Time, Instance: e.Instance, Controller: e.Controller, Rule: e.Rule,
		Action: e.Action, Target: e.Target, Facts: e.Facts, Reason: e.Reason, DryRun: e.DryRun, Outcome: e.Outcome, Error: e.Error}
}

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
	q.only("controller", "namespace", "uid", "kind", "rule", "outcome", "since", "until", "limit", "cursor")
	f := db.AuditFilter{
		Controller: q.oneOf("controller", knownControllers),
		Namespace:  q.str("namespace"),
		UID:        q.str("uid"),
		Kind:       q.token("kind"),
		Rule:       q.token("rule"),
		Outcome:    q.oneOf("outcome", knownOutcomes),
		Since:      q.time("since"),
		Until:      q.time("until"),
		Limit:      q.limit(100, 1000),
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
	items, next, err := s.DB.ListAudit(r.Context(), f)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, auditListOf(items, next))
}
