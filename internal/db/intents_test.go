package db

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/dbfault"
)

func intentFor(uid string) *Intent {
	return &Intent{ResourceVersion: "7", Entry: AuditEntry{Time: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), Instance: "test", Controller: "ownergc", Rule: "BR-21-01",
		Action: "delete", Reason: "owner gone", Facts: []byte(`{"owner":"gone"}`),
		Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: uid, UID: uid}}}
}

func openIntents(t *testing.T, d *DB) []string {
	t.Helper()
	intents, err := d.Ledger().OpenIntents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	uids := []string{}
	for _, in := range intents {
		uids = append(uids, in.Entry.Target.UID)
	}
	return uids
}

// Concurrent callers' intents share a commit: while the writer waits for
// the write lock in one transaction, the intents that arrive meanwhile all
// go into the next, and each caller returns only once the transaction
// holding its intent has committed.
func TestIntentsAreGroupCommitted(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	const workers = 50
	unlock := dbfault.HoldWriteLock(t, d.Path)
	insert := func(uid string) (chan error, *Intent) {
		in, done := intentFor(uid), make(chan error, 1)
		go func() { done <- d.Ledger().InsertIntent(ctx, in) }()
		return done, in
	}
	firstDone, _ := insert("first")
	// The writer is in the first transaction, waiting for the lock, once
	// it stops answering between transactions.
	deadline := time.Now().Add(10 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		err := d.WriterAlive(pctx)
		cancel()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never took the first intent")
		}
		time.Sleep(time.Millisecond)
	}
	dones := make([]chan error, workers-1)
	intents := make([]*Intent, workers-1)
	for i := range dones {
		dones[i], intents[i] = insert(fmt.Sprint("w", i))
	}
	for len(d.writes) < workers-1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d intents queued, want %d", len(d.writes), workers-1)
		}
		time.Sleep(time.Millisecond)
	}
	if got := openIntents(t, d); len(got) != 0 {
		t.Fatalf("intents visible before the lock was released: %v", got)
	}
	unlock()
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	for i, done := range dones {
		if err := <-done; err != nil || intents[i].ID == 0 {
			t.Fatalf("worker %d: id %d, %v", i, intents[i].ID, err)
		}
	}
	if got := openIntents(t, d); len(got) != workers {
		t.Fatalf("%d open intents, want %d", len(got), workers)
	}
	// Two commits: the first intent's, then the 49 others' together.
	want := `# HELP kubegcd_db_writes_per_commit Writes (of concurrent callers) committed together in one SQLite transaction.
# TYPE kubegcd_db_writes_per_commit histogram
kubegcd_db_writes_per_commit_bucket{le="1"} 1
kubegcd_db_writes_per_commit_bucket{le="2"} 1
kubegcd_db_writes_per_commit_bucket{le="4"} 1
kubegcd_db_writes_per_commit_bucket{le="8"} 1
kubegcd_db_writes_per_commit_bucket{le="16"} 1
kubegcd_db_writes_per_commit_bucket{le="32"} 1
kubegcd_db_writes_per_commit_bucket{le="64"} 2
kubegcd_db_writes_per_commit_bucket{le="128"} 2
kubegcd_db_writes_per_commit_bucket{le="256"} 2
kubegcd_db_writes_per_commit_bucket{le="+Inf"} 2
kubegcd_db_writes_per_commit_sum 50
kubegcd_db_writes_per_commit_count 2
`
	if err := testutil.CollectAndCompare(d.writesPerCommit, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// Whatever writes an intent's audit row resolves the intent in the same
// transaction: the queued row of an applied write, a failure's (new or a
// retry), rows written from a backlog, and the row of an intent settled at
// start, which may keep the decision pending.
func TestAuditRowResolvesItsIntent(t *testing.T) {
	ctx := context.Background()
	pending := func(in *Intent) *Pending {
		return &Pending{Controller: in.Entry.Controller, Rule: in.Entry.Rule, Action: in.Entry.Action, Reason: in.Entry.Reason,
			Target: in.Entry.Target, ResourceVersion: in.ResourceVersion}
	}
	for _, tc := range []struct {
		name        string
		settle      func(t *testing.T, d *DB, in *Intent, e *AuditEntry)
		wantRows    []api.Outcome
		wantPending bool
	}{
		{name: "applied, queued", settle: func(t *testing.T, d *DB, in *Intent, e *AuditEntry) {
			e.Outcome = api.OutcomeApplied
			done := make(chan error, 1)
			writeApplied(d, func(_ int, err error) { done <- err }, e)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}, wantRows: []api.Outcome{api.OutcomeApplied}},
		{name: "failure, new", settle: func(t *testing.T, d *DB, in *Intent, e *AuditEntry) {
			e.Outcome = api.OutcomeConflict
			if isNew, err := d.Ledger().RecordFailure(ctx, pending(in), e); err != nil || !isNew {
				t.Fatalf("RecordFailure: new %v, %v", isNew, err)
			}
		}, wantRows: []api.Outcome{api.OutcomeConflict}, wantPending: true},
		{name: "failure, retried", settle: func(t *testing.T, d *DB, in *Intent, e *AuditEntry) {
			if _, err := d.Ledger().UpsertPending(ctx, pending(in)); err != nil {
				t.Fatal(err)
			}
			e.Outcome = api.OutcomeFailed
			if isNew, err := d.Ledger().RecordFailure(ctx, pending(in), e); err != nil || isNew {
				t.Fatalf("RecordFailure: new %v, %v", isNew, err)
			}
		}, wantPending: true},
		{name: "from the backlog", settle: func(t *testing.T, d *DB, in *Intent, e *AuditEntry) {
			e.Outcome = api.OutcomeApplied
			if err := d.Ledger().InsertAudits(ctx, []*AuditEntry{e}); err != nil {
				t.Fatal(err)
			}
		}, wantRows: []api.Outcome{api.OutcomeApplied}},
		{name: "settled at start, gone", settle: func(t *testing.T, d *DB, in *Intent, e *AuditEntry) {
			e.Outcome = api.OutcomeApplied
			if err := d.Ledger().SettleIntent(ctx, e, nil); err != nil {
				t.Fatal(err)
			}
		}, wantRows: []api.Outcome{api.OutcomeApplied}},
		{name: "settled at start, unknown", settle: func(t *testing.T, d *DB, in *Intent, e *AuditEntry) {
			e.Outcome = api.OutcomeUnknown
			if err := d.Ledger().SettleIntent(ctx, e, pending(in)); err != nil {
				t.Fatal(err)
			}
		}, wantRows: []api.Outcome{api.OutcomeUnknown}, wantPending: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := openTemp(t)
			other := intentFor("other")
			in := intentFor("target")
			for _, i := range []*Intent{other, in} {
				if err := d.Ledger().InsertIntent(ctx, i); err != nil {
					t.Fatal(err)
				}
			}
			stored, err := d.Ledger().OpenIntents(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]Intent{*other, *in}, stored); diff != "" {
				t.Fatalf("stored intents (-want +got):\n%s", diff)
			}
			e := stored[1].Entry // as the applier builds it: IntentID set
			tc.settle(t, d, in, &e)
			if diff := cmp.Diff([]string{"other"}, openIntents(t, d)); diff != "" {
				t.Errorf("open intents (-want +got):\n%s", diff)
			}
			rows, _, err := d.Decisions().ListAudit(ctx, AuditFilter{UID: "target"})
			if err != nil {
				t.Fatal(err)
			}
			var outcomes []api.Outcome
			for _, r := range rows {
				outcomes = append(outcomes, r.Outcome)
			}
			if diff := cmp.Diff(tc.wantRows, outcomes); diff != "" {
				t.Errorf("audit rows (-want +got):\n%s", diff)
			}
			p, _, err := d.Decisions().ListPending(ctx, PendingFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.ContainsFunc(p, func(p Pending) bool { return p.Target.UID == "target" }); got != tc.wantPending {
				t.Errorf("pending %v, want %v", got, tc.wantPending)
			}
		})
	}
}

// The intents migration adds the intents table; its step down removes it
// and nothing else, and up brings it back. (Found by what it does, not by
// its number, which may change.)
func TestIntentsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	if _, _, err := Migrate(ctx, path, "up"); err != nil {
		t.Fatal(err)
	}
	tables := tableNames(t, path)
	if !slices.Contains(tables, "intents") {
		t.Fatalf("tables after up: %v, want intents among them", tables)
	}
	for {
		v, _, err := Migrate(ctx, path, "down")
		if err != nil {
			t.Fatal(err)
		}
		after := tableNames(t, path)
		if slices.Contains(after, "intents") {
			if v == 0 {
				t.Fatal("intents left at version 0")
			}
			tables = after
			continue
		}
		want := slices.DeleteFunc(slices.Clone(tables), func(n string) bool { return n == "intents" })
		if diff := cmp.Diff(want, after); diff != "" {
			t.Fatalf("tables after the step down to %d (-want +got):\n%s", v, diff)
		}
		break
	}
	if _, _, err := Migrate(ctx, path, "up"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tableNames(t, path), "intents") {
		t.Fatal("no intents table after migrating up again")
	}
}
