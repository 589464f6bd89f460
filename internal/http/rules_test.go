package http

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/rules"
)

var rulesMatchedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testRuleList is what the fake runner of testServer shows: two rules
// loaded, and one refused.
func testRuleList() api.RuleList {
	at := rulesMatchedAt
	return api.RuleList{Dir: "/etc/kubegcd/rules.d", Files: []string{"/etc/kubegcd/rules.d/a.yaml"},
		Items: []api.RuleInfo{
			{ID: "unused-configmaps", BuiltIn: true, Hash: "h1", Action: "report", Interval: "5m0s", Params: map[string]any{},
				MatchedAt: &at, LastPass: &api.RulePass{StartedAt: at, Matches: 2}, Matches: 2},
			{ID: "named-a", File: "/etc/kubegcd/rules.d/a.yaml", Line: 2, Hash: "h2", Action: "report", Interval: "1m0s",
				Params: map[string]any{}},
		},
		Errors: []api.RuleError{{File: "/etc/kubegcd/rules.d/a.yaml", Line: 7, Rule: "bad", Field: "rules[1].select",
			Detail: "not allowed: ATTACH", Message: "/etc/kubegcd/rules.d/a.yaml:7: rules[1].select: not allowed: ATTACH"}}}
}

// sandboxRules is a runner for the handlers' tests: its list is fixed, and
// it evaluates through a real sandbox as the runner does.
type sandboxRules struct {
	list api.RuleList
	eval *rules.Evaluator
}

func (s sandboxRules) RuleList() api.RuleList { return s.list }

func (s sandboxRules) EvaluateRules(ctx context.Context, file string, data []byte) (*RuleEvaluation, error) {
	parsed, errs := rules.Parse(file, data, rules.ParseOptions{})
	out := &RuleEvaluation{}
	refuse := func(e *rules.Error) {
		out.Errors = append(out.Errors, api.RuleError{File: e.File, Line: e.Line, Rule: e.RuleID, Field: e.Field,
			Detail: e.Detail, Message: e.Error()})
	}
	for _, e := range errs {
		refuse(e)
	}
	for _, r := range parsed {
		if s.eval == nil {
			continue
		}
		if e := s.eval.Check(ctx, r); e != nil {
			refuse(e)
			continue
		}
		ms, took, err := s.eval.Evaluate(ctx, r)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e := EvaluatedRule{ID: r.ID, Hash: r.Hash, At: rulesMatchedAt, Duration: took, Matches: ms}
		if err != nil {
			e.Error = err.Error()
		}
		out.Rules = append(out.Rules, e)
	}
	return out, nil
}

// storeMatches stores the matches of a rule's pass at rulesMatchedAt.
func storeMatches(t *testing.T, store *db.DB, rule string, uids ...string) {
	t.Helper()
	ms := make([]db.RuleMatch, len(uids))
	for i, uid := range uids {
		ms[i] = db.RuleMatch{UID: uid, Reason: "unused since " + uid}
	}
	if err := store.Rules().ReplaceRuleMatches(context.Background(), rule, ms, rulesMatchedAt); err != nil {
		t.Fatal(err)
	}
}

func TestRuleList(t *testing.T) {
	srv, _ := testServer(t)
	var got api.RuleList
	getJSON(t, srv, "/rules", http.StatusOK, &got)
	if diff := cmp.Diff(testRuleList(), got); diff != "" {
		t.Errorf("GET /rules (-want +got):\n%s", diff)
	}
	_, s := testServer(t)
	h, err := NewHandler(Options{DB: s.Reads(), Ingest: fakeIngest{}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/rules", nil))
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "no cleanup rules run here") {
		t.Errorf("GET /rules with no runner: %d %s, want 404", rec.Code, rec.Body)
	}
}

// TestRuleMatches: a rule's stored matches by UID, with since and when
// last matched, filtered and paged; bad parameters are 400s and a rule
// that is not loaded a 404 that names those that are.
func TestRuleMatches(t *testing.T) {
	srv, s := testServer(t)
	storeMatches(t, s, "unused-configmaps", "uid-L", "uid-A", "uid-E")
	storeMatches(t, s, "named-a", "uid-A")
	since := rulesMatchedAt
	match := func(name string) api.RuleMatch {
		return api.RuleMatch{UID: "uid-" + name, APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: name,
			Reason: "unused since uid-" + name, Since: &since, LastMatched: &since}
	}
	var got api.RuleMatchList
	getJSON(t, srv, "/rules/unused-configmaps/matches", http.StatusOK, &got)
	want := api.RuleMatchList{Items: []api.RuleMatch{match("A"), match("E"), match("L")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("all (-want +got):\n%s", diff)
	}
	// Pages of one, by the cursor.
	var uids []string
	path := "/rules/unused-configmaps/matches?limit=1"
	for page := 0; page < 5; page++ {
		var p api.RuleMatchList
		getJSON(t, srv, path, http.StatusOK, &p)
		for _, m := range p.Items {
			uids = append(uids, m.UID)
		}
		if p.Next == "" {
			break
		}
		path = "/rules/unused-configmaps/matches?limit=1&cursor=" + url.QueryEscape(p.Next)
	}
	if diff := cmp.Diff([]string{"uid-A", "uid-E", "uid-L"}, uids); diff != "" {
		t.Errorf("paged (-want +got):\n%s", diff)
	}
	var first api.RuleMatchList
	getJSON(t, srv, "/rules/unused-configmaps/matches?limit=1", http.StatusOK, &first)
	// The other rule has no runner's pass yet: no lastMatched.
	var other api.RuleMatchList
	getJSON(t, srv, "/rules/named-a/matches?kind=configmaps&namespace=a", http.StatusOK, &other)
	if len(other.Items) != 1 || other.Items[0].LastMatched != nil || other.Items[0].Since == nil {
		t.Errorf("named-a: %+v, want uid-A with since and no lastMatched", other.Items)
	}
	getJSON(t, srv, "/rules/named-a/matches?namespace=b", http.StatusOK, &other)
	if len(other.Items) != 0 {
		t.Errorf("named-a in namespace b: %+v, want none", other.Items)
	}
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{"/rules/unused-configmaps/matches?limit=0", `invalid limit \"0\": want a number from 1 to 1000`, 400},
		{"/rules/unused-configmaps/matches?limit=1001", `invalid limit \"1001\"`, 400},
		{"/rules/unused-configmaps/matches?limit=x", `invalid limit \"x\"`, 400},
		{"/rules/unused-configmaps/matches?kind=a%20b", `invalid kind`, 400},
		{"/rules/unused-configmaps/matches?rule=x", `unknown query parameter \"rule\"`, 400},
		{"/rules/unused-configmaps/matches?cursor=zz", `invalid cursor`, 400},
		{"/rules/named-a/matches?cursor=" + url.QueryEscape(first.Next), `it continues the matches of rule \"unused-configmaps\"`, 400},
		{"/rules/nope/matches", `no rule \"nope\" is loaded; the rules are: unused-configmaps, named-a`, 404},
	} {
		resp, body := get(t, srv, tc.path)
		if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET %s: %d %s, want %d with %s", tc.path, resp.StatusCode, body, tc.code, tc.want)
		}
	}
}

// evaluateServer is a server whose runner evaluates through a real
// sandbox of limit, with loopback and tokens as given.
func evaluateServer(t *testing.T, limit time.Duration, loopback bool, tokens *Tokens) (*httptest.Server, *db.DB) {
	t.Helper()
	_, s := testServer(t)
	sandbox, err := s.Rules().OpenSandbox(db.SandboxOptions{TimeLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sandbox.Close() })
	h, err := NewHandler(Options{DB: s.Reads(), Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(),
		Rules: sandboxRules{list: testRuleList(), eval: &rules.Evaluator{Sandbox: sandbox}}, Loopback: loopback, Tokens: tokens,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, s
}

func post(t *testing.T, srv *httptest.Server, contentType, token string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/rules/evaluate", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// TestEvaluateRules posts rules files good and hostile: each rule that
// passes is run once and answered with its matches or its error, each
// refused one is in errors with its line; nothing is stored.
func TestEvaluateRules(t *testing.T) {
	srv, s := evaluateServer(t, 300*time.Millisecond, true, nil)
	a := api.RuleMatch{UID: "uid-A", APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "A", Reason: "named A"}
	tests := []struct {
		name        string
		contentType string
		body        string
		code        int
		// matches are each rule's, by id: UIDs, or "error: " and the
		// kind of the rule's error.
		matches map[string][]string
		errs    []string // parts of the one error's message
	}{
		{"one rule", "application/yaml", "rules:\n- id: named-a\n  select: SELECT uid, 'named A' AS reason FROM objects WHERE name = 'A'\n",
			200, map[string][]string{"named-a": {"uid-A"}}, nil},
		{"JSON", "application/json", `{"rules": [{"id": "named-a", "select": "SELECT uid, 'named A' AS reason FROM objects WHERE name = 'A'"}]}`,
			200, map[string][]string{"named-a": {"uid-A"}}, nil},
		{"not YAML", "application/yaml", "rules: [\n- id: x\n", 200, map[string][]string{}, []string{"body:1: not YAML"}},
		{"two statements", "application/yaml",
			"rules:\n- id: two\n  select: SELECT uid FROM objects; SELECT uid FROM objects\n", 200, map[string][]string{},
			[]string{"body:3: rules[0].select: ", "not one statement"}},
		{"ATTACH", "text/yaml", "rules:\n- id: attach\n  select: |\n    SELECT uid FROM objects;\n    ATTACH DATABASE '/tmp/x' AS x\n",
			200, map[string][]string{}, []string{"body:3: rules[0].select: "}},
		{"writes", "application/yaml", "rules:\n- id: writes\n  select: DELETE FROM objects RETURNING uid\n", 200,
			map[string][]string{}, []string{"body:3: rules[0].select: "}},
		{"past its time limit, beside a good rule", "application/yaml", `rules:
- id: endless
  select: |
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
    SELECT x AS uid FROM c WHERE x < 0
- id: named-a
  select: SELECT uid, 'named A' AS reason FROM objects WHERE name = 'A'
`, 200, map[string][]string{"endless": {"error: over the time limit"}, "named-a": {"uid-A"}}, nil},
		{"a bad field and a good rule", "application/yaml",
			"rules:\n- id: bad\n  select: SELECT uid FROM objects\n  interval: soon\n- id: named-a\n  select: SELECT uid, 'named A' AS reason FROM objects WHERE name = 'A'\n",
			200, map[string][]string{"named-a": {"uid-A"}}, []string{"body:4: rules[0].interval: Invalid value"}},
		{"plain text", "text/plain", "rules: []\n", 415, nil, nil},
		{"no content type", "", "rules: []\n", 415, nil, nil},
		{"too large", "application/yaml", "rules: []\n#" + strings.Repeat("x", api.MaxRulesBody), 413, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, srv, tc.contentType, "", []byte(tc.body))
			if code != tc.code {
				t.Fatalf("%d %s, want %d", code, body, tc.code)
			}
			if code != 200 {
				return
			}
			var got api.RuleEvaluation
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			matches := map[string][]string{}
			for _, r := range got.Rules {
				matches[r.ID] = []string{}
				if r.Error != "" {
					// The error's kind, before its detail.
					kind, _, _ := strings.Cut(r.Error, ":")
					matches[r.ID] = append(matches[r.ID], "error: "+kind)
				}
				for _, m := range r.Matches {
					matches[r.ID] = append(matches[r.ID], m.UID)
					if m.UID == "uid-A" && !cmp.Equal(m, a) {
						t.Errorf("match %+v, want %+v", m, a)
					}
				}
			}
			if diff := cmp.Diff(tc.matches, matches); diff != "" {
				t.Errorf("matches (-want +got):\n%s", diff)
			}
			if want := min(len(tc.errs), 1); len(got.Errors) != want {
				t.Fatalf("errors %+v, want %d", got.Errors, want)
			}
			for _, part := range tc.errs {
				if !strings.Contains(got.Errors[0].Message, part) {
					t.Errorf("error %q does not say %q", got.Errors[0].Message, part)
				}
			}
		})
	}
	if stored, _, err := s.Rules().ListRuleMatches(context.Background(), db.RuleMatchFilter{}); err != nil || len(stored) != 0 {
		t.Errorf("stored after the evaluations: %+v, %v; want nothing", stored, err)
	}
}

// TestEvaluateRulesNeedsAuthentication: without tokens or client
// certificates, only a loopback listener evaluates; with tokens, the
// caller must carry one.
func TestEvaluateRulesNeedsAuthentication(t *testing.T) {
	body := []byte("rules: []\n")
	srv, _ := evaluateServer(t, time.Second, false, nil)
	code, answer := post(t, srv, "application/yaml", "", body)
	if code != http.StatusForbidden || !strings.Contains(string(answer), "needs the API's authentication") {
		t.Errorf("no authentication, not loopback: %d %s, want 403", code, answer)
	}
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("good\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := LoadTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ = evaluateServer(t, time.Second, false, tokens)
	if code, answer := post(t, srv, "application/yaml", "", body); code != http.StatusUnauthorized {
		t.Errorf("tokens, none sent: %d %s, want 401", code, answer)
	}
	if code, answer := post(t, srv, "application/yaml", "good", body); code != http.StatusOK {
		t.Errorf("tokens, one sent: %d %s, want 200", code, answer)
	}
}
