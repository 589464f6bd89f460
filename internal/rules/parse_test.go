package rules

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func errorTexts(errs []*Error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestParse(t *testing.T) {
	const good = `rules:
- id: old-widgets
  description: Widgets past a week
  select: |
    SELECT uid, 'old' AS reason FROM objects
    WHERE kind = 'Widget' AND created_at < time_add(:now, -duration_seconds(:age))
  params:
    age: 7d
    limit: 3
    ratio: 0.5
    strict: true
    none: null
  exclude:
    namespaces: [kube-*]
    labels: ["app=keep", "tier notin (db)"]
    names: [keep-*]
  interval: 10m
  action: delete
  occurrences: 3
  limits: {max_count: 10, max_percent: 5}
  notify_before: 1h
  propagation: Foreground
`
	rules, errs := Parse("good.yaml", []byte(good), ParseOptions{})
	if len(errs) > 0 || len(rules) != 1 {
		t.Fatalf("Parse: %v", errorTexts(errs))
	}
	r := rules[0]
	want := &Rule{
		ID: "old-widgets", Description: "Widgets past a week",
		Select: "SELECT uid, 'old' AS reason FROM objects\nWHERE kind = 'Widget' AND created_at < time_add(:now, -duration_seconds(:age))\n",
		Params: map[string]any{"age": "7d", "limit": int64(3), "ratio": 0.5, "strict": true, "none": nil},
		Exclude: Exclude{Namespaces: []string{"kube-*"}, Labels: []string{"app=keep", "tier notin (db)"},
			Names: []string{"keep-*"}},
		Interval: 10 * time.Minute, Mode: ModeDelete, Occurrences: 3, Limits: Limits{MaxCount: 10, MaxPercent: 5},
		NotifyBefore: time.Hour, Propagation: "Foreground", Source: Source{File: "good.yaml", Line: 2}, Hash: r.Hash,
	}
	if diff := cmp.Diff(want, r, cmp.AllowUnexported(Rule{}), cmpIgnorePositions); diff != "" {
		t.Errorf("rule (-want +got):\n%s", diff)
	}
	if len(r.Hash) != 64 {
		t.Errorf("hash %q", r.Hash)
	}
	// The hash follows the text: another interval, another hash.
	again, _ := Parse("elsewhere.yaml", []byte(strings.Replace(good, "interval: 10m", "interval: 11m", 1)), ParseOptions{})
	same, _ := Parse("elsewhere.yaml", []byte(good), ParseOptions{})
	if again[0].Hash == r.Hash || same[0].Hash != r.Hash {
		t.Errorf("hashes: %s, changed %s, moved %s", r.Hash, again[0].Hash, same[0].Hash)
	}

	defaults, errs := Parse("min.yaml", []byte("rules:\n- id: x\n  select: SELECT uid FROM objects\n"), ParseOptions{})
	if len(errs) > 0 {
		t.Fatal(errorTexts(errs))
	}
	if d := defaults[0]; d.Interval != DefaultInterval || d.Mode != ModeReport || d.Occurrences != 2 || d.Propagation != "Background" {
		t.Errorf("defaults: %+v", d)
	}
}

// cmpIgnorePositions leaves out where fields were found.
var cmpIgnorePositions = cmp.FilterPath(func(p cmp.Path) bool {
	s := p.String()
	return s == "lines" || s == "path"
}, cmp.Ignore())

// TestParseErrors: every error of a file at once, each with its line and
// its field's path, and the good rules beside the bad ones still load.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, file string
		opts       ParseOptions
		wantIDs    []string
		want       []string
	}{
		{
			name: "not YAML",
			file: "rules:\n- id: a\n  select: [\n",
			want: []string{"f.yaml:3: not YAML: line 3: did not find expected node content"},
		},
		{
			name: "not a mapping",
			file: "- id: a\n",
			want: []string{"f.yaml:1: must be a mapping with rules: a list of rules"},
		},
		{
			name: "no rules",
			file: "groups: []\n",
			want: []string{"f.yaml:1: groups: unknown field (known: rules)"},
		},
		{
			name: "rules not a list",
			file: "rules: {id: a}\n",
			want: []string{`f.yaml:1: rules: Invalid value: "a mapping": must be a list of rules`},
		},
		{
			name: "every error of every rule",
			file: `rules:
- id: good
  select: SELECT uid FROM objects
- id: Bad_ID
  select: SELECT uid FROM objects
  interval: 5x
- select: SELECT uid FROM objects
  interval: 0s
  colour: blue
- id: third
  select: ""
  params:
    now: 1
    ok-not: 2
    list: [1]
  exclude:
    namespaces: "a"
    labels: ["a=(", ""]
    names: ["[a"]
    kinds: [Pod]
  action: destroy
  occurrences: 0
  limits: {max_count: -1, max_percent: 200, other: 1}
  notify_before: soon
  propagation: background
- id: good-too
  select: SELECT uid FROM objects
  id: again
- just text
`,
			wantIDs: []string{"good"},
			want: []string{
				`f.yaml:4: rules[1].id: Invalid value: "Bad_ID": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`f.yaml:6: rules[1].interval: Invalid value: "5x": must be a duration such as 90s, 15m, 24h, 7d or 1w`,
				`f.yaml:9: rules[2].colour: unknown field (known: id, description, select, params, exclude, interval, schedule, action, occurrences, limits, notify_before, propagation)`,
				`f.yaml:7: rules[2].id: Required value`,
				`f.yaml:8: rules[2].interval: Invalid value: "0s": must be at least 1s`,
				`f.yaml:11: rules[3].select: Required value: one SELECT over the rules' views`,
				`f.yaml:13: rules[3].params.now: Invalid value: "now": must be a name of letters, digits and _ (not now, which is the pass's time)`,
				`f.yaml:14: rules[3].params.ok-not: Invalid value: "ok-not": must be a name of letters, digits and _ (not now, which is the pass's time)`,
				`f.yaml:15: rules[3].params.list: Invalid value: "a list": must be text, a number, a bool or null`,
				`f.yaml:17: rules[3].exclude.namespaces: Invalid value: "a": must be a list of strings`,
				`f.yaml:18: rules[3].exclude.labels[0]: Invalid value: "a=(": unable to parse requirement: found '(', expected: identifier`,
				`f.yaml:18: rules[3].exclude.labels[1]: Invalid value: "": must be a label selector, not empty (which selects everything)`,
				`f.yaml:19: rules[3].exclude.names[0]: Invalid value: "[a": must be a name or a glob (* ? [a-z])`,
				`f.yaml:20: rules[3].exclude.kinds: unknown field (known: namespaces, labels, names)`,
				`f.yaml:21: rules[3].action: Unsupported value: "destroy": supported values: "report", "delete"`,
				`f.yaml:22: rules[3].occurrences: Invalid value: 0: must be a positive integer`,
				`f.yaml:23: rules[3].limits.max_count: Invalid value: -1: must be a positive integer`,
				`f.yaml:23: rules[3].limits.max_percent: Invalid value: "200": must be a number above 0 and at most 100`,
				`f.yaml:23: rules[3].limits.other: unknown field (known: max_count, max_percent)`,
				`f.yaml:24: rules[3].notify_before: Invalid value: "soon": must be a duration such as 90s, 15m, 24h, 7d or 1w`,
				`f.yaml:25: rules[3].propagation: Unsupported value: "background": supported values: "Background", "Foreground", "Orphan"`,
				`f.yaml:28: rules[4].id: Duplicate value: "id"`,
				`f.yaml:29: rules[5]: Invalid value: "just text": must be a mapping`,
			},
		},
		{
			name: "overrides of a built-in",
			file: `rules:
- id: unused-configmaps
  select: SELECT uid FROM objects
  description: mine
  params: {grace: 7, other: 1}
- id: finished-jobs
  params: {min_age: 2d}
  interval: 1m
- id: dangling-references
  action: delete
`,
			wantIDs: []string{"finished-jobs"},
			want: []string{
				`f.yaml:4: rules[0].description: Forbidden: unused-configmaps is a built-in rule: an entry with its id may set only params, exclude, interval, schedule, action, occurrences, limits, notify_before, propagation`,
				`f.yaml:3: rules[0].select: Forbidden: unused-configmaps is a built-in rule: an entry with its id may set only params, exclude, interval, schedule, action, occurrences, limits, notify_before, propagation`,
				`f.yaml:5: rules[0].params.grace: Invalid value: "7": must be a duration such as 90s, 15m, 24h, 7d or 1w`,
				`f.yaml:5: rules[0].params.other: Unsupported value: "other": supported values: "grace"`,
				`f.yaml:10: rules[2].action: Forbidden: dangling-references reports; it matches what refers to a missing object, not garbage`,
			},
		},
		{
			name: "schedules",
			file: `rules:
- id: daily
  select: SELECT uid FROM objects
  schedule: "CRON_TZ=Europe/Paris @daily"
- id: both
  select: SELECT uid FROM objects
  interval: 1h
  schedule: "0 2 * * *"
- id: seconds
  select: SELECT uid FROM objects
  schedule: "0 0 2 * * *"
- id: out-of-range
  select: SELECT uid FROM objects
  schedule: "61 2 * * *"
- id: no-zone
  select: SELECT uid FROM objects
  schedule: "CRON_TZ=Mars/Olympus 0 2 * * *"
- id: zone-alone
  select: SELECT uid FROM objects
  schedule: "CRON_TZ=Europe/Paris"
- id: every
  select: SELECT uid FROM objects
  schedule: "@every 1h"
- id: unknown-descriptor
  select: SELECT uid FROM objects
  schedule: "@fortnightly"
- id: never
  select: SELECT uid FROM objects
  schedule: "0 0 30 2 *"
- id: empty
  select: SELECT uid FROM objects
  schedule: ""
- id: nothing
  select: SELECT uid FROM objects
  schedule:
- id: finished-jobs
  schedule: "CRON_TZ=Europe/Paris 0 2 * * 0"
- id: unused-secrets
  interval: 1h
  schedule: "@weekly"
`,
			wantIDs: []string{"daily", "finished-jobs"},
			want: []string{
				`f.yaml:8: rules[1].schedule: Forbidden: may not be set with interval: a rule has one or the other`,
				`f.yaml:11: rules[2].schedule: Invalid value: "0 0 2 * * *": must be a cron expression: expected exactly 5 fields, found 6: [0 0 2 * * *]`,
				`f.yaml:14: rules[3].schedule: Invalid value: "61 2 * * *": must be a cron expression: end of range (61) above maximum (59): 61`,
				`f.yaml:17: rules[4].schedule: Invalid value: "CRON_TZ=Mars/Olympus 0 2 * * *": must be a cron expression: provided bad location Mars/Olympus: unknown time zone Mars/Olympus`,
				`f.yaml:20: rules[5].schedule: Invalid value: "CRON_TZ=Europe/Paris": must be CRON_TZ=, a time zone, a space and the fields (CRON_TZ=Europe/Paris 0 2 * * 0)`,
				`f.yaml:23: rules[6].schedule: Invalid value: "@every 1h": must be a time of the clock, not @every: set interval instead`,
				`f.yaml:26: rules[7].schedule: Invalid value: "@fortnightly": must be a cron expression: unrecognized descriptor: @fortnightly`,
				`f.yaml:29: rules[8].schedule: Invalid value: "0 0 30 2 *": no time matches it in the next five years`,
				`f.yaml:32: rules[9].schedule: Invalid value: "": must be a cron expression: empty spec string`,
				`f.yaml:35: rules[10].schedule: Invalid value: "null": must be a string`,
				`f.yaml:40: rules[12].schedule: Forbidden: may not be set with interval: a rule has one or the other`,
			},
		},
		{
			name: "labels the mirror does not keep",
			file: "rules:\n- id: a\n  select: SELECT uid FROM objects\n  exclude: {labels: [\"team=x,app\"]}\n",
			opts: ParseOptions{LabelKept: func(k string) bool { return k == "app" }},
			want: []string{`f.yaml:4: rules[0].exclude.labels[0]: Invalid value: "team=x,app": the mirror does not keep the label team, so no object has it there: add it to --mirror-labels`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, errs := Parse("f.yaml", []byte(tt.file), tt.opts)
			var ids []string
			for _, r := range rules {
				ids = append(ids, r.ID)
			}
			if !cmp.Equal(ids, tt.wantIDs) {
				t.Errorf("rules %v, want %v", ids, tt.wantIDs)
			}
			got := errorTexts(errs)
			// Sorted by rule, then as found: compare as sets of lines.
			if diff := cmp.Diff(sortedCopy(tt.want), sortedCopy(got)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func sortedCopy(ss []string) []string {
	out := append([]string(nil), ss...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestLoad: a directory with good files, a bad file, a bad rule, a rule
// the sandbox refuses, an override and a duplicate. The refused are said
// with file:line, and every other rule loads and runs.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.yaml", `rules:
- id: labelled
  select: SELECT o.uid, 'labelled' AS reason FROM objects o JOIN labels l ON l.uid = o.uid
- id: writes
  select: DELETE FROM objects
- id: attaches
  select: |
    ATTACH DATABASE '/tmp/x' AS x
- id: reads-a-table
  select: |
    SELECT uid
    FROM main.objects
- id: slow
  select: WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) AS uid FROM n
- id: unused-configmaps
  interval: 1m
`)
	b := write("b.yml", `rules:
- id: labelled
  select: SELECT uid FROM objects
- id: no-uid
  select: SELECT name FROM objects
`)
	c := write("c.yaml", "rules:\n- id: broken\n  select: SELECT uid FROM objects\n  interval: never\n")
	d := write("d.yaml", "rules: [\n")
	write(".hidden.yaml", "rules: [\n")
	write("notes.txt", "rules: [\n")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}

	f := newFixture(t)
	cm := f.obj("ConfigMap", "a/x", day)
	f.label(cm, "app", "x")
	f.commit()
	e := &Evaluator{Sandbox: f.sandbox(), Now: func() time.Time { return now }}
	set, err := Load(context.Background(), dir, LoadOptions{Check: e.Check})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{a, b, c, d}; !cmp.Equal(set.Files, want) {
		t.Errorf("files %v, want %v", set.Files, want)
	}
	var ids []string
	for _, r := range set.Rules {
		ids = append(ids, r.ID+"@"+r.Position())
	}
	wantIDs := []string{"unused-configmaps@" + a + ":15", "unused-secrets@built-in", "unused-pvcs@built-in",
		"unused-serviceaccounts@built-in", "finished-jobs@built-in", "dangling-references@built-in", "ttl-expired@built-in",
		"labelled@" + a + ":2", "slow@" + a + ":13"}
	if diff := cmp.Diff(wantIDs, ids); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	wantErrs := []string{
		a + `:5: rules[1].select: Invalid value: not a SELECT: it starts with "DELETE", not SELECT or WITH`,
		a + `:7: rules[2].select: Invalid value: not a SELECT: it starts with "ATTACH", not SELECT or WITH`,
		a + `:10: rules[3].select: Invalid value: not allowed: reading main.objects: a rule reads only the views (objects, labels, annotations, refs, last_referenced, jobs, cronjobs, secrets, pvcs, workloads, pods, mirror)`,
		b + `:2: rules[0].id: Duplicate value: "labelled": first defined at ` + a + `:2`,
		b + `:5: rules[1].select: Invalid value: no uid column: the result's columns are (name); name one uid (SELECT o.uid …)`,
		c + `:4: rules[0].interval: Invalid value: "never": must be a duration such as 90s, 15m, 24h, 7d or 1w`,
		d + `:1: not YAML: line 1: did not find expected node content`,
	}
	if diff := cmp.Diff(sortedCopy(wantErrs), sortedCopy(errorTexts(set.Errors))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	for _, e := range set.Errors {
		if e.File != d && e.RuleID == "" {
			t.Errorf("%v: no rule id", e)
		}
	}
	// The good rule runs; the slow one fails its pass alone.
	byID := map[string]*Rule{}
	for _, r := range set.Rules {
		byID[r.ID] = r
	}
	short := &Evaluator{Sandbox: f.sandbox(dbSandboxOptions(200 * time.Millisecond)), Now: func() time.Time { return now }}
	if _, _, err := short.Evaluate(context.Background(), byID["slow"]); err == nil || !strings.Contains(err.Error(), "over the time limit") {
		t.Errorf("slow: %v", err)
	}
	ms, took, err := short.Evaluate(context.Background(), byID["labelled"])
	if err != nil || len(ms) != 1 || ms[0].UID != cm || ms[0].Reason != "labelled" || took <= 0 {
		t.Errorf("labelled: %v, %v, %v", ms, took, err)
	}
	if byID["unused-configmaps"].Interval != time.Minute || !byID["unused-configmaps"].Source.BuiltIn {
		t.Errorf("override: %+v", byID["unused-configmaps"])
	}
}

func TestLoadMissingDir(t *testing.T) {
	set, err := Load(context.Background(), filepath.Join(t.TempDir(), "none"), LoadOptions{})
	if err != nil || len(set.Rules) != len(builtins) || len(set.Errors) != 0 {
		t.Errorf("Load: %v, %v", set, err)
	}
}
