package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"io"
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

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/dbfault"
	kgtest "github.com/kubegcd/kubegcd/internal/testutil"
)

// waitFor waits up to 10 s for cond, as testutil.WaitFor does.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	kgtest.WaitFor(t, 10*time.Second, what, cond)
}

// On a full disk, the first intent, audit or pending row refused pauses
// every write; the rows of writes already made wait in memory, are written
// once there is room again — resolving their intents — and enforcement
// resumes by itself. A write whose intent is refused is never sent.
func TestFullDiskPausesEnforcementUntilTheAuditIsWritten(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	conflict := func(context.Context) error { return apierrors.NewConflict(gr, "a", errors.New("rv")) }
	for _, tc := range []struct {
		name string
		// fillFirst fills the disk before the write is decided, so that its
		// intent is refused; otherwise the first write fills it while it is
		// sent, after its intent committed, and its outcome row is refused.
		fillFirst bool
		do        func(context.Context) error
		// rows of "a", the write under the full disk, and "b", after.
		want []row
	}{
		{name: "intent refused", fillFirst: true, do: ok,
			want: []row{{api.ControllerKubegcd, api.ActionResume, "", api.OutcomeApplied}, {"ownergc", "delete", "b", api.OutcomeApplied}}},
		// The row of an applied write is queued; the commit fails.
		{name: "applied write", do: ok, want: []row{{"ownergc", "delete", "a", api.OutcomeApplied},
			{api.ControllerKubegcd, api.ActionResume, "", api.OutcomeApplied}, {"ownergc", "delete", "b", api.OutcomeApplied}}},
		// A failed write stores its pending and audit rows in one
		// transaction; that fails.
		{name: "conflicting write", do: conflict, want: []row{{"ownergc", "delete", "a", api.OutcomeConflict},
			{api.ControllerKubegcd, api.ActionResume, "", api.OutcomeApplied}, {"ownergc", "delete", "b", api.OutcomeConflict}}},
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

			if tc.fillFirst {
				disk.Fill(t, a.store.Path)
			}
			writes := 0
			do := func(ctx context.Context) error {
				writes++
				if writes == 1 && !tc.fillFirst {
					disk.Fill(t, a.store.Path)
				}
				return tc.do(ctx)
			}
			outcome, err := a.Apply(ctx, decision("a"), do)
			wantWrites := 1
			if tc.fillFirst {
				wantWrites = 0
				if !errors.Is(err, ErrLedgerUnavailable) || outcome != "" {
					t.Fatalf("Apply with its intent refused: %q, %v; want ErrLedgerUnavailable", outcome, err)
				}
			}
			waitFor(t, "the refused row pauses enforcement", func() bool { return a.LedgerError() != nil })
			if _, err := a.Apply(ctx, decision("b"), do); !errors.Is(err, ErrLedgerUnavailable) || !errors.Is(err, ErrPaused) {
				t.Fatalf("Apply with the audit store failing: %v, want ErrLedgerUnavailable", err)
			}
			if writes != wantWrites {
				t.Fatalf("%d writes sent, want %d: none after the audit store failed", writes, wantWrites)
			}
			if _, err := a.Record(ctx, decision("kept")); !errors.Is(err, ErrPaused) {
				t.Errorf("Record: %v, want ErrPaused", err)
			}
			if err := a.Defer(ctx, decision("later"), clock.Now()); !errors.Is(err, ErrPaused) {
				t.Errorf("Defer: %v, want ErrPaused", err)
			}
			st := a.Status()
			if !st.Paused || !cmp.Equal(st.PausedBy, []string{pauseAuditStore}) || st.AuditBacklog != wantWrites ||
				!strings.HasPrefix(st.PausedReason, "audit history cannot be written: ") || strings.Contains(st.PausedReason, "\n") {
				t.Fatalf("status with the audit store failing: %+v", st)
			}
			if got := testutil.ToFloat64(a.metrics.paused.WithLabelValues(pauseAuditStore)); got != 1 {
				t.Errorf("paused{reason=audit-store} = %v, want 1", got)
			}
			// The write sent has its intent, committed before it left.
			if got := openIntentUIDs(t, a.store); len(got) != wantWrites {
				t.Fatalf("open intents %v, want %d", got, wantWrites)
			}

			disk.Free(t)
			waitFor(t, "enforcement resumes once the disk has room", func() bool { return a.LedgerError() == nil })
			if _, err := a.Apply(ctx, decision("b"), do); err != nil && !apierrors.IsConflict(err) {
				t.Fatalf("after the recovery: %v", err)
			}
			want := append([]row{{"ownergc", "delete", "before", api.OutcomeApplied}}, tc.want...)
			if diff := cmp.Diff(want, rowsOf(audit(t, a.store, len(want)))); diff != "" {
				t.Fatalf("audit (-want +got):\n%s", diff)
			}
			if st := a.Status(); st.Paused || st.AuditBacklog != 0 {
				t.Fatalf("status after the recovery: %+v", st)
			}
			waitFor(t, "every intent is resolved by its row", func() bool { return len(openIntentUIDs(t, a.store)) == 0 })
		})
	}
}

// openIntentUIDs lists the targets of the open intents, oldest first.
func openIntentUIDs(t *testing.T, store *db.DB) []string {
	t.Helper()
	intents, err := store.Ledger().OpenIntents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	uids := []string{}
	for _, in := range intents {
		uids = append(uids, in.Entry.Target.UID)
	}
	return uids
}

// While another process holds the write lock, no write goes out: its
// intent waits for the lock. It goes once the lock is released.
func TestLockedDatabaseHoldsBackTheWrite(t *testing.T) {
	ctx := context.Background()
	a := newTestApplier(t, ApplierOptions{})
	unlock := dbfault.HoldWriteLock(t, a.store.Path)
	wrote := make(chan struct{})
	applied := make(chan error, 1)
	go func() {
		_, err := a.Apply(ctx, decision("held"), func(context.Context) error { close(wrote); return nil })
		applied <- err
	}()
	select {
	case <-wrote:
		t.Fatal("a write went out while its intent could not be committed")
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not go out once its intent committed")
	}
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]row{{"ownergc", "delete", "held", api.OutcomeApplied}}, rowsOf(audit(t, a.store, 1))); diff != "" {
		t.Fatalf("audit (-want +got):\n%s", diff)
	}
}

// At exit, rows the database still refuses are logged in full: the log
// keeps what the database could not.
func TestRowsStillRefusedAtExitAreLogged(t *testing.T) {
	ctx := context.Background()
	disk := dbfault.NewFullDisk(t, 16<<20)
	clock := newFakeClock()
	store := openStore(t, filepath.Join(disk.Dir, "k.db"), clock)
	logs := &kgtest.SyncBuffer{}
	a, err := NewApplier(ApplierOptions{DB: store.Ledger(), Instance: "test", Now: clock.Now, Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.Run(runCtx); close(done) }()
	// The disk fills while the write is sent: its intent is committed, its
	// row is refused.
	if _, err := a.Apply(ctx, decision("written-in-the-log"), func(context.Context) error {
		disk.Fill(t, store.Path)
		return nil
	}); err != nil {
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
	// Its intent stays open, for the next start to settle.
	if diff := cmp.Diff([]string{"written-in-the-log"}, openIntentUIDs(t, store)); diff != "" {
		t.Errorf("open intents (-want +got):\n%s", diff)
	}
}

// lockedStore is a database another process locks, as kubegcd sees it:
// while failing, every write fails (its busy timeout ran out); while held,
// every write waits until the lock is released, then commits.
type lockedStore struct {
	db.Ledger
	decisions db.Decisions
	mu        sync.Mutex
	failing   bool
	held      chan struct{} // while not nil, writes wait for it to close
	waiting   chan struct{} // a write waits for the lock
}

func (s *lockedStore) set(failing bool, held chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing, s.held = failing, held
}

func (s *lockedStore) lock() error {
	s.mu.Lock()
	failing, held := s.failing, s.held
	s.mu.Unlock()
	if failing {
		return errors.New("database intent: begin: database is locked (5) (SQLITE_BUSY)")
	}
	if held != nil {
		select {
		case s.waiting <- struct{}{}:
		default:
		}
		<-held
	}
	return nil
}

func (s *lockedStore) InsertIntent(ctx context.Context, in *db.Intent) error {
	if err := s.lock(); err != nil {
		return err
	}
	return s.Ledger.InsertIntent(ctx, in)
}

func (s *lockedStore) InsertAudit(ctx context.Context, e *db.AuditEntry) error {
	if err := s.lock(); err != nil {
		return err
	}
	return s.Ledger.InsertAudit(ctx, e)
}

func (s *lockedStore) InsertAudits(ctx context.Context, entries []*db.AuditEntry) error {
	if err := s.lock(); err != nil {
		return err
	}
	return s.Ledger.InsertAudits(ctx, entries)
}

func (s *lockedStore) ClearPending(ctx context.Context, controller api.Controller, uid string) error {
	if err := s.lock(); err != nil {
		return err
	}
	return s.Ledger.ClearPending(ctx, controller, uid)
}

// The row that says the audit history can be written again is dated when
// writing resumed and says how long the pause lasted, also when the first
// write after the failure waits on the lock: here it waits 15 s, with
// nothing written meanwhile.
func TestResumeRowIsDatedWhenWritingResumed(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	d := openStore(t, filepath.Join(t.TempDir(), "k.db"), clock)
	store := &lockedStore{Ledger: d.Ledger(), decisions: d.Decisions(), waiting: make(chan struct{}, 1)}
	a, err := NewApplier(ApplierOptions{DB: store, Instance: "test", Now: clock.Now, Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ProbeInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })

	pausedAt := clock.Now()
	store.set(true, nil)
	if _, err := a.Apply(ctx, decision("a"), ok); !errors.Is(err, ErrLedgerUnavailable) {
		t.Fatalf("Apply with the database locked: %v, want ErrLedgerUnavailable", err)
	}
	waitFor(t, "the refused intent pauses enforcement", func() bool { return a.LedgerError() != nil })

	// The next write waits on the lock, which is held for 15 s.
	held := make(chan struct{})
	store.set(false, held)
	select {
	case <-store.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("no write tried the store again within 10s")
	}
	clock.advance(15 * time.Second)
	close(held)
	waitFor(t, "enforcement resumes once the lock is released", func() bool { return a.LedgerError() == nil })

	rows, _, err := store.decisions.ListAudit(ctx, db.AuditFilter{Controller: api.ControllerKubegcd, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Action != api.ActionResume {
		t.Fatalf("kubegcd's audit rows: %+v, want the one of the resume", rows)
	}
	resumed := rows[0]
	if want := pausedAt.Add(15 * time.Second); !resumed.Time.Equal(want) {
		t.Errorf("resume row dated %s, want %s: when writing resumed, not when the pause began (%s)", resumed.Time, want, pausedAt)
	}
	if want := "the audit history can be written again after 15s"; !strings.Contains(resumed.Reason, want) {
		t.Errorf("resume row says %q, want %q", resumed.Reason, want)
	}
	var facts struct {
		PausedSince time.Time `json:"pausedSince"`
	}
	if err := json.Unmarshal(resumed.Facts, &facts); err != nil || !facts.PausedSince.Equal(pausedAt) {
		t.Errorf("resume row's facts %s, want pausedSince %s", resumed.Facts, pausedAt)
	}
}
