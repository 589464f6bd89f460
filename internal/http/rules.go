package http

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// Rules is what the server shows of the cleanup rules: the runner's state,
// and a rules file evaluated once. internal/app adapts the runner to it.
type Rules interface {
	// RuleList is the rules loaded, each with its last pass, and why each
	// refused file or rule is refused.
	RuleList() api.RuleList
	// EvaluateRules parses data as a rules file named file, checks each
	// rule and runs each that passes once, storing nothing. It fails only
	// when ctx ends.
	EvaluateRules(ctx context.Context, file string, data []byte) (*RuleEvaluation, error)
}

// RuleEvaluation is what an evaluation found: each rule's rows, as the
// sandbox returns them, and the refusals.
type RuleEvaluation struct {
	Rules  []EvaluatedRule
	Errors []api.RuleError
}

// EvaluatedRule is one rule evaluated once.
type EvaluatedRule struct {
	ID, Hash string
	At       time.Time
	Duration time.Duration
	Matches  []db.RuleMatch
	// Error says why the evaluation failed; "" when it did not.
	Error string
}

// rules serves GET /rules.
func (s *server) rules(w http.ResponseWriter, r *http.Request) {
	if s.Rules == nil {
		writeError(w, r, http.StatusNotFound, "no cleanup rules run here")
		return
	}
	writeJSON(w, r, http.StatusOK, s.Rules.RuleList())
}

// ruleMatches serves GET /rules/{id}/matches.
func (s *server) ruleMatches(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	q := newQuery(r)
	f := db.RuleMatchFilter{RuleID: id, Namespace: q.str("namespace"), Kind: q.token("kind"), Limit: q.limit()}
	if c := q.str("cursor"); c != "" {
		k, err := decodeRuleCursor(c, id)
		if err != nil {
			q.fail("invalid cursor %q: %v", c, err)
		}
		f.After = k
	}
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return
	}
	if s.Rules == nil {
		writeError(w, r, http.StatusNotFound, "no cleanup rules run here")
		return
	}
	list := s.Rules.RuleList()
	i := slices.IndexFunc(list.Items, func(info api.RuleInfo) bool { return info.ID == id })
	if i < 0 {
		ids := make([]string, len(list.Items))
		for j, info := range list.Items {
			ids[j] = info.ID
		}
		writeError(w, r, http.StatusNotFound, fmt.Sprintf("no rule %q is loaded; the rules are: %s", id,
			strings.Join(ids, ", ")))
		return
	}
	matchedAt := list.Items[i].MatchedAt
	var items []db.StoredMatch
	var next *db.RuleMatchKey
	err := s.wideRead(r.Context(), func() (err error) {
		items, next, err = s.DB.ListRuleMatches(r.Context(), f)
		return err
	})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	out := api.RuleMatchList{Items: make([]api.RuleMatch, len(items))}
	for j, m := range items {
		since := m.Since.UTC()
		out.Items[j] = ruleMatchOf(m.Target, db.RuleMatch{UID: m.Target.UID, Reason: m.Reason, Finding: m.Finding})
		out.Items[j].Since, out.Items[j].LastMatched = &since, matchedAt
	}
	if next != nil {
		out.Next = encodeRuleCursor(*next)
	}
	writeJSON(w, r, http.StatusOK, out)
}

// ruleMatchOf is the match m of the object t.
func ruleMatchOf(t api.Target, m db.RuleMatch) api.RuleMatch {
	return api.RuleMatch{UID: t.UID, APIVersion: t.APIVersion, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name,
		Reason: m.Reason, Finding: m.Finding}
}

// A /rules/{id}/matches cursor is the last match's place, as base64url
// JSON: opaque to clients, and refused for another rule.
type ruleCursor struct {
	Rule string `json:"r"`
	UID  string `json:"u"`
}

func encodeRuleCursor(k db.RuleMatchKey) string {
	b, _ := json.Marshal(ruleCursor{Rule: k.RuleID, UID: k.UID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeRuleCursor(s, rule string) (*db.RuleMatchKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not a cursor /rules/{id}/matches gave")
	}
	var c ruleCursor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.Rule == "" || c.UID == "" {
		return nil, errors.New("not a cursor /rules/{id}/matches gave")
	}
	if c.Rule != rule {
		return nil, fmt.Errorf("it continues the matches of rule %q", c.Rule)
	}
	return &db.RuleMatchKey{RuleID: c.Rule, UID: c.UID}, nil
}

// evaluateRules serves POST /rules/evaluate. It runs what the caller
// wrote against the whole mirror, so it needs to know who asks: on a
// server that authenticates no one, only a loopback listener lets it in.
// Its body is never YAML or JSON of a content type a web page can send
// across origins without a CORS preflight, which kubegcd never grants.
func (s *server) evaluateRules(w http.ResponseWriter, r *http.Request) {
	if s.Rules == nil {
		writeError(w, r, http.StatusNotFound, "no cleanup rules run here")
		return
	}
	if s.Tokens == nil && !s.ClientCerts && !s.Loopback {
		writeError(w, r, http.StatusForbidden, "POST /rules/evaluate needs the API's authentication: "+
			"this server has no --auth-token-file or --client-ca-file and does not listen on loopback")
		return
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !slices.Contains(api.RulesMediaTypes, mt) {
		writeError(w, r, http.StatusUnsupportedMediaType, "POST /rules/evaluate takes a rules file as "+
			strings.Join(api.RulesMediaTypes, ", "))
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, api.MaxRulesBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, r, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the rules file is larger than %d bytes, the most POST /rules/evaluate takes", api.MaxRulesBody))
		return
	case err != nil:
		writeError(w, r, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	var ev *RuleEvaluation
	var targets map[string]api.Target
	err = s.wideRead(r.Context(), func() (err error) {
		if ev, err = s.Rules.EvaluateRules(r.Context(), "body", data); err != nil {
			return err
		}
		var uids []string
		for _, e := range ev.Rules {
			for _, m := range e.Matches {
				uids = append(uids, m.UID)
			}
		}
		targets, err = s.DB.TargetsOf(r.Context(), uids)
		return err
	})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, ruleEvaluationOf(ev, targets))
}

// ruleEvaluationOf is the answer of an evaluation: each match named by
// its object, those the mirror no longer holds left out, by namespace,
// kind and name.
func ruleEvaluationOf(ev *RuleEvaluation, targets map[string]api.Target) api.RuleEvaluation {
	out := api.RuleEvaluation{Rules: make([]api.RuleEvaluated, len(ev.Rules)), Errors: ev.Errors}
	if out.Errors == nil {
		out.Errors = []api.RuleError{}
	}
	for i, e := range ev.Rules {
		ms := make([]api.RuleMatch, 0, len(e.Matches))
		for _, m := range e.Matches {
			if t, ok := targets[m.UID]; ok {
				ms = append(ms, ruleMatchOf(t, m))
			}
		}
		slices.SortFunc(ms, func(a, b api.RuleMatch) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name),
				cmp.Compare(a.UID, b.UID))
		})
		out.Rules[i] = api.RuleEvaluated{ID: e.ID, Hash: e.Hash, EvaluatedAt: e.At.UTC(),
			DurationSeconds: e.Duration.Seconds(), Matches: ms, Error: e.Error}
	}
	return out
}

// objectReferences fills what /objects/{uid} shows of the references
// around o and the rules that match it.
func (s *server) objectReferences(ctx context.Context, o *db.Object, out *api.ObjectDetail) error {
	around, err := s.DB.ReferencesAround(ctx, o, objectMaxReferences)
	if err != nil {
		return err
	}
	matches, err := s.DB.MatchesOf(ctx, o.UID)
	if err != nil {
		return err
	}
	out.References = make([]api.ObjectReference, len(around.Refs))
	for i, ref := range around.Refs {
		out.References[i] = api.ObjectReference{Group: ref.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
			Via: ref.Via, Optional: ref.Optional, Prefix: ref.Prefix, Exists: ref.Exists, UID: ref.TargetUID}
	}
	out.ReferencesTruncated = around.RefsTruncated
	out.ReferencedBy = make([]api.ObjectReferrer, len(around.Referrers))
	for i, ref := range around.Referrers {
		t := ref.Referrer
		out.ReferencedBy[i] = api.ObjectReferrer{UID: t.UID, APIVersion: t.APIVersion, Kind: t.Kind,
			Namespace: t.Namespace, Name: t.Name, Via: ref.Via}
	}
	out.ReferencedByTruncated = around.ReferrersTruncated
	if t := around.LastReferenced; t != nil {
		at := t.UTC()
		out.LastReferenced = &at
	}
	out.Rules = make([]api.ObjectRuleMatch, len(matches))
	for i, m := range matches {
		out.Rules[i] = api.ObjectRuleMatch{Rule: m.RuleID, Reason: m.Reason, Finding: m.Finding, Since: m.Since.UTC()}
	}
	return nil
}
