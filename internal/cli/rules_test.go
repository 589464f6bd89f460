package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

// apiGolden is the compact answer of the server's golden name.
func apiGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "http", "testdata", "api", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	body, _, _ := strings.Cut(string(b), "\n")
	return body
}

// rulesServer answers /rules with the server's golden list, and each
// rule's matches from pages: the matches of the rule, by cursor.
type rulesServer struct {
	t     *testing.T
	list  string
	pages map[string][]api.RuleMatchList
	// queries are the query strings the matches were asked with.
	queries []string
	// evaluate is the answer of POST /rules/evaluate; posted what it took.
	evaluate string
	posted   string
}

func (s *rulesServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/rules":
		_, _ = io.WriteString(w, s.list)
	case r.Method == http.MethodPost && r.URL.Path == "/rules/evaluate":
		b, _ := io.ReadAll(r.Body)
		s.posted = r.Header.Get("Content-Type") + "\n" + string(b)
		_, _ = io.WriteString(w, s.evaluate)
	case strings.HasPrefix(r.URL.Path, "/rules/") && strings.HasSuffix(r.URL.Path, "/matches"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/rules/"), "/matches")
		s.queries = append(s.queries, id+"?"+r.URL.RawQuery)
		pages := s.pages[id]
		page := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			fmt.Sscan(c, &page)
		}
		if page >= len(pages) {
			_, _ = io.WriteString(w, `{"items":[]}`)
			return
		}
		_ = json.NewEncoder(w).Encode(pages[page])
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"no such endpoint"}`)
	}
}

func runRulesCLI(t *testing.T, srv *httptest.Server, stdin io.Reader, local Local, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	now := time.Date(2026, 3, 4, 6, 6, 7, 0, time.UTC)
	vars := map[string]string{}
	if srv != nil {
		vars[envServer] = srv.URL
	}
	e := &env{prog: "kubegcd", stdout: &out, stderr: &errb, stdin: stdin, lookupEnv: envOf(vars), local: local,
		now: func() time.Time { return now }}
	code := e.main(context.Background(), args)
	return code, out.String(), errb.String()
}

func TestGetRules(t *testing.T) {
	srv := httptest.NewServer(&rulesServer{t: t, list: apiGolden(t, "rules")})
	defer srv.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "rules"}, `ID                  SOURCE     ACTION   PASSES     CAP      MATCHES   LAST PASS   OUTCOME    ERROR
unused-configmaps   built-in   report   every 5m   <none>   2         2d18h ago   reported   <none>
named-a             a.yaml:2   report   every 1m   <none>   0         <never>     <none>     <none>
bad                 a.yaml:7   <none>   <none>     <none>   <none>    <never>     <none>     refused: rules[1].select: not allowed: ATTACH
`},
		{[]string{"get", "rules", "-o", "wide"}, `ID                  SOURCE     ACTION   PASSES     CAP      MATCHES   LAST PASS   OUTCOME    ERROR                                           FINDINGS   DURATION   HASH     DESCRIPTION
unused-configmaps   built-in   report   every 5m   <none>   2         2d18h ago   reported   <none>                                          0          0s         h1       
named-a             a.yaml:2   report   every 1m   <none>   0         <never>     <none>     <none>                                          0          <none>     h2       
bad                 a.yaml:7   <none>   <none>     <none>   <none>    <never>     <none>     refused: rules[1].select: not allowed: ATTACH   <none>     <none>     <none>   <none>
`},
	} {
		code, out, errb := runRulesCLI(t, srv, nil, Local{}, tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errb)
		}
		if diff := cmp.Diff(tc.want, out); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.args, diff)
		}
	}
	if code, _, errb := runRulesCLI(t, srv, nil, Local{}, "get", "rules", "-n", "a"); code != 2 ||
		!strings.Contains(errb, "-n does not apply to get rules") {
		t.Errorf("get rules -n a: exit %d, %q; want a usage error", code, errb)
	}
}

// TestGetUnused: the matches of each unused-* built-in, every page, in
// -n's namespace and of --kind, sorted by namespace, kind and name.
func TestGetUnused(t *testing.T) {
	since := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	match := func(ns, kind, name string) api.RuleMatch {
		return api.RuleMatch{UID: "u-" + name, APIVersion: "v1", Kind: kind, Namespace: ns, Name: name,
			Reason: "no reference since 2026-03-03", Since: &since}
	}
	list := `{"items":[
		{"id":"unused-configmaps","builtIn":true},{"id":"unused-secrets","builtIn":true},
		{"id":"unused-mine","builtIn":false},{"id":"ttl-expired","builtIn":true}],"errors":[],"dir":"d","files":[]}`
	s := &rulesServer{t: t, list: list, pages: map[string][]api.RuleMatchList{
		"unused-configmaps": {{Items: []api.RuleMatch{match("b", "ConfigMap", "z")}, Next: "1"},
			{Items: []api.RuleMatch{match("a", "ConfigMap", "y\x1b[31m")}}},
		"unused-secrets": {{Items: []api.RuleMatch{match("a", "Secret", "x")}}},
		"unused-mine":    {{Items: []api.RuleMatch{match("a", "Secret", "never")}}},
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	code, out, errb := runRulesCLI(t, srv, nil, Local{}, "get", "unused")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	want := `NAMESPACE   KIND        NAME        RULE                MATCHED   REASON
a           ConfigMap   y\x1b[31m   unused-configmaps   60m       no reference since 2026-03-03
a           Secret      x           unused-secrets      60m       no reference since 2026-03-03
b           ConfigMap   z           unused-configmaps   60m       no reference since 2026-03-03
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("get unused (-want +got):\n%s", diff)
	}
	s.queries = nil
	code, out, errb = runRulesCLI(t, srv, nil, Local{}, "get", "unused", "-n", "a", "--kind", "configmaps", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	wantQueries := []string{"unused-configmaps?kind=configmaps&limit=1000&namespace=a",
		"unused-configmaps?cursor=1&kind=configmaps&limit=1000&namespace=a",
		"unused-secrets?kind=configmaps&limit=1000&namespace=a"}
	if diff := cmp.Diff(wantQueries, s.queries); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
	var doc struct {
		Items []struct {
			Rule string `json:"rule"`
			UID  string `json:"uid"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Items) != 3 || doc.Items[0].Rule != "unused-configmaps" ||
		doc.Items[0].UID != "u-y\x1b[31m" {
		t.Errorf("-o json: %v %s", err, out)
	}
	if code, out, errb := runRulesCLI(t, srv, nil, Local{}, "get", "unused", "--limit", "1"); code != 0 ||
		strings.Count(out, "\n") != 2 {
		t.Errorf("--limit 1: exit %d %q %s; want the header and one row", code, out, errb)
	}
}

// TestRulesTest: the file is posted as YAML; each rule's matches are
// printed, refused rules as FILE:LINE on stderr with exit 1, as a failed
// evaluation is.
func TestRulesTest(t *testing.T) {
	s := &rulesServer{t: t, evaluate: apiGolden(t, "rule-evaluation")}
	srv := httptest.NewServer(s)
	defer srv.Close()
	file := writeTemp(t, "r.yaml", "rules: []\n")
	code, out, errb := runRulesCLI(t, srv, nil, Local{}, "rules", "test", file)
	if code != 1 {
		t.Errorf("exit %d, want 1: a rule is refused", code)
	}
	if s.posted != "application/yaml\nrules: []\n" {
		t.Errorf("posted %q", s.posted)
	}
	wantOut := `unused-configmaps: 2 matches (2ms)
  NAMESPACE   KIND         NAME      REASON
  default     Pod          web-1-x   b
  default     ReplicaSet   web-1     a

endless: failed after 10s: over the time limit: it ran longer than 10s
`
	if diff := cmp.Diff(wantOut, out); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if want := file + ":3: rules[2].select: not allowed: ATTACH\n"; errb != want {
		t.Errorf("stderr %q, want %q", errb, want)
	}
	// Standard input; an answer without errors exits 0.
	s.evaluate = `{"rules":[{"id":"x","hash":"h","evaluatedAt":"2026-03-04T05:06:07Z","durationSeconds":0,"matches":[]}],"errors":[]}`
	code, out, errb = runRulesCLI(t, srv, strings.NewReader("rules:\n- id: x\n"), Local{}, "rules", "test", "-")
	if code != 0 || out != "x: 0 matches (0s)\n" || errb != "" || !strings.HasSuffix(s.posted, "- id: x\n") {
		t.Errorf("stdin: exit %d, %q, %q, posted %q", code, out, errb, s.posted)
	}
	code, out, _ = runRulesCLI(t, srv, nil, Local{}, "rules", "test", file, "-o", "json")
	if code != 0 || !json.Valid([]byte(out)) {
		t.Errorf("-o json: exit %d %s", code, out)
	}
	for _, args := range [][]string{{"rules"}, {"rules", "run", file}, {"rules", "test"}, {"rules", "check", file, "-o", "json"}} {
		if code, _, errb := runRulesCLI(t, srv, nil, Local{}, args...); code != 2 {
			t.Errorf("%v: exit %d %s, want 2", args, code, errb)
		}
	}
	if code, _, errb := runRulesCLI(t, srv, nil, Local{}, "rules", "test", filepath.Join(t.TempDir(), "none.yaml")); code != 1 ||
		!strings.Contains(errb, "no such file") {
		t.Errorf("a missing file: exit %d %s", code, errb)
	}
	big := writeTemp(t, "big.yaml", strings.Repeat("#", api.MaxRulesBody+1))
	if code, _, errb := runRulesCLI(t, srv, nil, Local{}, "rules", "test", big); code != 1 || !strings.Contains(errb, "larger than") {
		t.Errorf("a file too large: exit %d %s", code, errb)
	}
}

// TestRulesCheck reads the file here, through what the binary gives.
func TestRulesCheck(t *testing.T) {
	file := writeTemp(t, "r.yaml", "rules: []\n")
	var got string
	refuse := Local{CheckRules: func(name string, data []byte) []api.RuleError {
		got = name + ":" + string(data)
		return []api.RuleError{{File: name, Line: 4, Field: "rules[0].interval", Detail: "Invalid value: \"soon\"\x07"}}
	}}
	code, out, errb := runRulesCLI(t, nil, nil, refuse, "rules", "check", file)
	if code != 1 || out != "" || errb != file+":4: rules[0].interval: Invalid value: \"soon\"\\a\n" || got != file+":rules: []\n" {
		t.Errorf("refused: exit %d, %q, %q (checked %q)", code, out, errb, got)
	}
	ok := Local{CheckRules: func(string, []byte) []api.RuleError { return nil }}
	if code, out, errb := runRulesCLI(t, nil, nil, ok, "rules", "check", file); code != 0 || !strings.Contains(out, "valid") {
		t.Errorf("valid: exit %d, %q, %q", code, out, errb)
	}
	if code, _, errb := runRulesCLI(t, nil, nil, Local{}, "rules", "check", file); code != 1 ||
		!strings.Contains(errb, "cannot read rules itself") {
		t.Errorf("without a checker: exit %d, %q", code, errb)
	}
}

// TestWhyReferencesAndRules: why says what the object references, what
// references it and the rules that match it, names made printable.
func TestWhyReferencesAndRules(t *testing.T) {
	since := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	d := api.ObjectDetail{
		Object: api.Object{UID: "u1", APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "cfg", Finalizers: []string{},
			OwnerReferences: []api.ObjectOwnerRef{}},
		Owners: []api.Owner{}, Dependents: []api.Dependent{}, Why: "It is not pending: it has no owner references.",
		Lint: []api.LintFinding{}, History: api.RecentHistory{Items: []api.HistoryItem{}},
		References: []api.ObjectReference{
			{Kind: "Secret", Namespace: "a", Name: "gone\x1b[2J", Via: "spec.volumes[].secret"},
			{Kind: "PersistentVolumeClaim", Namespace: "a", Name: "data-web-", Via: "spec.volumeClaimTemplates", Prefix: true,
				Exists: true},
			{Group: "storage.k8s.io", Kind: "StorageClass", Name: "fast", Via: "spec.storageClassName", Optional: true,
				Exists: true, UID: "u9"},
		},
		ReferencedBy: []api.ObjectReferrer{{UID: "u2", APIVersion: "v1", Kind: "Pod", Namespace: "a", Name: "p",
			Via: "spec.volumes[].configMap"}},
		Rules: []api.ObjectRuleMatch{{Rule: "unused-configmaps", Reason: "no reference", Since: since},
			{Rule: "ttl-expired", Reason: "kubegcd.io/ttl: soon does not parse", Finding: true, Since: since}},
	}
	var b bytes.Buffer
	if err := printWhy(&b, &d, since.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nReferences: 3\n  Secret a/gone\\x1b[2J (spec.volumes[].secret): missing\n" +
			"  PersistentVolumeClaim a/data-web-<ordinal> (spec.volumeClaimTemplates)\n" +
			"  StorageClass.storage.k8s.io fast (spec.storageClassName): optional\n",
		"\nReferenced by: 1\n  Pod a/p (spec.volumes[].configMap)\n",
		"\nCleanup rules that match it:\n  unused-configmaps, for 60m: no reference\n" +
			"  ttl-expired (finding), for 60m: kubegcd.io/ttl: soon does not parse\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("why does not say\n%s\nin:\n%s", want, b.String())
		}
	}
	last := since
	d.ReferencedBy, d.LastReferenced = nil, &last
	b.Reset()
	if err := printWhy(&b, &d, since.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nReferenced by: nothing now; last referenced 120m ago\n") {
		t.Errorf("why does not say when it was last referenced:\n%s", b.String())
	}
}

// The PASSES, CAP and OUTCOME cells of get rules, for rules that delete.
func TestRuleCells(t *testing.T) {
	tests := []struct {
		name string
		rule api.RuleInfo
		pass *api.RulePass
		want [3]string
	}{
		{"a schedule", api.RuleInfo{Schedule: "CRON_TZ=Europe/Paris 0 2 * * 0"}, &api.RulePass{},
			[3]string{"CRON_TZ=Europe/Paris 0 2 * * 0", "<none>", "reported"}},
		{"capped", api.RuleInfo{Interval: "1h0m0s", Limits: api.RuleLimits{MaxCount: 10, MaxPercent: 2.5}},
			&api.RulePass{Acted: &api.RuleActed{Capped: "30 objects due"}}, [3]string{"every 1h", "10, 2.5%", "capped"}},
		{"acted", api.RuleInfo{Interval: "30s", Limits: api.RuleLimits{MaxPercent: 5}},
			&api.RulePass{Acted: &api.RuleActed{Deleted: 3, Notified: 1, Skipped: map[string]int{"changed": 1, "gone": 1}}},
			[3]string{"every 30s", "5%", "deleted 3, notified 1, left 2"}},
		{"dry-run", api.RuleInfo{Interval: "5m0s"}, &api.RulePass{Acted: &api.RuleActed{DryRun: 4}},
			[3]string{"every 5m", "<none>", "dry-run 4"}},
		{"nothing due", api.RuleInfo{Interval: "5m0s"}, &api.RulePass{Acted: &api.RuleActed{}},
			[3]string{"every 5m", "<none>", "nothing due"}},
		{"failed", api.RuleInfo{Interval: "5m0s"}, &api.RulePass{Error: "over the time limit"},
			[3]string{"every 5m", "<none>", "failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := [3]string{rulePasses(tt.rule), ruleCap(tt.rule.Limits), passOutcome(tt.pass)}
			if got != tt.want {
				t.Errorf("cells = %q, want %q", got, tt.want)
			}
		})
	}
}
