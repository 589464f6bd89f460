package reconcile

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

type fakeClock struct{ now atomic.Pointer[time.Time] }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return c
}

func (f *fakeClock) Now() time.Time          { return *f.now.Load() }
func (f *fakeClock) set(t time.Time)         { f.now.Store(&t) }
func (f *fakeClock) advance(d time.Duration) { f.set(f.Now().Add(d)) }

// testApplier is an applier on a real database, with a fake clock.
type testApplier struct {
	*Applier
	store *db.DB
	clock *fakeClock
}

func openStore(t *testing.T, path string, clock *fakeClock) *db.DB {
	t.Helper()
	store, err := db.Open(context.Background(), path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store.Now = clock.Now
	t.Cleanup(func() { store.Close() })
	return store
}

// newApplierOn starts an applier, as the daemon does: restored from the
// audit history, its store watched.
func newApplierOn(t *testing.T, store *db.DB, clock *fakeClock, opts ApplierOptions) *testApplier {
	t.Helper()
	opts.DB, opts.Instance, opts.Now, opts.Registerer = store.Ledger(), "test", clock.Now, prometheus.NewRegistry()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.ProbeInterval = 10 * time.Millisecond
	a, err := NewApplier(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &testApplier{Applier: a, store: store, clock: clock}
}

func newTestApplier(t *testing.T, opts ApplierOptions) *testApplier {
	t.Helper()
	clock := newFakeClock()
	return newApplierOn(t, openStore(t, filepath.Join(t.TempDir(), "k.db"), clock), clock, opts)
}

// restart stops a and starts another applier on the same database file,
// as a restart of the daemon would.
func (a *testApplier) restart(t *testing.T, opts ApplierOptions) *testApplier {
	t.Helper()
	path := a.store.Path
	if err := a.store.Close(); err != nil { // commits the queued rows
		t.Fatal(err)
	}
	return newApplierOn(t, openStore(t, path, a.clock), a.clock, opts)
}

func decision(uid string) Decision {
	return Decision{Controller: "ownergc", Rule: "BR-21-01", Action: "delete", ResourceVersion: "1",
		Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: uid, UID: uid}, Reason: "test"}
}

func patch(uid string) Decision {
	d := decision(uid)
	d.Action = "remove-owner-refs"
	return d
}

// audit lists the committed rows, oldest first, waiting for the rows of
// applied writes (queued, not waited for) until want are there.
func audit(t *testing.T, store *db.DB, want int) []db.AuditEntry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, _, err := store.Decisions().ListAudit(context.Background(), db.AuditFilter{Limit: 100000})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) >= want || time.Now().After(deadline) {
			for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
				rows[i], rows[j] = rows[j], rows[i]
			}
			return rows
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type row struct {
	Controller api.Controller
	Action     api.Action
	UID        string
	Outcome    api.Outcome
}

func rowsOf(entries []db.AuditEntry) []row {
	out := []row{}
	for _, e := range entries {
		out = append(out, row{e.Controller, e.Action, e.Target.UID, e.Outcome})
	}
	return out
}

func ok(context.Context) error { return nil }

func TestBlastRadiusPausesAndResumes(t *testing.T) {
	ctx := context.Background()
	a := newTestApplier(t, ApplierOptions{MaxDeletionsPerMinute: 3})
	calls := 0
	do := func(context.Context) error { calls++; return nil }
	for i, uid := range []string{"a", "b", "c"} {
		if _, err := a.Apply(ctx, decision(uid), do); err != nil {
			t.Fatalf("deletion %d: %v", i, err)
		}
		a.clock.advance(time.Second)
	}
	if _, err := a.Apply(ctx, decision("d"), do); !errors.Is(err, ErrPaused) {
		t.Fatalf("fourth deletion within a minute: err = %v, want ErrPaused", err)
	}
	if calls != 3 {
		t.Fatalf("%d writes, want 3", calls)
	}
	st := a.Status()
	if !st.Paused || !strings.Contains(st.PausedReason, "--max-deletions-per-minute=3") || st.WritesLastMinute != 3 ||
		!cmp.Equal(st.PausedBy, []string{pauseBlastRadius}) {
		t.Fatalf("status while paused: %+v", st)
	}
	pending, _, err := a.store.Decisions().ListPending(ctx, db.PendingFilter{})
	if err != nil || len(pending) != 1 || pending[0].Target.UID != "d" {
		t.Fatalf("pending while paused: %+v, %v", pending, err)
	}
	if got := testutil.ToFloat64(a.metrics.paused.WithLabelValues(pauseBlastRadius)); got != 1 {
		t.Errorf("paused{reason=blast-radius} = %v, want 1", got)
	}
	// A minute after the first deletion, room frees up again.
	a.clock.advance(58 * time.Second)
	if _, err := a.Apply(ctx, decision("d"), do); err != nil {
		t.Fatalf("after the window moved: %v", err)
	}
	if st := a.Status(); st.Paused {
		t.Fatalf("still paused: %+v", st)
	}
}

// Every write counts against the cap, patches too; a write that changed
// nothing gives its room back.
func TestBlastRadiusCountsPatchesNotRefusals(t *testing.T) {
	ctx := context.Background()
	gr := schema.GroupResource{Resource: "configmaps"}
	a := newTestApplier(t, ApplierOptions{MaxDeletionsPerMinute: 2})
	if _, err := a.Apply(ctx, patch("conflicting"), func(context.Context) error {
		return apierrors.NewConflict(gr, "x", errors.New("rv"))
	}); err == nil {
		t.Fatal("conflict not reported")
	}
	if _, err := a.Apply(ctx, decision("gone"), func(context.Context) error { return apierrors.NewNotFound(gr, "gone") }); err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"p1", "p2"} {
		if _, err := a.Apply(ctx, patch(uid), ok); err != nil {
			t.Fatalf("patch %s: %v", uid, err)
		}
	}
	if _, err := a.Apply(ctx, patch("p3"), ok); !errors.Is(err, ErrPaused) {
		t.Fatalf("third patch within a minute: err = %v, want ErrPaused", err)
	}
}

// A restart within the minute keeps the count: the window comes back from
// the audit history.
func TestBlastRadiusWindowSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	opts := ApplierOptions{MaxDeletionsPerMinute: 3}
	a := newTestApplier(t, opts)
	for _, uid := range []string{"a", "b", "c"} {
		if _, err := a.Apply(ctx, decision(uid), ok); err != nil {
			t.Fatal(err)
		}
	}
	a.clock.advance(30 * time.Second)
	a = a.restart(t, opts)
	if st := a.Status(); st.WritesLastMinute != 3 {
		t.Fatalf("after a restart: %d writes in the last minute, want 3", st.WritesLastMinute)
	}
	if _, err := a.Apply(ctx, decision("d"), ok); !errors.Is(err, ErrPaused) {
		t.Fatalf("fourth deletion within a minute, across a restart: err = %v, want ErrPaused", err)
	}
	a.clock.advance(31 * time.Second)
	if _, err := a.Apply(ctx, decision("d"), ok); err != nil {
		t.Fatalf("once the minute passed: %v", err)
	}
}

// With ManualResume the cap holds past the minute and across a restart,
// until Release, which is audited; the writes before it no longer count.
func TestBlastRadiusManualResume(t *testing.T) {
	ctx := context.Background()
	opts := ApplierOptions{MaxDeletionsPerMinute: 2, ManualResume: true}
	a := newTestApplier(t, opts)
	if err := a.Release(ctx, "nothing held", "test"); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release with nothing held: %v, want ErrNotHeld", err)
	}
	for _, uid := range []string{"a", "b"} {
		if _, err := a.Apply(ctx, decision(uid), ok); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Apply(ctx, decision("c"), ok); !errors.Is(err, ErrPaused) {
		t.Fatalf("over the cap: %v, want ErrPaused", err)
	}
	a.clock.advance(5 * time.Minute)
	if _, err := a.Apply(ctx, decision("c"), ok); !errors.Is(err, ErrPaused) {
		t.Fatalf("five minutes later: %v, want ErrPaused (held until released)", err)
	}
	a = a.restart(t, opts)
	a.clock.advance(5 * time.Minute)
	if _, err := a.Apply(ctx, decision("c"), ok); !errors.Is(err, ErrPaused) {
		t.Fatalf("after a restart: %v, want ErrPaused (held until released)", err)
	}
	if st := a.Status(); !st.Paused || st.BlastRadiusResume != "manual" || !strings.Contains(st.PausedReason, "kubegcd release") {
		t.Fatalf("status while held: %+v", st)
	}
	if err := a.Release(ctx, "checked: the owner was deleted on purpose", "test"); err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"c", "d"} {
		if _, err := a.Apply(ctx, decision(uid), ok); err != nil {
			t.Fatalf("after the release: %v", err)
		}
	}
	want := []row{
		{"ownergc", "delete", "a", api.OutcomeApplied},
		{"ownergc", "delete", "b", api.OutcomeApplied},
		{api.ControllerKubegcd, api.ActionPause, "", api.OutcomeApplied},
		{api.ControllerOperator, api.ActionRelease, "", api.OutcomeApplied},
		{"ownergc", "delete", "c", api.OutcomeApplied},
		{"ownergc", "delete", "d", api.OutcomeApplied},
	}
	rows := audit(t, a.store, len(want))
	if diff := cmp.Diff(want, rowsOf(rows)); diff != "" {
		t.Fatalf("audit (-want +got):\n%s", diff)
	}
	if rows[3].Reason != "checked: the owner was deleted on purpose" {
		t.Errorf("release reason %q", rows[3].Reason)
	}
	// A restart after the release does not bring the hold back.
	a = a.restart(t, opts)
	if st := a.Status(); st.Paused || st.WritesLastMinute != 2 {
		t.Fatalf("after the release and a restart: %+v, want not paused, 2 writes since the release", st)
	}
}

// A hold is not taken up by a run with auto resume, nor, once that run
// released it, by a later run with manual resume.
func TestBlastRadiusHoldReleasedByAutoResume(t *testing.T) {
	ctx := context.Background()
	manual := ApplierOptions{MaxDeletionsPerMinute: 1, ManualResume: true}
	a := newTestApplier(t, manual)
	for _, uid := range []string{"a", "b"} {
		_, _ = a.Apply(ctx, decision(uid), ok)
	}
	a.clock.advance(2 * time.Minute)
	a = a.restart(t, ApplierOptions{MaxDeletionsPerMinute: 1})
	if _, err := a.Apply(ctx, decision("b"), ok); err != nil {
		t.Fatalf("with auto resume after a manual hold: %v", err)
	}
	a.clock.advance(2 * time.Minute)
	a = a.restart(t, manual)
	if st := a.Status(); st.Paused {
		t.Fatalf("the released hold came back: %+v", st)
	}
	want := []row{
		{"ownergc", "delete", "a", api.OutcomeApplied},
		{api.ControllerKubegcd, api.ActionPause, "", api.OutcomeApplied},
		{api.ControllerKubegcd, api.ActionRelease, "", api.OutcomeApplied},
		{"ownergc", "delete", "b", api.OutcomeApplied},
	}
	if diff := cmp.Diff(want, rowsOf(audit(t, a.store, len(want)))); diff != "" {
		t.Fatalf("audit (-want +got):\n%s", diff)
	}
}

// Without ManualResume the cap resumes by itself: there is nothing to
// release.
func TestBlastRadiusAutoHasNothingToRelease(t *testing.T) {
	ctx := context.Background()
	a := newTestApplier(t, ApplierOptions{MaxDeletionsPerMinute: 1})
	for _, uid := range []string{"a", "b"} {
		_, _ = a.Apply(ctx, decision(uid), ok)
	}
	if err := a.Release(ctx, "", "test"); !errors.Is(err, ErrNotHeld) || !strings.Contains(err.Error(), "resumes by itself") {
		t.Fatalf("release in auto mode: %v", err)
	}
}

func TestApplyOutcomes(t *testing.T) {
	ctx := context.Background()
	gr := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name    string
		err     error
		outcome api.Outcome
		wantErr bool
		pending int
	}{
		{"applied", nil, api.OutcomeApplied, false, 0},
		{"not found is done", apierrors.NewNotFound(gr, "x"), api.OutcomeNotFound, false, 0},
		{"conflict is retried", apierrors.NewConflict(gr, "x", errors.New("rv")), api.OutcomeConflict, true, 1},
		{"failure is retried", errors.New("boom"), api.OutcomeFailed, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestApplier(t, ApplierOptions{})
			outcome, err := a.Apply(ctx, decision("u"), func(context.Context) error { return tc.err })
			if outcome != tc.outcome || (err != nil) != tc.wantErr {
				t.Fatalf("outcome %q err %v", outcome, err)
			}
			rows := audit(t, a.store, 1)
			if len(rows) != 1 || rows[0].Outcome != tc.outcome || rows[0].DryRun {
				t.Fatalf("audit %+v", rows)
			}
			pending, _, _ := a.store.Decisions().ListPending(ctx, db.PendingFilter{})
			if len(pending) != tc.pending {
				t.Fatalf("pending %+v, want %d", pending, tc.pending)
			}
		})
	}
}

// A write retried on the same resourceVersion (a conflict while the mirror
// catches up, a failing API server) is audited once, not once per retry.
func TestFailedDecisionAuditedOncePerVersion(t *testing.T) {
	ctx := context.Background()
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name    string
		err     error
		outcome api.Outcome
	}{
		{"conflict", apierrors.NewConflict(gr, "u", errors.New("the object has been modified")), api.OutcomeConflict},
		{"failure", apierrors.NewInternalError(errors.New("etcd timeout")), api.OutcomeFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestApplier(t, ApplierOptions{})
			fail := func(context.Context) error { return tc.err }
			for range 10 {
				if outcome, _ := a.Apply(ctx, decision("u"), fail); outcome != tc.outcome {
					t.Fatalf("outcome %q, want %q", outcome, tc.outcome)
				}
			}
			d := decision("u")
			d.ResourceVersion = "2" // the object changed: a new decision
			_, _ = a.Apply(ctx, d, fail)
			_, _ = a.Apply(ctx, d, ok)
			want := []row{{"ownergc", "delete", "u", tc.outcome}, {"ownergc", "delete", "u", tc.outcome},
				{"ownergc", "delete", "u", api.OutcomeApplied}}
			if diff := cmp.Diff(want, rowsOf(audit(t, a.store, len(want)))); diff != "" {
				t.Fatalf("audit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDryRunAuditsEachDecisionOnce(t *testing.T) {
	ctx := context.Background()
	a := newTestApplier(t, ApplierOptions{DryRun: true, MaxDeletionsPerMinute: 1})
	do := func(context.Context) error { t.Fatal("dry-run wrote to the cluster"); return nil }
	for range 5 {
		if outcome, err := a.Apply(ctx, decision("u"), do); err != nil || outcome != api.OutcomeDryRun {
			t.Fatalf("%q %v", outcome, err)
		}
	}
	d := decision("u")
	d.ResourceVersion = "2" // the object changed: a new decision
	if _, err := a.Apply(ctx, d, do); err != nil {
		t.Fatal(err)
	}
	rows := audit(t, a.store, 2)
	if len(rows) != 2 || !rows[0].DryRun || rows[0].Outcome != api.OutcomeDryRun {
		t.Fatalf("audit rows %+v", rows)
	}
	// The cap does not apply to what is never written.
	if st := a.Status(); st.Paused || !st.DryRun {
		t.Fatalf("status %+v", st)
	}
}

func TestMetricsLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	store := openStore(t, filepath.Join(t.TempDir(), "k.db"), newFakeClock())
	if _, err := NewApplier(ApplierOptions{DB: store.Ledger(), Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
}
