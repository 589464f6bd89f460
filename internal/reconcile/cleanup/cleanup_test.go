package cleanup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/rules"
)

// fakeEvaluator runs no SQL: each rule matches the UIDs matches names for
// it (none by default), or fails with fails' error. It records each pass.
type fakeEvaluator struct {
	mu      sync.Mutex
	matches map[string][]db.RuleMatch
	fails   map[string]error
	refuse  map[string]string // rule id → why Check refuses it
	ran     []string
}

func (f *fakeEvaluator) Evaluate(_ context.Context, r *rules.Rule) ([]db.RuleMatch, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ran = append(f.ran, r.ID)
	if r.ID == "panics" {
		panic("index out of range in the driver")
	}
	if err := f.fails[r.ID]; err != nil {
		return nil, time.Millisecond, err
	}
	return f.matches[r.ID], time.Millisecond, nil
}

func (f *fakeEvaluator) Check(_ context.Context, r *rules.Rule) *rules.Error {
	if r.ID == "panics-at-check" {
		panic("nil pointer in the driver")
	}
	if why, ok := f.refuse[r.ID]; ok {
		return &rules.Error{File: r.Source.File, Line: r.Source.Line, RuleID: r.ID, Field: "select", Detail: why}
	}
	return nil
}

// took returns the rules run since the last call, file rules only (the
// built-ins run beside them), sorted.
func (f *fakeEvaluator) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, id := range f.ran {
		if !isBuiltin(id) {
			out = append(out, id)
		}
	}
	f.ran = nil
	slices.Sort(out)
	return out
}

func isBuiltin(id string) bool {
	return slices.ContainsFunc(rules.Builtins(), func(r *rules.Rule) bool { return r.ID == id })
}

// fakeStore keeps the matches in memory.
type fakeStore struct {
	mu      sync.Mutex
	matches map[string][]db.RuleMatch
	kept    []string
	failing error
}

func (s *fakeStore) ReplaceRuleMatches(_ context.Context, id string, ms []db.RuleMatch, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing != nil {
		return s.failing
	}
	if s.matches == nil {
		s.matches = map[string][]db.RuleMatch{}
	}
	s.matches[id] = ms
	return nil
}

func (s *fakeStore) KeepRuleMatches(_ context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept = slices.Clone(ids)
	for id := range s.matches {
		if !slices.Contains(ids, id) {
			delete(s.matches, id)
		}
	}
	return nil
}

func (s *fakeStore) CountRuleMatches(_ context.Context, id string) (map[string]db.RuleMatchCount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]db.RuleMatchCount{}
	for rid, ms := range s.matches {
		if id != "" && rid != id {
			continue
		}
		var c db.RuleMatchCount
		for _, m := range ms {
			if m.Finding {
				c.Findings++
			} else {
				c.Matches++
			}
		}
		out[rid] = c
	}
	return out, nil
}

// clock is a fake clock that tests move.
type clock struct{ t time.Time }

func (c *clock) now() time.Time            { return c.t }
func (c *clock) move(d time.Duration)      { c.t = c.t.Add(d) }
func (c *clock) set(t time.Time) time.Time { c.t = t; return t }

// rulesFile is a rules file of one rule per id, each with that interval.
func rulesFile(interval string, ids ...string) string {
	var b strings.Builder
	b.WriteString("rules:\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "- id: %s\n  select: SELECT uid FROM objects\n  interval: %s\n", id, interval)
	}
	return b.String()
}

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

type fixture struct {
	dir    string
	clock  *clock
	eval   *fakeEvaluator
	store  *fakeStore
	synced bool
	behind bool
	// ended counts the calls of PassesEnded.
	ended int
	reg   *prometheus.Registry
	r     *Runner
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), clock: &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		eval:  &fakeEvaluator{matches: map[string][]db.RuleMatch{}, fails: map[string]error{}, refuse: map[string]string{}},
		store: &fakeStore{}, synced: true, reg: prometheus.NewRegistry()}
	f.r = New(Options{Dir: f.dir, Logger: slog.New(slog.DiscardHandler), Store: f.store, Evaluator: f.eval, Now: f.clock.now, Registerer: f.reg,
		Synced: func() bool { return f.synced }, CaughtUp: func() bool { return !f.behind }, PollPeriod: 5 * time.Second,
		PassesEnded: func() { f.ended++ }})
	return f
}

// step runs one turn of the runner's loop at the clock's time.
func (f *fixture) step(t *testing.T) time.Time {
	t.Helper()
	return f.r.step(context.Background())
}

func ids(l []*ruleState) []string {
	var out []string
	for _, st := range l {
		if !isBuiltin(st.rule.ID) {
			out = append(out, st.rule.ID)
		}
	}
	return out
}

// TestPassesRunWhenDue: no pass before the mirror has synced; then each
// rule at once and every interval after its last pass began; none while
// the mirror is behind, and those due then as soon as it has caught up.
// PassesEnded runs once after each turn that made a pass, never after one
// that made none.
func TestPassesRunWhenDue(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.dir, "a.yaml", rulesFile("1m", "every-minute")+"- id: hourly\n  select: SELECT uid FROM objects\n  interval: 1h\n")
	f.synced = false
	t0 := f.clock.t
	steps := []struct {
		name   string
		at     time.Duration
		synced bool
		behind bool
		want   []string
	}{
		{"not synced", 0, false, false, nil},
		{"synced: every rule at once", 10 * time.Second, true, false, []string{"every-minute", "hourly"}},
		{"nothing due", 30 * time.Second, true, false, nil},
		{"a minute after the first pass", 70 * time.Second, true, false, []string{"every-minute"}},
		{"a resource lost its sync: the passes wait", 140 * time.Second, true, true, nil},
		{"caught up again: what is due runs", 150 * time.Second, true, false, []string{"every-minute"}},
		{"an hour on", time.Hour + 10*time.Second, true, false, []string{"every-minute", "hourly"}},
	}
	for _, s := range steps {
		f.clock.set(t0.Add(s.at))
		f.synced, f.behind = s.synced, s.behind
		ended := f.ended
		f.step(t)
		if diff := cmp.Diff(s.want, f.eval.took()); diff != "" {
			t.Errorf("%s: rules run (-want +got):\n%s", s.name, diff)
		}
		if want := min(len(s.want), 1); f.ended-ended != want {
			t.Errorf("%s: PassesEnded ran %d times, want %d", s.name, f.ended-ended, want)
		}
	}
}

// TestStepSaysWhenNextDue: the loop sleeps until the next look at the
// files or the next pass, whichever is first.
func TestStepSaysWhenNextDue(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.dir, "a.yaml", rulesFile("2s", "quick"))
	t0 := f.clock.t
	if next := f.step(t); !next.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("next after the first pass: %v after start, want 2s (the quick rule's interval)", next.Sub(t0))
	}
	f.clock.move(2 * time.Second)
	f.step(t)
	if next := f.step(t); !next.Equal(t0.Add(4 * time.Second)) {
		t.Errorf("next: %v after start, want 4s", next.Sub(t0))
	}
}

// TestReloadOnChange: a file added, edited, broken or removed is seen at
// the next look; a rule whose text changed runs at once, one that did not
// keeps its schedule and its last pass; a file that does not parse is
// refused with its line while the others run; the matches of a rule no
// longer loaded go.
func TestReloadOnChange(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.dir, "a.yaml", rulesFile("1h", "a1", "a2"))
	f.step(t)
	if got := f.eval.took(); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("first pass ran %v, want a1 and a2", got)
	}
	before := f.r.List()

	// Nothing changed: no reload, nothing due.
	f.clock.move(10 * time.Second)
	f.step(t)
	if got := f.eval.took(); got != nil {
		t.Errorf("nothing changed, yet %v ran", got)
	}

	// A new file, and a2 edited: b1 and a2 run at once, a1 waits its hour.
	writeFile(t, f.dir, "a.yaml", rulesFile("1h", "a1")+"- id: a2\n  select: SELECT uid FROM objects WHERE 1\n  interval: 1h\n")
	writeFile(t, f.dir, "b.yml", rulesFile("1h", "b1"))
	f.clock.move(10 * time.Second)
	f.step(t)
	if diff := cmp.Diff([]string{"a2", "b1"}, f.eval.took()); diff != "" {
		t.Errorf("after the edit, rules run (-want +got):\n%s", diff)
	}
	after := f.r.List()
	a1Before, a1After := findRule(t, before, "a1"), findRule(t, after, "a1")
	if diff := cmp.Diff(a1Before.LastPass, a1After.LastPass); diff != "" || a1Before.Hash != a1After.Hash {
		t.Errorf("a1 did not change, yet its pass or hash did (-before +after):\n%s", diff)
	}
	if findRule(t, before, "a2").Hash == findRule(t, after, "a2").Hash {
		t.Error("a2's hash did not change with its select")
	}

	// A file that does not parse is refused; the rest run on.
	writeFile(t, f.dir, "c.yaml", "rules:\n- id: c1\n  select: SELECT uid FROM objects\n  interval: [1h\n")
	f.clock.move(10 * time.Second)
	f.step(t)
	l := f.r.List()
	if len(l.Errors) != 1 || !strings.HasPrefix(l.Errors[0].Message, filepath.Join(f.dir, "c.yaml")+":3: not YAML") {
		t.Errorf("errors %+v, want c.yaml:3's", l.Errors)
	}
	if got := ids(f.r.snapshot()); !slices.Equal(got, []string{"a1", "a2", "b1"}) {
		t.Errorf("rules loaded %v, want a1, a2, b1", got)
	}
	if got := testutil.ToFloat64(f.r.metrics.refused); got != 1 {
		t.Errorf("kubegcd_rule_refused = %v, want 1", got)
	}

	// b.yml removed: b1 goes, its matches too.
	if err := os.Remove(filepath.Join(f.dir, "b.yml")); err != nil {
		t.Fatal(err)
	}
	f.clock.move(10 * time.Second)
	f.step(t)
	if got := ids(f.r.snapshot()); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Errorf("rules loaded %v, want a1, a2", got)
	}
	if slices.Contains(f.store.kept, "b1") || !slices.Contains(f.store.kept, "a1") {
		t.Errorf("matches kept for %v, want a1 and a2 and the built-ins, not b1", f.store.kept)
	}
}

func findRule(t *testing.T, l api.RuleList, id string) api.RuleInfo {
	t.Helper()
	for _, r := range l.Items {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no rule %s in %+v", id, l.Items)
	return api.RuleInfo{}
}

// TestFailingRuleDoesNotStopOthers: a rule whose pass fails (its time
// limit, its row cap, the store) records why, counts it by reason and
// keeps its matches; the rules after it run, and it runs again at its
// next interval. A rule that Check refuses is refused at load.
func TestFailingRuleDoesNotStopOthers(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.dir, "a.yaml", rulesFile("1m", "first", "slow", "capped", "last", "refused"))
	f.eval.refuse["refused"] = "not allowed: ATTACH"
	f.eval.matches["first"] = []db.RuleMatch{{UID: "u1", Reason: "r"}, {UID: "u2", Finding: true}}
	f.eval.matches["slow"] = []db.RuleMatch{{UID: "u3"}}
	f.eval.matches["last"] = []db.RuleMatch{{UID: "u4"}}
	f.step(t)
	if diff := cmp.Diff([]string{"capped", "first", "last", "slow"}, f.eval.took()); diff != "" {
		t.Fatalf("rules run (-want +got):\n%s", diff)
	}
	// slow matched once; then it runs past its limit.
	f.eval.fails["slow"] = fmt.Errorf("%w: it ran longer than 10s", db.ErrRuleTimeLimit)
	f.eval.fails["capped"] = fmt.Errorf("%w: more than 100000 rows", db.ErrRuleRowCap)
	f.clock.move(time.Minute)
	f.step(t)
	if diff := cmp.Diff([]string{"capped", "first", "last", "slow"}, f.eval.took()); diff != "" {
		t.Errorf("second pass: rules run (-want +got):\n%s", diff)
	}
	l := f.r.List()
	slow := findRule(t, l, "slow")
	if slow.LastPass == nil || !strings.Contains(slow.LastPass.Error, "over the time limit") || slow.Matches != 1 ||
		slow.MatchedAt == nil || slow.MatchedAt.Equal(slow.LastPass.StartedAt) {
		t.Errorf("slow: %+v, last pass %+v; want the time limit said, its one match kept from the first pass", slow,
			slow.LastPass)
	}
	first := findRule(t, l, "first")
	if first.LastPass == nil || first.LastPass.Error != "" || first.Matches != 1 || first.Findings != 1 ||
		first.LastPass.Matches != 1 || first.LastPass.Findings != 1 {
		t.Errorf("first: %+v, last pass %+v; want 1 match and 1 finding", first, first.LastPass)
	}
	if got := f.store.matches["last"]; len(got) != 1 {
		t.Errorf("last: stored %v, want its one match", got)
	}
	if len(l.Errors) != 1 || l.Errors[0].Rule != "refused" || !strings.Contains(l.Errors[0].Message, "ATTACH") {
		t.Errorf("errors %+v, want the refused rule's", l.Errors)
	}
	for _, c := range []struct{ rule, reason string }{{"slow", "time-limit"}, {"capped", "row-cap"}} {
		if got := testutil.ToFloat64(f.r.metrics.errors.WithLabelValues(c.rule, c.reason)); got != 1 {
			t.Errorf("kubegcd_rule_errors_total{rule=%q,reason=%q} = %v, want 1", c.rule, c.reason, got)
		}
	}
	// The store fails: the pass says so, and the next one stores again.
	f.store.failing = errors.New("database is locked")
	f.clock.move(time.Minute)
	f.step(t)
	if p := findRule(t, f.r.List(), "last").LastPass; p == nil || !strings.Contains(p.Error, "database is locked") {
		t.Errorf("last, the store failing: last pass %+v, want the store's error", p)
	}
	if got := testutil.ToFloat64(f.r.metrics.errors.WithLabelValues("last", "store")); got != 1 {
		t.Errorf("kubegcd_rule_errors_total{rule=last,reason=store} = %v, want 1", got)
	}
	f.store.failing = nil
	f.clock.move(time.Minute)
	f.step(t)
	if p := findRule(t, f.r.List(), "last").LastPass; p == nil || p.Error != "" {
		t.Errorf("last, the store back: last pass %+v, want no error", p)
	}
	problems, err := testutil.GatherAndLint(f.reg)
	if err != nil || len(problems) > 0 {
		t.Errorf("metrics lint: %v %v", problems, err)
	}
}

// TestUnreadableDirectory: a directory that cannot be read at start
// leaves the built-ins running and says why; once readable, its files load.
func TestUnreadableDirectory(t *testing.T) {
	f := newFixture(t)
	f.r.opts.Dir = filepath.Join(f.dir, "file")
	writeFile(t, f.dir, "file", "not a directory")
	f.step(t)
	l := f.r.List()
	if len(l.Items) != len(rules.Builtins()) || len(l.Errors) != 1 || l.Errors[0].File != f.r.opts.Dir {
		t.Errorf("items %d, errors %+v; want the %d built-ins and the directory's error", len(l.Items), l.Errors,
			len(rules.Builtins()))
	}
	if err := os.Remove(f.r.opts.Dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.r.opts.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.r.opts.Dir, "a.yaml", rulesFile("1h", "a1"))
	f.clock.move(10 * time.Second)
	f.step(t)
	if l := f.r.List(); len(l.Errors) != 0 || !slices.Contains(ids(f.r.snapshot()), "a1") {
		t.Errorf("errors %+v, rules %v; want none, and a1 loaded", l.Errors, ids(f.r.snapshot()))
	}
}

// TestPanicFailsOneRule: a panic while a rule is checked refuses that rule;
// one while it runs fails its pass alone, counted as panic. The others
// load and run.
func TestPanicFailsOneRule(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.dir, "a.yaml", rulesFile("1m", "panics", "panics-at-check", "fine"))
	f.eval.matches["fine"] = []db.RuleMatch{{UID: "u1"}}
	f.step(t)
	if diff := cmp.Diff([]string{"fine", "panics"}, f.eval.took()); diff != "" {
		t.Errorf("rules run (-want +got):\n%s", diff)
	}
	l := f.r.List()
	if len(l.Errors) != 1 || l.Errors[0].Rule != "panics-at-check" || !strings.Contains(l.Errors[0].Detail, "internal error") {
		t.Errorf("errors %+v, want panics-at-check refused", l.Errors)
	}
	if p := findRule(t, l, "panics").LastPass; p == nil || !strings.Contains(p.Error, "internal error (a panic") {
		t.Errorf("panics: last pass %+v, want the panic said", p)
	}
	if got := testutil.ToFloat64(f.r.metrics.errors.WithLabelValues("panics", "panic")); got != 1 {
		t.Errorf("kubegcd_rule_errors_total{rule=panics,reason=panic} = %v, want 1", got)
	}
	if got := findRule(t, l, "fine"); got.Matches != 1 {
		t.Errorf("fine: %+v, want its match", got)
	}
}
