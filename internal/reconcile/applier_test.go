package reconcile

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/db"
)

type fakeClock struct{ now time.Time }

func (f *fakeClock) Now() time.Time { return f.now }

func newTestApplier(t *testing.T, dryRun bool, maxPerMinute int) (*Applier, *db.DB, *fakeClock) {
	t.Helper()
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "k.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	a, err := NewApplier(ApplierOptions{DB: store, DryRun: dryRun, Instance: "test", MaxDeletionsPerMinute: maxPerMinute,
		Now: clock.Now, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return a, store, clock
}

func decision(uid string) Decision {
	return Decision{Controller: "ownergc", Rule: "BR-21-01", Action: "delete", Destructive: true, ResourceVersion: "1",
		Target: db.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: uid, UID: uid}, Reason: "test"}
}

func TestBlastRadiusPausesAndResumes(t *testing.T) {
	ctx := context.Background()
	a, store, clock := newTestApplier(t, false, 3)
	calls := 0
	do := func(context.Context) error { calls++; return nil }
	for i, uid := range []string{"a", "b", "c"} {
		if _, err := a.Apply(ctx, decision(uid), do); err != nil {
			t.Fatalf("deletion %d: %v", i, err)
		}
		clock.now = clock.now.Add(time.Second)
	}
	if _, err := a.Apply(ctx, decision("d"), do); !errors.Is(err, ErrPaused) {
		t.Fatalf("fourth deletion within a minute: err = %v, want ErrPaused", err)
	}
	if calls != 3 {
		t.Fatalf("%d writes, want 3", calls)
	}
	st := a.Status()
	if !st.Paused || st.PausedReason == "" || st.DeletionsLastMinute != 3 {
		t.Fatalf("status while paused: %+v", st)
	}
	pending, err := store.ListPending(ctx, db.PendingFilter{})
	if err != nil || len(pending) != 1 || pending[0].Target.UID != "d" {
		t.Fatalf("pending while paused: %+v, %v", pending, err)
	}
	if got := testutil.ToFloat64(a.metrics.paused); got != 1 {
		t.Errorf("paused gauge %v", got)
	}
	// A minute after the first deletion, room frees up again.
	clock.now = clock.now.Add(58 * time.Second)
	if _, err := a.Apply(ctx, decision("d"), do); err != nil {
		t.Fatalf("after the window moved: %v", err)
	}
	if st := a.Status(); st.Paused {
		t.Fatalf("still paused: %+v", st)
	}
	// Non-destructive actions are never capped.
	a2, _, _ := newTestApplier(t, false, 1)
	patch := decision("p")
	patch.Destructive, patch.Action = false, "remove-owner-refs"
	for range 3 {
		if _, err := a2.Apply(ctx, patch, do); err != nil {
			t.Fatal(err)
		}
	}
}

func TestApplyOutcomes(t *testing.T) {
	ctx := context.Background()
	gr := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name    string
		err     error
		outcome string
		wantErr bool
		pending int
	}{
		{"applied", nil, db.OutcomeApplied, false, 0},
		{"not found is done", apierrors.NewNotFound(gr, "x"), db.OutcomeNotFound, false, 0},
		{"conflict is retried", apierrors.NewConflict(gr, "x", errors.New("rv")), db.OutcomeConflict, true, 1},
		{"failure is retried", errors.New("boom"), db.OutcomeFailed, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, store, _ := newTestApplier(t, false, 0)
			outcome, err := a.Apply(ctx, decision("u"), func(context.Context) error { return tc.err })
			if outcome != tc.outcome || (err != nil) != tc.wantErr {
				t.Fatalf("outcome %q err %v", outcome, err)
			}
			store.Close() // commits the queued audit row
			reopened, err := db.Open(ctx, store.Path, db.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer reopened.Close()
			rows, _, err := reopened.ListAudit(ctx, db.AuditFilter{})
			if err != nil || len(rows) != 1 || rows[0].Outcome != tc.outcome || rows[0].DryRun {
				t.Fatalf("audit %+v, %v", rows, err)
			}
			pending, _ := reopened.ListPending(ctx, db.PendingFilter{})
			if len(pending) != tc.pending {
				t.Fatalf("pending %+v, want %d", pending, tc.pending)
			}
		})
	}
}

func TestDryRunAuditsEachDecisionOnce(t *testing.T) {
	ctx := context.Background()
	a, store, _ := newTestApplier(t, true, 1)
	do := func(context.Context) error { t.Fatal("dry-run wrote to the cluster"); return nil }
	for range 5 {
		if outcome, err := a.Apply(ctx, decision("u"), do); err != nil || outcome != db.OutcomeDryRun {
			t.Fatalf("%q %v", outcome, err)
		}
	}
	d := decision("u")
	d.ResourceVersion = "2" // the object changed: a new decision
	if _, err := a.Apply(ctx, d, do); err != nil {
		t.Fatal(err)
	}
	rows, _, err := store.ListAudit(ctx, db.AuditFilter{})
	if err != nil || len(rows) != 2 || !rows[0].DryRun || rows[0].Outcome != db.OutcomeDryRun {
		t.Fatalf("audit rows %+v, %v", rows, err)
	}
	// The cap does not apply to what is never written.
	if st := a.Status(); st.Paused || !st.DryRun {
		t.Fatalf("status %+v", st)
	}
}
