package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/dbfault"
)

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not true within 10s: %s", what)
		}
	}
}

// On a full disk, the first audit or pending row refused pauses every
// write; the rows of writes already made wait in memory, are written once
// there is room again, and enforcement resumes by itself.
func TestFullDiskPausesEnforcementUntilTheAuditIsWritten(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name    string
		do      func(context.Context) error
		outcome string
	}{
		// The row of an applied write is queued; the commit fails.
		{"applied write", ok, db.OutcomeApplied},
		// A failed write stores its pending row first; that fails.
		{"conflicting write", func(context.Context) error { return apierrors.NewConflict(gr, "a", errors.New("rv")) }, db.OutcomeConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			disk := dbfault.NewFullDisk(t, 16<<20)
			clock := newFakeClock()
			a := newApplierOn(t, openStore(t, filepath.Join(disk.Dir, "k.db"), clock), clock, ApplierOptions{})
			if _, err := a.Apply(ctx, decision("before"), ok); err != nil {
				t.Fatal(err)
			}
			audit(t, a.store, 1)

			disk.Fill(t, a.store.Path)
			writes := 0
			do := func(ctx context.Context) error { writes++; return tc.do(ctx) }
			outcome, _ := a.Apply(ctx, decision("a"), do)
			if outcome != tc.outcome {
				t.Fatalf("outcome %q, want %q", outcome, tc.outcome)
			}
			waitFor(t, "the refused row pauses enforcement", func() bool { return a.LedgerError() != nil })
			if _, err := a.Apply(ctx, decision("b"), do); !errors.Is(err, ErrLedgerUnavailable) || !errors.Is(err, ErrPaused) {
				t.Fatalf("Apply with the audit store failing: %v, want ErrLedgerUnavailable", err)
			}
			if writes != 1 {
				t.Fatalf("%d writes sent, want 1: none after the audit store failed", writes)
			}
			if _, err := a.Record(ctx, decision("kept")); !errors.Is(err, ErrPaused) {
				t.Errorf("Record: %v, want ErrPaused", err)
			}
			if err := a.Defer(ctx, decision("later"), clock.Now()); !errors.Is(err, ErrPaused) {
				t.Errorf("Defer: %v, want ErrPaused", err)
			}
			st := a.Status()
			if !st.Paused || !cmp.Equal(st.PausedBy, []string{pauseAuditStore}) || st.AuditBacklog != 1 ||
				!strings.HasPrefix(st.PausedReason, "audit history cannot be written: ") || strings.Contains(st.PausedReason, "\n") {
				t.Fatalf("status with the audit store failing: %+v", st)
			}
			if got := testutil.ToFloat64(a.metrics.paused.WithLabelValues(pauseAuditStore)); got != 1 {
				t.Errorf("paused{reason=audit-store} = %v, want 1", got)
			}

			disk.Free(t)
			waitFor(t, "enforcement resumes once the disk has room", func() bool { return a.LedgerError() == nil })
			if _, err := a.Apply(ctx, decision("b"), do); err != nil && tc.outcome == db.OutcomeApplied {
				t.Fatalf("after the recovery: %v", err)
			}
			want := []row{
				{"ownergc", "delete", "before", db.OutcomeApplied},
				{"ownergc", "delete", "a", tc.outcome},
				{db.ControllerKubegcd, db.ActionResume, "", db.OutcomeApplied},
				{"ownergc", "delete", "b", tc.outcome},
			}
			if diff := cmp.Diff(want, rowsOf(audit(t, a.store, len(want)))); diff != "" {
				t.Fatalf("audit (-want +got):\n%s", diff)
			}
			if st := a.Status(); st.Paused || st.AuditBacklog != 0 {
				t.Fatalf("status after the recovery: %+v", st)
			}
		})
	}
}

// While the database is locked, applied writes queue their rows; past
// maxInflight of them no further write goes out until the rows commit, so
// a crash or a lock never leaves more writes than that unrecorded.
func TestUncommittedRowsBoundTheWrites(t *testing.T) {
	ctx := context.Background()
	a := newTestApplier(t, ApplierOptions{})
	unlock := dbfault.HoldWriteLock(t, a.store.Path)
	for i := range maxInflight {
		if _, err := a.Apply(ctx, decision(fmt.Sprint(i)), ok); err != nil {
			t.Fatal(err)
		}
	}
	wrote := make(chan struct{})
	go func() {
		_, _ = a.Apply(ctx, decision("over"), func(context.Context) error { close(wrote); return nil })
	}()
	select {
	case <-wrote:
		t.Fatalf("a write went out with %d rows uncommitted", maxInflight)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not go out once the rows committed")
	}
	if rows := audit(t, a.store, maxInflight+1); len(rows) != maxInflight+1 {
		t.Fatalf("%d rows, want %d", len(rows), maxInflight+1)
	}
}

// At exit, rows the database still refuses are logged in full: the log
// keeps what the database could not.
func TestRowsStillRefusedAtExitAreLogged(t *testing.T) {
	ctx := context.Background()
	disk := dbfault.NewFullDisk(t, 16<<20)
	clock := newFakeClock()
	store := openStore(t, filepath.Join(disk.Dir, "k.db"), clock)
	logs := &syncBuffer{}
	a, err := NewApplier(ApplierOptions{DB: store, Instance: "test", Now: clock.Now, Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.Run(runCtx); close(done) }()
	disk.Fill(t, store.Path)
	if _, err := a.Apply(ctx, decision("written-in-the-log"), ok); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refused row pauses enforcement", func() bool { return a.LedgerError() != nil })
	stop()
	<-done
	disk.Free(t)
	if got := testutil.ToFloat64(a.metrics.lost); got != 1 {
		t.Errorf("audit_rows_lost_total = %v, want 1", got)
	}
	if !strings.Contains(logs.String(), `msg="audit row lost: the database did not take it before exit"`) ||
		!strings.Contains(logs.String(), "uid=written-in-the-log") {
		t.Fatalf("the lost row is not in the log:\n%s", logs.String())
	}
}

// syncBuffer collects log lines written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
