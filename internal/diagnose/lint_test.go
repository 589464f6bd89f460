package diagnose

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

func boolp(b bool) *bool { return &b }

var (
	now     = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	created = now.Add(-3 * time.Hour)
)

// liveRef is a reference in namespace a to a present ConfigMap "owner".
func liveRef() *db.LintRef {
	return &db.LintRef{
		Dependent:        api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "dep", UID: "uid-dep"},
		DependentCreated: &created,
		Ref:              api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-owner"},
		Owner: &db.LintOwner{Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "owner",
			UID: "uid-owner"}},
		KindServed: true, KindNamespaced: true,
	}
}

func TestCheckRef(t *testing.T) {
	gone := now.Add(-time.Hour)
	pending := now.Add(-30 * time.Minute)
	tests := []struct {
		name   string
		change func(l *db.LintRef)
		// want is the rule IDs found; each message must hold wantIn.
		want   []string
		wantIn []string
	}{
		{name: "present owner", change: func(*db.LintRef) {}},
		{name: "controller reference blocking a live owner", change: func(l *db.LintRef) {
			l.Ref.Controller, l.Ref.BlockOwnerDeletion = boolp(true), boolp(true)
		}},
		{name: "dangling, nothing known of when it went", change: func(l *db.LintRef) { l.Owner = nil },
			want: []string{"KG-LINT-01"}, wantIn: []string{"at most 3h0m0s", "2026-03-01T09:00:00Z", "when the owner went is not recorded"}},
		{name: "dangling, pending in ownergc, deleted by kubegcd", change: func(l *db.LintRef) {
			l.Owner, l.OwnerDeletedAt, l.PendingSince = nil, &gone, &pending
		}, want: []string{"KG-LINT-01"}, wantIn: []string{"kubegcd deleted it at 2026-03-01T11:00:00Z (1h0m0s ago)", "pending about it since 2026-03-01T11:30:00Z (30m0s ago)"}},
		{name: "dangling, creation time not mirrored", change: func(l *db.LintRef) { l.Owner, l.DependentCreated = nil, nil },
			want: []string{"KG-LINT-01"}, wantIn: []string{"creation time is not mirrored"}},
		{name: "owner re-created under the same name", change: func(l *db.LintRef) { l.Owner, l.SameNameUID = nil, "uid-new" },
			want: []string{"KG-LINT-02"}, wantIn: []string{"re-created", "uid-new, not uid-owner"}},
		{name: "uid names an object of another name", change: func(l *db.LintRef) { l.Owner.Name = "other" },
			want: []string{"KG-LINT-02"}, wantIn: []string{`is ConfigMap "other", not ConfigMap "owner"`}},
		{name: "uid names an object of another group", change: func(l *db.LintRef) {
			l.Ref.APIVersion, l.Ref.Kind = "example.com/v1", "ConfigMap"
		}, want: []string{"KG-LINT-02"}, wantIn: []string{`not ConfigMap.example.com "owner"`}},
		{name: "owner in another namespace", change: func(l *db.LintRef) { l.Owner.Namespace = "b" },
			want: []string{"KG-LINT-03"}, wantIn: []string{`in namespace "b", not in the object's own namespace "a"`}},
		{name: "cluster-scoped dependent, namespaced owner kind", change: func(l *db.LintRef) {
			l.Dependent.Namespace, l.Owner = "", nil
		}, want: []string{"KG-LINT-04"}, wantIn: []string{"OwnerRefInvalidNamespace"}},
		{name: "cluster-scoped dependent, cluster-scoped owner", change: func(l *db.LintRef) {
			l.Dependent.Namespace, l.KindNamespaced, l.Owner.Namespace = "", false, ""
		}},
		{name: "owner kind not served", change: func(l *db.LintRef) {
			l.Ref.APIVersion, l.Ref.Kind, l.Owner, l.KindServed, l.KindNamespaced = "gone.example.com/v1", "Vanished", nil, false, false
		}, want: []string{"KG-LINT-05"}, wantIn: []string{"Vanished.gone.example.com", "kubernetes#102641"}},
		{name: "second controller reference", change: func(l *db.LintRef) {
			l.Ref.Controller, l.EarlierControllers = boolp(true), 1
		}, want: []string{"KG-LINT-06"}, wantIn: []string{"number 2"}},
		{name: "second controller reference, dangling too", change: func(l *db.LintRef) {
			l.Ref.Controller, l.EarlierControllers, l.Owner = boolp(true), 1, nil
		}, want: []string{"KG-LINT-06", "KG-LINT-01"}},
		{name: "blockOwnerDeletion on a live owner", change: func(l *db.LintRef) { l.Ref.BlockOwnerDeletion = boolp(true) },
			want: []string{"KG-LINT-07"}, wantIn: []string{"not the controller reference", "foregroundDeletion"}},
		{name: "blockOwnerDeletion on an owner being deleted", change: func(l *db.LintRef) {
			l.Ref.BlockOwnerDeletion, l.Owner.Deleting = boolp(true), true
		}},
		{name: "blockOwnerDeletion false", change: func(l *db.LintRef) { l.Ref.BlockOwnerDeletion = boolp(false) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := liveRef()
			tt.change(l)
			found := CheckRef(l, now)
			var got []string
			for _, f := range found {
				got = append(got, f.Rule)
				r, ok := RuleByName(f.Rule)
				if !ok || r.Name != f.Name || r.Severity != f.Severity {
					t.Errorf("finding %+v does not match its rule %+v", f, r)
				}
				if f.Target != l.Dependent || !reflect.DeepEqual(f.OwnerReference, api.OwnerRef(l.Ref)) {
					t.Errorf("finding %+v: target or reference is not the checked one", f)
				}
			}
			if !reflect.DeepEqual(tt.want, got) {
				t.Fatalf("rules (-want +got):\n%s", diff.Diff(tt.want, got))
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(found[0].Message, s) {
					t.Errorf("message %q lacks %q", found[0].Message, s)
				}
			}
		})
	}
}

// refs is a LintSource over fixed references.
type refs []*db.LintRef

func (r refs) LintRefs(_ context.Context, namespace string, fn func(*db.LintRef) error) error {
	for _, l := range r {
		if namespace == "" || l.Dependent.Namespace == namespace {
			if err := fn(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// FillDangling dates every dangling reference as pending since 2026-01-01,
// as the mirror would for one ownergc holds a decision about.
func (r refs) FillDangling(_ context.Context, refs []*db.LintRef) error {
	for _, l := range refs {
		if l.Owner == nil {
			l.PendingSince = &danglingSince
		}
	}
	return nil
}

var danglingSince = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// sampleRef is a reference of object name in ns to a live owner there,
// changed by change.
func sampleRef(ns, name string, change func(l *db.LintRef)) *db.LintRef {
	l := liveRef()
	l.Dependent.Namespace, l.Dependent.Name, l.Dependent.UID = ns, name, "uid-"+name
	l.Owner.Namespace = ns
	change(l)
	return l
}

// sampleRefs are two namespaces' references: in a, two dangling (d1, d2),
// one fine and one blocking a live owner (b1); in b, one dangling (d3) and
// one to an owner in namespace c (x1).
func sampleRefs() refs {
	dangling := func(l *db.LintRef) { l.Owner = nil }
	return refs{
		sampleRef("a", "d1", dangling),
		sampleRef("a", "ok", func(*db.LintRef) {}),
		sampleRef("a", "d2", dangling),
		sampleRef("a", "b1", func(l *db.LintRef) { l.Ref.BlockOwnerDeletion = boolp(true) }),
		sampleRef("b", "d3", dangling),
		sampleRef("b", "x1", func(l *db.LintRef) { l.Owner.Namespace = "c" }),
	}
}

func TestLint(t *testing.T) {
	src := sampleRefs()
	tests := []struct {
		name          string
		f             LintFilter
		wantItems     []string
		wantTruncated bool
		// wantRead is how many references the lint reads: it stops once
		// it knows there are more findings than it keeps.
		wantRead int
	}{
		{name: "everything", f: LintFilter{Limit: 100}, wantItems: []string{"d1", "d2", "b1", "d3", "x1"}, wantRead: 6},
		{name: "namespace", f: LintFilter{Namespace: "a", Limit: 100}, wantItems: []string{"d1", "d2", "b1"}, wantRead: 4},
		{name: "rule by id", f: LintFilter{Rule: "KG-LINT-03", Limit: 100}, wantItems: []string{"x1"}, wantRead: 6},
		{name: "rule by name", f: LintFilter{Rule: "dangling-owner", Namespace: "b", Limit: 100}, wantItems: []string{"d3"},
			wantRead: 2},
		{name: "severity", f: LintFilter{Severity: api.SeverityInfo, Limit: 100}, wantItems: []string{"b1"}, wantRead: 6},
		{name: "limit stops at the first finding past it", f: LintFilter{Limit: 2}, wantItems: []string{"d1", "d2"},
			wantTruncated: true, wantRead: 4},
		{name: "limit 1", f: LintFilter{Limit: 1}, wantItems: []string{"d1"}, wantTruncated: true, wantRead: 3},
		{name: "a rule's limit reads past other findings", f: LintFilter{Rule: "KG-LINT-01", Limit: 2},
			wantItems: []string{"d1", "d2"}, wantTruncated: true, wantRead: 5},
		{name: "limit equal to the findings", f: LintFilter{Rule: "KG-LINT-01", Limit: 3}, wantItems: []string{"d1", "d2", "d3"},
			wantRead: 6},
		{name: "no findings", f: LintFilter{Namespace: "empty", Limit: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := 0
			rep, err := Lint(context.Background(), counting{src, &read}, tt.f, now)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rep.Items {
				got = append(got, f.Target.Name)
				// The words of a kept dangling reference say what FillDangling found.
				if pending := strings.Contains(f.Message, "pending about it since 2026-01-01"); pending != (f.Rule == api.LintDanglingOwner.ID) {
					t.Errorf("%s: %s message %q: says when pending: %v", f.Target.Name, f.Rule, f.Message, pending)
				}
			}
			if !reflect.DeepEqual(tt.wantItems, got) {
				t.Errorf("items (-want +got):\n%s", diff.Diff(tt.wantItems, got))
			}
			if rep.Truncated != tt.wantTruncated {
				t.Errorf("truncated = %v, want %v", rep.Truncated, tt.wantTruncated)
			}
			if read != tt.wantRead {
				t.Errorf("read %d references, want %d", read, tt.wantRead)
			}
			if rep.Items == nil {
				t.Error("items is nil: it must encode as []")
			}
			if rep.Counts != nil {
				t.Errorf("counts %v: Lint leaves them to CountLint", rep.Counts)
			}
		})
	}
}

// counting is a LintSource that counts the references it streams.
type counting struct {
	refs
	read *int
}

func (c counting) LintRefs(ctx context.Context, namespace string, fn func(*db.LintRef) error) error {
	return c.refs.LintRefs(ctx, namespace, func(l *db.LintRef) error {
		*c.read++
		return fn(l)
	})
}

func TestCountLint(t *testing.T) {
	// A cluster-scoped dependent is counted in the whole mirror's counts
	// only.
	src := append(sampleRefs(), sampleRef("", "cr", func(l *db.LintRef) { l.Owner.Namespace = "a"; l.KindNamespaced = true }))
	counted, err := CountLint(context.Background(), src, now)
	if err != nil {
		t.Fatal(err)
	}
	if !counted.At.Equal(now) {
		t.Errorf("At = %s, want %s", counted.At, now)
	}
	counts := func(c map[string]int) map[string]int {
		out := map[string]int{}
		for _, r := range api.LintRules {
			out[r.ID] = c[r.ID]
		}
		return out
	}
	for _, tt := range []struct {
		namespace string
		want      map[string]int
	}{
		{"", counts(map[string]int{"KG-LINT-01": 3, "KG-LINT-03": 1, "KG-LINT-04": 1, "KG-LINT-07": 1})},
		{"a", counts(map[string]int{"KG-LINT-01": 2, "KG-LINT-07": 1})},
		{"b", counts(map[string]int{"KG-LINT-01": 1, "KG-LINT-03": 1})},
		{"empty", counts(nil)},
	} {
		got := counted.Of(tt.namespace)
		if !reflect.DeepEqual(tt.want, got) {
			t.Errorf("Of(%q) (-want +got):\n%s", tt.namespace, diff.Diff(tt.want, got))
		}
		got["KG-LINT-01"] = 100 // the caller's
		if again := counted.Of(tt.namespace); again["KG-LINT-01"] == 100 {
			t.Errorf("Of(%q) returned the counts kept, not a copy", tt.namespace)
		}
	}
}

// failing is a LintSource whose reads fail: the stream, or the reading of
// when its one dangling reference began to dangle.
type failing struct{ fillOnly bool }

func (f failing) LintRefs(ctx context.Context, ns string, fn func(*db.LintRef) error) error {
	if !f.fillOnly {
		return errors.New("disk I/O error")
	}
	l := liveRef()
	l.Owner = nil
	return refs{l}.LintRefs(ctx, ns, fn)
}

func (failing) FillDangling(context.Context, []*db.LintRef) error {
	return errors.New("disk I/O error")
}

func TestLintError(t *testing.T) {
	for _, src := range []failing{{}, {fillOnly: true}} {
		if _, err := Lint(context.Background(), src, LintFilter{Limit: 10}, now); err == nil || !strings.Contains(err.Error(), "disk I/O error") {
			t.Errorf("%+v: Lint error = %v, want the source's", src, err)
		}
	}
	if _, err := CountLint(context.Background(), failing{}, now); err == nil {
		t.Error("CountLint: no error")
	}
}

func TestRulesStable(t *testing.T) {
	seen := map[string]bool{}
	for i, r := range api.LintRules {
		if want := "KG-LINT-0" + string(rune('1'+i)); r.ID != want {
			t.Errorf("rule %d has id %s, want %s: ids are stable and in order", i, r.ID, want)
		}
		if seen[r.Name] || r.Name == "" {
			t.Errorf("rule %s: name %q empty or not unique", r.ID, r.Name)
		}
		seen[r.Name] = true
		switch r.Severity {
		case api.SeverityError, api.SeverityWarning, api.SeverityInfo:
		default:
			t.Errorf("rule %s: severity %q", r.ID, r.Severity)
		}
	}
}

func TestNoteDiscoveryFailures(t *testing.T) {
	unserved := func(apiVersion string) api.LintFinding {
		l := liveRef()
		l.Ref.APIVersion, l.Ref.Kind, l.Owner, l.KindServed = apiVersion, "Widget", nil, false
		return CheckRef(l, now)[0]
	}
	dangling := func() api.LintFinding {
		l := liveRef()
		l.Owner = nil
		return CheckRef(l, now)[0]
	}
	failures := map[string]string{"dead.example.com/v1": "the server is currently unable to handle the request"}
	tests := []struct {
		name string
		in   api.LintFinding
		want string // in the message; "" for the message unchanged
	}{
		{"owner kind in a group failing discovery", unserved("dead.example.com/v1"),
			`discovery of dead.example.com/v1 fails right now (the server is currently unable to handle the request): ` +
				`the owner's kind Widget.dead.example.com cannot be resolved, so owner "owner" is neither found nor taken for absent`},
		{"another version of that group", unserved("dead.example.com/v2"), ""},
		{"a dangling owner of a served kind", dangling(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := []api.LintFinding{tt.in}
			NoteDiscoveryFailures(got, failures)
			if tt.want == "" {
				if got[0] != tt.in {
					t.Errorf("finding changed (-want +got):\n%s", diff.Diff(tt.in, got[0]))
				}
				return
			}
			if got[0].Rule != api.LintOwnerKindUnserved.ID || !strings.Contains(got[0].Message, tt.want) {
				t.Errorf("%s: %q, want a message containing %q", got[0].Rule, got[0].Message, tt.want)
			}
		})
	}
}
