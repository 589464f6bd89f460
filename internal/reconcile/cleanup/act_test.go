package cleanup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/rules"
)

func TestDueMatches(t *testing.T) {
	m := func(uid string, passes int) db.ActMatch {
		return db.ActMatch{StoredMatch: db.StoredMatch{Target: api.Target{UID: uid}, Passes: passes}}
	}
	tests := []struct {
		name        string
		matches     []db.ActMatch
		occurrences int
		spared      map[string]bool
		wantDue     []string
		wantSpared  int
	}{
		{name: "one pass is not enough for two", matches: []db.ActMatch{m("a", 1), m("b", 2), m("c", 5)},
			occurrences: 2, wantDue: []string{"b", "c"}},
		{name: "one pass is enough for one", matches: []db.ActMatch{m("a", 1)}, occurrences: 1, wantDue: []string{"a"}},
		{name: "a restored object is spared however long it matched", matches: []db.ActMatch{m("a", 9), m("b", 9)},
			occurrences: 2, spared: map[string]bool{"a": true}, wantDue: []string{"b"}, wantSpared: 1},
		{name: "nothing matched", occurrences: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, spared := dueMatches(tt.matches, tt.occurrences, tt.spared)
			var got []string
			for _, d := range due {
				got = append(got, d.Target.UID)
			}
			if diff := cmp.Diff(tt.wantDue, got); diff != "" || spared != tt.wantSpared {
				t.Errorf("due (-want +got):\n%s spared %d, want %d", diff, spared, tt.wantSpared)
			}
		})
	}
}

func TestCapReason(t *testing.T) {
	tests := []struct {
		name        string
		limits      rules.Limits
		due, looked int
		want        string // a part of the reason; "" for none
	}{
		{name: "no limits", due: 1000, looked: 1000},
		{name: "at max_count", limits: rules.Limits{MaxCount: 10}, due: 10},
		{name: "over max_count", limits: rules.Limits{MaxCount: 10}, due: 30, want: "30 objects due, more than max_count 10"},
		{name: "at max_percent", limits: rules.Limits{MaxPercent: 10}, due: 10, looked: 100},
		{name: "over max_percent", limits: rules.Limits{MaxPercent: 10}, due: 11, looked: 100,
			want: "11.0% of the 100 objects of their kinds, more than max_percent 10"},
		{name: "max_count checked first", limits: rules.Limits{MaxCount: 5, MaxPercent: 1}, due: 6, looked: 10,
			want: "max_count 5"},
		{name: "nothing due", limits: rules.Limits{MaxCount: 1, MaxPercent: 1}, looked: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := capReason(tt.limits, tt.due, tt.looked)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("capReason = %q, want one with %q", got, tt.want)
			}
		})
	}
}

func TestNoticeFor(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	tests := []struct {
		name          string
		notifyBefore  time.Duration
		notifiedAt    *time.Time
		want          noticeStep
		wantNotBefore time.Time
	}{
		{name: "no notice asked", want: noticeNone},
		{name: "first: send", notifyBefore: time.Hour, want: noticeSend, wantNotBefore: now.Add(time.Hour)},
		{name: "sent 10m ago: wait", notifyBefore: time.Hour, notifiedAt: ago(10 * time.Minute), want: noticeWait,
			wantNotBefore: now.Add(50 * time.Minute)},
		{name: "sent an hour ago: delete", notifyBefore: time.Hour, notifiedAt: ago(time.Hour), want: noticeNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notBefore := noticeFor(tt.notifyBefore, tt.notifiedAt, now)
			if got != tt.want || !notBefore.Equal(tt.wantNotBefore) {
				t.Errorf("noticeFor = %v, %v; want %v, %v", got, notBefore, tt.want, tt.wantNotBefore)
			}
		})
	}
}

// fakeApplier records decisions; enforcing, it runs their writes.
type fakeApplier struct {
	mu       sync.Mutex
	dryRun   bool
	applied  []string // "uid outcome"
	deferred []string
	passes   []string // RecordPass reasons
	paused   bool
}

func (f *fakeApplier) Apply(ctx context.Context, d reconcile.Decision, do func(context.Context) error) (api.Outcome, error) {
	if f.paused {
		return "", reconcile.ErrPaused
	}
	if f.dryRun {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.applied = append(f.applied, d.Target.UID+" dry-run")
		return api.OutcomeDryRun, nil
	}
	err := do(ctx)
	outcome := api.OutcomeApplied
	if err != nil {
		outcome = api.OutcomeFailed
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, d.Target.UID+" "+string(outcome))
	return outcome, err
}

func (f *fakeApplier) Defer(_ context.Context, d reconcile.Decision, _ time.Time) error {
	f.deferred = append(f.deferred, d.Target.UID)
	return nil
}

func (f *fakeApplier) EndPass(context.Context, api.Controller, func(string) bool) error { return nil }

func (f *fakeApplier) RecordPass(_ context.Context, _ api.Controller, _ string, _ api.Action, _ api.Outcome,
	reason string, _ any) error {
	f.passes = append(f.passes, reason)
	return nil
}

func (f *fakeApplier) DryRun() bool { return f.dryRun }

// fakeLive is the cluster: objects by name, the deletes and notices sent.
type fakeLive struct {
	mu        sync.Mutex
	objects   map[string]*unstructured.Unstructured
	deleteErr error
	deleted   []string
	notices   []string
	events    []string // notices and deletes, in order
}

func (f *fakeLive) Get(_ context.Context, m db.ActMatch) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.objects[m.Target.Name]; ok {
		return o.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: m.Resource}, m.Target.Name)
}

func (f *fakeLive) Delete(_ context.Context, m db.ActMatch, uid, rv string, _ metav1.DeletionPropagation) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleteErr != nil {
		return f.deleteErr
	}
	f.deleted = append(f.deleted, m.Target.Name+"@"+rv)
	f.events = append(f.events, "delete "+m.Target.Name)
	return nil
}

func (f *fakeLive) Notify(_ context.Context, obj *unstructured.Unstructured, reason, _ string) error {
	f.notices = append(f.notices, obj.GetName())
	f.events = append(f.events, "notice "+obj.GetName())
	return nil
}

// fakeActStore holds the matches of one rule.
type fakeActStore struct {
	matches    []db.ActMatch
	referenced map[string]bool
	notified   []string
	objects    int
}

func (f *fakeActStore) ActMatches(context.Context, string) ([]db.ActMatch, error) {
	return f.matches, nil
}
func (f *fakeActStore) MarkNotified(_ context.Context, _, uid string, _ time.Time) error {
	f.notified = append(f.notified, uid)
	return nil
}
func (f *fakeActStore) ReferencedSince(_ context.Context, t api.Target, _ time.Time) (bool, error) {
	return f.referenced[t.UID], nil
}
func (f *fakeActStore) CountObjectsOfKinds(context.Context, [][2]string) (int, error) {
	return f.objects, nil
}
func (f *fakeActStore) MatchedUIDs(context.Context, []string) (map[string]bool, error) {
	return map[string]bool{}, nil
}

// fakeCopies keeps copies in memory.
type fakeCopies struct {
	mu      sync.Mutex
	kept    map[string]Copy
	keepErr error
	spared  map[string]bool
	dropped []string
}

func (f *fakeCopies) Keep(_ context.Context, c Copy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keepErr != nil {
		return f.keepErr
	}
	f.kept[c.Target.UID] = c
	return nil
}
func (f *fakeCopies) Drop(_ context.Context, uid string) error {
	f.dropped = append(f.dropped, uid)
	delete(f.kept, uid)
	return nil
}
func (f *fakeCopies) Spared(context.Context, string, string) (map[string]bool, error) {
	return f.spared, nil
}

func liveConfigMap(name, uid, rv string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("team")
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetResourceVersion(rv)
	u.SetLabels(labels)
	return u
}

func actMatch(name, uid, rv string, passes int) db.ActMatch {
	return db.ActMatch{StoredMatch: db.StoredMatch{RuleID: "r", Reason: "unused",
		Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team", Name: name, UID: uid}, Passes: passes},
		Version: "v1", Resource: "configmaps", Namespaced: true, ResourceVersion: rv}
}

// What a rule that deletes does with each match, against fakes of the
// cluster, the applier and the stores.
func TestAct(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	type world struct {
		applier *fakeApplier
		live    *fakeLive
		store   *fakeActStore
		copies  *fakeCopies
	}
	tests := []struct {
		name    string
		rule    func(r *rules.Rule)
		setup   func(w *world)
		want    api.RuleActed
		deleted []string
		check   func(t *testing.T, w *world)
	}{
		{name: "unchanged and due: a copy is kept, then it is deleted", deleted: []string{"a@1"},
			want: api.RuleActed{Due: 1, Deleted: 1},
			check: func(t *testing.T, w *world) {
				if _, ok := w.copies.kept["uid-a"]; !ok {
					t.Error("no copy kept of the deleted object")
				}
			}},
		{name: "one pass short of occurrences: left alone",
			setup: func(w *world) { w.store.matches[0].Passes = 1 }, want: api.RuleActed{}},
		{name: "changed live: another resourceVersion",
			setup: func(w *world) { w.live.objects["a"].SetResourceVersion("2") },
			want:  api.RuleActed{Due: 1, Skipped: map[string]int{"changed": 1}}},
		{name: "a new object took the name",
			setup: func(w *world) { w.live.objects["a"].SetUID("uid-other") },
			want:  api.RuleActed{Due: 1, Skipped: map[string]int{"gone": 1}}},
		{name: "gone", setup: func(w *world) { delete(w.live.objects, "a") },
			want: api.RuleActed{Due: 1, Skipped: map[string]int{"gone": 1}}},
		{name: "excluded by a label the mirror does not keep",
			rule:  func(r *rules.Rule) { r.Exclude.Labels = []string{"keep=yes"} },
			setup: func(w *world) { w.live.objects["a"].SetLabels(map[string]string{"keep": "yes"}) },
			want:  api.RuleActed{Due: 1, Skipped: map[string]int{"excluded": 1}}},
		{name: "a reference appeared since the pass began",
			setup: func(w *world) { w.store.referenced["uid-a"] = true },
			want:  api.RuleActed{Due: 1, Skipped: map[string]int{"referenced": 1}}},
		{name: "spared: restored from this rule's copy",
			setup: func(w *world) { w.copies.spared = map[string]bool{"uid-a": true} },
			want:  api.RuleActed{Skipped: map[string]int{"spared": 1}}},
		{name: "dry-run: recorded, nothing read or kept",
			setup: func(w *world) { w.applier.dryRun = true; w.live.objects = nil },
			want:  api.RuleActed{Due: 1, DryRun: 1},
			check: func(t *testing.T, w *world) {
				if len(w.copies.kept) != 0 {
					t.Error("dry-run kept a copy")
				}
			}},
		{name: "notify_before, no notice yet: the notice goes, the delete waits",
			rule: func(r *rules.Rule) { r.NotifyBefore = time.Hour },
			want: api.RuleActed{Due: 1, Notified: 1},
			check: func(t *testing.T, w *world) {
				if diff := cmp.Diff([]string{"uid-a"}, w.store.notified); diff != "" {
					t.Errorf("notice not marked (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"uid-a"}, w.applier.deferred); diff != "" {
					t.Errorf("delete not deferred (-want +got):\n%s", diff)
				}
			}},
		{name: "notify_before, noticed 10m ago: waiting",
			rule: func(r *rules.Rule) { r.NotifyBefore = time.Hour },
			setup: func(w *world) {
				at := now.Add(-10 * time.Minute)
				w.store.matches[0].NotifiedAt = &at
			},
			want: api.RuleActed{Due: 1, Waiting: 1}},
		{name: "notify_before, noticed an hour ago: deleted",
			rule: func(r *rules.Rule) { r.NotifyBefore = time.Hour },
			setup: func(w *world) {
				at := now.Add(-time.Hour)
				w.store.matches[0].NotifiedAt = &at
			},
			deleted: []string{"a@1"}, want: api.RuleActed{Due: 1, Deleted: 1}},
		{name: "no copy, no delete",
			setup: func(w *world) { w.copies.keepErr = errors.New("disk full") },
			want:  api.RuleActed{Due: 1, Failed: 1}},
		{name: "a delete refused drops its copy",
			setup: func(w *world) {
				w.live.deleteErr = apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "a",
					errors.New("precondition failed"))
			},
			want: api.RuleActed{Due: 1, Failed: 1},
			check: func(t *testing.T, w *world) {
				if len(w.copies.kept) != 0 || len(w.copies.dropped) != 1 {
					t.Errorf("kept %v, dropped %v: the copy of an object not deleted stays", w.copies.kept, w.copies.dropped)
				}
			}},
		{name: "over max_count: the whole pass deletes nothing, audited once",
			rule: func(r *rules.Rule) { r.Limits.MaxCount = 1 },
			setup: func(w *world) {
				w.store.matches = append(w.store.matches, actMatch("b", "uid-b", "1", 2))
				w.live.objects["b"] = liveConfigMap("b", "uid-b", "1", nil)
			},
			want: api.RuleActed{Due: 2, Capped: "2 objects due, more than max_count 1: the pass deletes nothing"},
			check: func(t *testing.T, w *world) {
				if len(w.applier.passes) != 1 {
					t.Errorf("RecordPass calls %q, want one", w.applier.passes)
				}
			}},
		{name: "paused: the rest waits", setup: func(w *world) { w.applier.paused = true },
			want: api.RuleActed{Due: 1, Failed: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &world{applier: &fakeApplier{},
				live:   &fakeLive{objects: map[string]*unstructured.Unstructured{"a": liveConfigMap("a", "uid-a", "1", nil)}},
				store:  &fakeActStore{matches: []db.ActMatch{actMatch("a", "uid-a", "1", 2)}, referenced: map[string]bool{}},
				copies: &fakeCopies{kept: map[string]Copy{}}}
			if tt.setup != nil {
				tt.setup(w)
			}
			rule := &rules.Rule{ID: "r", Mode: rules.ModeDelete, Occurrences: 2, Propagation: "Background", Hash: "h"}
			if tt.rule != nil {
				tt.rule(rule)
			}
			r := New(Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
				Now: func() time.Time { return now },
				Acting: &Acting{Applier: w.applier, Live: w.live, Store: w.store, Copies: w.copies,
					TakeCopy: func(o *unstructured.Unstructured) ([]byte, bool, error) {
						b, err := o.MarshalJSON()
						return b, false, err
					}}})
			acted, err := r.act(context.Background(), rule, now.Add(-time.Second))
			if err != nil && tt.want.Failed == 0 {
				t.Fatalf("act: %v", err)
			}
			if tt.want.Skipped == nil {
				tt.want.Skipped = map[string]int{}
			}
			if diff := cmp.Diff(&tt.want, acted); diff != "" {
				t.Errorf("acted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.deleted, w.live.deleted); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, w)
			}
			if tt.want.Capped != "" {
				// The same reason at the next pass is not audited again.
				if _, err := r.act(context.Background(), rule, now); err != nil {
					t.Fatal(err)
				}
				if len(w.applier.passes) != 1 {
					t.Errorf("a pass capped for the same reason was audited again: %q", w.applier.passes)
				}
			}
		})
	}
}

// Many due matches on several workers: each is deleted once, its copy
// kept, and the tallies add up.
func TestActOnWorkers(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	live := &fakeLive{objects: map[string]*unstructured.Unstructured{}}
	store := &fakeActStore{referenced: map[string]bool{}}
	for i := range 300 {
		name, uid := fmt.Sprintf("cm-%03d", i), fmt.Sprintf("uid-%03d", i)
		live.objects[name] = liveConfigMap(name, uid, "1", nil)
		store.matches = append(store.matches, actMatch(name, uid, "1", 2))
	}
	delete(live.objects, "cm-007") // gone meanwhile
	copies := &fakeCopies{kept: map[string]Copy{}}
	r := New(Options{Now: func() time.Time { return now },
		Acting: &Acting{Applier: &fakeApplier{}, Live: live, Store: store, Copies: copies, Workers: 16,
			TakeCopy: func(o *unstructured.Unstructured) ([]byte, bool, error) { return nil, false, nil }}})
	rule := &rules.Rule{ID: "r", Mode: rules.ModeDelete, Occurrences: 2, Propagation: "Background"}
	acted, err := r.act(context.Background(), rule, now)
	if err != nil {
		t.Fatal(err)
	}
	want := &api.RuleActed{Due: 300, Deleted: 299, Skipped: map[string]int{"gone": 1}}
	if diff := cmp.Diff(want, acted); diff != "" {
		t.Errorf("acted (-want +got):\n%s", diff)
	}
	if len(live.deleted) != 299 || len(copies.kept) != 299 {
		t.Errorf("%d deletes, %d copies; want 299 of each", len(live.deleted), len(copies.kept))
	}
}
