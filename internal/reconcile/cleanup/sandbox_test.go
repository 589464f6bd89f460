package cleanup

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/rules"
)

// TestRulesOnTheSandbox runs rule files through the real sandbox: a rule
// that ATTACHes or writes is refused at load with its file and line; one
// that runs past its time limit fails its pass; the good rule beside them
// stores its match; an evaluation matches what the pass stored.
func TestRulesOnTheSandbox(t *testing.T) {
	store := dbtest.Open(t)
	ctx := context.Background()
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap",
		Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: rid, Object: &db.Object{UID: "u1",
		APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "one", ResourceVersion: "1"}}}); err != nil {
		t.Fatal(err)
	}
	sandbox, err := store.Rules().OpenSandbox(db.SandboxOptions{TimeLimit: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sandbox.Close() })
	dir := t.TempDir()
	good := `rules:
- id: named-one
  select: SELECT uid, 'named one' AS reason FROM objects WHERE name = :name
  params: {name: one}
  interval: 1h
`
	writeFile(t, dir, "good.yaml", good)
	writeFile(t, dir, "bad.yaml", `rules:
- id: attaches
  select: SELECT uid FROM objects; ATTACH DATABASE '/tmp/x.db' AS x
- id: writes
  select: DELETE FROM objects RETURNING uid
- id: endless
  select: |
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
    SELECT x AS uid FROM c WHERE x < 0
`)
	r := New(Options{Dir: dir, Store: store.Rules(), Evaluator: &rules.Evaluator{Sandbox: sandbox},
		Logger: slog.New(slog.DiscardHandler)})
	r.step(ctx)
	l := r.List()
	bad := filepath.Join(dir, "bad.yaml")
	wantErrs := map[string]string{"attaches": bad + ":3: rules[0].select: ", "writes": bad + ":5: rules[1].select: "}
	for _, e := range l.Errors {
		if want, ok := wantErrs[e.Rule]; ok && strings.HasPrefix(e.Message, want) {
			delete(wantErrs, e.Rule)
		}
	}
	if len(wantErrs) > 0 || len(l.Errors) != 2 {
		t.Errorf("errors %+v; want one for each of attaches (bad.yaml:3) and writes (bad.yaml:5)", l.Errors)
	}
	endless, named := findRule(t, l, "endless"), findRule(t, l, "named-one")
	if endless.LastPass == nil || !strings.Contains(endless.LastPass.Error, "over the time limit") {
		t.Errorf("endless: last pass %+v, want over the time limit", endless.LastPass)
	}
	if named.LastPass == nil || named.LastPass.Error != "" || named.Matches != 1 {
		t.Errorf("named-one: %+v, last pass %+v; want its one match", named, named.LastPass)
	}
	stored, _, err := store.Rules().ListRuleMatches(ctx, db.RuleMatchFilter{RuleID: "named-one"})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0].Target.UID != "u1" || stored[0].Reason != "named one" {
		t.Errorf("stored %+v, want u1, named one", stored)
	}
	evals, errs, err := r.Evaluate(ctx, "body", []byte(good))
	if err != nil || len(errs) != 0 || len(evals) != 1 {
		t.Fatalf("evaluating good.yaml: %+v, %+v, %v", evals, errs, err)
	}
	if e := evals[0]; e.Err != nil || e.Hash != named.Hash || len(e.Matches) != 1 || e.Matches[0] != (db.RuleMatch{UID: "u1",
		Reason: "named one"}) {
		t.Errorf("evaluation %+v; want the loaded rule's hash and match", e)
	}
}

// TestCheckWithoutDatabase: a check without a daemon finds the field
// errors, a SELECT that is two statements or no query, and a duplicate id,
// each with its line; a SELECT that reads a table it may not passes, as
// only the sandbox can tell.
func TestCheckWithoutDatabase(t *testing.T) {
	errs := Check("f.yaml", []byte(`rules:
- id: good
  select: SELECT uid FROM objects
- id: two
  select: SELECT uid FROM objects; DELETE FROM objects
- id: update
  select: UPDATE objects SET name = 'x' RETURNING uid
- id: good
  select: SELECT uid FROM objects
- id: late
  select: SELECT uid FROM objects
  interval: soon
- id: unused-configmaps
  params: {grace: 1d}
- id: reads-a-table
  select: SELECT uid FROM main.objects
`), nil)
	var got []string
	for _, e := range errs {
		got = append(got, e.Message)
	}
	want := []string{
		`f.yaml:12: rules[4].interval: Invalid value: "soon": must be a duration such as 90s, 15m, 24h, 7d or 1w`,
		`f.yaml:8: Duplicate value: "good": first defined at f.yaml:2`,
		"f.yaml:5: rules[1].select: Invalid value: not one statement: more text after the ';' that ends the statement",
		"f.yaml:7: rules[2].select: Invalid value: not a SELECT: ",
	}
	if len(got) != len(want) {
		t.Fatalf("errors:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d: %q, want %q…", i, got[i], want[i])
		}
	}
}
